"""Add other machines' archived results under results/, so the next report compares them.

    .venv/bin/python scripts/import_results.py ARCHIVE.tar.gz [...] [--as NEW_ID]

Each archive is verified first (size limits, manifest, checksums, JSON and table
schemas, safe names, a valid machine id not already taken); a bad archive is refused
with the reason and nothing is written. The files are unpacked into a hidden staging
folder (results/.import-<pid>-*) that is removed on any exit, or by the next import if
this one is killed, and moved into place whole. Imported folders are never re-run or
overwritten by Snakemake: a run whose machine id is an imported one is refused.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from d2lperf.archive import ArchiveError, import_archive

REPO = Path(__file__).resolve().parents[1]


def _exit_on(signum, frame):
    raise SystemExit(128 + signum)  # unwinds, so the staging folder is removed


def main() -> int:
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _exit_on)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("archives", nargs="+", type=Path)
    p.add_argument("--as", dest="rename", metavar="NEW_ID",
                   help="import under this machine id (one archive only)")
    p.add_argument("--results", type=Path, default=REPO / "results")
    p.add_argument("--schema", type=Path, default=REPO / "workflow/schemas/samples.schema.yaml")
    args = p.parse_args()
    if args.rename and len(args.archives) > 1:
        p.error("--as takes one archive")
    failed = 0
    for path in args.archives:
        start = time.perf_counter()
        try:
            target = import_archive(path, args.results, args.schema, args.rename)
        except ArchiveError as error:
            print(f"{path}: refused: {error}", file=sys.stderr)
            failed += 1
            continue
        print(f"{path}: imported as {target} in {time.perf_counter() - start:.2f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
