"""Corrupt results on disk are refused by name (file, row, column, or what is wrong), and
one machine's bad table never stops the comparison of the others."""

import csv
import json
import subprocess

import pytest
import summarise

from conftest import REPO, WORKFLOW_PYTHON
from d2lperf.results import RecordError
from d2lperf.tables import TableError

SCHEMA = REPO / "workflow/schemas/samples.schema.yaml"
HEADER = "section,framework,case,metric,unit,process,repeat,position,value,epoch,devices\n"
ROW = "hybridize,mxnet,mlp_before_hybridize,time,s,0,{repeat},0,{value},,\n"


def section(root, values=("0.4", "0.5"), record=None, folder="hybridize"):
    out = root / folder
    out.mkdir(parents=True)
    (out / "samples.csv").write_text(HEADER + "".join(
        ROW.format(repeat=i, value=v) for i, v in enumerate(values)))
    (out / "run.json").write_text(record if record is not None else json.dumps(
        {"section": "hybridize", "framework": "mxnet", "status": "ok"}))
    return out / "run.json"


def refusal(sidecar) -> str:
    """What summarise refuses the section's results with (its message, as it prints it)."""
    with pytest.raises((TableError, RecordError)) as refused:
        summarise.load_runs([sidecar], SCHEMA)
    return str(refused.value)


@pytest.mark.parametrize("value, message", [
    ("nan", "row 3: value: 'nan' is not of type 'number'"),
    ("inf", "row 3: value: 'inf' is not of type 'number'"),
    ("-5.0", "row 3: value: -5.0 is less than or equal to the minimum of 0"),
])
def test_a_corrupt_sample_is_refused_naming_file_row_and_column(tmp_path, value, message):
    sidecar = section(tmp_path / "r", values=("0.4", value))
    assert refusal(sidecar) == f"{sidecar.with_name('samples.csv')}: {message}"


@pytest.mark.parametrize("record, message", [
    ('{"section": "hybr', "not JSON (cut short or corrupt?)"),
    ("[]", "not a run record: the record: [] is not of type 'object'"),
    ('{"status": "ok"}', "not a run record: the record: 'section' is a required property"),
    ('{"section": "hybridize", "status": "fine"}', "not a run record: status: 'fine'"),
    ('{"section": "hybridize", "framework": "jax", "status": "ok"}',
     "not a run record: framework: 'jax' is not one of ['mxnet', 'pytorch']"),
    ('{"section": "async_computation", "framework": "mxnet", "status": "ok"}',
     "the run record of async_computation"),
    ('{"section": "hybridize", "framework": "pytorch", "status": "ok"}',
     "the run record of hybridize_pytorch"),
])
def test_a_corrupt_run_record_is_refused_naming_the_file(tmp_path, record, message):
    sidecar = section(tmp_path / "r", record=record)
    assert refusal(sidecar).startswith(f"{sidecar}: {message}")


SUMMARY = ["section", "case", "metric", "epoch", "unit", "devices", "label", "count",
           "min", "median", "max", "ci_low", "ci_high", "status", "framework"]


def machine(root, name, median, ci_low, ci_high):
    folder = root / name
    folder.mkdir(parents=True)
    with open(folder / "summary.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, SUMMARY)
        writer.writeheader()
        writer.writerow({"section": "hybridize", "case": "mlp", "metric": "time",
                         "unit": "s", "count": 6, "min": median / 2, "median": median,
                         "max": median * 2, "ci_low": ci_low, "ci_high": ci_high,
                         "status": "ok", "framework": "mxnet"})
    (folder / "verdicts.csv").write_text("framework,name,claim,verdict\n"
                                         "mxnet,hybridize_speeds_up_mlp,c,holds\n")
    return folder


def test_one_machines_meaningless_interval_never_stops_the_comparison(tmp_path):
    """An interval below its median (ci_high < median) once made every later run fail
    drawing the plot; now that machine is skipped, named in the log, and the rest compared."""
    here = machine(tmp_path, "here", 0.4, 0.35, 0.45)
    good = machine(tmp_path, "good", 0.2, 0.15, 0.25)
    bad = machine(tmp_path, "bad", 0.4, 0.1, 0.3)
    folders = [here, good, bad]
    done = subprocess.run(
        [str(WORKFLOW_PYTHON), str(REPO / "scripts/compare.py"),
         "--summaries", *[str(f / "summary.csv") for f in folders],
         "--verdicts", *[str(f / "verdicts.csv") for f in folders], "--baseline", "here",
         "--table", str(tmp_path / "comparison.csv"),
         "--verdicts-table", str(tmp_path / "by_machine.csv"),
         "--plot", str(tmp_path / "plots/comparison.svg")],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "machine bad skipped" in done.stderr
    assert "row 2: median 0.4 is above ci_high 0.3" in done.stderr
    with open(tmp_path / "comparison.csv", newline="") as handle:
        compared = {r["machine"] for r in csv.DictReader(handle)}
    assert compared == {"here", "good"}
    assert (tmp_path / "plots/comparison.svg").exists()


def test_summarise_says_which_file_and_ends_1(tmp_path):
    sidecar = section(tmp_path / "r", record="[]")
    done = subprocess.run(
        [str(WORKFLOW_PYTHON), str(REPO / "scripts/summarise.py"), "--runs", str(sidecar),
         "--reference", str(REPO / "report/reference.csv"), "--schema", str(SCHEMA),
         "--summary", str(tmp_path / "summary.csv"), "--outputs", str(tmp_path / "o.csv"),
         "--verdicts", str(tmp_path / "v.csv")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert f"error: {sidecar}: not a run record" in done.stderr
    assert "Traceback" not in done.stderr
