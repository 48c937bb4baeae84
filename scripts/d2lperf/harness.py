"""The command line every section script shares, and the run record it writes.

A section script defines its own arguments and a ``body(args, recorder)``; this
module parses the common ones (output paths, threads, warm-up, repeats, processes),
pins the thread counts *before* the framework is imported, runs the body and
writes the tidy CSV and the JSON sidecar. A body that cannot run on this machine
raises ``Skipped``; any other exception ends the process non-zero with its
traceback in the log, and the rule's fallback (scripts/record_failure.py) records
the failure.

With ``--processes P`` above 1 the script runs its body in P fresh processes, one
after the other (docs/design.md, "Measured side by side"): this process, which never imports a
framework, starts the same script again with ``--process i`` and merges their
rows and run records. Machine steadiness is measured before and after, around
all of them (``d2lperf.steadiness``).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from d2lperf import (
    blas,
    children,
    frameworks,
    hostlock,
    progress,
    provenance,
    stages,
    steadiness,
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
from d2lperf.results import (
    COLUMNS,
    FORMAT_VERSION,
    Recorder,
    read_json,
    write_csv,
    write_json,
)

STAGE_PROBE_REPEATS = 3  # the threaded probe after each stage (before and after: 5)


def main(
    section: str,
    framework: str,
    arg_parser: argparse.ArgumentParser,
    body: Callable[[argparse.Namespace, Recorder], None],
    argv: Sequence[str] | None = None,
) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = arg_parser.parse_args(argv)
    provenance.set_threads(args.threads)
    progress.introduce(section, REGISTRY[framework].label)
    child = getattr(args, "process", None) is not None
    # one timing at a time on this host, whatever run it is for (children: under the parent's)
    lock = None if child else hostlock.acquire(section)
    before = None if child else steadiness.snapshot(args.probe_seconds, threads=args.threads)
    if getattr(args, "processes", 1) > 1 and not child:
        record, rows = _run_processes(section, framework, args, argv, before)
    else:
        if hasattr(args, "processes"):
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
              body: Callable[[argparse.Namespace, Recorder], None]) -> tuple[dict, list]:
    """Run the section in this process: its run record and its rows."""
    record: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "section": section,
        "framework": framework,
        "parameters": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
                       if k not in ("csv", "sidecar", "blas_reference", "process",
                                    "blas_probe_size")},  # blas_probe holds it
        "started": provenance.now(),
        **provenance.run_context(),
    }
    recorder = Recorder(section, framework, getattr(args, "process", 0) or 0)
    clock = time.perf_counter()
    try:
        # Every fresh process of a section loads the same libraries in the same environment,
        # and the first one's record is the section's: its check is the section's, once.
        if not getattr(args, "process", None):
            blas.probe_apart(framework, record, args.blas_probe_size or blas.PROBE_SIZE,
                             args.blas_reference)
        body(args, recorder)
        record["status"] = "ok"
    except Skipped as why:
        record["status"] = "refused" if isinstance(why, Refused) else "skipped"
        record["reason"] = str(why)
        if why.needs:
            record["needs"] = why.needs
        recorder.rows.clear()
        print(f"{section}: skipped: {why}", flush=True)
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
            module = frameworks.module(entry.name)
            record[entry.package] = module.build_info()
            record["execution"] = module.execution(on)
    return record, recorder.rows


def _run_processes(section: str, framework: str, args: argparse.Namespace, argv: list[str],
                   before: dict[str, Any] | None = None) -> tuple[dict, list]:
    """Run the section's body in fresh processes, one after the other, in the stages of
    ``d2lperf.stages`` (``args.processes`` first, more while its comparisons are
    undecided and its budget allows); the first one's record (parameters, outputs,
    build) is the section's, with every process's own figures under ``processes`` and
    the stages under ``stages``. Only the pooled stages' rows are the section's; a
    stage set aside (measured on a busy machine) keeps its rows in its stage's entry.
    A process that fails ends the section non-zero: the rule records the failure. A
    process that skips (or refuses) ends the section there, skipped: no other process
    is started."""
    with children.temporary_folder(f"{section}-processes-") as tmp:
        def spawn(first: int, count: int, room: stages.Room) -> stages.Stage:
            return _run_stage(section, framework, args, argv, Path(tmp), first, count, room)

        probe = statistics.median(before["probe_s"]) if before else None
        done, pooled, staging = stages.run(
            spawn, args.processes, section=section, band=args.band,
            budget=args.budget_seconds, threads=args.threads, probe_s=probe)
    records = [r for stage in done for r in stage.records]
    rows = [row for stage, keep in zip(done, pooled) if keep for row in stage.rows]
    for entry, stage, keep in zip(staging["history"], done, pooled):
        if not keep:
            entry["set_aside_rows"] = stage.rows
    record = dict(records[0])
    statuses = {r["status"] for r in records}
    if statuses != {"ok"}:
        record["status"] = next(s for s in ("refused", "skipped") if s in statuses)
        rows = []
    record["parameters"] = {**record["parameters"], "processes": args.processes}
    record["processes"] = [
        {key: r.get(key) for key in ("pid", "started", "finished", "wall_seconds",
                                     "peak_rss_mb", "load_average_at_start",
                                     "load_average_at_end", "status")}
        for r in records]
    record["stages"] = staging
    record["started"], record["finished"] = records[0]["started"], records[-1]["finished"]
    record["wall_seconds"] = round(sum(r["wall_seconds"] for r in records), 3)
    return record, [{column: row.get(column, "") for column in COLUMNS} for row in rows]


def _run_stage(section: str, framework: str, args: argparse.Namespace, argv: list[str],
               tmp: Path, first: int, count: int, room: stages.Room) -> stages.Stage:
    """Processes ``first`` to ``first + count - 1``, one after the other, while ``room``
    allows the next, with the cores other programs used meanwhile and the threaded probe
    after them."""
    records, rows = [], []
    window = steadiness.Window()
    for index in range(first, first + count):
        if records and not room(records):
            print(f"{section}: no room for process {index + 1} in the budget", flush=True)
            break
        csv_path, sidecar = tmp / f"{index}.csv", tmp / f"{index}.json"
        progress.say(f"process {index + 1} (stage of {first + 1}-{first + count})")
        # argparse keeps the last of a repeated option: these replace the outputs.
        command = [sys.executable, sys.argv[0], *argv, "--process", str(index),
                   "--csv", str(csv_path), "--sidecar", str(sidecar)]
        done = subprocess.run(command, check=False, preexec_fn=children.die_with_parent)
        if done.returncode != 0:
            raise SystemExit(f"{section}: process {index} of {args.processes} "
                             f"failed with exit code {done.returncode}")
        records.append(read_json(sidecar))
        with open(csv_path, newline="", encoding="utf-8") as handle:
            rows += list(csv.DictReader(handle))
        if records[-1]["status"] != "ok":
            break  # skipped here means skipped in every process: the machine is the same
    load = window.close()
    probe = statistics.median(steadiness.probe(args.probe_seconds, STAGE_PROBE_REPEATS,
                                               threads=args.threads))
    return stages.Stage(records, rows, load, probe)
