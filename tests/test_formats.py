"""Records carry a format_version; one function reads every older format.

tests/data/ci-old-format.tar.gz is a real archive of the previous format: a CI-preset run
(both frameworks, every section) archived by scripts/archive_results.py at 560539c, keeping
its run records and tables (the plots, logs and report left out, for size)."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile

import pytest

from conftest import REPO
from d2lperf import frameworks
from d2lperf.results import FORMAT_VERSION, migrate_run, read_run
from d2lperf.tables import load_samples

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


def test_every_old_record_reads_in_the_current_format(old_results):
    for path in sorted(old_results.glob("*/run.json")):
        before = json.loads(path.read_text())
        after = read_run(path)
        assert after == {**before, "format_version": FORMAT_VERSION}, path
        assert after["framework"] in frameworks.FRAMEWORKS
        samples = load_samples(path.parent / "samples.csv", SCHEMA)  # the tables read as they are
        assert set(samples["framework"]) <= {after["framework"]}, path


def test_a_record_from_before_two_frameworks_is_the_documents_frameworks(old_results):
    record = json.loads((old_results / "hybridize/run.json").read_text())
    del record["framework"]
    assert migrate_run(record)["framework"] == frameworks.DOCUMENTS
    assert migrate_run(migrate_run(record)) == migrate_run(record)


@pytest.mark.parametrize("version", [FORMAT_VERSION + 1, 0, "2"])
def test_a_format_this_code_does_not_know_is_refused(version):
    with pytest.raises(ValueError, match="format_version .* is not one this code reads"):
        migrate_run({"experiment": "hybridize", "format_version": version})


def test_new_records_carry_the_current_format(tmp_path):
    """A failed section's record, as record_failure writes it (the harness's is checked
    in every section's run by the workflow tests)."""
    log = tmp_path / "x.log"
    log.write_text("boom\n")
    subprocess.run([sys.executable, str(REPO / "scripts/record_failure.py"),
                    "--experiment", "hybridize", "--exit-code", "1", "--log", str(log),
                    "--csv", str(tmp_path / "s.csv"), "--sidecar", str(tmp_path / "r.json")],
                   check=True, capture_output=True)
    assert json.loads((tmp_path / "r.json").read_text())["format_version"] == FORMAT_VERSION
