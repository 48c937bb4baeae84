"""Add other machines' archived results under results/, so the next report compares them.

    .venv/bin/python scripts/import_results.py ARCHIVE.tar.gz [...] [--as NEW_ID]

Each archive is verified first (manifest, checksums, table schemas, safe paths, a
machine id not already taken); a bad archive is refused with the reason and
nothing is written. Imported folders are never re-run or overwritten by Snakemake:
its rules only write results/<this machine>/.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from d2lperf.archive import ArchiveError, import_archive

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
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
