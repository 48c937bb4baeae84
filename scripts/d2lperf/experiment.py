"""The command line every section script shares, and the run record it writes.

A section script defines its own arguments and a ``body(args, recorder)``; this
module parses the common ones (output paths, threads, warm-up, repeats), pins the
thread counts *before* MXNet is imported, runs the body and writes the tidy CSV
and the JSON sidecar. A body that cannot run on this machine raises ``Skipped``;
any other exception ends the process non-zero with its traceback in the log, and
the rule's fallback (scripts/record_failure.py) records the failure.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from d2lperf import provenance
from d2lperf.results import Recorder, write_csv, write_json


class Skipped(Exception):
    """This section cannot run here (for example: needs 2 GPUs, found 0)."""


class Refused(Skipped):
    """This section will not report figures: its BLAS computes something else."""


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be zero or more, got {value}")
    return value


def parser(description: str, *, repeated: bool = True) -> argparse.ArgumentParser:
    """The common arguments; ``repeated=False`` for sections whose samples are epochs."""
    p = argparse.ArgumentParser(description=description)
    out = p.add_argument_group("outputs")
    out.add_argument("--csv", required=True, help="tidy CSV of raw samples to write")
    out.add_argument("--sidecar", required=True, help="JSON run record to write")
    timing = p.add_argument_group("timing")
    timing.add_argument("--threads", type=positive_int, default=1,
                        help="OpenMP/BLAS threads, set before MXNet loads (default: 1)")
    timing.add_argument("--blas-reference", type=Path,
                        help="stock-BLAS dot to match before timing (runs on another BLAS)")
    if repeated:
        timing.add_argument("--warmup", type=non_negative_int, default=1,
                            help="untimed runs before the timed ones (default: 1)")
        timing.add_argument("--repeats", type=positive_int, default=5,
                            help="timed runs per case; every one is kept (default: 5)")
    return p


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


def mxnet_blas(libraries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The BLAS MXNet's dot runs on: the one in MXNet's package unless another was preloaded."""
    import mxnet as mx

    package = str(Path(mx.__file__).parent)
    preloaded = {os.path.realpath(p) for p in os.environ.get("LD_PRELOAD", "").replace(
        ":", " ").split()}
    for lib in libraries:
        if os.path.realpath(lib["path"]) in preloaded:
            return lib
    return next((lib for lib in libraries if lib["path"].startswith(package)),
                libraries[0] if libraries else None)


def mxnet_build() -> dict[str, Any]:
    import mxnet as mx

    features = mx.runtime.Features()
    return {
        "version": mx.__version__,
        "features": sorted(name for name in features.keys() if features.is_enabled(name)),
        "gpus_visible": mx.context.num_gpus(),
        "blas": mxnet_blas(libraries := loaded_blas()),
        "blas_libraries": libraries,
    }


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
    arg_parser: argparse.ArgumentParser,
    body: Callable[[argparse.Namespace, Recorder], None],
    argv: Sequence[str] | None = None,
) -> int:
    args = arg_parser.parse_args(argv)
    provenance.set_threads(args.threads)
    record: dict[str, Any] = {
        "experiment": experiment,
        "parameters": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
                       if k not in ("csv", "sidecar", "blas_reference")},
        "started": provenance.now(),
        **provenance.run_context(),
    }
    recorder = Recorder(experiment)
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
    if "mxnet" in sys.modules:
        record["mxnet"] = mxnet_build()
    write_csv(args.csv, recorder.rows)
    write_json(args.sidecar, record)
    return 0
