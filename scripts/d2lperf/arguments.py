"""The command line every section script shares: argument types that name what they
allow, the usage error argparse would give, and ``parser`` with the common options and a
section's workload options (the document's values, from the table of sections).

A leaf of the library: it knows no framework and runs nothing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from d2lperf import devices, sections


def _integer(text: str, lowest: int, wanted: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {wanted}, got {text!r}") from None
    if value < lowest:
        raise argparse.ArgumentTypeError(f"must be {wanted}, got {value}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: 1 or more."""
    return _integer(text, 1, "a positive integer")


def non_negative_int(text: str) -> int:
    """An argparse type: 0 or more."""
    return _integer(text, 0, "zero or more")


def positive_float(text: str) -> float:
    """An argparse type: a finite number above 0 (a learning rate, a probe's seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def positive_fraction(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1 (a practical band)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, got {text!r}") \
            from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, got {text!r}")
    return value


def usage_error(message: str) -> None:
    """End the script as argparse does on a bad option: the message on stderr, exit 2."""
    print(f"{Path(sys.argv[0]).name}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


# The manager's defaults (d2lperf.manager): the documents' preset's budget and band.
DEFAULT_BUDGET_S = 180.0
DEFAULT_BAND = 0.05


def parser(description: str, *, repeated: bool = True,
           section: str | None = None) -> argparse.ArgumentParser:
    """The common arguments; ``repeated=False`` for sections whose samples are epochs;
    ``section``: that section's workload options too, with the document's values as
    defaults, once for both twins (``document_options`` in the table of sections): a
    script run by hand reproduces the document; the presets set them in a pipeline run."""
    p = argparse.ArgumentParser(description=description)
    options = sections.SECTIONS[section].document_options if section else ()
    for flag, default, meaning in options:
        p.add_argument(flag, type=positive_int, default=default,
                       help=f"{meaning} (document: {default})")
    out = p.add_argument_group("outputs")
    out.add_argument("--csv", required=True, help="tidy CSV of raw samples to write")
    out.add_argument("--sidecar", required=True, help="JSON run record to write")
    timing = p.add_argument_group("timing")
    timing.add_argument("--threads", type=positive_int, default=1,
                        help="OpenMP/BLAS threads, set before the framework loads (default: 1)")
    timing.add_argument("--blas-reference", type=Path,
                        help="stock-BLAS dot to match before timing (runs on another BLAS)")
    timing.add_argument("--blas-probe-size", type=positive_int, default=None,
                        help="side of the matrix product checked against float64 before any "
                             "timing (default: d2lperf.blas.PROBE_SIZE, the documents' 2000)")
    timing.add_argument("--probe-seconds", type=positive_float, default=0.2,
                        help="length of the steadiness probe run before and after (default: 0.2)")
    if repeated:
        timing.add_argument("--warmup", type=non_negative_int, default=1,
                            help="untimed runs of every case before the timed ones (default: 1)")
        timing.add_argument("--repeats", type=positive_int, default=5,
                            help="rounds per process: timed runs of every case, side by side; "
                                 "every one is kept (default: 5)")
        timing.add_argument("--seed", type=non_negative_int, default=0,
                            help="seed of the cases' balanced orders (default: 0)")
    # which fresh process of its section this is: set by the manager (d2lperf.manager),
    # which then holds the host's lock and measures the machine's steadiness itself
    timing.add_argument("--process", type=non_negative_int, default=None,
                        help=argparse.SUPPRESS)
    return p


def ceilings_parser(description: str) -> argparse.ArgumentParser:
    """The ceilings sections' command line (every framework measures the same sizes)."""
    p = parser(description)
    p.add_argument("--dot-sizes", type=positive_int, nargs="+", default=[2000, 4000],
                   help="square matrix sizes for the matrix-multiply rates")
    p.add_argument("--copy-mb", type=positive_int, default=256,
                   help="megabytes copied for the bandwidth figures")
    return p


def two_gpu_parser(description: str) -> argparse.ArgumentParser:
    """Automatic parallelism's command line in the twins that also run d2l's PyTorch
    edition's two-GPU variant (each GPU multiplies a matrix of its own)."""
    p = parser(description, section="auto_parallelism")
    p.add_argument("--pair-size", type=positive_int, default=4000,
                   help="matrix side of the two-GPU variant (d2l's PyTorch edition: 4000)")
    p.add_argument("--pair-dots", type=positive_int, default=50,
                   help="products per GPU in the two-GPU variant (d2l's PyTorch edition: 50)")
    devices.add_argument(p)
    return p
