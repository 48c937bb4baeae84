"""Records carry a format_version; one function reads every older format.

tests/data/ci-old-format.tar.gz is a real archive of the previous format: a CI-preset run
(both frameworks, every section) archived by d2lperf archive at 560539c, keeping
its run records and tables (the plots, logs and report left out, for size)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import tarfile

import pytest

from conftest import REPO
from d2lperf import frameworks
from d2lperf.results import COLUMNS, FORMAT_VERSION, Recorder, migrate_run, read_run, write_csv
from d2lperf.tables import TableError, load_samples, read_table, summary_schema

OLD_ARCHIVE = REPO / "tests/data/ci-old-format.tar.gz"
SCHEMA = REPO / "workflow/schemas/samples.schema.yaml"


@pytest.fixture(scope="module")
def old_results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("old")
    with tarfile.open(OLD_ARCHIVE) as archive:
        archive.extractall(folder, filter="data")
    return folder / "ci-test-machine"


def test_the_archive_is_of_the_previous_format(old_results):
    runs = sorted(old_results.glob("*/run.json"))
    assert len(runs) == 15
    assert not any("format_version" in json.loads(p.read_text()) for p in runs)


# What format 3 keeps in fields that older records said in words.
FIELDS_FROM_WORDS = {"outputs", "notes", "needs"}


@pytest.mark.slow  # over half a second on 2 cores
def test_every_old_record_reads_in_the_current_format(old_results):
    by_design = 0
    for path in sorted(old_results.glob("*/run.json")):
        before = json.loads(path.read_text())
        after = read_run(path)
        kept = {k: v for k, v in after.items() if k not in FIELDS_FROM_WORDS}
        renamed = {("section" if k == "experiment" else k): v for k, v in before.items()}
        assert "experiment" in before and "experiment" not in after
        assert kept == {**{k: v for k, v in renamed.items() if k not in FIELDS_FROM_WORDS},
                        "format_version": FORMAT_VERSION}, path
        assert after.get("notes") == before.get("notes"), path  # no training run left out
        for name, got in (before.get("outputs") or {}).items():
            new = dict(after["outputs"][name])
            designed = new.pop("by_design", None)
            assert new == got, (path, name)  # the same output, a field perhaps added
            if got["text"].startswith("not applicable in "):
                assert designed == got["text"], (path, name)
                by_design += 1
            else:
                assert designed == got.get("by_design"), (path, name)
        assert after["framework"] in frameworks.FRAMEWORKS
        samples = load_samples(path.parent / "samples.csv", SCHEMA)  # the tables read as they are
        assert set(samples["framework"]) <= {after["framework"]}, path
        assert set(samples["section"]) <= {after["section"]} and "experiment" not in samples
    assert by_design >= 2  # PyTorch's hybridize said "not applicable in PyTorch" twice


def test_an_older_archives_tables_read_under_the_current_names(old_results):
    """Before format 3 the section was ``experiment`` and the documents' heading
    ``section``; the verdicts named the section ``section`` already."""
    summary = read_table(old_results / "summary.csv")
    assert {"section", "heading", "format_version"} - set(summary) == {"format_version"}
    assert "experiment" not in summary and "hybridize" in set(summary["section"])
    assert summary["heading"].str.contains("[\u4e00-\u9fff]").any()  # the documents' headings
    verdicts = read_table(old_results / "verdicts.csv")
    assert "hybridize" in set(verdicts["section"]) and "heading" not in verdicts


@pytest.mark.parametrize("older, fields", [
    ({"status": "skipped", "reason": "needs 2 GPUs, found 0"}, {"needs": "gpus"}),
    ({"status": "skipped", "reason": "MXNet 1.9.1 has no kernels for NVIDIA H200, compute "
      "capability 9.0 (its newest is sm_86); the PyTorch sections run on it"},
     {"needs": "gpu_code"}),
    ({"status": "skipped", "reason": "CPU contexts need --threads 1 with OpenBLAS 0.3.13"},
     {}),
    ({"status": "ok", "notes": {"runs_not_run": {"resnet18_2_devices":
                                                 "needs 2 GPUs, found 1"}}},
     {"notes": {"runs_not_run": {"resnet18_2_devices": {
         "devices": 2, "reason": "needs 2 GPUs, found 1", "needs": "gpus"}}}}),
])
def test_what_older_records_said_in_words_becomes_fields(older, fields):
    """The report reads what a section needs and a left-out run's device count from
    fields; a record of format 2 said them in words, read once, in the migration."""
    record = {"experiment": "multi_gpu_gluon", "framework": "mxnet", "format_version": 2,
              **older}
    migrated = migrate_run(record)
    assert {k: migrated.get(k) for k in ("needs", "notes")} == {
        "needs": None, "notes": older.get("notes"), **fields}
    assert migrate_run(migrated) == migrated


def test_a_record_from_before_two_frameworks_is_the_documents_frameworks(old_results):
    record = json.loads((old_results / "hybridize/run.json").read_text())
    del record["framework"]
    assert migrate_run(record)["framework"] == frameworks.DOCUMENTS
    assert migrate_run(migrate_run(record)) == migrate_run(record)


@pytest.mark.parametrize("version", [FORMAT_VERSION + 1, 0, "2"])
def test_a_format_this_code_does_not_know_is_refused(version):
    with pytest.raises(ValueError, match="format_version .* is not one this code reads"):
        migrate_run({"section": "hybridize", "format_version": version})


def test_new_records_carry_the_current_format(tmp_path):
    """A failed section's record, as record_failure writes it (the harness's is checked
    in every section's run by the workflow tests)."""
    log = tmp_path / "x.log"
    log.write_text("boom\n")
    subprocess.run([sys.executable, "-m", "d2lperf", "record-failure",
                    "--section", "hybridize", "--exit-code", "1", "--log", str(log),
                    "--csv", str(tmp_path / "s.csv"), "--sidecar", str(tmp_path / "r.json")],
                   check=True, capture_output=True)
    assert json.loads((tmp_path / "r.json").read_text())["format_version"] == FORMAT_VERSION


HEADER = ",".join(COLUMNS)  # the harness's, format_version last


@pytest.mark.parametrize("version", ["", "3"])
def test_a_table_of_this_or_an_older_format_reads_in_the_current_one(tmp_path, version):
    path = tmp_path / "samples.csv"
    path.write_text(f"{HEADER}\nhybridize,mxnet,a,time,s,0,0,0,0.5,,,{version}\n")
    assert list(load_samples(path, SCHEMA)["format_version"]) == [FORMAT_VERSION]


@pytest.mark.parametrize("version", [str(FORMAT_VERSION + 1), "0", "three", "3.5"])
def test_a_table_of_a_format_this_code_does_not_know_is_refused_by_name(tmp_path, version):
    path = tmp_path / "samples.csv"
    path.write_text(f"{HEADER}\nhybridize,mxnet,a,time,s,0,0,0,0.5,,,{version}\n")
    with pytest.raises(TableError) as refused:
        load_samples(path, SCHEMA)
    assert str(refused.value) == (
        f"{path}: row 2: format_version {version!r} is not one this code reads (1 to "
        f"{FORMAT_VERSION}); a newer format needs newer code")


def test_new_tables_carry_the_current_format(tmp_path):
    """The harness's rows (summarise's tables: the stored view, test_report_view)."""
    recorder = Recorder("hybridize", "mxnet")
    recorder.samples("a", "time", "s", [0.5])
    write_csv(tmp_path / "samples.csv", recorder.rows)
    with open(tmp_path / "samples.csv", newline="") as handle:
        assert [row["format_version"] for row in csv.DictReader(handle)] == [str(FORMAT_VERSION)]


@pytest.mark.slow  # over a second on 2 cores
def test_an_archive_of_the_previous_format_imports_and_is_compared(tmp_path):
    """What `make report` does with an archive kept from before format 3: import it (its
    records checked in the current format), then compare its tables with this machine's."""
    from d2lperf.commands import compare

    done = subprocess.run([sys.executable, "-m", "d2lperf", "import",
                           "--results", str(tmp_path), "--as", "old-box", str(OLD_ARCHIVE)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    folder = tmp_path / "old-box"
    validator = summary_schema(REPO / "workflow/schemas")
    assert compare.usable(folder / "summary.csv", validator) is None
    assert compare.readable_verdicts(folder / "verdicts.csv") is None
    assert "hybridize" in set(compare.load([folder / "summary.csv"])["section"])
