"""One checkout, one run: a second run of the pipeline in a checkout where one runs is
refused at once, naming the running one, even after Snakemake's own locks are gone
(Snakemake 9 removes every run's locks under .snakemake/locks/ when any run there ends)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import (
    SNAKEMAKE,
    a_job_started,
    copy_workflow,
    crashing_python,
    wait_for,
)
from d2lperf import hostlock

pytestmark = pytest.mark.slow  # Snakemake runs

MACHINE = "run-lock-test"
TARGET = f"results/{MACHINE}/machine.json"




def snakemake_args(python: Path, *targets: str) -> list[str]:
    """A run of the workflow's cheapest job (machine_info: the workflow's own Python, through
    a stand-in interpreter that answers the frameworks' version check)."""
    return [str(SNAKEMAKE), "--cores", "1", *targets, "--config", "preset=ci",
            f"machine={MACHINE}", f"experiment_python={python}", f"torch_python={python}"]


def stop(run: subprocess.Popen) -> None:
    """A run and its jobs (its session), if still there."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(run.pid, signal.SIGKILL)
    run.wait(timeout=60)


def refused_at_once(work: Path, env: dict, args: list[str]) -> subprocess.CompletedProcess:
    """A run that must be refused before any job: one that is not, but starts a job (which
    waits for the host's lock the test holds), is stopped with its jobs and fails the test."""
    run = subprocess.Popen(args, cwd=work, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = run.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        stop(run)
        raise AssertionError("not refused: it started jobs") from None
    return subprocess.CompletedProcess(args, run.returncode, stdout, stderr)


def test_a_second_run_is_refused_even_once_snakemakes_locks_are_gone(tmp_path):
    work = copy_workflow(tmp_path / "wf")
    python = crashing_python(tmp_path, "mxnet")
    lock = tmp_path / "host.lock"
    env = {**os.environ, hostlock.LOCK_VARIABLE: str(lock)}
    log = work / f"results/{MACHINE}/logs/machine_info.log"
    sections = f"results/{MACHINE}/sections.csv"
    made = subprocess.run(snakemake_args(python, sections), cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-3000:]
    # A timing of another run holds the host's lock: the first run's machine_info waits for
    # it, so the first run is still running while the others start.
    timing = hostlock.acquire("a timing of another run", lock, out=open(os.devnull, "w"))
    first = None
    try:
        first = subprocess.Popen(snakemake_args(python, TARGET), cwd=work, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 start_new_session=True)
        assert wait_for(lambda: log.exists() and "waiting for the host's timing lock"
                        in log.read_text(), seconds=300, poll=0.2), first.poll()
        # Another run in the checkout ends (here one with nothing to do): Snakemake 9 then
        # removes every run's locks under .snakemake/locks/, the first's too.
        ended = subprocess.run(snakemake_args(python, sections), cwd=work, env=env,
                               capture_output=True, text=True, timeout=300)
        assert ended.returncode == 0, ended.stderr[-3000:]
        assert "Nothing to be done" in ended.stderr
        assert not list((work / ".snakemake/locks").glob("*.lock"))  # the first's are gone
        # The same run again: Snakemake's lock no longer stops it; ours does, at once; and
        # a run of another target as well.
        second = refused_at_once(work, env, snakemake_args(python, TARGET))
        other = refused_at_once(work, env, snakemake_args(
            python, f"results/{MACHINE}/config.yaml"))
        assert first.poll() is None  # still waiting, still running
    except BaseException:
        if first is not None:
            stop(first)
        raise
    finally:
        hostlock.release(timing)
    said = first.communicate(timeout=300)[0]
    assert first.returncode == 0, said[-3000:]
    for refused in (second, other):
        assert refused.returncode != 0
        message = refused.stderr + refused.stdout
        assert (f"another run of this pipeline is running in this checkout ({work}): pid "
                f"{first.pid} (") in message, message[-3000:]
        assert ("wait for it to end, or stop it (Ctrl-C in its terminal, or kill "
                f"{first.pid}), then run again") in message
        assert not a_job_started(message)  # no job of its own ever started
    assert not (work / f"results/{MACHINE}/config.yaml").exists()
    assert (work / TARGET).exists()
    assert log.read_text().count("waiting for the host's timing lock") == 1  # one job, once


def test_a_dry_run_beside_a_run_is_not_refused(tmp_path):
    """A dry run (-n) runs no job: it is never refused by the run lock."""
    work = copy_workflow(tmp_path / "wf")
    python = crashing_python(tmp_path, "mxnet")
    hold = hostlock.hold_run(work)
    try:
        dry = subprocess.run(snakemake_args(python, "-n", TARGET), cwd=work,
                             capture_output=True, text=True, timeout=300)
    finally:
        hostlock.release(hold)
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "machine_info" in dry.stdout
