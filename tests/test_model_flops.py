"""Every training epoch has a rate: the models' FLOPs per example, counted once per
architecture and kept as data (report/model_flops.csv), turn each timed epoch of every
framework into images/s, GFLOP/s and a share of the float32 matrix-product ceiling
measured in the same run."""

import csv

import pandas as pd
import pytest

from conftest import REPO, run_command
from d2lperf import flops, workloads
from d2lperf.commands.summarise import add_rates

NUMBERS = ("forward_flops", "backward_flops", "train_flops")


def read(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return {row["model"]: row for row in csv.DictReader(handle)}


def test_the_table_is_what_torch_counts_on_the_twins_models_today(tmp_path, torch_python):
    """Recounted with FlopCounterMode on the PyTorch twins' own LeNet and ResNet-18: a
    changed model or a changed count fails here (regenerate with
    `.venv-torch/bin/d2lperf count-flops`)."""
    out = tmp_path / "model_flops.csv"
    done = run_command(torch_python, "count-flops", "--out", str(out), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    fresh, kept = read(out), read(flops.TABLE)
    assert set(fresh) == set(kept) == {"lenet", "resnet18"}
    for model in fresh:
        assert {k: fresh[model][k] for k in (*NUMBERS, "input_shape")} == {
            k: kept[model][k] for k in (*NUMBERS, "input_shape")}, model


def test_lenets_count_is_its_layers_products_by_hand():
    """Per 1x28x28 image, two FLOPs a multiply-add: conv 3x3x1->20 on 26x26, conv
    5x5x20->50 on 9x9, dense 800->128, 128->10; backward computes each layer's weight
    gradient and, above the first layer, its input's: twice the forward but the first
    convolution's once."""
    conv1, conv2 = 2 * 26 * 26 * 20 * 9, 2 * 9 * 9 * 50 * 20 * 25
    dense = 2 * 800 * 128 + 2 * 128 * 10
    row = flops.table()["lenet"]
    assert int(row["forward_flops"]) == conv1 + conv2 + dense
    assert int(row["backward_flops"]) == conv1 + 2 * (conv2 + dense)
    assert flops.train_flops("lenet") == 3 * (conv1 + conv2 + dense) - conv1
    resnet = flops.table()["resnet18"]
    assert int(resnet["train_flops"]) == int(resnet["forward_flops"]) + int(
        resnet["backward_flops"])
    # ResNet-18 at 224x224 takes 3.6 GFLOP after a stem that quarters 112x112 to 56x56;
    # here its blocks start at 28x28, a quarter of that area: about 0.9 GFLOP
    assert 0.85e9 < int(resnet["forward_flops"]) < 0.95e9
    stem = 2 * 28 * 28 * 64 * 9  # its input's gradient is not computed
    assert int(resnet["backward_flops"]) == 2 * int(resnet["forward_flops"]) - stem


def test_an_epoch_trains_on_every_image_or_the_first_train_limit():
    assert workloads.examples_per_epoch({"train_limit": None}) == 60_000
    assert workloads.examples_per_epoch({"train_limit": 2048}) == 2048
    assert workloads.examples_per_epoch({"train_limit": 10**6}) == 60_000
    assert workloads.work("multi_gpu_scratch", "lenet_2_devices", {"train_limit": 2048}) == (
        pytest.approx(flops.train_flops("lenet") * 2048 / 1e9), "GFLOP")
    assert workloads.work("multi_gpu_gluon", "resnet18_1_device", {"train_limit": None}) == (
        pytest.approx(flops.train_flops("resnet18") * 60_000 / 1e9), "GFLOP")


def row(framework, section, case, metric, median, devices="cpu", epoch=None):
    return {"framework": framework, "section": section, "case": case, "metric": metric,
            "median": median, "devices": devices, "epoch": epoch}


DEVICES = {"mxnet": ("cpu(0)", "cpu(0),cpu(1)"), "pytorch": ("cpu", "cpu,cpu"),
           "jax": ("cpu:0", "cpu:0,cpu:1")}


def test_every_timed_epoch_of_every_framework_has_its_share_of_the_float32_ceiling():
    section = {"parameters": {"train_limit": 6000}}
    runs = {f: {"multi_gpu_scratch": section, "multi_gpu_gluon": section,
                "ceilings": {"notes": {"kernels": {"torch_mm_2048": "torch mm (mkl)"}}}}
            for f in DEVICES}
    table = [row("pytorch", "ceilings", "torch_mm_2048", "rate", 200.0),
             row("pytorch", "ceilings", "torch_mm_bf16_2048", "rate", 1200.0),
             row("jax", "ceilings", "jax_dot_bf16_2048", "rate", 1300.0)]
    for k, (framework, (one, two)) in enumerate(DEVICES.items(), start=1):
        for case, devices in (("lenet_1_device", one), ("lenet_2_devices", two)):
            table += [row(framework, "multi_gpu_scratch", case, "time", 2.0 * k, devices, e)
                      for e in (1, 2, None)]
            table += [row(framework, "multi_gpu_scratch", case, "accuracy", 0.8, devices, 1)]
        table += [row(framework, "multi_gpu_gluon", "resnet18_2_devices", "time", 600.0 * k,
                      two, None)]
    rated = add_rates(pd.DataFrame(table), runs)
    epochs = rated[rated["section"].str.startswith("multi_gpu") & (rated["metric"] == "time")]
    assert len(epochs) == 3 * 7
    lenet = flops.train_flops("lenet") * 6000 / 1e9
    resnet = flops.train_flops("resnet18") * 6000 / 1e9
    for r in epochs.to_dict("records"):
        k = list(DEVICES).index(r["framework"]) + 1
        gflop = lenet if r["case"].startswith("lenet") else resnet
        assert r["achieved"] == pytest.approx(gflop / r["median"]), r
        assert r["achieved_unit"] == "GFLOP/s"
        assert r["ceiling_case"] == "torch_mm_2048", r  # float32, never a bf16 product
        assert r["ceiling_kernel"] == "torch mm (mkl)"
        assert r["fraction_of_ceiling"] == pytest.approx(gflop / r["median"] / 200.0)
        assert r["median"] in (2.0 * k, 600.0 * k)
    assert rated[rated["metric"] == "accuracy"]["achieved"].isna().all()


def test_the_report_gives_each_epoch_run_its_images_per_second_and_share():
    from d2lperf.report.figures_view import cell_view

    gflops = 12.0
    cell = {"median": 2.9, "unit": "s", "count": 4, "devices": "cpu,cpu", "achieved": gflops,
            "achieved_unit": "GFLOP/s", "fraction_of_ceiling": 0.03,
            "ceiling_case": "torch_mm_2048", "ceiling_kernel": "torch mm (mkl)"}
    fig = {"section": "multi_gpu_scratch", "case": "lenet_2_devices", "metric": "time",
           "document_printed": None, "unit": "s"}
    images = gflops * 1e9 / flops.train_flops("lenet")
    assert cell_view(fig, cell)["rate"] == (
        f"{images:,.0f} images/s, 12.0 GFLOP/s, 3% of the machine's best, "
        "torch_mm_2048 (torch mm (mkl))")
    # a figure that is not an epoch's keeps its rate alone
    dot = {**fig, "section": "async_computation", "case": "dot_wait_to_read"}
    assert cell_view(dot, cell)["rate"].startswith("12.0 GFLOP/s, 3% of")


def test_the_flops_table_is_the_library_s_and_listed_in_the_readme():
    assert flops.TABLE == REPO / "report/model_flops.csv"
    assert "model_flops.csv" in (REPO / "README.md").read_text()
