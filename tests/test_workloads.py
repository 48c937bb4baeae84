"""Which ceiling a timing's rate is set against, for every framework's device names."""

import yaml

from conftest import REPO
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


class OnlyThese(dict):
    """Parameters that fail loudly on a key the run record's schema does not require."""

    def __missing__(self, key):
        raise AssertionError(f"work() reads {key!r}, which the run schema does not require")


def test_the_run_schema_requires_every_parameter_a_rate_is_computed_from():
    """workflow/schemas/run.schema.yaml's `allOf` names, per section, the parameters a good
    run keeps; work() reads no other, so a record that passes always has them."""
    schema = yaml.safe_load((REPO / "workflow/schemas/run.schema.yaml").read_text())
    required = {rule["if"]["properties"]["section"]["const"]:
                rule["then"]["properties"]["parameters"]["required"] for rule in schema["allOf"]}
    cases = {"async_computation": ["dot_wait_to_read", "dot_asnumpy", "dot_asscalar",
                                   "dot_waitall", "loop_sync_each"],
             "auto_parallelism": ["cpu_only", "gpu_only", "gpu_compute", "copy_to_cpu",
                                  "copy_to_cpu_pinned", "cpu_and_gpu"]}
    assert set(required) == set(cases)
    for section, names in cases.items():
        rated = [workloads.work(section, case, OnlyThese.fromkeys(required[section], 10))
                 for case in names]
        assert all(r is not None for r in rated[:4])
