"""Faults: a crashing or killed section job, and Ctrl-C during a forced re-run.

A killed job is recorded as failed under its own name, with its log, and its earlier good
results are kept beside the failed record; an interrupted re-run keeps the previous raw
results, and the next run re-runs that section; a report or summary that refuses a corrupt
record keeps the previous one."""

import hashlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import tarfile
import time
from pathlib import Path

import pandas as pd
import pytest
from markupsafe import escape

from conftest import (
    CI_CONFIG,
    CI_MACHINE,
    REPO,
    SNAKEMAKE,
    copy_workflow,
    crashing_python,
    ctrl_c_as_in_a_terminal,
    jobs_planned,
    snakemake,
)
from d2lperf import frameworks, hostlock
from d2lperf import sections as section_table
from d2lperf.frameworks import rule_name
from d2lperf.results import KEPT_FOLDER

SECTIONS = section_table.names()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def raw_results(results: Path) -> dict[str, str]:
    """Every section's raw samples and run record, by checksum."""
    return {f"{s}/{name}": digest(results / s / name) for s in SECTIONS
            for name in ("samples.csv", "run.json") if (results / s / name).exists()}


def fresh_copy(ci_run, tmp_path) -> tuple[Path, Path]:
    """A workflow copy holding the CI run's results, copied now so newer than its scripts."""
    work = copy_workflow(tmp_path / "wf")
    results = work / "results" / CI_MACHINE
    shutil.copytree(ci_run[1], results, copy_function=shutil.copy)
    return work, results


def section_process(work: Path, section: str) -> int | None:
    """The pid of the Python process running the section's script in the documents'
    framework (scripts/sections/<section>/<section>_mxnet.py) in this workflow copy."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        argv = [arg.decode(errors="replace") for arg in raw.split(b"\0") if arg]
        if argv and cwd == str(work) and "python" in Path(argv[0]).name and any(
                Path(arg).name == section_table.script(section, frameworks.DOCUMENTS).name
                for arg in argv[1:]):
            return int(entry.name)
    return None


def start_snakemake(work: Path, *args: str) -> subprocess.Popen:
    """Snakemake in its own session, like a terminal's foreground process group."""
    return subprocess.Popen([str(SNAKEMAKE), *args], cwd=work, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=ctrl_c_as_in_a_terminal)


def wait_for(condition, process: subprocess.Popen, timeout: float = 120):
    """Poll until condition() is truthy (returning it), or None once snakemake has ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        if process.poll() is not None:
            return None
        time.sleep(0.05)
    return None


@pytest.mark.slow  # Snakemake
def test_failure_records_name_their_own_section(tmp_path):
    """Two sections crash (no MXNet in their interpreter): each record names its section."""
    work = copy_workflow(tmp_path / "wf")
    targets = [f"results/broken/{s}/run.json" for s in ("async_computation", "hybridize")]
    done = snakemake(work, *targets, "--cores", "2", "--config", "preset=ci",
                     "machine=broken", "frameworks=[mxnet]",
                     f"experiment_python={crashing_python(tmp_path, 'mxnet')}")
    assert done.returncode == 0, done.stderr[-3000:]
    for target in targets:
        run = json.loads((work / target).read_text())
        assert run["section"] == Path(target).parent.name, run
        assert run["status"] == "failed" and "No module named 'mxnet'" in run["log_tail"]


def sigkill_hybridize(run: subprocess.Popen, work: Path, log: Path, timeout: int) -> str:
    """SIGKILL (the OOM killer's way) the hybridize job of ``run`` once it has written part
    of its log (unbuffered) and still runs; what the run printed once it ended."""
    try:
        pid = wait_for(lambda: log.exists() and log.stat().st_size > 0
                       and section_process(work, "hybridize"), run)
        assert pid, "the hybridize job wrote nothing to its log while it ran"
        os.kill(pid, signal.SIGKILL)
        out, _ = run.communicate(timeout=timeout)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    return out


def test_sigkill_of_one_job_is_reported_with_its_log(ci_run, tmp_path, experiment_python):
    work, results = fresh_copy(ci_run, tmp_path)
    before = raw_results(results)
    log = results / "logs/hybridize.log"
    run = start_snakemake(work, "--cores", "2", *CI_CONFIG,
                          f"experiment_python={experiment_python}", "--forcerun", "hybridize")
    out = sigkill_hybridize(run, work, log, timeout=300)
    assert run.returncode == 0, out[-3000:]
    record = json.loads((results / "hybridize/run.json").read_text())
    assert record["section"] == "hybridize" and record["status"] == "failed", record
    assert record["exit_code"] == 128 + signal.SIGKILL
    assert record["log_tail"].strip(), "empty log tail"
    page = (results / "report.html").read_text(encoding="utf-8")
    # hybridize, and it alone, is shown failed (the table of runs has one row per run)
    assert '<tr data-run="hybridize" data-status="failed">' in page
    assert page.count('data-status="failed"') == 1
    assert str(escape(record["log_tail"].splitlines()[0])) in page
    after = raw_results(results)
    assert {k: v for k, v in after.items() if not k.startswith("hybridize/")} == {
        k: v for k, v in before.items() if not k.startswith("hybridize/")}


def test_ctrl_c_during_forcerun_keeps_the_previous_results(ci_run, tmp_path, experiment_python):
    work, results = fresh_copy(ci_run, tmp_path)
    before = raw_results(results)
    config = [*CI_CONFIG, f"experiment_python={experiment_python}"]
    run = start_snakemake(work, "--cores", "2", *config, "--forcerun", "hybridize")
    try:
        pid = wait_for(lambda: section_process(work, "hybridize"), run)
        assert pid, "the hybridize job never started"
        time.sleep(0.5)  # inside MXNet by now
        os.killpg(run.pid, signal.SIGINT)  # Ctrl-C: the whole foreground process group
        out, _ = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode != 0, out[-3000:]
    assert raw_results(results) == before  # the previous raw results are all still there

    done = snakemake(work, "--cores", "2", *config)
    assert done.returncode == 0, done.stderr[-3000:]
    ran = jobs_planned(done.stdout + done.stderr)
    assert "hybridize" in ran  # the interrupted section is re-run, not taken as done
    assert raw_results(results).keys() == before.keys()
    record = json.loads((results / "hybridize/run.json").read_text())
    assert record["status"] == "ok", record
    # what the report and its tables show is what the raw samples say
    samples = pd.read_csv(results / "hybridize/samples.csv")
    summary = pd.read_csv(results / "summary.csv")
    page = (results / "report.html").read_text(encoding="utf-8")
    for case, group in samples.groupby("case"):
        median = statistics.median(group["value"])
        row = summary[(summary["section"] == "hybridize") & (summary["case"] == case)]
        assert row["median"].iloc[0] == pytest.approx(median, rel=1e-12)
        assert f"{median:.4f} s" in page


# A run without its timings: the stored CI-preset run of both frameworks (an older record
# format, which every step reads), in a copy of the workflow whose results are newer than
# its scripts, so that Snakemake runs only what a test asks for. Its ceilings ran in MXNet
# only, and it predates the data-parallel section, so the sections are the others. The
# host's timing lock is one of the test's own: these runs time nothing worth keeping apart
# from other runs on the host.
ARCHIVE = REPO / "tests/data/ci-old-format.tar.gz"
STORED_SECTIONS = [s for s in SECTIONS if s not in ("ceilings", "data_parallel")]
# Every timing job's rule, the twins' too: none may run in a stored run.
TIMING_RULES = {rule_name(s, f) for s in SECTIONS for f in frameworks.names()}
BENCHMARK = "s\th:m:s\n1.0\t0:00:01\n"  # a Snakemake benchmark file, as the report reads it


def stored_run(tmp_path: Path, experiment_python: Path) -> tuple[Path, Path, list[str], dict]:
    """(workflow copy, results folder, Snakemake's arguments up to the report, environment)."""
    work = copy_workflow(tmp_path / "wf")
    with tarfile.open(ARCHIVE) as archive:
        archive.extractall(work / "results", filter="data")
    results = work / "results" / CI_MACHINE
    for path in results.rglob("*"):  # stored at time 0, which Snakemake takes for no time
        os.utime(path)
    (results / "benchmarks").mkdir()
    for record in results.glob("*/run.json"):  # the archive keeps no benchmark files
        (results / "benchmarks" / f"{record.parent.name}.tsv").write_text(BENCHMARK)
    args = [f"results/{CI_MACHINE}/report.html", "--cores", "2", *CI_CONFIG,
            f"experiment_python={experiment_python}",
            f"sections=[{','.join(STORED_SECTIONS)}]"]
    env = {**os.environ, hostlock.LOCK_VARIABLE: str(tmp_path / "host.lock")}
    done = subprocess.run([str(SNAKEMAKE), *args], cwd=work, capture_output=True, text=True,
                          timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not [job for job in jobs_planned(done.stderr) if job in TIMING_RULES]
    return work, results, args, env


def test_a_failed_report_keeps_the_previous_report_and_tables(tmp_path, experiment_python):
    """Snakemake deletes the outputs of a failed job; the aggregation rules' outputs are
    update(), so a step that refuses a corrupt record leaves the user's last good report
    and tables as they were, and says why in its log (one paragraph, no traceback)."""
    work, results, args, env = stored_run(tmp_path, experiment_python)
    kept = [results / name for name in ("report.html", "summary.csv", "verdicts.csv")]
    before = {path: digest(path) for path in kept}
    machine = results / "machine.json"
    good = machine.read_text()

    def fails(step: str, says: str) -> None:
        """The run fails at ``step``, whose log starts with ``says``; nothing kept changes."""
        done = subprocess.run([str(SNAKEMAKE), *args], cwd=work, capture_output=True,
                              text=True, timeout=900, env=env)
        assert done.returncode != 0, done.stderr[-3000:]
        log = (results / f"logs/{step}.log").read_text()
        assert log.startswith(says), log
        assert "Traceback" not in log
        assert {path: digest(path) for path in kept} == before

    # machine.json is read by the report alone: the report fails
    machine.write_text('{"cpu": "x", "gpus": []}')
    fails("report", f"error: results/{CI_MACHINE}/machine.json: not a machine record: "
                    "field 'cpu': 'x' is not of type 'object'. The report was not written")

    # a run record no step can read: summarise fails, and the report does not run
    machine.write_text(good)
    sidecar = results / "hybridize/run.json"
    sidecar.write_text(json.dumps({**json.loads(sidecar.read_text()), "started": 5}))
    fails("summarise", f"error: results/{CI_MACHINE}/hybridize/run.json: not a run record: "
                       "field 'started': 5 is not of type 'string'. The tables were not "
                       "written")


def test_a_section_killed_keeps_its_earlier_samples_and_the_report_says_so(
        tmp_path, experiment_python):
    """SIGKILL (the OOM killer) of a section that had run well before: the failure is
    recorded, with its log, and its earlier samples are kept whole beside it."""
    work, results, args, env = stored_run(tmp_path, experiment_python)
    before = raw_results(results)
    log = results / "logs/hybridize.log"
    run = subprocess.Popen([str(SNAKEMAKE), "--forcerun", "hybridize", *args], cwd=work,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True, preexec_fn=ctrl_c_as_in_a_terminal,
                           env=env)
    out = sigkill_hybridize(run, work, log, timeout=600)
    assert run.returncode == 0, out[-3000:]
    record = json.loads((results / "hybridize/run.json").read_text())
    assert record["status"] == "failed" and record["exit_code"] == 128 + signal.SIGKILL
    kept = results / "hybridize" / KEPT_FOLDER
    assert {f"hybridize/{name}": digest(kept / name) for name in ("samples.csv", "run.json")} \
        == {k: v for k, v in before.items() if k.startswith("hybridize/")}
    where = f"results/{CI_MACHINE}/hybridize/{KEPT_FOLDER}"
    assert record["previous"]["path"] == where
    assert record["previous"]["samples"] == len(pd.read_csv(kept / "samples.csv")) > 0
    page = " ".join((results / "report.html").read_text(encoding="utf-8").split())
    assert '<tr data-run="hybridize" data-status="failed">' in page
    assert f"are kept at {where} and not shown here" in page
    assert str(escape(record["log_tail"].splitlines()[0])) in page


def test_a_failed_summarise_is_run_again_not_taken_as_done(tmp_path, experiment_python):
    """summarise failed (a worker had written a row whose case broke the pattern);
    Snakemake restored the old tables (update()) with a newer time than the new samples, and
    the next, unchanged run exited 0 with "Report: ...", made from the old tables beside the
    new samples and plots. Each run now runs the failed step again, and fails again,
    visibly, with the reason on the console, while its cause lasts; the last good report
    stays readable; once the cause is gone, the run succeeds."""
    work, results, args, env = stored_run(tmp_path, experiment_python)
    report = results / "report.html"
    good = digest(report)
    samples = results / "hybridize/samples.csv"
    rows = samples.read_text()
    samples.write_text(rows + "hybridize,mxnet,Bad Case!,time,s,0,99,0,0.05,,\n")
    table = f"results/{CI_MACHINE}/hybridize/samples.csv"
    for _ in range(2):
        done = subprocess.run([str(SNAKEMAKE), *args], cwd=work, capture_output=True,
                              text=True, timeout=900, env=env)
        said = done.stdout + done.stderr
        assert done.returncode != 0, said[-3000:]
        assert "Report:" not in said
        assert "summarise" in jobs_planned(done.stderr)
        assert f"summarise failed (exit code 1): error: {table}: row " in said, said[-3000:]
        assert "'Bad Case!' does not match" in said
        assert digest(report) == good  # the last good report, readable
    samples.write_text(rows)
    done = subprocess.run([str(SNAKEMAKE), *args], cwd=work, capture_output=True, text=True,
                          timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "summarise" in jobs_planned(done.stderr)
    assert "Report:" in done.stdout + done.stderr
