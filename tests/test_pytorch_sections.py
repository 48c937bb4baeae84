"""Every PyTorch section script, run for real in the PyTorch environment at the CI preset's
small sizes: schema-valid rows with the MXNet twins' case and metric names, the printed
outputs, and the GPU code paths on their CPU stand-ins (``--on cpu``) or skipped with
the reason (``--on gpu`` here, where there is no GPU)."""

from __future__ import annotations

import re

import pytest

from conftest import REPO, read_rows, read_run, run_program, run_section
from d2lperf import tables

SCHEMA = REPO / "workflow/schemas/samples.schema.yaml"


def section(name: str) -> str:
    return f"sections/pytorch/{name}.py"


def run(python, name, out, *args, timeout=600):
    return run_section(python, section(name), out, *args, timeout=timeout)


def valid_rows(out):
    """The rows, after checking them against the samples schema."""
    frame = tables.load_samples(out / "samples.csv", SCHEMA)
    assert len(frame) > 0
    return read_rows(out)


# --- multi_gpu_scratch -------------------------------------------------------------------

SCRATCH = ("--on", "cpu", "--devices", "1", "2", "--batch-sizes", "256", "256",
           "--learning-rates", "0.2", "0.2", "--epochs", "2", "--data-workers", "0",
           "--train-limit", "2048", "--test-limit", "512", "--threads", "1")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory, torch_python):
    out = tmp_path_factory.mktemp("pt_multi_gpu_scratch")
    done = run(torch_python, "multi_gpu_scratch", out, *SCRATCH)
    assert done.returncode == 0, done.stderr
    return out, read_run(out), done.stdout


def test_scratch_rows_are_the_mxnet_twins_cases_per_epoch(scratch):
    out, _, _ = scratch
    table = valid_rows(out)
    assert [(r["case"], r["epoch"], r["metric"], r["unit"], r["repeat"], r["devices"])
            for r in table] == [
        (case, str(epoch), metric, unit, "0", where)
        for case, where in (("lenet_1_device", "cpu"), ("lenet_2_devices", "cpu,cpu"))
        for epoch in (1, 2)
        for metric, unit in (("time", "s"), ("accuracy", "fraction"), ("loss", ""))
    ]
    for row in table:
        value = float(row["value"])
        if row["metric"] == "time":
            assert value > 0
        elif row["metric"] == "accuracy":
            assert 0 <= value <= 1
        else:  # an untrained 10-class softmax starts at ln(10) = 2.30
            assert 1.5 < value < 3.0


def test_scratch_printed_outputs_have_pytorch_counterparts(scratch):
    _, record, stdout = scratch
    outputs = record["outputs"]
    assert outputs["b1_weight"]["values"] == [0.0] * 20
    assert outputs["b1_grad"]["text"] == "None"  # .grad exists only after a backward pass
    assert "attach_grad" in record["notes"]["b1_grad"]
    assert outputs["allreduce_before"]["values"] == [[[1.0, 1.0]], [[2.0, 2.0]]]
    assert outputs["allreduce_after"]["values"] == [[[3.0, 3.0]], [[3.0, 3.0]]]
    assert outputs["split_input"]["values"] == [list(range(4 * i, 4 * i + 4)) for i in range(6)]
    assert outputs["split_output"]["values"] == [
        [list(range(4 * i, 4 * i + 4)) for i in range(3)],
        [list(range(4 * i, 4 * i + 4)) for i in range(3, 6)]]
    assert "After allreduce: [tensor([[3., 3.]]), tensor([[3., 3.]])]" in stdout
    assert re.search(r"^epoch 2, time \d+\.\d sec, loss \d\.\d{4}, test acc 0\.\d\d$", stdout,
                     re.MULTILINE)
    assert "both devices are the one CPU" in record["notes"]["stand_in"]


def test_scratch_two_devices_take_the_same_step_as_one(torch_python):
    """Data parallel with the hand-written allreduce is one SGD step on the whole batch:
    the parameters after it do not depend on the number of devices, also on the CPU
    stand-in, where both "devices" are one (copies, not shared tensors)."""
    got = run_program(torch_python, f"""
        import importlib.util, json
        import torch
        from torch import nn
        spec = importlib.util.spec_from_file_location("s", {str(REPO / "scripts" /
                                                              section("multi_gpu_scratch"))!r})
        s = importlib.util.module_from_spec(spec); spec.loader.exec_module(s)
        torch.manual_seed(0)
        params = s.init_params()
        X, y = torch.rand(8, 1, 28, 28), torch.arange(8) % 10
        loss = nn.CrossEntropyLoss(reduction="none")
        one = [s.get_params(params, "cpu")]
        two = [s.get_params(params, "cpu") for _ in range(2)]
        s.train_batch(X, y, one, [torch.device("cpu")], 0.2, loss)
        s.train_batch(X, y, two, [torch.device("cpu")] * 2, 0.2, loss)
        print(json.dumps([
            all(torch.allclose(a, b, atol=1e-6) for a, b in zip(one[0], two[0])),
            all(torch.equal(a, b) for a, b in zip(two[0], two[1])),
            any(not torch.equal(a, p) for a, p in zip(one[0], params)),
        ]))
    """)
    assert got == [True, True, True]  # same step; replicas agree; the step changed something


def test_scratch_on_gpu_without_gpus_is_skipped_with_the_reason(torch_python, tmp_path):
    done = run(torch_python, "multi_gpu_scratch", tmp_path, *SCRATCH[2:], "--on", "gpu")
    assert done.returncode == 0, done.stderr
    record = read_run(tmp_path)
    assert record["status"] == "skipped"
    assert record["reason"] == "needs 2 GPUs, found 0"
    assert read_rows(tmp_path) == []


# --- multi_gpu_gluon ---------------------------------------------------------------------

GLUON = ("--on", "cpu", "--devices", "1", "2", "--batch-sizes", "16", "32",
         "--learning-rates", "0.1", "0.2", "--epochs", "1", "--data-workers", "0",
         "--train-limit", "64", "--test-limit", "64", "--threads", "1")


@pytest.fixture(scope="module")
def gluon(tmp_path_factory, torch_python):
    out = tmp_path_factory.mktemp("pt_multi_gpu_gluon")
    done = run(torch_python, "multi_gpu_gluon", out, *GLUON)
    assert done.returncode == 0, done.stderr
    return out, read_run(out), done.stdout


def test_gluon_rows_are_the_mxnet_twins_cases_per_epoch(gluon):
    out, _, _ = gluon
    table = valid_rows(out)
    assert [(r["case"], r["epoch"], r["metric"], r["unit"], r["devices"]) for r in table] == [
        (case, "1", metric, unit, where)
        for case, where in (("resnet18_1_device", "cpu"), ("resnet18_2_devices", "cpu,cpu"))
        for metric, unit in (("time", "s"), ("accuracy", "fraction"), ("loss", ""))
    ]
    for row in table:
        value = float(row["value"])
        assert value > 0 if row["metric"] != "accuracy" else 0 <= value <= 1


def test_gluon_printed_outputs_have_pytorch_counterparts(gluon):
    _, record, stdout = gluon
    outputs = record["outputs"]
    first, second = outputs["net_outputs"]["values"]
    assert len(first) == len(second) == 2 and all(len(row) == 10 for row in first + second)
    # N(0, 0.01) weights through 18 layers: outputs about 1e-6, as in the notebook
    assert 0 < max(abs(v) for row in first + second for v in row) < 1e-4
    assert outputs["weight_same_on_devices"]["text"] == "True"
    assert outputs["weight_not_initialized_on"]["text"].startswith("not applicable in PyTorch")
    assert re.search(r"^test acc: 0\.\d\d, \d+\.\d sec/epoch on \[device\(type='cpu'\), "
                     r"device\(type='cpu'\)\]$", stdout, re.MULTILINE)
    assert "pass-through" in record["notes"]["data_parallel"]["resnet18_2_devices"]


def test_gluon_resnet18_is_d2ls_for_one_channel(torch_python):
    got = run_program(torch_python, f"""
        import importlib.util, json
        import torch
        spec = importlib.util.spec_from_file_location("g", {str(REPO / "scripts" /
                                                              section("multi_gpu_gluon"))!r})
        g = importlib.util.module_from_spec(spec); spec.loader.exec_module(g)
        net = g.resnet18(10)
        net.apply(g.init_weights)
        y = net(torch.rand(2, 1, 28, 28))
        print(json.dumps([list(y.shape), sum(p.numel() for p in net.parameters()),
                          float(net[0].weight.std())]))
    """)
    shape, parameters, std = got
    assert shape == [2, 10]
    assert parameters == 11_175_818  # what the MXNet twin's net trains (running stats aside)
    assert 0.008 < std < 0.012


def test_gluon_on_gpu_without_gpus_is_skipped_with_the_reason(torch_python, tmp_path):
    done = run(torch_python, "multi_gpu_gluon", tmp_path, *GLUON[2:], "--on", "gpu")
    assert done.returncode == 0, done.stderr
    assert (read_run(tmp_path)["status"], read_run(tmp_path)["reason"]) == (
        "skipped", "needs 2 GPUs, found 0")


@pytest.mark.parametrize("name", ["multi_gpu_scratch", "multi_gpu_gluon"])
def test_help_works_standalone_without_importing_torch(torch_python, name):
    got = run_program(torch_python, f"""
        import json, runpy, sys, contextlib, io
        sys.argv = ["x", "--help"]
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                runpy.run_path({str(REPO / "scripts" / section(name))!r}, run_name="__main__")
        except SystemExit:
            pass
        print(json.dumps(["torch" in sys.modules, "--devices" in out.getvalue()]))
    """)
    assert got == [False, True]

