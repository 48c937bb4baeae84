"""Child processes that never outlive their section, and temporary folders that never
outlive it either.

A section that runs its rounds in fresh processes starts them one after the other; if the
section's own process is killed (a job cancelled, a machine lock lost), a child that went
on timing would run beside whatever comes next, and its temporary folder would stay. Each
child asks the kernel for SIGKILL when its parent dies (Linux's parent-death signal); the
folder is removed on return, exception, SIGTERM, SIGHUP or Ctrl-C, and, after a SIGKILL,
by the next section that starts (its folder names the dead process). A section's manager
asks for SIGTERM when its job's shell dies (``end_with_parent``): it then kills its
workers' process groups (``kill_group``) and leaves without writing, and it checks that
its parent is still there before it writes at all (``orphaned``). A run's Snakemake told
to stop (SIGTERM) waits for its running jobs; it first sends them SIGTERM too
(``stopping_children_first``), or a job waiting for a neighbour's timing would keep it
waiting for as long as that timing lasts.

Standard library only: the frameworks' environments import it.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """For ``subprocess``'s ``preexec_fn``: this child gets SIGKILL when its parent dies
    (Linux; elsewhere nothing, the child ends when it is done)."""
    if _parent_death_signal(signal.SIGKILL) and os.getppid() == 1:
        os._exit(1)  # the parent died before the signal was asked for


def end_with_parent() -> int:
    """This process gets SIGTERM when its parent dies (Linux), which a section's manager
    answers as it answers any SIGTERM: its workers killed, nothing written. Returns the
    parent's pid, for ``orphaned``."""
    parent = os.getppid()
    _parent_death_signal(signal.SIGTERM)
    return parent


def orphaned(parent: int) -> bool:
    """Whether the process that started this one (``parent``, from ``end_with_parent``)
    has ended: its job is over, and nothing may be written for it any more."""
    return os.getppid() != parent


def _parent_death_signal(signum: int) -> bool:
    """Ask the kernel for ``signum`` when this process's parent dies; whether it took."""
    if not sys.platform.startswith("linux"):
        return False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0
    return False


def wait(process: subprocess.Popen, limit: float) -> int | None:
    """``process``'s exit code, or None if it still runs after ``limit`` seconds. Woken by
    its end (Linux's pidfd), not by polling: ``Popen.wait`` with a time-out wakes twenty
    times a second, beside a timing; that is only the fallback where there is no pidfd."""
    try:
        fd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        try:
            return process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            return None
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        ended = poller.poll(math.ceil(limit * 1000))
    finally:
        os.close(fd)
    return process.wait() if ended else None


def kill_group(pid: int) -> None:
    """SIGKILL process group ``pid``: a child started in a session of its own
    (``start_new_session``) and every process it started that stayed in it. Call it
    before the child is reaped, so that the group's id is still the child's."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (its children, theirs, ...), from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            parents.setdefault(ppid, []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        below = parents.get(queue.pop(), [])
        found += below
        queue += below
    return found


def stopping_children_first(handler):
    """A SIGTERM handler for a run's Snakemake: SIGTERM to every process below it (its
    jobs: a section then keeps its previous results; a job waiting for the host's lock
    stops waiting), then ``handler``, Snakemake's own, which waits for the running jobs to
    finish, and so no longer for ever. Snakemake's handler takes locks that the main
    thread may hold when the signal comes, so it runs in a thread of its own."""
    def on_term(signum, frame):
        for pid in descendants(os.getpid()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        if callable(handler):
            threading.Thread(target=handler, args=(signum, frame), daemon=True).start()
    return on_term


def _exit_on(signum, frame):
    raise SystemExit(128 + signum)  # unwinds, so the folder below is removed


def alive(pid: int) -> bool:
    """Whether process ``pid`` still exists (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def temporary_folder(prefix: str) -> Iterator[Path]:
    """A folder ``<prefix><pid>-*`` in the temporary folder, removed on every way out but
    SIGKILL; one a killed process left behind is removed here, first."""
    root = Path(tempfile.gettempdir())
    for stale in root.glob(f"{prefix}*"):
        pid = stale.name[len(prefix):].split("-", 1)[0]
        if stale.is_dir() and pid.isdigit() and not alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    handlers = {s: signal.signal(s, _exit_on) for s in (signal.SIGTERM, signal.SIGHUP)}
    folder = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
