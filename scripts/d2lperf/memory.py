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

import argparse
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import psutil

from d2lperf.experiment import non_negative_int, positive_int

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


# --- The command line of the memory section, shared by its MXNet and PyTorch twins ---

def add_workload_options(p: argparse.ArgumentParser) -> None:
    """The document's training workload: batches, batch size, how often to print."""
    p.add_argument("--batches", type=positive_int, default=100,
                   help="training batches per run (document: 100)")
    p.add_argument("--batch-size", type=positive_int, default=1024,
                   help="examples per batch (document: 1024)")
    p.add_argument("--report-every", type=positive_int, default=50,
                   help="record the elapsed time every this many batches (document: 50)")


def workload_flags(args: argparse.Namespace) -> list[str]:
    """The workload options again, for the fresh child process of each run."""
    return ["--batches", str(args.batches), "--batch-size", str(args.batch_size),
            "--report-every", str(args.report_every)]


def add_process_options(p: argparse.ArgumentParser) -> None:
    """Samples here are fresh processes and warm-up is batches inside each: own help texts."""
    p.add_argument("--warmup", type=non_negative_int, default=1,
                   help="untimed forward passes in each process before measuring, the "
                        "document's commented-out warm-up (default: 1)")
    p.add_argument("--repeats", type=positive_int, default=5,
                   help="fresh processes per mode; every one is kept (default: 5)")
