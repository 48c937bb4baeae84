"""Resident memory (RSS) of this process: now, and its peak over a region.

seeds/000 (异步计算对内存的影响) reads the RSS with ``ps u`` before and after a training
loop; ``psutil`` reads the same figure on Linux and macOS without a subprocess. RSS can
rise and fall between two such readings, so ``PeakRSS`` also tracks the peak: a
background thread samples RSS every ~1 ms everywhere, and on Linux the kernel's own
high-water mark (VmHWM), reset when the region starts, catches what sampling misses.
The kernel updates VmHWM from approximate per-CPU counters, so it can read a few hundred
KB below a sampled reading; the larger of the two wins, and the result says which.

Below that, what the memory section's two twins share: their command line, the fresh
process of every (mode, repeat) run, and how the runs become samples. Each twin keeps
only the document's loop, ``train(mode, args)``, in its framework.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TypedDict

import psutil

from d2lperf import arguments, children, harness, progress, provenance, sections
from d2lperf.arguments import non_negative_int, positive_int
from d2lperf.describe import Stats
from d2lperf.results import Recorder, read_json, write_json

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


# --- The memory section (seeds/000: 异步计算对内存的影响), shared by its two twins -----
# Each twin's own part is its ``train(mode, args)``: one run of the document's loop.

MODES = ("sync", "async")
MEMORY_FIGURES = ("memory_increase", "peak_memory_increase")
class MemoryRun(TypedDict):
    """One run of one mode, in its fresh process (a twin's ``train``): the elapsed time at
    every reported batch, the total, and the memory figures with how the peak was read."""

    batch_seconds: dict[str, float]
    total_seconds: float
    memory_increase: float
    peak_memory_increase: float
    peak_method: str
    peak_samples: int


Runs = dict[str, list[MemoryRun]]


def run_figures(batch_seconds: dict[int, float], seconds: float, rss: PeakRSS,
                before_mb: float) -> MemoryRun:
    """One run's figures, every twin's: the elapsed time at each reported batch and in all,
    and how much the RSS grew from ``before_mb`` (at the end and at its peak), the growth
    printed as the document prints it."""
    increased = rss.result.after / MB - before_mb
    print(f"increased memory: {increased:f} MB", flush=True)
    return {"batch_seconds": batch_seconds, "total_seconds": seconds,
            "memory_increase": increased, "peak_memory_increase": rss.result.peak / MB - before_mb,
            "peak_method": rss.result.method, "peak_samples": rss.result.samples}


def main(framework: str, description: str, body: Callable[[argparse.Namespace, Recorder], None],
         train: Callable[[str, argparse.Namespace], MemoryRun],
         add_workload: Callable[[argparse.ArgumentParser], None] | None = None) -> int:
    """A twin's entry point: the section (``body``, through harness.main), or, with
    ``--child MODE`` (``run_modes`` starts it), one run of one mode in this fresh process,
    its figures (``train``) written to ``--result``. ``add_workload``: the workload
    options, a twin's own added (default: ``add_workload_options``)."""
    add_workload = add_workload or add_workload_options
    argv = sys.argv[1:]
    if "--child" not in argv:
        return harness.main(SECTION, framework, parser(description, add_workload), body)
    p = argparse.ArgumentParser(description="one run of one mode (used by this script itself)")
    p.add_argument("--child", choices=MODES, required=True)
    p.add_argument("--result", required=True, help="JSON file for the run's figures")
    p.add_argument("--threads", type=positive_int, required=True)
    p.add_argument("--warmup", type=non_negative_int, required=True)
    add_workload(p)
    args = p.parse_args(argv)
    provenance.set_threads(args.threads)
    write_json(args.result, train(args.child, args))
    return 0


def check_workload(args: argparse.Namespace) -> None:
    if args.report_every > args.batches:
        arguments.usage_error(f"--report-every ({args.report_every}) must not exceed "
                               f"--batches ({args.batches}): no batch would be reported")


WARMED = "warmed"  # the extra way: after --warmup forward passes, parameters in place


def run_modes(args: argparse.Namespace, script: str, child_flags: Sequence[str] = ()) -> Runs:
    """Every (mode, repeat) in a fresh process (``script --child MODE``), the modes
    alternating so that a drift in the machine's load touches both alike; each run's
    figures, by mode. First the document's way, the counterpart of its figures: no
    warm-up, so the loop's first batch also allocates the parameters, as the seed's
    did (its warm-up lines are commented out). Then, with ``--warmup`` N > 0, the same
    after N untimed forward passes (``sync_warmed``, ``async_warmed``): an extra that
    leaves the parameters' allocation out of the increase."""
    ways = [("", 0)] + ([(f"_{WARMED}", args.warmup)] if args.warmup > 0 else [])
    runs: Runs = {f"{mode}{suffix}": [] for suffix, _ in ways for mode in MODES}
    with children.temporary_folder("async_memory-") as tmp:
        for repeat in range(args.repeats):
            for suffix, warmup in ways:
                for mode in MODES:
                    progress.say(f"{mode}{suffix}, repeat {repeat}:")  # 10-30 s a run
                    result = tmp / f"{mode}{suffix}-{repeat}.json"
                    subprocess.run([sys.executable, script, "--child", mode, "--result",
                                    str(result), "--threads", str(args.threads), "--warmup",
                                    str(warmup), *child_flags, *workload_flags(args)],
                                   check=True, preexec_fn=children.die_with_parent)
                    runs[f"{mode}{suffix}"].append(read_json(result))
    return runs


def record_runs(rec: Recorder, args: argparse.Namespace, runs: Runs,
                figures: Sequence[str] = MEMORY_FIGURES, devices: str | None = None) -> None:
    """Each mode's runs as samples: the elapsed time at every reported batch (the
    document's way only: those are its figures), the total, and the memory figures;
    printed as they are recorded."""
    def record(case: str, metric: str, unit: str, values: list[float]) -> None:
        rec.samples(case, metric, unit, values, devices=devices)
        print(f"{case}: median {Stats(values).median:.4f} {unit} over {len(values)} repeats",
              flush=True)

    for name, found in runs.items():
        if name in MODES:
            for k in range(args.report_every, args.batches + 1, args.report_every):
                record(f"{name}_batch_{k}", "time", "s",
                       [run["batch_seconds"][str(k)] for run in found])
        record(f"{name}_total", "time", "s", [run["total_seconds"] for run in found])
        for figure in figures:
            record(f"{name}_{figure}", "memory", "MB", [run[figure] for run in found])
    rec.notes.update(
        process_per_run="each (mode, repeat) ran in a fresh process, modes alternating",
        warm_up=("the document's figures without a warm-up, as the seed ran (its memory "
                 "increase includes the parameters' allocation); *_warmed_* after "
                 f"{args.warmup} untimed forward passes" if args.warmup else
                 "the document's figures without a warm-up, as the seed ran"),
        peak_memory_method={name: [run["peak_method"] for run in found]
                            for name, found in runs.items()},
    )


# The command line

SECTION = "async_memory"


def parser(description: str, add_workload: Callable[[argparse.ArgumentParser], None]
           | None = None) -> argparse.ArgumentParser:
    """A twin's command line: the common options (its samples are fresh processes), the
    workload ones (``add_workload``, default ``add_workload_options``) and its own
    ``--warmup`` and ``--repeats`` (``add_process_options``)."""
    p = arguments.parser(description, repeated=False)
    (add_workload or add_workload_options)(p)
    add_process_options(p)
    return p


def add_workload_options(p: argparse.ArgumentParser) -> None:
    """The document's training workload, as the section declares it: batches, batch size,
    how often to record the elapsed time."""
    arguments.add_options(p, SECTION)


def workload_flags(args: argparse.Namespace) -> list[str]:
    """The workload options again, for the fresh child process of each run."""
    return [word for key in arguments.option_keys(SECTION)
            for word in (sections.flag(key), str(getattr(args, key)))]


def add_process_options(p: argparse.ArgumentParser) -> None:
    """Samples here are fresh processes and warm-up is batches inside each: own help texts."""
    p.add_argument("--warmup", type=non_negative_int, default=1,
                   help="untimed forward passes of the extra, warmed runs (the document's "
                        "commented-out warm-up); the document's own figures are always "
                        "measured without one, as it ran; 0: no warmed runs (default: 1)")
    p.add_argument("--repeats", type=positive_int, default=5,
                   help="fresh processes per mode; every one is kept (default: 5)")
