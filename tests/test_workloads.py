"""Which ceiling a timing's rate is set against, for every framework's device names."""

import pytest

from d2lperf import flops, results, workloads


def matches(pattern: str, names: list[str]) -> list[str]:
    import re

    return [n for n in names if re.fullmatch(pattern, n)]


# every precision's products beside float32's: a float32 figure matches float32 ones only
CEILINGS = ["mxnet_dot_2000", "numpy_dot_2000", "torch_mm_2000", "jax_dot_2000",
            "torch_mm_bf16_2000", "jax_dot_bf16_2000",
            "gpu1_dot_4000", "gpu1_torch_mm_4000", "gpu1_jax_dot_4000", "gpu0_jax_dot_4000",
            "gpu1_torch_mm_bf16_4000", "gpu1_torch_mm_tf32_4000", "gpu1_torch_mm_fp16_4000",
            "gpu1_jax_dot_bf16_4000", "gpu1_jax_dot_fp16_4000",
            "mxnet_copy", "torch_copy", "jax_copy",
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
    """The run schema's rules (``results.rate_rules``, from the sections' declarations) name,
    per section, the parameters a good run keeps; work() reads no other, so a record that
    passes always has them."""
    required = {rule["if"]["properties"]["section"]["const"]:
                rule["then"]["properties"]["parameters"]["required"]
                for rule in results.rate_rules()}
    cases = {"async_computation": ["dot_wait_to_read", "dot_asnumpy", "dot_asscalar",
                                   "dot_waitall", "loop_sync_each"],
             "auto_parallelism": ["cpu_only", "gpu_only", "gpu_compute", "copy_to_cpu",
                                  "copy_to_cpu_pinned", "cpu_and_gpu"],
             "multi_gpu_scratch": ["lenet_1_device", "lenet_2_devices", "lenet_4_devices",
                                   "lenet_16_devices", "resnet18_1_device", "lenet_devices"],
             "multi_gpu_gluon": ["resnet18_1_device", "resnet18_2_devices",
                                 "resnet18_8_devices", "resnet18_3_devices",
                                 "lenet_1_device", "weight_not_initialized_on"]}
    cases["data_parallel"] = ["lenet_1_device", "resnet18_2_devices", "lenet_8_devices",
                              "resnet18_16_devices", "vgg_1_device", "lenet_devices"]
    values = {"models": ["lenet", "resnet18"], "images": [8192, 2048]}
    assert set(required) == set(cases)
    for section, names in cases.items():
        given = OnlyThese({key: values.get(key, 10) for key in required[section]})
        rated = [workloads.work(section, case, given) for case in names]
        assert all(r is not None for r in rated[:4])
        if section.startswith("multi_gpu") or section == "data_parallel":
            assert rated[4:] == [None, None]  # another model's case, or not a device count's


def test_a_data_parallel_sample_counts_its_own_images_per_model():
    parameters = {"models": ["lenet", "resnet18"], "images": [8192, 2048], "train_limit": None}
    lenet, unit = workloads.work("data_parallel", "lenet_2_devices", parameters)
    assert unit == "GFLOP"
    assert lenet == pytest.approx(flops.train_flops("lenet") * 8192 / 1e9)
    resnet, _ = workloads.work("data_parallel", "resnet18_8_devices", parameters)
    assert resnet == pytest.approx(flops.train_flops("resnet18") * 2048 / 1e9)
    # the epoch sections still count an epoch's images
    epoch, _ = workloads.work("multi_gpu_gluon", "resnet18_2_devices", parameters)
    assert epoch == pytest.approx(flops.train_flops("resnet18") * 60_000 / 1e9)


def test_a_float32_figure_is_never_set_against_another_precisions_product():
    """bfloat16 on an AMX CPU runs far above float32: as a float32 figure's ceiling it
    would make every float32 share look small."""
    ceilings = {"torch_mm_2048": 180.0, "torch_mm_bf16_2048": 900.0, "jax_dot_bf16_2048": 950.0,
                "gpu0_torch_mm_4096": 50_000.0, "gpu0_torch_mm_tf32_4096": 400_000.0,
                "gpu0_torch_mm_fp16_4096": 700_000.0, "gpu0_jax_dot_bf16_4096": 690_000.0}
    for devices, best in (("cpu", ("torch_mm_2048", 180.0)),
                          ("cpu:0,cpu:1", ("torch_mm_2048", 180.0)),
                          ("cuda:0", ("gpu0_torch_mm_4096", 50_000.0))):
        assert workloads.best_ceiling(
            ceilings, workloads.ceiling_case("GFLOP", devices, "lenet_1_device")) == best


def test_a_rate_on_two_gpus_is_set_against_both_gpus_ceilings_added():
    ceilings = {"gpu0_torch_mm_4096": 50.0, "gpu0_dot_4096": 40.0, "gpu1_torch_mm_4096": 48.0,
                "gpu1_jax_dot_4096": 49.0, "gpu1_torch_mm_bf16_4096": 700.0,
                "gpu2_torch_mm_4096": 51.0, "torch_mm_4096": 2.0}
    for devices in ("cuda:0,cuda:1", "gpu(0),gpu(1)"):
        pattern = workloads.ceiling_case("GFLOP", devices, "resnet18_2_devices")
        assert workloads.best_ceiling(ceilings, pattern) == (
            "gpu0_torch_mm_4096 + gpu1_jax_dot_4096", 99.0)
    # one GPU's ceiling missing: no sum, rather than half of one
    assert workloads.best_ceiling({"gpu0_torch_mm_4096": 50.0},
                                  workloads.ceiling_case("GFLOP", "cuda:0,cuda:1", "x")) is None
    assert workloads.gpus_of("cuda:1,cuda:0,cuda:1") == ["1", "0"]


def test_the_cpu_has_a_bfloat16_ceiling_where_it_has_a_bfloat16_unit():
    assert workloads.cpu_precisions({"avx512f", "avx512_bf16"}) == ("fp32", "bf16")
    assert workloads.cpu_precisions({"amx_tile", "amx_bf16"}) == ("fp32", "bf16")
    assert workloads.cpu_precisions({"avx512f", "avx2"}) == ("fp32",)
    assert workloads.product_case("torch", "mm", "fp32", 2048) == "torch_mm_2048"
    assert workloads.product_case("torch", "mm", "bf16", 2048) == "torch_mm_bf16_2048"
    assert workloads.product_case("gpu0_jax", "dot", "fp16", 4096) == "gpu0_jax_dot_fp16_4096"
    assert [workloads.precision_of(c) for c in (
        "torch_mm_2048", "torch_mm_bf16_2048", "gpu1_torch_mm_tf32_4096",
        "gpu0_jax_dot_fp16_4096", "mxnet_dot_2000", "numpy_copy")] == [
        "fp32", "bf16", "tf32", "fp16", "fp32", None]


def test_todays_api_is_set_beside_the_books_design_only_on_the_same_gpus():
    """The book's LeNet epochs on two GPUs (their images/s from GFLOP/s) against the
    data-parallel throughput on the same two: a figure per framework, model and count; no
    figure where either ran on a CPU, or where the GPU counts differ."""
    from d2lperf import scaling

    book_rate = 3.0 * flops.train_flops("lenet") / 1e9  # the GFLOP/s of 3 images/s
    rows = [
        {"section": "multi_gpu_scratch", "framework": "pytorch", "case": "lenet_2_devices",
         "metric": "time", "epoch": None, "median": 1.0, "achieved": 1000 * book_rate,
         "devices": "cuda:0,cuda:1"},
        {"section": "multi_gpu_scratch", "framework": "pytorch", "case": "lenet_2_devices",
         "metric": "time", "epoch": 1, "median": 9.0, "achieved": 1.0,
         "devices": "cuda:0,cuda:1"},  # one epoch's row: the case over all epochs counts
        {"section": "data_parallel", "framework": "pytorch", "case": "lenet_2_devices",
         "metric": "throughput", "epoch": None, "median": 4500.0, "achieved": None,
         "devices": "cuda:0,cuda:1"},
        # on a CPU: the book's two devices are one CPU's names, today's a core each
        {"section": "multi_gpu_scratch", "framework": "jax", "case": "lenet_2_devices",
         "metric": "time", "epoch": None, "median": 1.0, "achieved": 40.0,
         "devices": "cpu:0,cpu:1"},
        {"section": "data_parallel", "framework": "jax", "case": "lenet_2_devices",
         "metric": "throughput", "epoch": None, "median": 2000.0, "achieved": None,
         "devices": "cpu:0,cpu:1"},
    ]
    gains = scaling.api_gains(rows)
    assert [(g["framework"], g["model"], g["devices"]) for g in gains] == [
        ("pytorch", "LeNet", 2)]
    assert gains[0]["book"] == pytest.approx(3000.0)
    assert gains[0]["today"] == 4500.0 and gains[0]["gain"] == pytest.approx(1.5)
    assert gains[0]["book_section"] == "multi_gpu_scratch"
    rows[2]["devices"] = "cuda:0,cuda:1,cuda:2,cuda:3"  # not the same GPUs
    assert scaling.api_gains(rows) == []
