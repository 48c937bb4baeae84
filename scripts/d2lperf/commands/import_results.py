"""Add other machines' archived results under results/, so the next report compares them.

    .venv/bin/d2lperf import ARCHIVE.tar.gz [...] [--as NEW_ID]

Run it in the checkout, as Snakemake runs: results/ and config/config.yaml (whose machine
key names this machine's own runs) are those of the current folder.

Each archive is verified first (size limits, manifest, checksums, JSON and table
schemas, safe names, a valid machine id not already taken); a bad archive is refused
with the reason and nothing is written. The files are unpacked into a hidden staging
folder (results/.import-<pid>-*) that is removed on any exit, or by the next import if
this one is killed, and moved into place whole; imports into the same results folder take
turns (one that waits says so). Imported folders are never re-run or
overwritten by Snakemake: a run whose machine id is an imported one is refused.

    .venv/bin/d2lperf import --kept report/machines

imports the archives the repository keeps (a GPU check's), each under its file name,
once: `make report` runs it before the pipeline, so every report compares against them.
A bad kept archive is refused with its name and the reason (on stderr and in
results/kept-archives.json, which the report shows), whatever is wrong with it, and the
others go on: this exits 0, so that nothing the repository keeps stops the user's own
run. One named after this machine's own id is imported as <id>--kept instead, leaving
that id to the local run.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from d2lperf.archive import ArchiveError, import_archive, import_kept, one_line
from d2lperf.machine import MachineIdError, check_machine_id, machine_id
from d2lperf.results import SCHEMAS


def _exit_on(signum, frame):
    raise SystemExit(128 + signum)  # unwinds, so the staging folder is removed


def local_ids(given: list[str], config: Path = Path("config/config.yaml")) -> tuple[str, ...]:
    """The ids this machine's own runs write under (and their system-BLAS variants): those
    given, else the id derived from this hardware and the config's machine key, if set."""
    ids = list(given)
    if not ids:
        with contextlib.suppress(MachineIdError):
            ids.append(check_machine_id(machine_id()))
        with contextlib.suppress(OSError, yaml.YAMLError, AttributeError, MachineIdError):
            ids.append(check_machine_id(yaml.safe_load(config.read_text()).get("machine")))
    return tuple(i for base in ids for i in (base, f"{base}--system-blas"))


def main(argv: Sequence[str] | None = None) -> int:
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _exit_on)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("archives", nargs="*", type=Path)
    p.add_argument("--as", dest="rename", metavar="NEW_ID",
                   help="import under this machine id (one archive only)")
    p.add_argument("--kept", type=Path, metavar="FOLDER",
                   help="import the archives kept in FOLDER (report/machines), each under its "
                        "file name, unless already imported")
    p.add_argument("--local-id", action="append", default=[], metavar="ID",
                   help="a machine id of this machine's own runs, never taken by a kept "
                        "archive (default: the id derived from this hardware)")
    p.add_argument("--results", type=Path, default=Path("results"),
                   help="the results folder to import into (default: results/ here, where "
                        "the workflow runs)")
    p.add_argument("--schema", type=Path, default=SCHEMAS / "samples.schema.yaml")
    args = p.parse_args(argv)
    if args.rename and len(args.archives) > 1:
        p.error("--as takes one archive")
    if bool(args.kept) == bool(args.archives):
        p.error("name archives to import, or --kept FOLDER (not both)")
    if args.kept:
        try:
            done = import_kept(args.kept, args.results, args.schema, local_ids(args.local_id))
        except Exception as error:  # noqa: BLE001 (what the repository keeps never stops a run)
            print(f"{args.kept}: kept archives not imported: {one_line(str(error))}",
                  file=sys.stderr)
            return 0
        for name, what in done:
            print(f"{args.kept / name}: {what}",
                  file=sys.stderr if what.startswith("refused") else sys.stdout)
        return 0
    failed = 0
    for path in args.archives:
        start = time.perf_counter()
        try:
            target = import_archive(path, args.results, args.schema, args.rename)
        except ArchiveError as error:
            print(f"{path}: refused: {one_line(str(error))}", file=sys.stderr)
            failed += 1
            continue
        except Exception as error:  # noqa: BLE001 (an error nobody foresaw: still a refusal)
            print(f"{path}: refused: could not be read "
                  f"({one_line(f'{type(error).__name__}: {error}')})", file=sys.stderr)
            failed += 1
            continue
        print(f"{path}: imported as {target} in {time.perf_counter() - start:.2f} s")
    return 1 if failed else 0

