"""Which ceiling a timing's rate is set against, for every framework's device names."""

from d2lperf import workloads


def matches(pattern: str, names: list[str]) -> list[str]:
    import re

    return [n for n in names if re.fullmatch(pattern, n)]


CEILINGS = ["mxnet_dot_2000", "numpy_dot_2000", "torch_mm_2000", "jax_dot_2000",
            "gpu1_dot_4000", "gpu1_torch_mm_4000", "gpu1_jax_dot_4000", "gpu0_jax_dot_4000",
            "gpu1_torch_mm_bf16_4000", "mxnet_copy", "torch_copy", "jax_copy",
            "gpu1_device_to_host", "gpu1_torch_device_to_host_pinned",
            "gpu1_jax_device_to_host_pageable", "gpu0_device_to_host"]


def test_every_frameworks_gpus_are_set_against_that_gpus_ceilings():
    for devices in ("gpu(1)", "cuda:1", "cuda:1,cpu"):
        assert matches(workloads.ceiling_case("GFLOP", devices, "gpu_only"), CEILINGS) == [
            "gpu1_dot_4000", "gpu1_torch_mm_4000", "gpu1_jax_dot_4000"]
        assert matches(workloads.ceiling_case("GB", devices, "copy_to_cpu"), CEILINGS) == [
            "gpu1_device_to_host", "gpu1_torch_device_to_host_pinned",
            "gpu1_jax_device_to_host_pageable"]


def test_cpu_timings_are_set_against_the_cpu_ceilings():
    for devices in ("cpu(0)", "cpu", "", "cpu,cpu", "cpu:0,cpu:1"):
        assert matches(workloads.ceiling_case("GFLOP", devices, "cpu_only"), CEILINGS) == [
            "mxnet_dot_2000", "numpy_dot_2000", "torch_mm_2000", "jax_dot_2000"]
        assert matches(workloads.ceiling_case("GB", devices, "copy_to_cpu"), CEILINGS) == [
            "mxnet_copy", "torch_copy", "jax_copy"]


def test_every_librarys_gemm_is_a_candidate_but_not_another_precision():
    ceilings = {"mxnet_dot_2000": 28.6, "numpy_dot_4000": 31.0, "torch_mm_4000": 208.0,
                "gpu0_torch_mm_bf16_4000": 900.0, "gpu0_torch_mm_4000": 50.0, "gpu0_dot_4000": 40.0}
    assert workloads.best_ceiling(ceilings, workloads.ceiling_case("GFLOP", "cpu", "x")) == (
        "torch_mm_4000", 208.0)
    # a float32 timing on a GPU is set against float32 products, not bfloat16 ones
    assert workloads.best_ceiling(ceilings, workloads.ceiling_case("GFLOP", "cuda:0", "x")) == (
        "gpu0_torch_mm_4000", 50.0)
