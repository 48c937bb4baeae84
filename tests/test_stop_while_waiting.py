"""A run told to stop (SIGTERM, as `timeout` or a scheduler sends it) while its jobs wait
for a neighbour's timing ends within seconds, and leaves nothing running: not Snakemake,
not a job still waiting for the host's lock."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import CI_CONFIG, SNAKEMAKE, copy_workflow, crashing_python, wait_for
from d2lperf import hostlock

pytestmark = pytest.mark.slow  # Snakemake runs

WAITING = "waiting for the host's timing lock"
# A hang guard, not a stopwatch: Snakemake ending takes seconds; the hang took 14 minutes.
ENDS_WITHIN_S = 120


def said_waiting(work: Path, console: Path) -> bool:
    """Whether a job of the run says it waits for the lock (its log, or the console)."""
    logs = list((work / "results").glob("*/logs/*.log"))
    return any(WAITING in path.read_text(errors="replace") for path in [console, *logs]
               if path.exists())


def session_left(sid: int) -> list[int]:
    """The processes still in session ``sid`` (the run and its jobs)."""
    left = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if entry.name.isdigit() and int(fields[3]) == sid and fields[0] != "Z":
                left.append(int(entry.name))
    return left


@pytest.mark.parametrize("whom", ["snakemake", "its process group"])
def test_a_run_stopped_while_its_jobs_wait_for_the_lock_ends_within_seconds(tmp_path, whom):
    """A neighbour's timing holds the host's lock; the CI run's first jobs wait for it; a
    SIGTERM then ends the run (`timeout` sends it to Snakemake and to its process group, a
    scheduler to every process of the job)."""
    work = copy_workflow(tmp_path / "wf")
    python = crashing_python(tmp_path, "mxnet")
    lock = tmp_path / "host.lock"
    console = tmp_path / "console.txt"
    neighbour = hostlock.acquire("a neighbour's timing", lock, out=open(os.devnull, "w"))
    run = None
    try:
        with open(console, "w") as out:
            run = subprocess.Popen(
                [str(SNAKEMAKE), "--cores", "2", *CI_CONFIG, f"experiment_python={python}"],
                cwd=work, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, hostlock.LOCK_VARIABLE: str(lock)})
        assert wait_for(lambda: said_waiting(work, console) or run.poll() is not None,
                        seconds=300), console.read_text()[-3000:]
        assert run.poll() is None, console.read_text()[-3000:]
        time.sleep(1)
        stopped = time.monotonic()
        if whom == "snakemake":
            run.send_signal(signal.SIGTERM)
        else:
            os.killpg(run.pid, signal.SIGTERM)
        try:
            run.wait(timeout=ENDS_WITHIN_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"the run hung {ENDS_WITHIN_S} s after SIGTERM; still running: "
                f"{session_left(run.pid)}\n{console.read_text()[-3000:]}") from None
        took = time.monotonic() - stopped
        assert wait_for(lambda: not session_left(run.pid), 30), session_left(run.pid)
    finally:
        if run is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.pid, signal.SIGKILL)
            run.wait(timeout=60)
        hostlock.release(neighbour)
    assert run.returncode != 0
    assert took < ENDS_WITHIN_S
