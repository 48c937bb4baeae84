"""A log of bounded size: its head and tail kept, and how much was cut between them said.

A job's log is everything the job printed. A worker that prints without end (200 MB in each
of its processes) would fill the disk and give the archive a file its own import refuses
(``d2lperf.archive``'s per-file limit), so every log the project writes is capped here: the
first half of ``MAX_LOG_BYTES`` as it comes, the last half held back and written at the end,
with one line in between naming how many bytes were cut. The head says how the job started,
the tail how it ended (the error that stopped it): the cut is of the middle only.

Standard library only: the aggregate steps' wrapper (``d2lperf run-step``) and the manager,
which pipes its workers' output, both use it; the archive caps a log already on disk
(``cap_file``).

As a filter, for a rule whose shell sends its output to its log (pipefail keeps the
command's exit status)::

    COMMAND 2>&1 | python -m d2lperf logcap LOG

Hook for a writer of logs (the manager's workers' output, for instance)::

    with open(log, "wb") as raw, CappedLog(raw) as log:
        for chunk in iter(lambda: os.read(pipe, 65536), b""):
            log.write(chunk)
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

# A section's log is a few kB, a long one some hundred kB: 1 MiB keeps all of a useful one,
# and the logs of one results folder (some 30) stay well inside an archive's limits.
MAX_LOG_BYTES = 1 << 20
RECENT_BYTES = 4096  # what the last line of a failure is found in


def cut_notice(cut: int, limit: int) -> bytes:
    """The line that stands where the middle of a log was cut."""
    return (f"\n[... {cut} bytes cut here: the log keeps its first and last {limit // 2} "
            f"bytes (d2lperf.logcap, MAX_LOG_BYTES = {limit}) ...]\n").encode()


class CappedLog:
    """Writes the first ``limit // 2`` bytes through to ``out``, keeps the latest
    ``limit - limit // 2`` in memory and counts the bytes between; ``close`` writes the
    count and the tail. A write to ``out`` that fails (a full disk) stops the writing to it
    but never the reading: the job's pipe must be drained or the job blocks; ``error``
    keeps the failure, and ``last_line`` still says how the job ended."""

    def __init__(self, out: BinaryIO, limit: int = MAX_LOG_BYTES) -> None:
        self.out, self.limit = out, limit
        self.head_left = limit // 2
        self.tail = bytearray()
        self.tail_size = limit - limit // 2
        self.cut = 0
        self.recent = bytearray()
        self.error: OSError | None = None

    def __enter__(self) -> CappedLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _put(self, data: bytes) -> None:
        if self.error is None and data:
            try:
                self.out.write(data)
                self.out.flush()
            except OSError as error:
                self.error = error

    def write(self, data: bytes) -> None:
        self.recent = (self.recent + data)[-RECENT_BYTES:]
        head = data[: self.head_left]
        self.head_left -= len(head)
        self._put(head)
        self.tail += data[len(head):]
        over = len(self.tail) - self.tail_size
        if over > 0:
            del self.tail[:over]
            self.cut += over

    def close(self) -> None:
        if self.cut:
            self._put(cut_notice(self.cut, self.limit))
        self._put(bytes(self.tail))
        self.tail.clear()

    def last_line(self) -> str:
        """The last line that is not blank of what was written, as text."""
        lines = bytes(self.recent).decode("utf-8", "replace").splitlines()
        return next((line.strip() for line in reversed(lines) if line.strip()), "")


def cap_file(path: str | Path, limit: int = MAX_LOG_BYTES) -> bytes:
    """A file's content, capped as ``CappedLog`` caps a log, read without loading the part
    cut (a log of 100 MB reads 1 MiB)."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size <= limit:
            return handle.read()
        head = handle.read(limit // 2)
        tail_size = limit - limit // 2
        handle.seek(size - tail_size)
        return head + cut_notice(size - len(head) - tail_size, limit) + handle.read()


def main(argv: Sequence[str]) -> int:
    """``d2lperf logcap LOG``: standard input to the log LOG, capped; a write that fails (a
    full disk) is said on stderr once the input ends, and the input is still read to its end."""
    if len(argv) != 1:
        print("usage: d2lperf logcap LOG", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the command's: read to its end
    with open(argv[0], "wb") as raw, CappedLog(raw) as log:
        for chunk in iter(lambda: os.read(sys.stdin.fileno(), 1 << 16), b""):
            log.write(chunk)
    if log.error is not None:
        print(f"error: cannot write {argv[0]}: {log.error.strerror}", file=sys.stderr)
        return 1
    return 0
