"""One timing at a time on this host, whatever run, results folder or machine id it is for.

Snakemake's machine lock (a resource) keeps the jobs of one run from timing side by side,
but two runs (another results folder, another machine id, a colleague's checkout) know
nothing of each other's. Every section's top process holds an advisory ``fcntl.flock`` on
one fixed file of the host for as long as it runs, so a second timing waits for the first
and says in its log that it waits. The lock goes with the process: a killed one never
leaves it held. Inside a SLURM job the scheduler decides what shares a node, so no lock.

Standard library only: the frameworks' environments import it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

LOCK_FILE = "d2lperf-timing.lock"
# The tests point a run at a lock file of their own (never needed otherwise).
LOCK_VARIABLE = "D2LPERF_HOST_LOCK"


def lock_path() -> Path:
    """The host's lock file: in the system's temporary folder (/tmp), which every run and
    every user of the host shares, unlike $XDG_RUNTIME_DIR (one per user)."""
    return Path(os.environ.get(LOCK_VARIABLE) or Path(tempfile.gettempdir()) / LOCK_FILE)


def _open(path: Path) -> int:
    """The lock file, made by whoever comes first, writable by all; read-only is enough to
    lock it (another user's file in a sticky /tmp)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o666)
        return fd
    except PermissionError:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)


def _holder(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip() or "unknown"
    except OSError:
        return "unknown"


def acquire(what: str, path: Path | None = None, out=None) -> int | None:
    """Take the host's timing lock, waiting for it first and saying so on ``out`` (the
    job's log: stdout) with who holds it, then how long the wait was. Returns what
    ``release`` takes; the lock is held until then or until this process ends, however it
    ends (None inside a SLURM job: no lock)."""
    out = out or sys.stdout
    if os.environ.get("SLURM_JOB_ID"):
        return None
    path = path or lock_path()
    fd = _open(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"{what}: waiting for the host's timing lock {path}: another timing runs on "
              f"this host ({_holder(path)})", file=out, flush=True)
        start = time.monotonic()
        fcntl.flock(fd, fcntl.LOCK_EX)
        print(f"{what}: got the host's timing lock after {time.monotonic() - start:.1f} s",
              file=out, flush=True)
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{what}, pid {os.getpid()}, since {time.ctime()}\n".encode(), 0)
    return fd


def release(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)


@contextlib.contextmanager
def timing_lock(what: str, path: Path | None = None, out=None) -> Iterator[None]:
    """``acquire`` and ``release`` around a block."""
    fd = acquire(what, path, out)
    try:
        yield
    finally:
        release(fd)
