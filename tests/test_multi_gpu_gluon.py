"""The concise (Gluon) multi-device section, run for real on CPU contexts cpu(0), cpu(1)
at the CI preset (the CI run's results): ResNet-18 costs tens of milliseconds per image on a
CPU core."""

import json
import re

import pytest

from conftest import CI_PROBE_SECONDS, ci_preset, from_the_ci_run, read_rows, run_section

PRESET = ci_preset("multi_gpu_gluon")


def run(python, out, *args):
    return run_section(python, "sections/multi_gpu_gluon/multi_gpu_gluon_mxnet.py", out, *args)


@pytest.fixture(scope="module")
def gluon_run(ci_run):
    """The CI run's (config/config.yaml: one epoch of 128 examples, batches of 32 and 64)."""
    return from_the_ci_run(ci_run, "multi_gpu_gluon", "mxnet")


def test_one_row_per_epoch_and_metric_for_each_run(gluon_run):
    out, _, _ = gluon_run
    table = read_rows(out)
    assert [(r["case"], r["epoch"], r["metric"], r["unit"], r["devices"]) for r in table] == [
        (case, "1", metric, unit, where)
        for case, where in (("resnet18_1_device", "cpu(0)"),
                            ("resnet18_2_devices", "cpu(0),cpu(1)"))
        for metric, unit in (("time", "s"), ("accuracy", "fraction"), ("loss", ""))
    ]
    for row in table:
        value = float(row["value"])
        assert value > 0 if row["metric"] != "accuracy" else 0 <= value <= 1


def test_documents_printed_outputs_are_reproduced(gluon_run):
    _, run_record, _ = gluon_run
    outputs = run_record["outputs"]
    first, second = outputs["net_outputs"]["values"]
    assert [len(first), len(first[0]), len(second), len(second[0])] == [2, 10, 2, 10]
    # N(0, 0.01) weights through 20 layers: outputs of about 1e-6, as in the notebook.
    assert 0 < max(abs(v) for y in (first, second) for row in y for v in row) < 1e-4
    text = outputs["net_outputs"]["text"]
    assert text.index("<NDArray 2x10 @cpu(0)>") < text.index("<NDArray 2x10 @cpu(1)>")
    assert outputs["weight_same_on_devices"]["text"] == "True"
    # On CPU contexts the default context cpu(0) holds the weight: nothing is raised.
    assert outputs["weight_not_initialized_on"]["text"] == ""
    assert "cpu(0) is one of the devices" in run_record["notes"]["weight_not_initialized_on"]


def test_log_shows_each_epoch_and_the_notebooks_summary(gluon_run):
    _, _, stdout = gluon_run
    epochs = re.findall(r"^epoch (\d), time \d+\.\d sec, loss \d+\.\d{4}, test acc \d\.\d\d$",
                        stdout, flags=re.MULTILINE)
    assert epochs == ["1", "1"]
    assert re.search(r"^test acc: \d\.\d\d, \d+\.\d sec/epoch on \[cpu\(0\)\]$", stdout,
                     flags=re.MULTILINE)
    assert re.search(r"^test acc: \d\.\d\d, \d+\.\d sec/epoch on \[cpu\(0\), cpu\(1\)\]$",
                     stdout, flags=re.MULTILINE)


def test_run_record_says_the_workload_it_ran(gluon_run):
    _, run_record, _ = gluon_run
    assert run_record["status"] == "ok"
    # the CI preset's workload, on CPU contexts with one thread per engine queue
    assert run_record["parameters"] == {
        "threads": 1, "probe_seconds": CI_PROBE_SECONDS, "on": "cpu", "data_dir": None,
        "data_download": False, "seed": 0, **PRESET}
    assert run_record["notes"]["train_examples_per_epoch"] == {
        "resnet18_1_device": PRESET["train_limit"], "resnet18_2_devices": PRESET["train_limit"]}


def test_too_few_gpus_skip_the_section(experiment_python, tmp_path):
    # More GPUs than any machine has, so this holds on GPU machines too. (A run that fits
    # beside it would train, the 64-GPU one named as not run: training.fitting_runs.)
    done = run(experiment_python, tmp_path, "--on", "gpu", "--devices", "64",
               "--batch-sizes", "64", "--learning-rates", "0.1")
    assert done.returncode == 0, done.stderr
    assert "multi_gpu_gluon: skipped: needs 64 GPUs, found" in done.stdout
    run_record = json.loads((tmp_path / "run.json").read_text())
    assert run_record["status"] == "skipped"
    assert re.fullmatch(r"needs 64 GPUs, found \d+", run_record["reason"])
    assert run_record["outputs"] == {}
    assert len((tmp_path / "samples.csv").read_text().splitlines()) == 1


def test_bad_option_exits_2(experiment_python, tmp_path):
    done = run(experiment_python, tmp_path, "--epochs", "0")
    assert done.returncode == 2
    assert "--epochs: must be a positive integer, got 0" in done.stderr
    assert not (tmp_path / "run.json").exists()
