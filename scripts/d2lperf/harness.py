"""The worker's side of a section: the command line every section script shares, and the
run record it writes (docs/design.md, "Worker and manager").

A section script defines its own arguments and a ``body(args, recorder)``; this
module parses the common ones (output paths, threads, warm-up, repeats), pins the
thread counts *before* the framework is imported, runs the body once, in this
process, and writes the tidy CSV and the JSON sidecar. A body that cannot run on
this machine raises ``Skipped``; any other exception ends the process non-zero with
its traceback in the log, and the rule's fallback (d2lperf record-failure)
records the failure.

Run by hand, a script measures in one process: it holds the host's timing lock,
measures the machine's steadiness before and after, prints its figures and judges
nothing. The manager (``d2lperf.manager``, d2lperf measure) starts it with
``--process i`` in every fresh process of a section: then the manager holds the lock
and measures the steadiness, and judges the section's claims after each stage. Nothing
imported here judges a claim: a framework's environment holds the framework, the
section's needs and this library's measuring half.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from d2lperf import (
    blas,
    energy,
    frameworks,
    hostlock,
    progress,
    provenance,
    steadiness,
    timing,
)
from d2lperf.arguments import (  # noqa: F401  (the section scripts' command line, from here)
    non_negative_int,
    parser,
    positive_float,
    positive_fraction,
    positive_int,
    usage_error,
)
from d2lperf.errors import Refused, Skipped
from d2lperf.frameworks import REGISTRY
from d2lperf.records import RunRecord, SampleRow
from d2lperf.results import FORMAT_VERSION, Recorder, write_csv, write_json


def main(
    section: str,
    framework: str,
    arg_parser: argparse.ArgumentParser,
    body: Callable[[argparse.Namespace, Recorder], None],
    argv: Sequence[str] | None = None,
) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = arg_parser.parse_args(argv)
    provenance.set_threads(args.threads, framework)
    progress.introduce(section, REGISTRY[framework].label)
    timing.after_each_sample = progress.beat  # every sample tells the manager it is alive
    managed = args.process is not None  # the manager holds the lock and the probe
    lock = None if managed else hostlock.acquire(section)
    before = None if managed else steadiness.snapshot(args.probe_seconds, threads=args.threads)
    args.process = args.process or 0
    record, rows = _run_body(section, framework, args, body)
    if before is not None:
        after = steadiness.snapshot(args.probe_seconds, threads=args.threads)
        record["steadiness"] = steadiness.summary(before, after)
    hostlock.release(lock)
    write_csv(args.csv, rows)
    write_json(args.sidecar, record)
    return 0


def _run_body(section: str, framework: str, args: argparse.Namespace,
              body: Callable[[argparse.Namespace, Recorder], None],
              ) -> tuple[RunRecord, list[SampleRow]]:
    """Run the section in this process: its run record and its rows."""
    record: RunRecord = {
        "format_version": FORMAT_VERSION,
        "section": section,
        "framework": framework,
        "parameters": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
                       if k not in ("csv", "sidecar", "blas_reference", "process",
                                    "blas_probe_size")},  # blas_probe holds it
        "started": provenance.now(),
        **provenance.run_context(framework),
    }
    recorder = Recorder(section, framework, args.process)
    clock = time.perf_counter()
    # The GPUs' energy, clocks and throttle reasons through the body (docs/design.md,
    # "Energy and clocks"), or why there are none.
    meter = energy.Meter()
    try:
        # Every fresh process of a section loads the same libraries in the same environment,
        # and the first one's record is the section's: its check is the section's, once.
        if not args.process:
            blas.probe_apart(framework, record, args.blas_probe_size or blas.PROBE_SIZE,
                             args.blas_reference)
        with meter:
            body(args, recorder)
        record["status"] = "ok"
    except Skipped as why:
        record["status"] = "refused" if isinstance(why, Refused) else "skipped"
        record["reason"] = str(why)
        if why.needs:
            record["needs"] = why.needs
        recorder.rows.clear()
        print(f"{section}: skipped: {why}", flush=True)
    recorder.notes["gpu_energy"] = meter.reading()
    record.update(
        finished=provenance.now(),
        load_average_at_end=provenance.load_average(),
        peak_rss_mb=provenance.peak_rss_mb(),
        wall_seconds=round(time.perf_counter() - clock, 3),
        outputs=recorder.outputs,
        artifacts=recorder.artifacts,
        notes=recorder.notes,
    )
    on = getattr(args, "on", "cpu")
    for entry in REGISTRY.values():  # the build of each framework the body loaded
        if entry.package in sys.modules:
            record[entry.package] = frameworks.module(entry.name).build_info()
    if REGISTRY[framework].package in sys.modules:  # where this framework's work ran
        record["execution"] = frameworks.module(framework).execution(on)
    return record, recorder.rows
