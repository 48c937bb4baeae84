"""Write one machine's results as a deterministic, verifiable archive (see d2lperf.archive).

    d2lperf archive --results results/M --extra NAME=PATH ... --out archives/M.tar.gz

The archive is read back as its import reads it before it is put in place: an archive the
import would refuse (a file over a limit of d2lperf.archive) is not written, and the error
names the file and the limit. Logs are capped as the workflow caps them (d2lperf.logcap).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from d2lperf import archive, hostlock, provenance, steps
from d2lperf.results import SCHEMAS

SCHEMA = SCHEMAS / "samples.schema.yaml"


def first_link(folder: Path) -> Path | None:
    """The first symbolic link below ``folder`` (os.walk follows none), if any: collecting
    would archive what it points at (a planted report.html -> /etc/shadow), and no step
    follows a link it did not make."""
    for root, folders, files in os.walk(folder):
        for name in sorted(folders + files):
            if os.path.islink(os.path.join(root, name)):
                return Path(root, name)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", required=True, type=Path, help="results/<machine> folder")
    p.add_argument("--extra", nargs="*", default=[], metavar="NAME=PATH",
                   help="files stored under <machine>/provenance/NAME")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--schema", type=Path, default=SCHEMA,
                   help=f"the samples schema an import checks against (default: {SCHEMA})")
    args = p.parse_args(argv)
    hostlock.share("archive")  # never beside a timing of any run
    link = first_link(args.results)
    if link is not None:
        print(f"error: {link} is a symbolic link, which an archive never follows: remove it, "
              "or put the file itself there, and archive again", file=sys.stderr)
        return 1
    extras = dict(item.split("=", 1) for item in args.extra)
    members = archive.collect(args.results, {k: Path(v) for k, v in extras.items()})
    try:
        with steps.writing(args.out):
            listing = archive.write_archive(args.out, args.results.name, members,
                                            provenance.git_commit(), args.schema)
    except archive.ArchiveError as error:
        print(f"error: {archive.one_line(str(error), 1000)}; make the file smaller (or "
              "remove it) and archive again", file=sys.stderr)
        return 1
    size = args.out.stat().st_size
    print(f"wrote {args.out}: {len(listing['files'])} files, {size / 1e6:.2f} MB")
    return 0

