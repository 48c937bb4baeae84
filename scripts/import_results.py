"""Add other machines' archived results under results/, so the next report compares them.

    .venv/bin/python scripts/import_results.py ARCHIVE.tar.gz [...] [--as NEW_ID]

Each archive is verified first (size limits, manifest, checksums, JSON and table
schemas, safe names, a valid machine id not already taken); a bad archive is refused
with the reason and nothing is written. The files are unpacked into a hidden staging
folder (results/.import-<pid>-*) that is removed on any exit, or by the next import if
this one is killed, and moved into place whole. Imported folders are never re-run or
overwritten by Snakemake: a run whose machine id is an imported one is refused.

    .venv/bin/python scripts/import_results.py --kept report/machines

imports the archives the repository keeps (a GPU check's), each under its file name,
once: `make report` runs it before the pipeline, so every report compares against them.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from d2lperf.archive import ArchiveError, import_archive, import_kept

REPO = Path(__file__).resolve().parents[1]


def _exit_on(signum, frame):
    raise SystemExit(128 + signum)  # unwinds, so the staging folder is removed


def main() -> int:
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _exit_on)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("archives", nargs="*", type=Path)
    p.add_argument("--as", dest="rename", metavar="NEW_ID",
                   help="import under this machine id (one archive only)")
    p.add_argument("--kept", type=Path, metavar="FOLDER",
                   help="import the archives kept in FOLDER (report/machines), each under its "
                        "file name, unless already imported")
    p.add_argument("--results", type=Path, default=REPO / "results")
    p.add_argument("--schema", type=Path, default=REPO / "workflow/schemas/samples.schema.yaml")
    args = p.parse_args()
    if args.rename and len(args.archives) > 1:
        p.error("--as takes one archive")
    if bool(args.kept) == bool(args.archives):
        p.error("name archives to import, or --kept FOLDER (not both)")
    if args.kept:
        try:
            for name, what in import_kept(args.kept, args.results, args.schema):
                print(f"{args.kept / name}: {what}")
        except ArchiveError as error:
            print(f"refused: {error}", file=sys.stderr)
            return 1
        return 0
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
