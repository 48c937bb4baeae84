"""A section's progress, for the person watching the run.

A section's whole output goes to its log; `make report` shows one line per job (its rule's
``message:``). A long section also says how far it is, a line per process or epoch, and
in an epoch longer than a minute a line a minute: each such line goes to the log and to
the console, which the rule hands the script as a file descriptor
(``$D2LPERF_PROGRESS_FD``: Snakemake's own stderr, duplicated before the job's output is
sent to its log), after the section and framework, since every job's lines meet there.
Run by hand, a script prints to its terminal alone.

A worker also beats (``beat``): every line it says, every sample it takes, every second a
data-parallel group it waits on is alive. Its manager names a file in ``$D2LPERF_HEARTBEAT``;
each beat (at most one a second) writes there the longest silence so far, and a worker
silent far longer than that is hung (``d2lperf.manager``).

Standard library only: the frameworks' environments import it.
"""

from __future__ import annotations

import os
import sys
import time

VARIABLE = "D2LPERF_PROGRESS_FD"
HEARTBEAT = "D2LPERF_HEARTBEAT"
EVERY_S = 60.0  # the longest a long step goes without a line on the console
BEAT_EVERY_S = 1.0  # the most often a beat is written
_who = ""
_beats = {"last": None, "longest": 0.0, "written": float("-inf")}


def introduce(section: str, framework_label: str) -> None:
    """Name this process's lines on the console: ``ceilings (MXNet): ...``."""
    global _who
    _who = f"{section} ({framework_label})"
    beat()


def beat() -> None:
    """This worker is making progress: where its manager watches (``$D2LPERF_HEARTBEAT``),
    the heartbeat file is written anew (at most once every ``BEAT_EVERY_S``) with the
    longest silence between two beats so far, in seconds. Cheap enough to call after every
    sample, outside its clock."""
    path = os.environ.get(HEARTBEAT)
    if not path:
        return
    now = time.monotonic()
    if _beats["last"] is not None:
        _beats["longest"] = max(_beats["longest"], now - _beats["last"])
    _beats["last"] = now
    if now - _beats["written"] < BEAT_EVERY_S:
        return
    _beats["written"] = now
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(f"{_beats['longest']:.3f}\n")
    except OSError:  # the manager's folder is gone: it has ended, and so will this
        pass


def say(line: str, about: str = "", out=None) -> None:
    """``line`` in the log (stdout, or ``out``: stderr for what a section's printed figures
    must never hold, such as a wait for the host's lock), and on the console where the
    rule gave one, with what it is ``about`` (a training run's case) where the log has
    said so before."""
    print(line, file=out or sys.stdout, flush=True)
    beat()
    fd = os.environ.get(VARIABLE, "")
    if fd.isdigit():
        who = ", ".join(part for part in (_who, about) if part)
        try:
            os.write(int(fd), f"{who + ': ' if who else ''}{line}\n".encode("utf-8", "replace"))
        except OSError:  # the console went away (a closed terminal): the log has it
            pass


def console_fds() -> tuple[int, ...]:
    """The console's descriptor where the rule gave one, for a child process that says its
    own progress (``subprocess``'s ``pass_fds``: a child gets no other descriptor)."""
    fd = os.environ.get(VARIABLE, "")
    if not fd.isdigit():
        return ()
    try:
        os.fstat(int(fd))
    except OSError:
        return ()
    return (int(fd),)
