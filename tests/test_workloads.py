"""Which ceiling a timing's rate is set against, for either framework's device names."""

from d2lperf import workloads


def test_mxnet_and_pytorch_gpus_are_set_against_that_gpus_ceilings():
    for devices in ("gpu(1)", "cuda:1", "cuda:1,cpu"):
        assert workloads.ceiling_case("GFLOP", devices, "gpu_only") == r"gpu1_dot_\d+"
        assert workloads.ceiling_case("GB", devices, "copy_to_cpu") == "gpu1_device_to_host"


def test_cpu_timings_are_set_against_the_cpu_ceilings():
    for devices in ("cpu(0)", "cpu", "", "cpu,cpu"):
        assert workloads.ceiling_case("GFLOP", devices, "cpu_only") == r"mxnet_dot_\d+"
        assert workloads.ceiling_case("GB", devices, "copy_to_cpu") == "mxnet_copy"
