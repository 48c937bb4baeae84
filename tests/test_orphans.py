"""A section's fresh processes die with it, its temporary folder goes on every way out,
and a hung interpreter check leaves nothing running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import REPO, ctrl_c_as_in_a_terminal, wait_for
from d2lperf import frameworks, hostlock

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
        [sys.executable, str(REPO / "scripts/measure.py"), "--section", "toy", "--framework",
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
    assert "or run `make envs` (it builds .venv-torch)" in said


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
