"""A section's fresh processes die with it, its temporary folder goes on every way out,
and a hung interpreter check leaves nothing running. A worker runs within a limit and dies
with every process it started; a manager ends with its job's shell and never writes after
it; a worker that ends well without its outputs is named, with the file it left out."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import REPO, ctrl_c_as_in_a_terminal, wait_for
from d2lperf import children, frameworks, hostlock, manager, progress

pytestmark = pytest.mark.slow  # timing jobs, killed

SECTION = textwrap.dedent('''\
    import os, sys, time
    sys.path.insert(0, {scripts!r})
    from d2lperf import harness

    def body(args, rec):
        with open({pids!r}, "a") as handle:
            handle.write(f"{{os.getpid()}}\\n")
        time.sleep(600)  # a long timing

    if __name__ == "__main__":
        sys.exit(harness.main("toy", "pytorch", harness.parser("toy"), body))
''')


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False




def section_with_a_child(tmp_path: Path):
    """A toy section in 2 fresh processes, its first child timing: (section, child pid)."""
    script = tmp_path / "toy.py"
    pids = tmp_path / "pids.txt"
    script.write_text(SECTION.format(scripts=str(REPO / "scripts"), pids=str(pids)))
    temp = tmp_path / "tmp"
    temp.mkdir(exist_ok=True)
    section = subprocess.Popen(
        [sys.executable, "-m", "d2lperf", "measure", "--section", "toy", "--framework",
         "pytorch", "--python", sys.executable, "--script", str(script),
         "--csv", str(tmp_path / "s.csv"), "--sidecar",
         str(tmp_path / "run.json"), "--processes", "2", "--repeats", "1",
         "--probe-seconds", "0.01"],
        env={**os.environ, "TMPDIR": str(temp),
             hostlock.LOCK_VARIABLE: str(tmp_path / "host.lock")},
        preexec_fn=ctrl_c_as_in_a_terminal)
    assert wait_for(lambda: pids.exists() and pids.read_text().strip())
    return section, int(pids.read_text().split()[0]), temp


def folders(temp: Path) -> list[str]:
    return sorted(p.name for p in temp.iterdir() if p.name.startswith("toy-processes-"))


def test_the_child_dies_with_its_killed_section(tmp_path):
    section, child, temp = section_with_a_child(tmp_path)
    section.kill()
    section.wait(timeout=60)
    try:
        assert wait_for(lambda: not alive(child), 30), "the child timed on, orphaned"
    finally:
        if alive(child):
            os.kill(child, signal.SIGKILL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_the_temporary_folder_goes_when_the_section_is_stopped(tmp_path, signum):
    section, child, temp = section_with_a_child(tmp_path)
    assert len(folders(temp)) == 1
    section.send_signal(signum)
    section.wait(timeout=60)
    assert section.returncode != 0
    assert folders(temp) == []
    assert wait_for(lambda: not alive(child), 30)


def test_a_folder_a_killed_section_left_is_removed_by_the_next(tmp_path):
    section, child, temp = section_with_a_child(tmp_path)
    section.kill()
    section.wait(timeout=60)
    wait_for(lambda: not alive(child), 30)
    left = folders(temp)
    assert len(left) == 1  # SIGKILL: nothing can run on the way out
    (tmp_path / "pids.txt").unlink()
    again, child, _ = section_with_a_child(tmp_path)
    try:
        assert left[0] not in folders(temp)
    finally:
        again.kill()
        again.wait(timeout=60)
        wait_for(lambda: not alive(child), 30)


def test_a_hung_interpreter_check_leaves_nothing_running(tmp_path):
    """An interpreter that is a wrapper script starting the real one as its child: on the
    time-out both are killed, and the check answers at once (the child held its pipes)."""
    grandchild = tmp_path / "grandchild.pid"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\nsleep 600 &\necho $! > {grandchild}\nwait\n")
    python.chmod(0o755)
    start = time.monotonic()
    said = frameworks.problem("pytorch", python, timeout=1)
    assert time.monotonic() - start < 30
    assert "importing torch took over 1 s" in said
    pid = int(grandchild.read_text())
    assert wait_for(lambda: not alive(pid), 10), "the interpreter's child lives on"


def test_the_make_envs_advice_is_a_sentence():
    said = frameworks.problem("pytorch", "/nonexistent/python")
    assert "or run `make envs FRAMEWORKS=pytorch` (it builds .venv-torch)" in said


MEMORY_PARENT = textwrap.dedent('''\
    import argparse, sys
    sys.path.insert(0, {scripts!r})
    from d2lperf import memory

    args = argparse.Namespace(warmup=0, repeats=1, threads=1, batches=1, batch_size=1,
                              report_every=1)
    memory.run_modes(args, {child!r})
''')
MEMORY_CHILD = textwrap.dedent('''\
    import os, time
    with open({pids!r}, "a") as handle:
        handle.write(f"{{os.getpid()}}\\n")
    time.sleep(600)  # a long run of one mode
''')


def memory_section_with_a_child(tmp_path: Path):
    """The memory section's runs (d2lperf.memory.run_modes), its first fresh process
    running: (section, child pid, temporary folder's parent)."""
    pids = tmp_path / "pids.txt"
    child = tmp_path / "child.py"
    child.write_text(MEMORY_CHILD.format(pids=str(pids)))
    parent = tmp_path / "parent.py"
    parent.write_text(MEMORY_PARENT.format(scripts=str(REPO / "scripts"), child=str(child)))
    temp = tmp_path / "tmp"
    temp.mkdir()
    section = subprocess.Popen([sys.executable, str(parent)],
                               env={**os.environ, "TMPDIR": str(temp)})
    assert wait_for(lambda: pids.exists() and pids.read_text().strip())
    return section, int(pids.read_text().split()[0]), temp


def test_the_memory_sections_run_dies_with_its_killed_section(tmp_path):
    section, child, _ = memory_section_with_a_child(tmp_path)
    section.kill()
    section.wait(timeout=60)
    try:
        assert wait_for(lambda: not alive(child), 30), "the mode's run went on, orphaned"
    finally:
        if alive(child):
            os.kill(child, signal.SIGKILL)


def test_the_memory_sections_folder_goes_when_it_is_stopped(tmp_path):
    section, child, temp = memory_section_with_a_child(tmp_path)
    try:
        assert [p.name.startswith("async_memory-") for p in temp.iterdir()] == [True]
        section.send_signal(signal.SIGTERM)
        section.wait(timeout=60)
        assert list(temp.iterdir()) == []
    finally:
        section.kill()
        section.wait(timeout=60)
        if wait_for(lambda: not alive(child), 30) is False:
            os.kill(child, signal.SIGKILL)


# A worker that hangs, with a process of its own that hangs too (in its process group).
HUNG = textwrap.dedent('''\
    import os, subprocess, sys, time
    sys.path.insert(0, {scripts!r})
    from d2lperf import harness

    def body(args, rec):
        child = subprocess.Popen(["sleep", "600"])
        with open({pids!r}, "a") as handle:
            handle.write(f"{{os.getpid()}} {{child.pid}}\\n")
        time.sleep(600)  # hung

    if __name__ == "__main__":
        sys.exit(harness.main("toy", "pytorch", harness.parser("toy"), body))
''')


def hung_section(tmp_path: Path, *options: str) -> tuple[list[str], Path, dict[str, str]]:
    """The manager's command line for a toy section whose worker hangs, the file where the
    worker writes its pid and its child's, and the environment (a lock of the test's own)."""
    script = tmp_path / "hung.py"
    pids = tmp_path / "pids.txt"
    script.write_text(HUNG.format(scripts=str(REPO / "scripts"), pids=str(pids)))
    command = [sys.executable, "-m", "d2lperf", "measure", "--section", "toy",
               "--framework", "pytorch", "--python", sys.executable, "--script", str(script),
               "--csv", str(tmp_path / "s.csv"), "--sidecar", str(tmp_path / "run.json"),
               "--repeats", "1", "--probe-seconds", "0.01", *options]
    env = {**os.environ, hostlock.LOCK_VARIABLE: str(tmp_path / "host.lock"),
           "TMPDIR": str(tmp_path)}
    return command, pids, env


def the_lock_is_free(tmp_path: Path) -> bool:
    try:
        hostlock.release(hostlock.acquire("test", tmp_path / "host.lock", limit=0))
    except hostlock.LockError:
        return False
    return True


def test_a_worker_past_its_limit_is_killed_with_what_it_started_and_the_section_fails(
        tmp_path):
    command, pids, env = hung_section(tmp_path, "--processes", "2",
                                      "--worker-limit-seconds", "3")
    read, write = os.pipe()
    started = time.monotonic()
    section = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, pass_fds=(write,),
                               env={**env, progress.VARIABLE: str(write)})
    os.close(write)
    try:
        stderr = section.communicate(timeout=300)[1]
    finally:
        section.kill()
    with os.fdopen(read) as console:
        shown = console.read()
    assert time.monotonic() - started < 120  # 3 s, then the kill: not the worker's 600 s
    worker, child = map(int, pids.read_text().split())
    assert wait_for(lambda: not alive(worker) and not alive(child), 30), "left running"
    assert section.returncode == manager.TIMED_OUT, stderr
    said = (f"process 1 of 2 (pid {worker}) ran past its limit of 3 s (--worker-limit-seconds)"
            " and was killed, with every process it started: it hung, or this machine is far "
            "slower than the preset assumes. Look at the end of this section's log")
    assert said in stderr
    assert f"toy (PyTorch): {said}" in shown
    assert not (tmp_path / "run.json").exists() and not (tmp_path / "s.csv").exists()
    assert the_lock_is_free(tmp_path)


def limit(*argv: str) -> tuple[float, str]:
    args, _ = manager.parser().parse_known_args(
        ["--framework", "mxnet", "--script", "x.py", "--csv", "s.csv", "--sidecar", "r.json",
         *argv])
    return manager.worker_limit(args)


def test_a_worker_may_run_for_its_sections_budget_and_ten_minutes_more():
    """At most the time its cluster job asks for; that time where it has no budget."""
    assert limit("--section", "hybridize", "--processes", "8", "--budget-seconds", "240") == (
        840, "the section's budget of 240 s plus 600 s")
    assert limit("--section", "hybridize", "--processes", "2") == (
        780, "the section's budget of 180 s plus 600 s")  # the default budget of stages
    assert limit("--section", "hybridize", "--budget-seconds", "1500") == (
        1800, "the 30 min its cluster job asks for")
    assert limit("--section", "multi_gpu_gluon") == (7200, "the 120 min its cluster job asks for")
    assert limit("--section", "toy", "--worker-limit-seconds", "5") == (
        5, "--worker-limit-seconds")


def test_a_manager_whose_job_shell_is_killed_ends_with_its_workers_and_writes_nothing(
        tmp_path):
    """SIGKILL of a section's job shell (Snakemake then restores the previous outputs): the
    manager must not time on, holding the host's lock, and write over them."""
    command, pids, env = hung_section(tmp_path, "--processes", "2")
    for name in ("s.csv", "run.json"):
        (tmp_path / name).write_text("the previous results\n")
    manager_pid = tmp_path / "manager.pid"
    shell = subprocess.Popen(["sh", "-c", f'"$@" & echo $! > {manager_pid}; wait', "sh",
                              *command], env=env)
    try:
        assert wait_for(lambda: pids.exists() and pids.read_text().strip())
        worker, child = map(int, pids.read_text().split())
        section = int(manager_pid.read_text())
        shell.kill()
        shell.wait(timeout=60)
        assert wait_for(lambda: not alive(section), 30), "the manager timed on, orphaned"
        assert wait_for(lambda: not alive(worker) and not alive(child), 30), "left running"
    finally:
        for pid in map(int, (pids.read_text().split() if pids.exists() else [])):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert [(tmp_path / name).read_text() for name in ("s.csv", "run.json")] == [
        "the previous results\n"] * 2
    assert the_lock_is_free(tmp_path)


def test_a_manager_knows_when_its_job_has_ended():
    assert not children.orphaned(os.getppid())
    assert children.orphaned(os.getppid() + 1)


# Workers that end well without writing what they were asked to (the paths are the last
# two arguments' values: --csv <path> --sidecar <path>).
SILENT = {
    "no samples": "pass",
    "no run record": "open(sys.argv[-3], 'w').write('case,value\\n')",
    "a run record that is not JSON": ("open(sys.argv[-3], 'w').write('case,value\\n'); "
                                      "open(sys.argv[-1], 'w').write('{\"cut')"),
}
SAID = {
    "no samples": r"wrote no samples: \S+/0\.csv is missing",
    "no run record": r"wrote no run record: \S+/0\.json is missing",
    "a run record that is not JSON": r"its run record \S+/0\.json is not JSON \(",
}


@pytest.mark.parametrize("case", SILENT)
def test_a_worker_that_exits_0_without_its_outputs_is_named_with_the_file(tmp_path, case):
    script = tmp_path / "silent.py"
    script.write_text(f"import sys\n{SILENT[case]}\n")
    read, write = os.pipe()
    done = subprocess.run(
        [sys.executable, "-m", "d2lperf", "measure", "--section", "toy", "--framework",
         "pytorch", "--python", sys.executable, "--script", str(script), "--csv",
         str(tmp_path / "s.csv"), "--sidecar", str(tmp_path / "run.json"),
         "--probe-seconds", "0.01"], capture_output=True, text=True, timeout=300,
        pass_fds=(write,), env={**os.environ, progress.VARIABLE: str(write),
                                hostlock.LOCK_VARIABLE: str(tmp_path / "host.lock")})
    os.close(write)
    with os.fdopen(read) as console:
        shown = console.read()
    assert done.returncode == manager.OUTPUTS_MISSING, done.stderr
    assert "Traceback" not in done.stderr and "FileNotFoundError" not in done.stderr
    said = re.search(r"process 1 of 1 \(pid \d+\) exited 0 but " + SAID[case]
                     + r".*; look at this section's log for what it printed", done.stderr)
    assert said, done.stderr
    assert f"toy (PyTorch): {said.group(0)}" in shown
    assert not (tmp_path / "run.json").exists()


BEATS_THEN_HANGS = """
import time
from d2lperf import progress
for _ in range(4):  # a beat is written at most once a second
    progress.beat()
    time.sleep(0.4)
progress.beat()
time.sleep(600)  # hung
"""


def test_a_worker_silent_far_longer_than_it_ever_was_is_given_up_long_before_its_limit(
        tmp_path, monkeypatch):
    """A worker beats (every line, every sample); silent for many times its longest silence
    (at least a floor) it is hung, however long its limit: the manager's watch returns
    why, within seconds of the bound, not at the limit."""
    monkeypatch.setattr(manager, "SILENCE_FLOOR_S", 2.0)
    heartbeat = tmp_path / "0.alive"
    worker = subprocess.Popen([sys.executable, "-c", BEATS_THEN_HANGS],
                              env={**os.environ, progress.HEARTBEAT: str(heartbeat)})
    started = time.monotonic()
    try:
        code, silence = manager.watch(worker, 600, heartbeat)
    finally:
        worker.kill()
        worker.wait()
    assert code is None
    assert time.monotonic() - started < 60
    assert re.fullmatch(r"\d+ s \(its longest silence before was [\d.]+ s; allowed: 10 times "
                        r"that, at least 2 s\)", silence), silence


def test_a_worker_that_ends_is_not_given_up(tmp_path):
    worker = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(3)"])
    assert manager.watch(worker, 600, tmp_path / "none") == (3, "")
