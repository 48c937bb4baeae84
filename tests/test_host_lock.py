"""One timing at a time on a host: two runs' sections (another results folder, another
machine id) never time at once, and the one that waits says so in its log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import REPO
from d2lperf import hostlock

SECTION = textwrap.dedent('''\
    import sys, time
    sys.path.insert(0, {scripts!r})
    from d2lperf import harness, timing

    def body(args, rec):
        start = time.time()
        time.sleep(1.5)  # the timing
        with open({spans!r}, "a") as handle:
            handle.write(f"{{start}} {{time.time()}}\\n")
        rec.timings(timing.compare({{"case": lambda: None}}, lambda: None, warmup=0,
                                   rounds=1, seed=0, process=args.process))

    if __name__ == "__main__":
        sys.exit(harness.main("toy", "pytorch", harness.parser("toy"), body))
''')


def start(tmp_path: Path, run: str, lock: Path, **env: str) -> subprocess.Popen:
    """A toy section writing into a results folder of its own (as a second run would)."""
    script = tmp_path / "toy.py"
    script.write_text(SECTION.format(scripts=str(REPO / "scripts"),
                                     spans=str(tmp_path / "spans.txt")))
    out = tmp_path / run
    out.mkdir()
    return subprocess.Popen(
        [sys.executable, str(script), "--csv", str(out / "s.csv"), "--sidecar",
         str(out / "run.json"), "--repeats", "1", "--probe-seconds", "0.01"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, hostlock.LOCK_VARIABLE: str(lock), **env})


def test_sections_of_two_runs_never_time_at_once_and_the_second_says_it_waits(tmp_path):
    lock = tmp_path / "host.lock"
    first = start(tmp_path, "results-a", lock)
    time.sleep(0.5)
    second = start(tmp_path, "results-b", lock)
    logs = [p.communicate(timeout=300)[0] for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], logs
    spans = sorted(tuple(map(float, line.split()))
                   for line in (tmp_path / "spans.txt").read_text().splitlines())
    assert len(spans) == 2 and spans[0][1] <= spans[1][0]  # one after the other
    assert sum("waiting for the host's timing lock" in log for log in logs) == 1
    assert any("got the host's timing lock after" in log for log in logs)
    assert json.loads((tmp_path / "results-b/run.json").read_text())["status"] == "ok"


def test_a_slurm_job_takes_no_lock(tmp_path):
    """Inside a SLURM job the scheduler decides what shares the node."""
    lock = tmp_path / "host.lock"
    with hostlock.timing_lock("holder", lock, out=open(os.devnull, "w")):
        job = start(tmp_path, "results-a", lock, SLURM_JOB_ID="42")
        log = job.communicate(timeout=300)[0]
    assert job.returncode == 0, log
    assert "waiting" not in log


def test_the_lock_is_one_file_of_the_host_whatever_the_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(hostlock.LOCK_VARIABLE, raising=False)
    monkeypatch.chdir(tmp_path)
    assert hostlock.lock_path().is_absolute()
    assert hostlock.lock_path().parent == Path(__import__("tempfile").gettempdir())


def test_a_killed_holder_never_leaves_the_lock_held(tmp_path):
    lock = tmp_path / "host.lock"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f'''\
        import sys, time
        sys.path.insert(0, {str(REPO / "scripts")!r})
        from d2lperf import hostlock
        hostlock.acquire("holder", __import__("pathlib").Path({str(lock)!r}))
        print("held", flush=True)
        time.sleep(600)
        ''')], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait(timeout=60)
    with hostlock.timing_lock("next", lock, out=open(os.devnull, "w")):
        pass  # would wait for ever were it still held
