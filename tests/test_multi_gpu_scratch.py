"""The from-scratch multi-device section, run for real on CPU contexts cpu(0), cpu(1)
with a small workload, and the training helpers it shares with the Gluon section."""

import io
import json
import os
import re
import subprocess
import textwrap

import pytest

from conftest import REPO, read_rows, run_section
from d2lperf import training

MXNET_SCRIPT = "sections/multi_gpu_scratch/multi_gpu_scratch_mxnet.py"  # under scripts/

SMALL = ("--on", "cpu", "--devices", "1", "2", "--batch-sizes", "64", "64",
         "--learning-rates", "0.2", "0.2", "--epochs", "2", "--data-workers", "0",
         "--train-limit", "512", "--test-limit", "256", "--threads", "1")

# As seeds/000 prints them (the seed text lost print's trailing spaces before newlines).
DOCUMENT = {
    "allreduce_before": "[\n[[1. 1.]]\n<NDArray 1x2 @cpu(0)>,\n[[2. 2.]]\n<NDArray 1x2 @cpu(1)>]",
    "allreduce_after": "[\n[[3. 3.]]\n<NDArray 1x2 @cpu(0)>,\n[[3. 3.]]\n<NDArray 1x2 @cpu(1)>]",
    "b1_weight": "\n[0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0. 0.]\n"
                 "<NDArray 20 @cpu(0)>",
    "split_input": "\n[[ 0.  1.  2.  3.]\n [ 4.  5.  6.  7.]\n [ 8.  9. 10. 11.]\n"
                   " [12. 13. 14. 15.]\n [16. 17. 18. 19.]\n [20. 21. 22. 23.]]\n"
                   "<NDArray 6x4 @cpu(0)>",
    "split_output": "[\n[[ 0.  1.  2.  3.]\n [ 4.  5.  6.  7.]\n [ 8.  9. 10. 11.]]\n"
                    "<NDArray 3x4 @cpu(0)>,\n[[12. 13. 14. 15.]\n [16. 17. 18. 19.]\n"
                    " [20. 21. 22. 23.]]\n<NDArray 3x4 @cpu(1)>]",
}


def run(python, out, *args):
    return run_section(python, MXNET_SCRIPT, out, *args)


rows = read_rows


@pytest.fixture(scope="module")
def scratch_run(tmp_path_factory, experiment_python):
    out = tmp_path_factory.mktemp("multi_gpu_scratch")
    done = run(experiment_python, out, *SMALL)
    assert done.returncode == 0, done.stderr
    return out, json.loads((out / "run.json").read_text()), done.stdout


def test_one_row_per_epoch_and_metric_for_each_run(scratch_run):
    out, _, _ = scratch_run
    table = rows(out)
    assert [(r["case"], r["epoch"], r["metric"], r["unit"], r["repeat"], r["devices"])
            for r in table] == [
        (case, str(epoch), metric, unit, "0", where)
        for case, where in (("lenet_1_device", "cpu(0)"), ("lenet_2_devices", "cpu(0),cpu(1)"))
        for epoch in (1, 2)
        for metric, unit in (("time", "s"), ("accuracy", "fraction"), ("loss", ""))
    ]
    values = {(r["case"], r["epoch"], r["metric"]): float(r["value"]) for r in table}
    for (_, _, metric), value in values.items():
        if metric == "time":
            assert 0 < value < 30
        elif metric == "accuracy":
            assert 0 <= value <= 1
        else:  # an untrained 10-class softmax starts at ln(10) = 2.30
            assert 1.5 < value < 3.0


def test_documents_printed_outputs_are_reproduced(scratch_run):
    _, run_record, _ = scratch_run
    outputs = run_record["outputs"]
    for name, text in DOCUMENT.items():
        assert outputs[name]["text"].replace(" \n", "\n") == text, name
    assert outputs["b1_weight"]["values"] == [0.0] * 20
    assert outputs["b1_grad"]["values"] == [0.0] * 20
    assert outputs["b1_grad"]["text"] == outputs["b1_weight"]["text"]
    assert outputs["allreduce_before"]["values"] == [[[1.0, 1.0]], [[2.0, 2.0]]]
    assert outputs["allreduce_after"]["values"] == [[[3.0, 3.0]], [[3.0, 3.0]]]
    assert outputs["split_output"]["values"] == [
        [[4.0 * r + c for c in range(4)] for r in half] for half in ((0, 1, 2), (3, 4, 5))]


def test_log_shows_each_run_and_epoch_without_a_progress_bar(scratch_run):
    _, _, stdout = scratch_run
    assert "running on: [cpu(0)]\n" in stdout
    assert "running on: [cpu(0), cpu(1)]\n" in stdout
    epochs = re.findall(r"^epoch (\d), time \d+\.\d sec, loss \d\.\d{4}, test acc \d\.\d\d$",
                        stdout, flags=re.MULTILINE)
    assert epochs == ["1", "2", "1", "2"]
    assert "\r" not in stdout


def test_run_record_says_how_it_ran(scratch_run):
    _, run_record, _ = scratch_run
    assert run_record["status"] == "ok"
    assert run_record["parameters"] == {
        "threads": 1, "probe_seconds": 0.2, "on": "cpu", "devices": [1, 2], "batch_sizes": [64, 64],
        "learning_rates": [0.2, 0.2], "epochs": 2, "data_dir": None, "data_download": False,
        "data_workers": 0, "train_limit": 512, "test_limit": 256, "seed": 0}
    assert run_record["threads"]["OMP_NUM_THREADS"] == "1"
    assert run_record["notes"]["train_examples_per_epoch"] == {
        "lenet_1_device": 512, "lenet_2_devices": 512}


def test_same_seed_same_training(scratch_run, experiment_python, tmp_path):
    out, _, _ = scratch_run
    done = run(experiment_python, tmp_path, *SMALL)
    assert done.returncode == 0, done.stderr
    untimed = [(r["case"], r["epoch"], r["metric"], r["value"])
               for r in rows(out) if r["metric"] != "time"]
    assert untimed == [(r["case"], r["epoch"], r["metric"], r["value"])
                       for r in rows(tmp_path) if r["metric"] != "time"]


def test_another_seed_another_training(scratch_run, experiment_python, tmp_path):
    """--seed 1 starts from other parameters and another order of the data: every loss
    differs from seed 0's (which the run above trained)."""
    out, _, _ = scratch_run
    done = run(experiment_python, tmp_path, *SMALL, "--seed", "1")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "run.json").read_text())["parameters"]["seed"] == 1
    losses = [[r["value"] for r in rows(folder) if r["metric"] == "loss"]
              for folder in (out, tmp_path)]
    assert len(losses[0]) == len(losses[1]) == 4
    assert all(a != b for a, b in zip(*losses))


def test_too_few_gpus_skip_the_section(experiment_python, tmp_path):
    # More GPUs than any machine has, so this holds on GPU machines too.
    done = run(experiment_python, tmp_path, "--on", "gpu", "--devices", "64",
               "--batch-sizes", "64", "--learning-rates", "0.1")
    assert done.returncode == 0, done.stderr
    run_record = json.loads((tmp_path / "run.json").read_text())
    assert run_record["status"] == "skipped"
    assert re.fullmatch(r"needs 64 GPUs, found \d+", run_record["reason"])
    assert run_record["needs"] == "gpus"
    assert run_record["outputs"] == {}
    assert (tmp_path / "samples.csv").read_text() == (
        "section,framework,case,metric,unit,process,repeat,position,value,epoch,devices,"
        "format_version\n")


@pytest.mark.parametrize("args, message", [
    (("--devices", "0"), "--devices: must be a positive integer, got 0"),
    (("--learning-rates", "-0.1"), "--learning-rates: must be a positive number, got '-0.1'"),
    (("--on", "tpu"), "argument --on: invalid choice: 'tpu'"),
    (("--devices", "1", "2", "--batch-sizes", "64"),
     "--devices, --batch-sizes and --learning-rates need one value per run; "
     "got 2, 1 and 2 values"),
    (("--devices", "2", "--batch-sizes", "63", "--learning-rates", "0.1"),
     "batch size 63 does not split evenly over 2 devices"),
])
def test_bad_options_exit_2(experiment_python, tmp_path, args, message):
    done = run(experiment_python, tmp_path, "--on", "cpu", *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "run.json").exists()


def test_missing_data_set_ends_the_run_with_where_it_looked(experiment_python, tmp_path):
    # data.py always looks in Debian's folder too, which exists on the build machine:
    # point that constant elsewhere in the script's own process, and HOME at an empty
    # folder so that MXNet's cache is not found either.
    start = textwrap.dedent(f"""
        import runpy, sys
        sys.path.insert(0, {str(REPO / "scripts")!r})
        from d2lperf import data
        data.DEBIAN_PACKAGE = data.Path({str(tmp_path / "debian")!r})
        sys.argv[0] = "multi_gpu_scratch_mxnet.py"
        runpy.run_path({str(REPO / "scripts" / MXNET_SCRIPT)!r},
                       run_name="__main__")
    """)
    (tmp_path / "home").mkdir()
    done = subprocess.run(
        [str(experiment_python), "-c", start, *SMALL, "--data-dir", str(tmp_path / "none"),
         "--csv", str(tmp_path / "samples.csv"), "--sidecar", str(tmp_path / "run.json")],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "HOME": str(tmp_path / "home")},
    )
    assert done.returncode == 1, done.stderr
    # the BLAS probe's line may come first: it runs before any section's body
    assert "\nFashion-MNIST was not found intact. Looked in:\n" in "\n" + done.stderr
    for folder in ("none", "home/.mxnet/datasets/fashion-mnist", "debian"):
        assert f"  {tmp_path / folder}: " in done.stderr
    assert "sudo apt-get install dataset-fashion-mnist" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "run.json").exists()


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_only_on_a_terminal():
    log = io.StringIO()
    assert list(training.progress([1, 2, 3], 1, 4, stream=log)) == [1, 2, 3]
    assert log.getvalue() == ""
    terminal = Terminal()
    assert list(training.progress([1, 2, 3, 4], 2, 4, stream=terminal)) == [1, 2, 3, 4]
    shown = terminal.getvalue().split("\r")
    assert shown[1] == "epoch 2/4 [#######                       ] 1/4"
    assert shown[4] == "epoch 2/4 [##############################] 4/4"
    assert shown[-1] == ""  # the bar is erased before the epoch's line


def test_epoch_line_is_the_documents_with_the_loss():
    assert training.epoch_line(1, 112.6, 2.30214, 0.1) == (
        "epoch 1, time 112.6 sec, loss 2.3021, test acc 0.10")


def test_case_names_the_report_keys_on():
    assert training.case_name("lenet", 1) == "lenet_1_device"
    assert training.case_name("lenet", 2) == "lenet_2_devices"
