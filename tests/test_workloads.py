"""Which ceiling a timing's rate is set against, for either framework's device names."""

from d2lperf import workloads


def test_mxnet_and_pytorch_gpus_are_set_against_that_gpus_ceilings():
    for devices in ("gpu(1)", "cuda:1", "cuda:1,cpu"):
        assert workloads.ceiling_case("GFLOP", devices, "gpu_only") == r"gpu1_(dot|torch_mm)_\d+"
        assert workloads.ceiling_case("GB", devices, "copy_to_cpu") == (
            "gpu1_(device_to_host|torch_device_to_host_(pinned|pageable))")


def test_cpu_timings_are_set_against_the_cpu_ceilings():
    for devices in ("cpu(0)", "cpu", "", "cpu,cpu"):
        assert workloads.ceiling_case("GFLOP", devices, "cpu_only") == (
            r"(mxnet_dot|numpy_dot|torch_mm)_\d+")
        assert workloads.ceiling_case("GB", devices, "copy_to_cpu") == r"(mxnet|numpy|torch)_copy"


def test_every_librarys_gemm_is_a_candidate_but_not_another_precision():
    ceilings = {"mxnet_dot_2000": 28.6, "numpy_dot_4000": 31.0, "torch_mm_4000": 208.0,
                "gpu0_torch_mm_bf16_4000": 900.0, "gpu0_torch_mm_4000": 50.0, "gpu0_dot_4000": 40.0}
    assert workloads.best_ceiling(ceilings, workloads.ceiling_case("GFLOP", "cpu", "x")) == (
        "torch_mm_4000", 208.0)
    # a float32 timing on a GPU is set against float32 products, not bfloat16 ones
    assert workloads.best_ceiling(ceilings, workloads.ceiling_case("GFLOP", "cuda:0", "x")) == (
        "gpu0_torch_mm_4000", 50.0)
