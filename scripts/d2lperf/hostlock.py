"""The pipeline's two locks: one timing at a time on this host, one run per checkout.

The host's timing lock. Snakemake's machine lock (a resource) keeps the jobs of one run
from timing side by side, but two runs (another results folder, another machine id, a
colleague's checkout) know nothing of each other's. Every section's top process holds an
advisory ``fcntl.flock`` on one fixed file of the host, exclusively, for as long as it
runs; every other job of the pipeline (tables, plots, the report, the archive, the
machine's record) holds the same lock shared. So nothing of any run runs beside a timing,
while the other jobs still run beside each other. Who waits says so, naming who holds the
lock, on stderr (the job's log) and on the console where the rule gave one
(``d2lperf.progress``), and again every ``REPEAT_S`` with how long it has waited; it waits
at most ``$D2LPERF_LOCK_WAIT_SECONDS`` (unset: as long as it takes), then fails naming the
holder. The wait is a try every ``POLL_S``, not a blocking flock: the standard library has
no flock with a time-out, and a sleep answers every signal (SIGTERM, Ctrl-C) at once. The
lock goes with the process: a killed one never leaves it held. Inside a SLURM job the
scheduler decides what shares a node, so no lock.

The file sits in a world-writable folder, where anyone may have put something first, so
it is never followed through a link, never opened unless it is a plain file, and never
written, truncated or re-moded unless this process has just created it; who holds the
lock is read from the kernel (/proc/locks), not from the file.

The run lock: Snakemake 9 removes every run's locks under .snakemake/locks/ when any run
in the checkout ends, after which a third run would start the same jobs again. The main
Snakemake process of a run that executes jobs holds ``results/.run.lock`` exclusively for
its lifetime; a second one is refused at once, naming the first.

Standard library only: the frameworks' environments import it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from d2lperf import progress

# A fixed place, the same for every run and user of the host: not tempfile.gettempdir(),
# which follows $TMPDIR (and Snakemake's tmpdir), so two runs with different ones would
# each lock a file of their own and time at the same moment.
HOST_LOCK = Path("/tmp/d2lperf-timing.lock")
# The tests point a run at a lock file of their own (never needed otherwise).
LOCK_VARIABLE = "D2LPERF_HOST_LOCK"
# The run lock, relative to the checkout (Snakemake's working directory).
RUN_LOCK = Path("results/.run.lock")

HOLDER_CHARS = 100  # of a holder's command line, in a message
# The longest a job waits for the host's lock, in seconds; unset or empty: no limit (a
# documents run of another user may time for an hour, and a queued run then follows it).
WAIT_VARIABLE = "D2LPERF_LOCK_WAIT_SECONDS"
REPEAT_S = 60.0  # a waiting job says so again this often, with how long it has waited
POLL_S = 0.5  # how often a waiting job tries the lock again


class LockError(Exception):
    """A lock that cannot be taken safely, or a run refused: the message says what to do."""


def lock_path() -> Path:
    """The host's timing lock file."""
    return Path(os.environ.get(LOCK_VARIABLE) or HOST_LOCK)


_KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket",
          stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device"}


def _refuse_kind(path: Path, mode: int, what: str) -> None:
    if stat.S_ISLNK(mode):
        raise LockError(
            f"{what} {path} is a symbolic link, which this pipeline never follows (it may "
            f"point at a file of yours); remove it (rm '{path}'), or ask its owner or the "
            "administrator to: the next run makes a plain file there")
    if not stat.S_ISREG(mode):
        raise LockError(
            f"{what} {path} is {_KINDS.get(stat.S_IFMT(mode), 'not a plain file')}, not a "
            f"plain file; remove it (or ask its owner or the administrator to): the next "
            "run makes a plain file there")


def _open(path: Path, what: str = "the host's timing lock") -> int:
    """The lock file, read-only (all that flock needs), never through a link.

    Created (O_EXCL: only if nothing is there, not even a dangling link) by whoever comes
    first, readable by all so that every user's runs can lock it; only a file this call
    created is ever re-moded. An existing one must be a plain file: it is looked at before
    it is opened (a FIFO or a device is never opened: opening can block or act), and the
    opened one is checked again, since the name may have been swapped in between."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644)
    except FileExistsError:
        pass
    except OSError as error:
        raise LockError(f"cannot create {what} {path}: {error.strerror}; make its folder "
                        "writable, or create the file there (readable by all)") from None
    else:
        os.fchmod(fd, 0o644)  # ours, just made: past a strict umask, readable by all
        return fd
    try:
        _refuse_kind(path, os.lstat(path).st_mode, what)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:  # removed in between: make it again
        return _open(path, what)
    except OSError as error:
        if error.errno == errno.ELOOP:  # swapped for a link in between
            _refuse_kind(path, stat.S_IFLNK, what)
        owner = _owner(path)
        raise LockError(f"cannot open {what} {path}: {error.strerror}{owner}; ask its owner "
                        "to make it readable by all (chmod a+r), or to remove it") from None
    try:
        _refuse_kind(path, os.fstat(fd).st_mode, what)
    except LockError:
        os.close(fd)
        raise
    return fd


def _owner(path: Path) -> str:
    with contextlib.suppress(OSError):
        info = os.lstat(path)
        return f" (owner uid {info.st_uid}, mode {stat.filemode(info.st_mode)})"
    return ""


def holders(fd: int) -> list[tuple[int, bool]]:
    """Who holds a flock on the file open at ``fd``, from the kernel's table of locks:
    (pid, exclusive) for each holder it shows (none it cannot: another pid namespace)."""
    info = os.fstat(fd)
    device = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    exact, same_inode = [], []
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            for line in table:
                # "1: FLOCK  ADVISORY  WRITE 4242 fe:00:2148241 0 EOF"; waiters have "->"
                parts = line.split()
                if (len(parts) < 6 or parts[1] != "FLOCK" or not parts[4].isdigit()
                        or int(parts[4]) == 0):
                    continue
                holder = (int(parts[4]), parts[3] == "WRITE")
                if parts[5] == device:
                    exact.append(holder)
                elif parts[5].rsplit(":", 1)[-1] == str(info.st_ino):
                    same_inode.append(holder)
    except OSError:
        pass
    # An overlay filesystem may show the kernel another device than stat() does: then the
    # inode alone (another file's on another device, rarely: only a message is at stake).
    return exact or same_inode


def describe(pid: int) -> str:
    """``pid 4242 (python scripts/sections/ceilings/ceilings_mxnet.py ..., since 18:40:02)``, as
    much of it as /proc shows."""
    words = []
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            words = handle.read().decode(errors="replace").split("\0")
    words = [w for w in words if w]
    if words:
        words[0] = os.path.basename(words[0])
    command = " ".join(" ".join(words).split())  # one line, whatever the arguments hold
    if len(command) > HOLDER_CHARS:
        command = command[:HOLDER_CHARS - 3] + "..."
    since = _started(pid)
    details = ", ".join(part for part in (command, since and f"since {since}") if part)
    return f"pid {pid} ({details or 'no longer running'})"


def _started(pid: int) -> str:
    """When a process started, as local time of day (date too if not today), or ''."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            ticks = int(handle.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat", encoding="ascii") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith("btime"))
        started = boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return ""
    same_day = time.localtime(started)[:3] == time.localtime()[:3]
    return time.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S",
                         time.localtime(started))


def _who(fd: int) -> str:
    found = holders(fd)
    timings = [pid for pid, exclusive in found if exclusive]
    if timings:
        return "held by a timing: " + ", ".join(map(describe, timings))
    if found:
        return ("shared by jobs that never run beside a timing: "
                + ", ".join(describe(pid) for pid, _ in found))
    return "held by a process this one cannot see (another user's, or another container's)"


def wait_limit() -> float | None:
    """The longest wait for the host's lock, from ``$D2LPERF_LOCK_WAIT_SECONDS`` (None: no
    limit); LockError, naming the variable, for a value that is not a number of seconds."""
    text = os.environ.get(WAIT_VARIABLE, "").strip()
    if not text:
        return None
    try:
        limit = float(text)
    except ValueError:
        limit = -1.0
    if not limit >= 0:  # NaN too
        raise LockError(f"{WAIT_VARIABLE}={text!r} is not a number of seconds; set it to "
                        "the longest a job may wait for the host's timing lock (0: not at "
                        "all), or unset it to wait as long as it takes")
    return None if limit == float("inf") else limit


def acquire(what: str, path: Path | None = None, out=None, shared: bool = False,
            limit: float | None = None, repeat: float = REPEAT_S) -> int | None:
    """Take the host's timing lock, exclusive for a timing, ``shared`` for any other job.
    Where another holds it, wait, saying so on ``out`` (stderr: never in what a section
    prints, which the tests read; the job's log holds both) and on the console, with who
    holds it, again every ``repeat`` seconds, then how long the wait was. ``limit``: the
    longest wait (default ``wait_limit()``), after which LockError names the holder.
    Returns what ``release`` takes; the lock is held until then or until this process
    ends, however it ends (None inside a SLURM job: no lock). Raises LockError when the
    lock file cannot be used safely."""
    if os.environ.get("SLURM_JOB_ID"):
        return None
    out = out or sys.stderr
    path = path or lock_path()
    limit = wait_limit() if limit is None else limit
    fd = _open(path)
    kind = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    if _try(fd, kind):
        return fd
    try:
        waited = _wait(fd, kind, what, path, out, limit, repeat)
    except BaseException:
        os.close(fd)
        raise
    progress.say(f"{what}: got the host's timing lock after {waited:.1f} s", out=out)
    return fd


def _try(fd: int, kind: int) -> bool:
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _wait(fd: int, kind: int, what: str, path: Path, out, limit: float | None,
          repeat: float) -> float:
    """Wait for the lock (``acquire``), saying so now and every ``repeat`` seconds; the
    seconds waited, or LockError past ``limit``."""
    bound = f"; giving up after {limit:g} s ({WAIT_VARIABLE})" if limit is not None else ""
    progress.say(f"{what}: waiting for the host's timing lock {path}, {_who(fd)}{bound}",
                 out=out)
    start = time.monotonic()
    said = start
    while not _try(fd, kind):
        now = time.monotonic()
        if limit is not None and now - start >= limit:
            raise LockError(
                f"gave up waiting for the host's timing lock {path} after "
                f"{now - start:.0f} s ({WAIT_VARIABLE}={limit:g}), {_who(fd)}; wait for it "
                "to end and run again (or stop it, if it is yours), or set "
                f"{WAIT_VARIABLE} longer (unset: no limit)")
        if now - said >= repeat:
            said = now
            progress.say(f"{what}: still waiting for the host's timing lock {path} after "
                         f"{_duration(now - start)}, {_who(fd)}", out=out)
        time.sleep(POLL_S if limit is None else min(POLL_S, max(0.0, start + limit - now)))
    return time.monotonic() - start


def _duration(seconds: float) -> str:
    """``45 s``, ``3 min 5 s``, ``2 h 1 min``: how long a wait has lasted."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def release(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)


@contextlib.contextmanager
def timing_lock(what: str, path: Path | None = None, out=None,
                shared: bool = False) -> Iterator[None]:
    """``acquire`` and ``release`` around a block."""
    fd = acquire(what, path, out, shared=shared)
    try:
        yield
    finally:
        release(fd)


def share(what: str) -> None:
    """Every job but a timing: hold the host's timing lock shared until this process ends
    (its descriptor is never closed), so that no timing of any run times beside it, nor it
    beside one. A lock file that cannot be used safely, or a wait past its limit, ends the
    job with its message."""
    try:
        acquire(what, shared=True)
    except LockError as error:
        sys.exit(f"{what}: {error}")


def check(path: Path | None = None) -> None:
    """Raise LockError now, before any job, if the host's timing lock cannot be used (or
    the longest wait for it is not a number)."""
    if not os.environ.get("SLURM_JOB_ID"):
        wait_limit()
        os.close(_open(path or lock_path()))


def hold_run(checkout: Path | str = ".") -> int:
    """The run lock of a checkout, taken at once or not at all: held until this process
    ends (its descriptor is closed on exec, so no job inherits it) or ``release``;
    LockError, naming the running run, if another holds it."""
    checkout = Path(checkout).resolve()
    path = checkout / RUN_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = _open(path, "the run lock")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pids = [pid for pid, _ in holders(fd)]
        os.close(fd)
        running = ", ".join(map(describe, pids)) or "its pid unknown"
        raise LockError(
            f"another run of this pipeline is running in this checkout ({checkout}): "
            f"{running}; wait for it to end, or stop it (Ctrl-C in its terminal, or kill "
            f"{pids[0] if pids else '<its pid>'}), then run again. Two runs in one checkout "
            "would start the same jobs twice (Snakemake's own locks under .snakemake/locks/ "
            f"go when any run here ends; {path} is held for as long as a run lives)"
        ) from None
    return fd
