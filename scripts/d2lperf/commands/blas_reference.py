"""Store x and dot(x, x) computed with the stock BLAS (the one the mxnet wheel bundles),
so that runs on another BLAS can prove they compute the same before they are timed."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from d2lperf import hostlock, provenance
from d2lperf.blas import write_reference


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, type=Path, help=".npz file to write")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    hostlock.share("blas-reference")  # never beside a timing of any run
    provenance.set_threads(args.threads)
    write_reference(args.out)
    print(f"wrote {args.out}")
    return 0

