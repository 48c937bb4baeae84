"""A section killed outright (SIGKILL: the OOM killer, a time limit) loses nothing: its
failure is recorded, the last good run's samples and record are kept readable beside it,
the failed record says where and from when, and the report says so.

The section here is a toy that dies by SIGKILL, run by the section rules' own shell line
(workflow/rules/sections.smk): the script, and `d2lperf record-failure` when it fails."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from test_render import cell_text, section, tables

from conftest import REPO, WORKFLOW_PYTHON
from d2lperf import hostlock
from d2lperf.commands import render_report
from d2lperf.results import (
    KEPT_FOLDER,
    Recorder,
    RecordError,
    current_run,
    read_run,
    write_csv,
    write_json,
    write_run,
)

# A section that prints a line and is then killed, as the OOM killer kills one.
KILLED = ("import os, signal\nprint('hybridize: loading the model', flush=True)\n"
          "os.kill(os.getpid(), signal.SIGKILL)\n")
GOOD_RUN = {"format_version": 3, "section": "hybridize", "framework": "mxnet",
            "status": "ok", "started": "2026-01-02T03:04:00+00:00",
            "finished": "2026-01-02T03:05:00+00:00", "wall_seconds": 60.0,
            "parameters": {"repeats": 3, "processes": 2, "warmup": 1}}


def good_run(folder: Path) -> tuple[bytes, bytes]:
    """A good run of hybridize in its folder (18 samples): its samples.csv and run.json."""
    recorder = Recorder("hybridize", "mxnet")
    for case in ("mlp_before_hybridize", "mlp_after_hybridize", "mlp_before_hybridize_twin"):
        recorder.samples(case, "time", "s", [0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    write_csv(folder / "samples.csv", recorder.rows)
    write_json(folder / "run.json", GOOD_RUN)
    return (folder / "samples.csv").read_bytes(), (folder / "run.json").read_bytes()


def run_killed_section(tmp: Path, folder: Path) -> subprocess.CompletedProcess:
    """The section rule's shell line (sections.smk) with the toy for the section's script,
    under Snakemake's own shell settings."""
    script = tmp / "killed.py"
    script.write_text(KILLED)
    csv, sidecar, log = folder / "samples.csv", folder / "run.json", tmp / "hybridize.log"
    q = shlex.quote
    line = (f"set -euo pipefail; {q(str(WORKFLOW_PYTHON))} {q(str(script))}"
            f" --csv {q(str(csv))} --sidecar {q(str(sidecar))} > {q(str(log))} 2>&1"
            f" || {q(str(WORKFLOW_PYTHON))} -m d2lperf record-failure"
            f" --section hybridize --framework mxnet --exit-code $? --log {q(str(log))}"
            f" --csv {q(str(csv))} --sidecar {q(str(sidecar))}")
    # record_failure takes no lock; a host lock of the test's own all the same
    env = {**os.environ, hostlock.LOCK_VARIABLE: str(tmp / "host.lock")}
    return subprocess.run(["bash", "-c", line], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.mark.slow  # over half a second on 2 cores
def test_a_killed_section_keeps_its_earlier_samples_and_says_where(tmp_path):
    args = tables(tmp_path / "results")
    folder = tmp_path / "results" / "hybridize"
    samples, record = good_run(folder)

    done = run_killed_section(tmp_path, folder)

    assert done.returncode == 0, done.stderr
    kept = folder / KEPT_FOLDER
    # the earlier run, byte for byte, and readable as its section's run
    assert (kept / "samples.csv").read_bytes() == samples
    assert (kept / "run.json").read_bytes() == record
    assert read_run(kept / "run.json")["status"] == "ok"
    assert len((kept / "samples.csv").read_text().splitlines()) == 1 + 18
    failed = read_run(folder / "run.json")
    assert failed["status"] == "failed" and failed["exit_code"] == 137
    assert failed["previous"] == {"path": str(kept), "samples": 18,
                                  "started": GOOD_RUN["started"],
                                  "finished": GOOD_RUN["finished"]}
    assert f"its earlier results are kept at {kept}" in done.stderr

    # the report shows the failure with its log, not the earlier figures, and says where
    # those are and from when
    view = render_report.view(args)
    line = next(r for s in view["sections"] if s["section"] == "hybridize"
                for r in s["runs"] if r["framework"] == "MXNet")
    assert line["status"] == "failed"
    assert line["text"] == (f"its earlier results, of 2026-01-02 "
                            f"03:04–03:05 UTC (18 samples), are kept at {kept} and not shown "
                            "here")
    # (the status is a tag of its own: its text is followed by a space before the comma)
    page = cell_text(section(render_report.render(args), "hybridize")).replace(" ,", ",")
    assert f"MXNet: failed, its earlier results, of 2026-01-02 " \
           f"03:04–03:05 UTC (18 samples), are kept at {kept} and not shown here" in page
    assert "hybridize: loading the model" in page  # its log


def test_a_second_failure_keeps_the_same_earlier_run(tmp_path):
    """The last good run stays kept through failures after it: a failed record is never
    kept in its place, and each failed record points at it."""
    folder = tmp_path / "hybridize"
    folder.mkdir()
    samples, record = good_run(folder)
    assert run_killed_section(tmp_path, folder).returncode == 0
    first = json.loads((folder / "run.json").read_text())
    # what a keeping stopped midway leaves (its staging folder) is cleared the next time
    (folder / f".{KEPT_FOLDER}.abc123").mkdir()
    (folder / f".{KEPT_FOLDER}.abc123" / "run.json").write_text("{")

    done = run_killed_section(tmp_path, folder)

    assert done.returncode == 0, done.stderr
    assert (folder / KEPT_FOLDER / "samples.csv").read_bytes() == samples
    assert (folder / KEPT_FOLDER / "run.json").read_bytes() == record
    second = json.loads((folder / "run.json").read_text())
    assert second["previous"] == first["previous"]
    assert sorted(p.name for p in folder.iterdir()) == [KEPT_FOLDER, "run.json", "samples.csv"]


@pytest.mark.slow  # over half a second on 2 cores
def test_a_newer_good_run_replaces_the_kept_one(tmp_path):
    """A good run after a failure, then a failure again: the newer good run is kept."""
    folder = tmp_path / "hybridize"
    folder.mkdir()
    good_run(folder)
    assert run_killed_section(tmp_path, folder).returncode == 0
    write_json(folder / "run.json", {**GOOD_RUN, "started": "2026-02-02T03:04:00+00:00"})
    write_csv(folder / "samples.csv", [])

    assert run_killed_section(tmp_path, folder).returncode == 0

    assert read_run(folder / KEPT_FOLDER / "run.json")["started"] == "2026-02-02T03:04:00+00:00"
    assert (folder / KEPT_FOLDER / "samples.csv").read_text().count("\n") == 1
    assert read_run(folder / "run.json")["previous"]["samples"] == 0
    assert sorted(p.name for p in folder.iterdir()) == [KEPT_FOLDER, "run.json", "samples.csv"]


def test_a_first_failure_keeps_nothing(tmp_path):
    """No earlier good run (none, or one that was skipped): nothing to keep, no pointer."""
    folder = tmp_path / "hybridize"
    folder.mkdir()
    write_json(folder / "run.json", {**GOOD_RUN, "status": "skipped", "reason": "no GPU"})
    write_csv(folder / "samples.csv", [])

    done = run_killed_section(tmp_path, folder)

    assert done.returncode == 0, done.stderr
    assert not (folder / KEPT_FOLDER).exists()
    assert "previous" not in read_run(folder / "run.json")


def test_a_kept_record_is_read_as_its_sections_and_no_other():
    """A kept record is its section's (an archive of the results folder holds it, and an
    import checks every run record by its folder), and the check still holds there."""
    assert current_run(GOOD_RUN, f"box/hybridize/{KEPT_FOLDER}/run.json",
                       KEPT_FOLDER)["status"] == "ok"
    with pytest.raises(RecordError, match="the run record of hybridize .* not of ceilings"):
        current_run(GOOD_RUN, f"box/ceilings/{KEPT_FOLDER}/run.json", KEPT_FOLDER)


def test_a_later_good_run_replaces_the_kept_one(tmp_path):
    """Once a good run is written again, the run kept beside the failure is out of date and
    nothing points at it: it goes, and an archive of the folder does not carry it."""
    folder = tmp_path / "hybridize"
    folder.mkdir()
    good_run(folder)
    assert run_killed_section(tmp_path, folder).returncode == 0
    assert (folder / KEPT_FOLDER).is_dir()

    write_run(folder / "samples.csv", folder / "run.json", [], GOOD_RUN)

    assert sorted(p.name for p in folder.iterdir()) == ["run.json", "samples.csv"]
    assert read_run(folder / "run.json") == GOOD_RUN


def test_a_link_at_the_kept_folders_place_is_removed_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    folder = tmp_path / "hybridize"
    folder.mkdir()
    (folder / KEPT_FOLDER).symlink_to(elsewhere)

    write_run(folder / "samples.csv", folder / "run.json", [], GOOD_RUN)

    assert not (folder / KEPT_FOLDER).is_symlink()
    assert (elsewhere / "keep.txt").read_text() == "mine"
