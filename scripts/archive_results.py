"""Write one machine's results as a deterministic, verifiable archive (see d2lperf.archive).

    archive_results.py --results results/M --extra NAME=PATH ... --out archives/M.tar.gz
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from d2lperf import archive, hostlock, provenance


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", required=True, type=Path, help="results/<machine> folder")
    p.add_argument("--extra", nargs="*", default=[], metavar="NAME=PATH",
                   help="files stored under <machine>/provenance/NAME")
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args()
    hostlock.share("archive_results")  # never beside a timing of any run
    extras = dict(item.split("=", 1) for item in args.extra)
    members = archive.collect(args.results, {k: Path(v) for k, v in extras.items()})
    listing = archive.write_archive(args.out, args.results.name, members,
                                    provenance.git_commit())
    size = args.out.stat().st_size
    print(f"wrote {args.out}: {len(listing['files'])} files, {size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
