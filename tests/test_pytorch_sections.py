"""Every PyTorch section script, run for real in the PyTorch environment at the CI preset's
small sizes: schema-valid rows with the MXNet twins' case and metric names, the printed
outputs, and the GPU code paths on their CPU stand-ins (``--on cpu``) or skipped with
the reason (``--on gpu`` here, where there is no GPU)."""

from __future__ import annotations

import re

import pytest

from conftest import (
    REPO,
    from_the_ci_run,
    measure_section,
    read_rows,
    read_run,
    run_program,
    run_section,
)
from d2lperf import sections as section_table
from d2lperf import tables

SCHEMA = REPO / "workflow/schemas/samples.schema.yaml"


def section(name: str) -> str:
    return f"sections/{name}/{name}_pytorch.py"


def run(python, name, out, *args, timeout=600):
    return run_section(python, section(name), out, *args, timeout=timeout)


def valid_rows(out):
    """The rows, after checking them against the samples schema: every one PyTorch's."""
    frame = tables.load_samples(out / "samples.csv", SCHEMA)
    assert len(frame) > 0
    assert set(frame["framework"]) == {"pytorch"}
    return read_rows(out)


# --- multi_gpu_scratch -------------------------------------------------------------------

SCRATCH = ("--on", "cpu", "--devices", "1", "2", "--batch-sizes", "256", "256",
           "--learning-rates", "0.2", "0.2", "--epochs", "2", "--data-workers", "0",
           "--train-limit", "2048", "--test-limit", "512", "--threads", "1")


@pytest.fixture(scope="module")
def scratch(ci_run):
    return from_the_ci_run(ci_run, "multi_gpu_scratch", "pytorch")


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
    assert "first backward pass" in outputs["b1_grad"]["by_design"]  # a field, not the text
    assert record["execution"] == {"device_kind": "cpu", "queues_work": False,
                                   "separate_devices": False}
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
    assert record["reason"] == "needs 1 GPU, found 0"  # not even the 1-GPU run fits
    assert read_rows(tmp_path) == []


# --- multi_gpu_gluon ---------------------------------------------------------------------

GLUON = ("--on", "cpu", "--devices", "1", "2", "--batch-sizes", "16", "32",
         "--learning-rates", "0.1", "0.2", "--epochs", "1", "--data-workers", "0",
         "--train-limit", "64", "--test-limit", "64", "--threads", "1")


@pytest.fixture(scope="module")
def gluon(ci_run):
    return from_the_ci_run(ci_run, "multi_gpu_gluon", "pytorch")


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
    # N(0, 0.01) weights through 18 layers leave little but the last layer's bias, which
    # the book's PyTorch init keeps at PyTorch's default, |b| <= 1/sqrt(512) = 0.044 (the
    # MXNet notebook's zero biases printed about 1e-6)
    assert 0 < max(abs(v) for row in first + second for v in row) < 0.05
    assert outputs["weight_same_on_devices"]["text"] == "True"
    # no deferred initialisation in PyTorch: a difference of design, said in its own field
    assert "deferred initialisation" in outputs["weight_not_initialized_on"]["by_design"]
    assert outputs["weight_not_initialized_on"]["text"] == "initialised on cpu"
    assert re.search(r"^test acc: 0\.\d\d, \d+\.\d sec/epoch on \[device\(type='cpu'\), "
                     r"device\(type='cpu'\)\]$", stdout, re.MULTILINE)
    assert "pass-through" in record["notes"]["parallelism"]["resnet18_2_devices"]


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
        bias = net[0].bias.detach().clone()
        net.apply(g.init_weights)  # the book's second run: biases left as they are
        print(json.dumps([list(y.shape), sum(p.numel() for p in net.parameters()),
                          float(net[0].weight.std()), bool((bias != 0).any()),
                          bool(torch.equal(bias, net[0].bias))]))
    """)
    shape, parameters, std, bias_drawn, bias_kept = got
    assert shape == [2, 10]
    assert parameters == 11_175_818  # what the MXNet twin's net trains (running stats aside)
    assert 0.008 < std < 0.012
    assert bias_drawn and bias_kept  # as the book's init_weights: PyTorch's default biases


def test_gluon_on_gpu_without_gpus_is_skipped_with_the_reason(torch_python, tmp_path):
    done = run(torch_python, "multi_gpu_gluon", tmp_path, *GLUON[2:], "--on", "gpu")
    assert done.returncode == 0, done.stderr
    assert (read_run(tmp_path)["status"], read_run(tmp_path)["reason"]) == (
        "skipped", "needs 1 GPU, found 0")


@pytest.mark.parametrize("name", ["hybridize", "async_computation", "async_memory",
                                  "auto_parallelism", "small_ops_parallel",
                                  "multi_gpu_scratch", "multi_gpu_gluon"])
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
        print(json.dumps(["torch" in sys.modules, "--csv" in out.getvalue()]))
    """)
    assert got == [False, True]



def cases(rows) -> dict[str, int]:
    """How many rows each case has."""
    found: dict[str, int] = {}
    for row in rows:
        found[row["case"]] = found.get(row["case"], 0) + 1
    return found


# --- hybridize ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def hybridize(ci_run):
    return from_the_ci_run(ci_run, "hybridize", "pytorch")


def test_hybridize_times_eager_scripted_and_compiled_and_compiling_apart(hybridize):
    out, record, _ = hybridize
    table = valid_rows(out)
    # every process scripts and times the MLP; only the first also times compiling
    processes = len(record["processes"])
    rounds = record["parameters"]["repeats"] * processes
    assert cases(table) == {"mlp_before_hybridize": rounds, "mlp_before_hybridize_twin": rounds,
                            "mlp_after_hybridize": rounds,
                            "mlp_torch_compile": rounds, "torch_compile_cold": 1,
                            "torch_compile_warm": 1, "jit_script_compile": processes}
    assert {r["devices"] for r in table} == {"cpu"}
    assert {r["metric"] for r in table} == {"time"}
    assert "failed_cases" not in record["notes"]
    assert "fresh process" in record["notes"]["torch_compile_times"]


def test_hybridize_outputs_agree_across_eager_script_and_compile(hybridize):
    _, record, _ = hybridize
    outputs = record["outputs"]
    eager = outputs["mlp_output_imperative"]["values"][0]
    for name in ("mlp_output_hybridized", "mlp_output_compiled"):
        assert outputs[name]["values"][0] == pytest.approx(eager, abs=1e-5), name
    assert outputs["symbolic_program_result"]["text"] == "10"
    assert "call_module" in outputs["mlp_symbolic_output"]["text"]
    # the HybridBlock demo's counterpart: traced once with proxies, then never run again
    assert outputs["hybridnet_x_hybridized"]["text"] == "Proxy(x)"
    assert outputs["hybridnet_hidden_hybridized"]["text"] == "Proxy(relu)"
    assert outputs["hybridnet_prints_after_first_hybridized_call"]["text"] == "0"
    assert (outputs["hybridnet_output_hybridized"]["values"]
            == outputs["hybridnet_output_imperative"]["values"])
    # forward takes no F: a difference of design, said in its own field, not in the text
    for name, seen in (("hybridnet_F_imperative", "Tensor"), ("hybridnet_F_hybridized", "Proxy")):
        assert outputs[name]["text"] == f"forward saw a {seen}"
        assert "no F" in outputs[name]["by_design"]


def test_hybridize_saved_models_load_and_compute_the_same(hybridize, torch_python):
    out, record, _ = hybridize
    assert record["artifacts"] == ["my_mlp", "my_mlp.pt2"]
    got = run_program(torch_python, f"""
        import json
        import torch
        export = {str(out / "model")!r}
        x = torch.ones(1, 512)
        scripted = torch.jit.load(export + "/my_mlp")
        exported = torch.export.load(export + "/my_mlp.pt2").module()
        print(json.dumps(torch.allclose(scripted(x), exported(x), atol=1e-6)))
    """)
    assert got is True


def test_hybridize_records_a_failing_torch_compile_and_goes_on(torch_python, tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CXX": "/bin/false"}
    done = run_section(torch_python, section("hybridize"), tmp_path, "--forward-passes", "5",
                       "--repeats", "1", "--compile-runs", "1", "--threads", "1",
                       "--export-dir", str(tmp_path / "export"), env=env)
    assert done.returncode == 0, done.stderr
    record = read_run(tmp_path)
    assert record["status"] == "ok"
    reason = record["notes"]["failed_cases"]["mlp_torch_compile"]
    assert reason.startswith("failed: ") and "compiler" in reason.lower()
    assert set(record["notes"]["failed_cases"]) == {
        "mlp_torch_compile", "torch_compile_cold", "torch_compile_warm"}
    assert record["outputs"]["mlp_output_compiled"]["text"] == reason
    assert set(cases(read_rows(tmp_path))) == {
        "mlp_before_hybridize", "mlp_before_hybridize_twin", "mlp_after_hybridize",
        "jit_script_compile"}


# --- async_computation -------------------------------------------------------------------

ASYNC_CASES = {"dot_sum_queued", "dot_sum_finished", "dot_no_sync", "dot_wait_to_read",
               "dot_waitall", "dot_asscalar", "dot_asnumpy", "add_loop_synchronous",
               "add_loop_asynchronous"}


def test_async_computation_has_the_mxnet_twins_cases_and_says_cpu_is_eager(torch_python,
                                                                             tmp_path):
    done = run(torch_python, "async_computation", tmp_path, "--size", "500",
               "--loop-iterations", "100", "--warmup", "1", "--repeats", "3", "--threads", "1")
    assert done.returncode == 0, done.stderr
    table = valid_rows(tmp_path)
    assert cases(table) == dict.fromkeys(ASYNC_CASES, 3)
    assert {r["devices"] for r in table} == {"cpu"}
    record = read_run(tmp_path)
    assert "runs each op to its end" in record["notes"]["eager_on_cpu"]
    # the sum of a uniform [0, 1) matrix's square: about n^3 / 4
    assert record["outputs"]["dot_sum"]["values"] == pytest.approx(500**3 / 4, rel=0.05)


def test_async_computation_on_gpu_without_one_is_skipped(torch_python, tmp_path):
    done = run(torch_python, "async_computation", tmp_path, "--size", "10", "--on", "gpu")
    assert done.returncode == 0, done.stderr
    assert read_run(tmp_path)["reason"] == "needs 1 GPU, found 0"


# --- async_memory ------------------------------------------------------------------------

def test_async_memory_runs_each_mode_in_fresh_processes(ci_run):
    out, record, log = from_the_ci_run(ci_run, "async_memory", "pytorch")
    table = valid_rows(out)
    given = record["parameters"]
    repeats, last = given["repeats"], f"batch_{given['batches']}"
    marks = [f"batch_{b}" for b in range(given["report_every"], given["batches"] + 1,
                                          given["report_every"])]
    expected = {f"{mode}_{figure}": repeats for mode in ("sync", "async")
                for figure in (*marks, "total", "memory_increase", "peak_memory_increase",
                               "warmed_total", "warmed_memory_increase",
                               "warmed_peak_memory_increase")}
    assert last in marks and cases(table) == expected
    units = {r["case"]: r["unit"] for r in table}
    assert units["sync_memory_increase"] == "MB" and units["async_total"] == "s"
    for row in table:
        if row["case"].endswith(f"_{last}") or row["case"].endswith("_total"):
            assert float(row["value"]) > 0
    # 2 ways (the document's, warmed) x 2 modes x one fresh process per repeat
    assert log.count("increased memory:") == 4 * repeats


def test_async_memory_gpu_figures_are_guarded(torch_python):
    """On a GPU the child also reads torch.cuda's allocator peak; here, with torch.cuda's
    answers stood in for and a CPU device, the same code reads it once per run."""
    got = run_program(torch_python, f"""
        import argparse, importlib.util, json
        import torch
        from d2lperf import torch as t
        spec = importlib.util.spec_from_file_location("m", {str(REPO / "scripts" /
                                                              section("async_memory"))!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        calls = []
        t.is_cuda = lambda device: True  # the loop's device is the CPU, treated as a GPU
        torch.cuda.synchronize = lambda device=None: calls.append("synchronize")
        torch.cuda.reset_peak_memory_stats = lambda device=None: calls.append("reset")
        torch.cuda.memory_allocated = lambda device=None: 1_000_000
        torch.cuda.max_memory_allocated = lambda device=None: 5_000_000
        args = argparse.Namespace(on="cpu", batches=2, batch_size=8, report_every=1, warmup=0)
        figures = m.train("async", args)
        print(json.dumps([figures["gpu_max_memory_allocated"], calls[:2]]))
    """)
    assert got == [4.0, ["synchronize", "reset"]]


# --- auto_parallelism --------------------------------------------------------------------

AUTO = ("--cpu-size", "200", "--gpu-size", "300", "--dots", "10", "--warmup", "1",
        "--repeats", "3", "--threads", "1")


def test_auto_parallelism_on_the_cpu_stand_in(torch_python, tmp_path):
    done = run(torch_python, "auto_parallelism", tmp_path, *AUTO, "--on", "cpu")
    assert done.returncode == 0, done.stderr
    table = valid_rows(tmp_path)
    assert cases(table) == dict.fromkeys(
        ["cpu_only", "gpu_only", "cpu_and_gpu", "gpu_compute", "copy_to_cpu",
         "compute_and_copy"], 3)
    where = {r["case"]: r["devices"] for r in table}
    assert where["cpu_and_gpu"] == "cpu,cpu" and where["copy_to_cpu"] == "cpu,cpu"
    notes = read_run(tmp_path)["notes"]
    assert notes["two_gpus"].endswith("needs 2 GPUs, found 0")
    assert notes["compute_and_copy_streams"] == "not run: CUDA streams need a GPU"
    assert notes["copy_to_cpu_pinned"] == "not run: pinned host memory needs a GPU"
    assert set(notes["gflops"]) == {"cpu_only", "gpu_only", "cpu_and_gpu", "gpu_compute"}
    assert "stand_in" in notes


def test_auto_parallelism_on_gpu_without_one_is_skipped(torch_python, tmp_path):
    done = run(torch_python, "auto_parallelism", tmp_path, *AUTO, "--on", "gpu")
    assert done.returncode == 0, done.stderr
    record = read_run(tmp_path)
    assert (record["status"], record["reason"]) == ("skipped", "needs 1 GPU, found 0")
    assert read_rows(tmp_path) == []


# --- small_ops_parallel ------------------------------------------------------------------

def test_small_ops_parallel_has_the_mxnet_twins_cases_in_fresh_processes(torch_python,
                                                                          tmp_path):
    done = measure_section(torch_python, section("small_ops_parallel"), tmp_path, "--size", "500",
                           "--warmup", "1",
               "--repeats", "3", "--processes", "2", "--threads", "1",
               "--budget-seconds", "0.01")  # one stage (test_stages tests the stages)
    assert done.returncode == 0, done.stderr
    table = valid_rows(tmp_path)
    assert cases(table) == dict.fromkeys(["generate_x", "generate_y", "generate_x_and_y"], 6)
    assert {r["process"] for r in table} == {"0", "1"}
    record = read_run(tmp_path)
    assert record["framework"] == "pytorch"
    assert record["torch"]["threads"]["intra_op"] == 1  # torch's build, in the run record
    assert len(record["processes"]) == 2
    assert record["notes"]["generate_x_and_y_streams"].startswith("not run")


SECTIONS = [s for s in section_table.names() if section_table.SECTIONS[s].has("pytorch")]


def test_every_mxnet_section_has_a_pytorch_twin_of_the_same_name():
    twins = (REPO / "scripts/sections").glob("*/*_pytorch.py")
    assert sorted(p.parent.name for p in twins) == sorted(SECTIONS)


# --- the CUDA branches, with torch.cuda stood in for ---------------------------------------

# A machine with two GPUs, as far as the sections can tell: torch.cuda's answers and
# objects are stand-ins that record what is done with them, and every "GPU" tensor is a
# CPU tensor, so the CUDA branches of the sections' own code run here, step by step.
FAKE_CUDA = """
import contextlib, importlib.util, json, argparse
import torch
from d2lperf import torch as t
from d2lperf.results import Recorder
calls = []

class Stream:
    def __init__(self, device=None): self.name = f"stream{len(calls)}"
    def wait_event(self, event): calls.append(f"wait_event")
    def wait_stream(self, stream): calls.append(f"wait_stream")

class Event:
    def record(self, stream=None): calls.append("event_record")
    def synchronize(self): calls.append("event_synchronize")

@contextlib.contextmanager
def stream(s):
    calls.append("enter_stream"); yield; calls.append("leave_stream")

empty = torch.empty
torch.empty = lambda *a, pin_memory=False, **k: (calls.append(f"pinned={pin_memory}"),
                                                 empty(*a, **k))[1]
torch.cuda.is_available = lambda: True
torch.cuda.is_initialized = lambda: True
torch.cuda.device_count = lambda: 2
torch.cuda.synchronize = lambda device=None: calls.append(f"synchronize {device}")
torch.cuda.Stream, torch.cuda.Event, torch.cuda.stream = Stream, Event, stream
torch.cuda.current_stream = lambda device=None: Stream()
torch.Tensor.record_stream = lambda self, s: calls.append("record_stream")
t.is_cuda = lambda device: True
t.devices = lambda kind, count: [torch.device("cpu")] * count

def load(name):
    path = f"sections/{name}/{name}_pytorch.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
    return module

def args(**options):
    return argparse.Namespace(warmup=0, repeats=1, seed=0, process=0, threads=1, **options)
"""


def test_auto_parallelism_cuda_branches(torch_python):
    got = run_program(torch_python, FAKE_CUDA, """
        section = load("auto_parallelism")
        rec = Recorder("auto_parallelism", "pytorch")
        section.body(args(on="gpu", cpu_size=20, gpu_size=30, dots=3, pair_size=10,
                          pair_dots=2), rec)
        print(json.dumps([sorted({r["case"] for r in rec.rows}), calls, rec.notes]))
    """)
    cases, calls, notes = got
    assert cases == sorted(["cpu_only", "gpu_only", "cpu_and_gpu", "gpu_compute", "copy_to_cpu",
                            "compute_and_copy", "copy_to_cpu_pinned", "compute_and_copy_pinned",
                            "compute_and_copy_streams", "gpu1_only", "gpu2_only",
                            "gpu1_and_gpu2"])
    assert calls.count("pinned=True") == 3  # one pinned host buffer per product, for the extras
    # each streamed copy: an event after its product, waited for on the copy stream
    streamed = ["event_record", "enter_stream", "wait_event", "leave_stream", "record_stream"]
    assert calls[calls.index("event_record"):][:5] == streamed
    assert calls.count("record_stream") == 3
    assert "synchronize 1" in calls  # sync waits for every GPU
    assert "two_gpus" not in notes and "stand_in" not in notes


def test_small_ops_and_async_computation_cuda_branches(torch_python):
    got = run_program(torch_python, FAKE_CUDA, """
        small = load("small_ops_parallel")
        rec = Recorder("small_ops_parallel", "pytorch")
        small.body(args(on="gpu", size=8), rec)
        small_cases, small_calls = sorted({r["case"] for r in rec.rows}), list(calls)
        calls.clear()
        computation = load("async_computation")
        rec = Recorder("async_computation", "pytorch")
        computation.body(args(on="gpu", size=8, loop_iterations=3), rec)
        print(json.dumps([small_cases, small_calls, calls, rec.notes]))
    """)
    small_cases, small_calls, calls, notes = got
    assert "generate_x_and_y_streams" in small_cases
    assert small_calls.count("enter_stream") == 2 and small_calls.count("wait_stream") == 2
    # wait_to_read is an event on the product's stream: once in dot_sum_finished and
    # dot_wait_to_read, once per x + 1 of the synchronous loop
    assert calls.count("event_synchronize") == 1 + 1 + 3
    assert "eager_on_cpu" not in notes
