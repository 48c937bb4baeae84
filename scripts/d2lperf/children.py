"""Child processes that never outlive their section, and temporary folders that never
outlive it either.

A section that runs its rounds in fresh processes starts them one after the other; if the
section's own process is killed (a job cancelled, a machine lock lost), a child that went
on timing would run beside whatever comes next, and its temporary folder would stay. Each
child asks the kernel for SIGKILL when its parent dies (Linux's parent-death signal); the
folder is removed on return, exception, SIGTERM, SIGHUP or Ctrl-C, and, after a SIGKILL,
by the next section that starts (its folder names the dead process).

Standard library only: the frameworks' environments import it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """For ``subprocess``'s ``preexec_fn``: this child gets SIGKILL when its parent dies
    (Linux; elsewhere nothing, the child ends when it is done)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() == 1:  # the parent died before the signal was asked for
            os._exit(1)


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
