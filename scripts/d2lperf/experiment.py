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
import ctypes
import importlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from d2lperf import provenance, steadiness
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


def _openblas_info(path: str) -> dict[str, Any]:
    """OpenBLAS's own build string, kernel and threads; numpy's 64-bit build suffixes
    its symbols with 64_."""
    info: dict[str, Any] = {"path": path}
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return info
    for suffix in ("", "64_"):
        try:
            for field, symbol in (("config", "openblas_get_config"),
                                  ("core", "openblas_get_corename")):
                function = getattr(lib, symbol + suffix)
                function.restype = ctypes.c_char_p
                info[field] = function().decode()
            info["threads"] = getattr(lib, "openblas_get_num_threads" + suffix)()
            return info
        except AttributeError:
            continue
    return info


def loaded_blas() -> list[dict[str, Any]]:
    """Every BLAS library this process has mapped (MXNet's and numpy's each bring one)."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as handle:
            paths = {line.split()[-1] for line in handle
                     if "blas" in line.lower() and line.split()[-1].startswith("/")}
    except OSError:
        return []
    return [_openblas_info(p) if "openblas" in p.lower() else {"path": p} for p in sorted(paths)]


def check_blas(reference: Path, record: dict[str, Any]) -> None:
    """Refuse to time on a BLAS whose dot differs from the stock one's."""
    from d2lperf import blas

    error = blas.max_relative_error(reference)
    record["blas_check"] = {"max_relative_error": error, "tolerance": blas.REFERENCE_RTOL,
                            "reference": str(reference)}
    print(f"BLAS check against the stock dot: max relative error {error:.2e}", flush=True)
    if not error <= blas.REFERENCE_RTOL:
        raise Refused(f"this BLAS's dot differs from the stock one by {error:.2e} "
                      f"(relative; allowed {blas.REFERENCE_RTOL:g}): no figures reported")


def main(
    experiment: str,
    framework: str,
    arg_parser: argparse.ArgumentParser,
    body: Callable[[argparse.Namespace, Recorder], None],
    argv: Sequence[str] | None = None,
) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = arg_parser.parse_args(argv)
    provenance.set_threads(args.threads)
    child = getattr(args, "process", None) is not None
    before = None if child else steadiness.snapshot(args.probe_seconds)
    if getattr(args, "processes", 1) > 1 and not child:
        record, rows = _run_processes(experiment, args, argv)
    else:
        if hasattr(args, "processes"):
            args.process = args.process or 0
        record, rows = _run_body(experiment, framework, args, body)
    if before is not None:
        record["steadiness"] = steadiness.summary(before, steadiness.snapshot(args.probe_seconds))
    write_csv(args.csv, rows)
    write_json(args.sidecar, record)
    return 0


def _run_body(experiment: str, framework: str, args: argparse.Namespace,
              body: Callable[[argparse.Namespace, Recorder], None]) -> tuple[dict, list]:
    """Run the section in this process: its run record and its rows."""
    record: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "experiment": experiment,
        "framework": framework,
        "parameters": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
                       if k not in ("csv", "sidecar", "blas_reference", "process")},
        "started": provenance.now(),
        **provenance.run_context(),
    }
    recorder = Recorder(experiment, framework, getattr(args, "process", 0) or 0)
    clock = time.perf_counter()
    try:
        if args.blas_reference:
            check_blas(args.blas_reference, record)
        body(args, recorder)
        record["status"] = "ok"
    except Skipped as why:
        record["status"] = "refused" if isinstance(why, Refused) else "skipped"
        record["reason"] = str(why)
        recorder.rows.clear()
        print(f"{experiment}: skipped: {why}", flush=True)
    record.update(
        finished=provenance.now(),
        load_average_at_end=provenance.load_average(),
        peak_rss_mb=provenance.peak_rss_mb(),
        wall_seconds=round(time.perf_counter() - clock, 3),
        outputs=recorder.outputs,
        artifacts=recorder.artifacts,
        notes=recorder.notes,
    )
    for entry in REGISTRY.values():  # the build of each framework the body loaded
        if entry.package in sys.modules:
            record[entry.package] = importlib.import_module(entry.module).build_info()
    return record, recorder.rows


def _run_processes(experiment: str, args: argparse.Namespace,
                   argv: list[str]) -> tuple[dict, list]:
    """Run the section's body in ``args.processes`` fresh processes, one after the
    other; the first one's record (parameters, outputs, build) is the section's,
    with every process's own figures under ``processes``. A process that fails
    ends the section non-zero: the rule records the failure. A process that skips
    (or refuses) ends the section there, skipped: no other process is started."""
    records, rows = [], []
    with tempfile.TemporaryDirectory(prefix=f"{experiment}-processes-") as tmp:
        for index in range(args.processes):
            csv_path, sidecar = Path(tmp) / f"{index}.csv", Path(tmp) / f"{index}.json"
            print(f"{experiment}: process {index + 1} of {args.processes}", flush=True)
            # argparse keeps the last of a repeated option: these replace the outputs.
            command = [sys.executable, sys.argv[0], *argv, "--process", str(index),
                       "--csv", str(csv_path), "--sidecar", str(sidecar)]
            done = subprocess.run(command, check=False)
            if done.returncode != 0:
                raise SystemExit(f"{experiment}: process {index} of {args.processes} "
                                 f"failed with exit code {done.returncode}")
            records.append(read_json(sidecar))
            with open(csv_path, newline="", encoding="utf-8") as handle:
                rows += list(csv.DictReader(handle))
            if records[-1]["status"] != "ok":
                break  # skipped here means skipped in every process: the machine is the same
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
    record["started"], record["finished"] = records[0]["started"], records[-1]["finished"]
    record["wall_seconds"] = round(sum(r["wall_seconds"] for r in records), 3)
    return record, [{column: row.get(column, "") for column in COLUMNS} for row in rows]
