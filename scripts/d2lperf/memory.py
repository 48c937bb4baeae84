"""Resident memory (RSS) of this process: now, and its peak over a region.

seeds/000 (异步计算对内存的影响) reads the RSS with ``ps u`` before and after a training
loop; ``psutil`` reads the same figure on Linux and macOS without a subprocess. RSS can
rise and fall between two such readings, so ``PeakRSS`` also tracks the peak: a
background thread samples RSS every ~1 ms everywhere, and on Linux the kernel's own
high-water mark (VmHWM), reset when the region starts, catches what sampling misses.
The kernel updates VmHWM from approximate per-CPU counters, so it can read a few hundred
KB below a sampled reading; the larger of the two wins, and the result says which.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import psutil

MB = 1e6  # bytes; the document divided ps's RSS column (KiB) by 1e3
KIB = 1024

CLEAR_REFS = Path("/proc/self/clear_refs")
STATUS = Path("/proc/self/status")


def rss_bytes() -> int:
    """This process's resident set size now."""
    return psutil.Process().memory_info().rss


def reset_high_water_mark() -> bool:
    """Reset the kernel's peak RSS to the current RSS; False where that is not possible."""
    try:
        CLEAR_REFS.write_text("5")  # Linux >= 4.0: "5" resets VmHWM (see proc(5))
    except OSError:  # not Linux, or /proc is read-only here
        return False
    return True


def high_water_mark_bytes() -> int | None:
    """The kernel's peak RSS (VmHWM) since the process started or it was last reset."""
    try:
        status = STATUS.read_text()
    except OSError:
        return None
    found = re.search(r"^VmHWM:\s+(\d+) kB$", status, re.MULTILINE)
    return int(found.group(1)) * KIB if found else None


@dataclass(frozen=True)
class Peak:
    """The RSS when a region began, when it ended, and the highest seen in it, in bytes."""

    before: int
    after: int
    peak: int  # >= before and >= after
    method: str  # "VmHWM" (the kernel's high-water mark) or "sampling" (the thread's)
    samples: int  # RSS readings the sampling thread took

    @property
    def increase_mb(self) -> float:
        return (self.peak - self.before) / MB


class PeakRSS:
    """Track the peak RSS of this process over one ``with`` block (one block per tracker)::

        with PeakRSS() as tracker:
            buffers = allocate()
        print(tracker.result.increase_mb, tracker.result.method)
    """

    def __init__(self, interval: float = 0.001) -> None:
        self.interval = interval
        self.result: Peak | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="peak-rss", daemon=True)
        self._kernel = False
        self._before = self._sampled = self._samples = 0

    def _sample(self) -> None:
        process = psutil.Process()
        while not self._stop.is_set():
            self._sampled = max(self._sampled, process.memory_info().rss)
            self._samples += 1
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakRSS:
        self._kernel = reset_high_water_mark() and high_water_mark_bytes() is not None
        self._before = self._sampled = rss_bytes()
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        after = rss_bytes()
        sampled = max(self._sampled, after)
        kernel = high_water_mark_bytes() if self._kernel else None
        if kernel is not None and kernel >= sampled:
            self.result = Peak(self._before, after, kernel, "VmHWM", self._samples)
        else:
            self.result = Peak(self._before, after, sampled, "sampling", self._samples)
