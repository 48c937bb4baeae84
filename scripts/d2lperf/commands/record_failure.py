"""Record that a section failed, so the report shows it (with its log) and the
other sections' results stay. Called by a rule when its script exits non-zero;
runs in the workflow environment and imports nothing heavy.

A script stopped by Ctrl-C, SIGTERM or SIGHUP was interrupted, not failed: nothing is
recorded and the exit code is passed on, so the job fails and the previous results stay
(the outputs are update(): Snakemake keeps them). A killed one (SIGKILL: the OOM killer,
a time limit) is recorded as failed, with its log.

A failure loses no earlier results: where the folder holds a good run (its run.json ok,
and its samples.csv), both are first kept whole in the folder's ``previous/``
(d2lperf.results.KEPT_FOLDER), and the failed record says where they are, when they ran
and how many samples they hold (its ``previous`` field); a later failure keeps pointing
at them. The section's own samples.csv is then an empty table, so the report shows the
failure, not the earlier figures as if they were this run's.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from d2lperf import provenance
from d2lperf.frameworks import DOCUMENTS, FRAMEWORKS
from d2lperf.records import RunRecord
from d2lperf.results import FORMAT_VERSION, KEPT_FOLDER, write_csv, write_json

LOG_TAIL_LINES = 60
# Exit codes of a shell child ended by these signals (128 + n): an interruption.
INTERRUPTED = {128 + s for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        return f"(no log: {error})"
    return "\n".join(text.splitlines()[-lines:])


def _record(path: Path) -> RunRecord | None:
    """A run.json's record, or None where there is none to read (absent, cut short)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _rows(table: Path) -> int | None:
    """How many samples a samples.csv holds, or None where it cannot be read as one."""
    try:
        with open(table, newline="", encoding="utf-8") as handle:
            return sum(1 for _ in csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error):
        return None


def keep_previous(table: Path, sidecar: Path) -> RunRecord | None:
    """Keep the folder's last good run before a failed record replaces it: copy its
    run.json and samples.csv into a new folder, then rename that folder to KEPT_FOLDER in
    one step, so the kept pair is always whole and of one run (copied, not moved: until
    the failed record is written the good run stays where it was). A folder whose record
    is a failure that kept one already points at it again; anything else (no record, a
    skipped run, a table that cannot be read) keeps nothing. Returns the failed record's
    ``previous`` field, or None."""
    for stale in sidecar.parent.glob(f".{KEPT_FOLDER}*"):  # left by one stopped midway
        shutil.rmtree(stale, ignore_errors=True)
    record = _record(sidecar)
    if record is None:
        return None
    kept = sidecar.parent / KEPT_FOLDER
    earlier = record.get("previous")
    if record.get("status") == "failed" and isinstance(earlier, dict) \
            and (kept / "run.json").exists():
        return earlier
    samples = _rows(table)
    if record.get("status") != "ok" or samples is None:
        return None
    staging = Path(tempfile.mkdtemp(dir=sidecar.parent, prefix=f".{KEPT_FOLDER}."))
    try:
        shutil.copy2(table, staging / "samples.csv")
        shutil.copy2(sidecar, staging / "run.json")
        if kept.exists():  # an older good run kept: the newer one takes its place
            old = Path(tempfile.mkdtemp(dir=sidecar.parent, prefix=f".{KEPT_FOLDER}-old."))
            os.rename(kept, old / KEPT_FOLDER)
            os.rename(staging, kept)
            shutil.rmtree(old)
        else:
            os.rename(staging, kept)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    when = {key: record[key] if isinstance(record.get(key), str) else None
            for key in ("started", "finished")}
    return {"path": str(kept), "samples": samples, **when}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--section", required=True)
    p.add_argument("--framework", choices=FRAMEWORKS, default=DOCUMENTS)
    p.add_argument("--exit-code", type=int, required=True)
    p.add_argument("--log", required=True, type=Path)
    p.add_argument("--csv", required=True)
    p.add_argument("--sidecar", required=True)
    args = p.parse_args(argv)
    if args.exit_code in INTERRUPTED:
        print(f"{args.section} was interrupted (exit code {args.exit_code}); its previous "
              "results, if any, are kept", file=sys.stderr)
        return args.exit_code

    previous = keep_previous(Path(args.csv), Path(args.sidecar))
    write_csv(args.csv, [])
    write_json(
        args.sidecar,
        {
            **({"previous": previous} if previous else {}),
            "format_version": FORMAT_VERSION,
            "section": args.section,
            "framework": args.framework,
            "status": "failed",
            "exit_code": args.exit_code,
            "finished": provenance.now(),
            "log": str(args.log),
            "log_tail": log_tail(args.log),
            "code": provenance.git_commit(),
        },
    )
    print(f"{args.section} failed with exit code {args.exit_code}; see {args.log}"
          + (f"; its earlier results are kept at {previous['path']}" if previous else ""),
          file=sys.stderr)
    return 0

