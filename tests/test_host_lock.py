"""One timing at a time on a host: two runs' sections (another results folder, another
machine id) never time at once, and the one that waits says so in its log (on stderr);
every other job of the pipeline shares the lock, so none runs beside a timing of any run;
a wait is said on the console too, again and again, and ends where the user set a limit,
naming the holder; and the lock file can never be turned against the user (no link
followed, no file of anyone else's changed)."""

from __future__ import annotations

import io
import json
import os
import re
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import (
    REPO,
    SNAKEMAKE,
    WORKFLOW_PYTHON,
    a_job_started,
    copy_workflow,
    crashing_python,
    measure,
    wait_for,
)
from d2lperf import hostlock, progress

pytestmark = pytest.mark.slow  # timing jobs and Snakemake runs, waiting on each other's locks

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


def lock_path_under(tmp_path: Path, temp: str) -> str:
    """The lock's place as a process with TMPDIR=temp (and no override) sees it."""
    folder = tmp_path / temp
    folder.mkdir()
    env = {k: v for k, v in os.environ.items() if k != hostlock.LOCK_VARIABLE}
    done = subprocess.run(
        [sys.executable, "-c", "from d2lperf import hostlock; print(hostlock.lock_path())"],
        capture_output=True, text=True, timeout=60, cwd=folder,
        env={**env, "TMPDIR": str(folder), "PYTHONPATH": str(REPO / "scripts")})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_lock_is_one_fixed_file_of_the_host_whatever_the_folder_or_tmpdir(tmp_path):
    """Two runs timed at the same moment with different TMPDIRs (or Snakemake's tmpdir)
    must meet at the same lock."""
    assert lock_path_under(tmp_path, "a") == lock_path_under(tmp_path, "b") == str(
        hostlock.HOST_LOCK)
    assert hostlock.HOST_LOCK.is_absolute()


def victim(tmp_path: Path) -> Path:
    """A file of the user's that a planted link at the lock's place points to."""
    path = tmp_path / "precious.txt"
    path.write_text("the user's own words\n")
    path.chmod(0o600)
    return path


def unchanged(path: Path) -> bool:
    return (path.read_text() == "the user's own words\n"
            and stat.S_IMODE(path.stat().st_mode) == 0o600)


@pytest.mark.parametrize("shared", [False, True], ids=["timing", "other job"])
def test_a_link_planted_at_the_lock_is_never_followed(tmp_path, shared):
    target = victim(tmp_path)
    lock = tmp_path / "host.lock"
    lock.symlink_to(target)
    with pytest.raises(hostlock.LockError) as refused:
        hostlock.acquire("toy", lock, shared=shared)
    assert str(refused.value) == (
        f"the host's timing lock {lock} is a symbolic link, which this pipeline never "
        "follows (it may point at a file of yours); remove it (rm "
        f"'{lock}'), or ask its owner or the administrator to: the next run makes a plain "
        "file there")
    assert unchanged(target)
    assert lock.is_symlink()


def test_a_run_refuses_a_planted_link_before_any_job(tmp_path):
    target = victim(tmp_path)
    lock = tmp_path / "host.lock"
    lock.symlink_to(target)
    work = copy_workflow(tmp_path / "wf")
    python = crashing_python(tmp_path, "mxnet")
    done = subprocess.run(
        [str(SNAKEMAKE), "--cores", "1", "results/lock-test/machine.json", "--config",
         "preset=ci", "machine=lock-test", f"experiment_python={python}",
         f"torch_python={python}"], cwd=work, capture_output=True, text=True, timeout=300,
        env={**os.environ, hostlock.LOCK_VARIABLE: str(lock)})
    assert done.returncode != 0
    assert f"Refused:\nthe host's timing lock {lock} is a symbolic link" in done.stderr
    assert not a_job_started(done.stdout + done.stderr)
    assert unchanged(target)


def test_a_dangling_link_creates_nothing(tmp_path):
    lock = tmp_path / "host.lock"
    lock.symlink_to(tmp_path / "made-through-the-link")
    with pytest.raises(hostlock.LockError, match="is a symbolic link"):
        hostlock.acquire("toy", lock)
    assert not (tmp_path / "made-through-the-link").exists()


def test_a_section_refuses_a_planted_link_and_leaves_its_target_alone(tmp_path):
    target = victim(tmp_path)
    lock = tmp_path / "host.lock"
    lock.symlink_to(target)
    job = start(tmp_path, "results-a", lock)
    log = job.communicate(timeout=300)[0]
    assert job.returncode != 0
    assert f"the host's timing lock {lock} is a symbolic link" in log
    assert unchanged(target)


def test_a_fifo_or_a_folder_at_the_lock_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "host.lock"
    os.mkfifo(fifo)
    with pytest.raises(hostlock.LockError) as refused:
        hostlock.acquire("toy", fifo)
    assert str(refused.value).startswith(
        f"the host's timing lock {fifo} is a FIFO, not a plain file; remove it")
    folder = tmp_path / "folder.lock"
    folder.mkdir()
    with pytest.raises(hostlock.LockError, match="is a folder, not a plain file"):
        hostlock.acquire("toy", folder)


def test_a_lock_file_the_pipeline_did_not_create_is_locked_but_never_changed(tmp_path):
    """Another user's (or an old run's) lock file: opened read-only, never truncated,
    written or made writable by all."""
    lock = victim(tmp_path)
    before = lock.stat()
    with hostlock.timing_lock("toy", lock, out=open(os.devnull, "w")):
        pass
    assert unchanged(lock)
    assert lock.stat().st_mtime_ns == before.st_mtime_ns


def test_a_lock_file_the_pipeline_creates_is_empty_and_readable_by_all(tmp_path):
    """Read access is all a lock needs: another user's run can lock it, none can write it."""
    lock = tmp_path / "host.lock"
    old = os.umask(0o077)
    try:
        with hostlock.timing_lock("toy", lock, out=open(os.devnull, "w")):
            pass
    finally:
        os.umask(old)
    assert stat.S_IMODE(lock.stat().st_mode) == 0o644
    assert lock.read_bytes() == b""




def hold(lock: Path, shared: bool) -> subprocess.Popen:
    """Another process holding the lock, as a timing (exclusive) or another job (shared)."""
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f'''\
        import sys, time
        sys.path.insert(0, {str(REPO / "scripts")!r})
        from d2lperf import hostlock
        hostlock.acquire("holder", __import__("pathlib").Path({str(lock)!r}), shared={shared})
        print("held", flush=True)
        time.sleep(600)
        ''')], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    return holder


# Every job of the pipeline but a timing, with the arguments it needs to get as far as
# the lock (the files need not exist: each waits before it reads any).
OTHER_JOBS = {
    "summarise": ["--runs", "r.json", "--reference", "x.csv", "--schema", "s.yaml",
                     "--summary", "a.csv", "--outputs", "b.csv", "--verdicts", "c.csv"],
    "plots": ["--summary", "s.csv", "--samples", "x.csv", "--out", "p.svg"],
    "compare": ["--summaries", "m/summary.csv", "--verdicts", "m/verdicts.csv",
                   "--baseline", "m", "--table", "t.csv", "--verdicts-table", "v.csv",
                   "--plot", "p.svg"],
    "report": ["--machine", "m.json", "--summary", "s.csv", "--outputs", "o.csv",
                         "--verdicts", "v.csv", "--runs", "r.json", "--sections", "c.csv",
                         "--template", "t.j2", "--preset", "ci", "--out", "r.html"],
    "archive": ["--results", "results/m", "--out", "m.tar.gz"],
    "machine-info": ["--machine", "m", "--out", "machine.json"],
    "blas-reference": ["--out", "reference.npz"],
}


@pytest.mark.parametrize("command", OTHER_JOBS)
def test_every_other_job_waits_while_a_timing_holds_the_lock(tmp_path, command):
    lock = tmp_path / "host.lock"
    stderr = tmp_path / "stderr.txt"
    said = f"{command}: waiting for the host's timing lock {lock}, held by"
    timing = hold(lock, shared=False)
    try:
        with open(stderr, "w") as errors:
            job = subprocess.Popen(
                [str(WORKFLOW_PYTHON), "-m", "d2lperf", command, *OTHER_JOBS[command]],
                cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=errors,
                env={**os.environ, hostlock.LOCK_VARIABLE: str(lock)})
        assert wait_for(lambda: said in stderr.read_text() or job.poll() is not None)
        assert f"{said} a timing: pid {timing.pid} (" in stderr.read_text()
        time.sleep(0.5)
        assert job.poll() is None  # still waiting
    finally:
        timing.kill()
        timing.wait(timeout=60)
    job.wait(timeout=300)  # then it goes on (and fails here, on files it lacks)
    assert "got the host's timing lock after" in stderr.read_text()


def test_a_run_rule_of_the_workflow_waits_while_a_timing_holds_the_lock(tmp_path):
    """Snakemake runs a `run:` rule's job in a process of its own that reads the workflow
    again: that process shares the lock from the start (and its Snakemake never waits)."""
    work = copy_workflow(tmp_path / "wf")
    python = crashing_python(tmp_path, "mxnet")
    lock = tmp_path / "host.lock"
    made = work / "results/lock-test/sections.csv"
    timing = hold(lock, shared=False)
    try:
        run = subprocess.Popen(
            [str(SNAKEMAKE), "--cores", "1", str(made.relative_to(work)), "--config",
             "preset=ci", "machine=lock-test", f"experiment_python={python}",
             f"torch_python={python}"], cwd=work, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True,
            env={**os.environ, hostlock.LOCK_VARIABLE: str(lock)})
        said = ""
        while "waiting for the host's timing lock" not in said and run.poll() is None:
            said = run.stderr.readline()
        assert said.startswith(f"a `run:` job: waiting for the host's timing lock {lock}, "
                               f"held by a timing: pid {timing.pid} ("), said
        assert not made.exists()
    finally:
        timing.kill()
        timing.wait(timeout=60)
    rest = run.communicate(timeout=300)[1]
    assert run.returncode == 0, rest[-3000:]
    assert made.exists()


def test_a_timing_waits_for_a_running_job_and_jobs_share_the_lock(tmp_path):
    lock = tmp_path / "host.lock"
    jobs = [hold(lock, shared=True), hold(lock, shared=True)]  # side by side: shared
    try:
        timing = start(tmp_path, "results-a", lock)
        time.sleep(3)
        assert timing.poll() is None
    finally:
        for job in jobs:
            job.kill()
            job.wait(timeout=60)
    log = timing.communicate(timeout=300)[0]
    assert timing.returncode == 0, log
    assert "toy: waiting for the host's timing lock" in log
    assert "shared by jobs that never run beside a timing: pid" in log
    assert all(f"pid {job.pid} (" in log for job in jobs)


def test_the_waiting_lines_go_to_stderr_never_into_what_a_section_prints(tmp_path):
    """A section's stdout is the same whether it waited or not (its log has both)."""
    lock = tmp_path / "host.lock"
    timing = hold(lock, shared=False)
    script = tmp_path / "toy.py"
    script.write_text(SECTION.format(scripts=str(REPO / "scripts"),
                                     spans=str(tmp_path / "spans.txt")))
    (tmp_path / "out").mkdir()
    stderr = tmp_path / "stderr.txt"
    with open(stderr, "w") as errors:
        job = subprocess.Popen(
            [sys.executable, str(script), "--csv", str(tmp_path / "out/s.csv"), "--sidecar",
             str(tmp_path / "out/run.json"), "--repeats", "1", "--probe-seconds", "0.01"],
            stdout=subprocess.PIPE, stderr=errors, text=True,
            env={**os.environ, hostlock.LOCK_VARIABLE: str(lock)})
    try:
        assert wait_for(lambda: "toy: waiting for the host's timing lock" in stderr.read_text()
                        or job.poll() is not None)
    finally:
        timing.kill()
        timing.wait(timeout=60)
    stdout = job.communicate(timeout=300)[0]
    assert job.returncode == 0, stderr.read_text()
    assert "toy: waiting for the host's timing lock" in stderr.read_text()
    assert "got the host's timing lock after" in stderr.read_text()
    assert "host's timing lock" not in stdout


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


def test_a_wait_is_said_again_and_again_and_given_up_past_its_limit_naming_the_holder(
        tmp_path):
    lock = tmp_path / "host.lock"
    timing = hold(lock, shared=False)
    out = io.StringIO()
    started = time.monotonic()
    try:
        with pytest.raises(hostlock.LockError) as gave_up:
            hostlock.acquire("toy", lock, out=out, limit=3, repeat=1)
    finally:
        timing.kill()
        timing.wait(timeout=60)
    assert 3 <= time.monotonic() - started < 60
    said = out.getvalue().splitlines()
    holder = f"held by a timing: pid {timing.pid} ("
    assert said[0].startswith(f"toy: waiting for the host's timing lock {lock}, {holder}")
    assert said[0].endswith("; giving up after 3 s (D2LPERF_LOCK_WAIT_SECONDS)")
    again = [line for line in said[1:] if line.startswith(
        f"toy: still waiting for the host's timing lock {lock} after ")]
    assert len(again) >= 2 and all(holder in line for line in again), said
    assert re.match(rf"gave up waiting for the host's timing lock {re.escape(str(lock))} "
                    r"after \d+ s \(D2LPERF_LOCK_WAIT_SECONDS=3\), "
                    + re.escape(holder), str(gave_up.value)), str(gave_up.value)
    assert "or set D2LPERF_LOCK_WAIT_SECONDS longer (unset: no limit)" in str(gave_up.value)
    with hostlock.timing_lock("next", lock, out=io.StringIO()):
        pass  # the one that gave up holds nothing


def test_a_section_says_on_the_console_who_it_waits_for_and_fails_past_the_limit(tmp_path):
    """The console, not only the job's log: a run that waits for a neighbour is not silent;
    a section that gave up fails (record_failure shows it failed, with this in its log)."""
    lock = tmp_path / "host.lock"
    script = tmp_path / "toy.py"
    script.write_text(SECTION.format(scripts=str(REPO / "scripts"),
                                     spans=str(tmp_path / "spans.txt")))
    timing = hold(lock, shared=False)
    read, write = os.pipe()
    try:
        done = measure(sys.executable, script, "--csv", str(tmp_path / "s.csv"), "--sidecar",
                       str(tmp_path / "run.json"), "--repeats", "1", "--probe-seconds", "0.01",
                       section="toy", framework="pytorch", pass_fds=(write,), timeout=300,
                       env={**os.environ, hostlock.LOCK_VARIABLE: str(lock),
                            hostlock.WAIT_VARIABLE: "2", progress.VARIABLE: str(write)})
    finally:
        os.close(write)
        timing.kill()
        timing.wait(timeout=60)
    with os.fdopen(read) as console:
        shown = console.read().splitlines()
    holder = f"held by a timing: pid {timing.pid} ("
    assert done.returncode == 1, done.stderr
    assert shown[0].startswith(
        f"toy (PyTorch): toy: waiting for the host's timing lock {lock}, {holder}"), shown
    assert shown[-1].startswith(
        f"toy (PyTorch): toy: gave up waiting for the host's timing lock {lock} after "), shown
    assert holder in shown[-1]
    assert shown[-1].removeprefix("toy (PyTorch): ") in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "spans.txt").exists()  # it never timed
    assert not (tmp_path / "run.json").exists()


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_a_wait_limit_that_is_not_a_number_of_seconds_is_refused(monkeypatch, value):
    monkeypatch.setenv(hostlock.WAIT_VARIABLE, value)
    with pytest.raises(hostlock.LockError) as refused:
        hostlock.wait_limit()
    assert str(refused.value).startswith(
        f"D2LPERF_LOCK_WAIT_SECONDS={value!r} is not a number of seconds; set it to the longest")
