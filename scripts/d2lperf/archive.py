"""One machine's results as a portable, verifiable archive, and its safe import.

An archive is a gzip'd tar of ``<machine>/...`` (raw samples, run records,
machine.json, the tables, plots and report, the config used, the locked
environments, the code's commit) plus ``manifest.json`` with a SHA-256 per file.
It is deterministic: entries sorted, owners and times fixed, so archiving the same
results twice gives the same bytes.

Import trusts nothing in the file: it refuses an archive that is not a regular file (a
FIFO, a device), absolute paths, ``..``, hidden or odd names, links and device files,
members and extended (PAX) headers over the size limits (from their headers, before
reading them), too many members, duplicate names, files missing from the manifest or
manifest entries without a file, checksum mismatches, JSON that does not parse, a
manifest, machine.json or run.json that fails its schema (workflow/schemas/), tables
whose figures mean nothing (see d2lperf.tables), figures without their raw samples,
truncated or non-gzip files, and a machine id that is invalid or already taken, and it
writes nothing unless all is well. Imported folders arrive read-only, marked by
imported.json. The archives the repository keeps are imported one by one
(``import_kept``): a bad one is refused by name and never stops the others, nor the run.
"""

from __future__ import annotations

import csv
import errno
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import stat
import tarfile
import tempfile
import zlib
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema
import yaml

from d2lperf import children
from d2lperf.claims import FAILS, HOLDS, NA, NOT_HERE, UNSURE
from d2lperf.frameworks import DOCUMENTS
from d2lperf.machine import MachineIdError, check_machine_id
from d2lperf.results import RecordError, current_rows, current_run, newer_format, section_folder
from d2lperf.tables import TableError, check_summary_rows, load_samples, summary_schema

FORMAT = 1
MANIFEST = "manifest.json"
FIXED_MTIME = 0  # every entry's time: the archive's bytes depend on content alone
HARDWARE_KEYS = ("cpu", "gpus", "memory_bytes")
# Limits, checked from each member's header before it is read. One machine's results
# under the documents' preset are a few MB (a samples.csv some kB); these leave room for
# many more, while an import at every limit at once stays under 200 MB of memory: the
# members are held in memory until all are verified, and a table is parsed row by row
# (about 18 bytes of memory per byte of CSV).
MAX_MEMBER_BYTES = 16 << 20
MAX_TABLE_BYTES = 2 << 20
MAX_TOTAL_BYTES = 64 << 20
MAX_MEMBERS = 10_000
MAX_NAME_LENGTH = 400
# An extended (PAX or GNU long-name) header holds a member's name and a few numbers; tarfile
# reads one whole into memory before the member it describes, so it is bounded from its
# own header block, before it is read.
MAX_HEADER_BYTES = 64 << 10
EXTENDED_HEADERS = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE,
                    tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)
# Where tarfile's own extraction filter places members when it checks them: a name it
# accepts lands under this folder, which never exists, so no link on disk changes the answer.
FILTER_DESTINATION = "/nonexistent-d2lperf-import"
NAME_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]{0,119}")
STAGING_PREFIX = ".import-"
KEPT_SUFFIX = "--kept"
KEPT_RECORD = "kept-archives.json"  # under results/: what became of each kept archive
# What the comparison reads of another machine's tables (scripts/compare.py).
SUMMARY_COLUMNS = ("section", "case", "metric", "epoch", "unit", "count", "median",
                   "ci_low", "ci_high", "status")
VERDICTS_COLUMNS = ("claim", "name", "section", "verdict", "evidence", "rule")
VERDICTS = (HOLDS, FAILS, UNSURE, NOT_HERE, NA)


class ArchiveError(ValueError):
    """The archive cannot be imported; the message says why and nothing was written."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def collect(results: Path, extras: dict[str, Path]) -> dict[str, bytes]:
    """Archive members (posix path -> content): a machine's results folder, and extra
    files (config used, lock files, commit) placed under ``<machine>/provenance/``."""
    machine = results.name
    members = {}
    for path in sorted(results.rglob("*")):
        if path.is_file() and not path.name.startswith("."):
            members[f"{machine}/{path.relative_to(results).as_posix()}"] = path.read_bytes()
    for name, path in sorted(extras.items()):
        members[f"{machine}/provenance/{name}"] = path.read_bytes()
    return members


def manifest(machine: str, members: dict[str, bytes], code: dict[str, Any]) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "machine": machine,
        "code": code,
        "files": {name: sha256(data) for name, data in sorted(members.items())},
    }


def write_archive(out: Path, machine: str, members: dict[str, bytes],
                  code: dict[str, Any]) -> dict[str, Any]:
    """Write the archive deterministically; return its manifest."""
    try:
        check_machine_id(machine, "the results folder's name")
    except MachineIdError as error:
        raise ArchiveError(str(error)) from None
    listing = manifest(machine, members, code)
    entries = {MANIFEST: json.dumps(listing, indent=2, sort_keys=True).encode() + b"\n",
               **members}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    with open(tmp, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=FIXED_MTIME, filename="") as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for name in sorted(entries):
                    info = tarfile.TarInfo(name)
                    info.size, info.mtime, info.mode = len(entries[name]), FIXED_MTIME, 0o644
                    info.uid = info.gid = 0
                    info.uname = info.gname = ""
                    tar.addfile(info, io.BytesIO(entries[name]))
    os.replace(tmp, out)
    return listing


class _BoundedTarInfo(tarfile.TarInfo):
    """tarfile's member header, refusing an extended header over MAX_HEADER_BYTES and a
    GNU sparse member (a chain of extension blocks) before any of it is read."""

    def _proc_member(self, tar):
        if self.type in EXTENDED_HEADERS and self.size > MAX_HEADER_BYTES:
            raise ArchiveError(f"extended header of {self.size} bytes before member "
                               f"{len(tar.members) + 1}, more than the limit of "
                               f"{MAX_HEADER_BYTES}: not a results archive")
        if self.type == tarfile.GNUTYPE_SPARSE:
            raise ArchiveError(f"refusing special file {self.name!r} (a sparse file)")
        return super()._proc_member(tar)


def _safe_name(info: tarfile.TarInfo) -> PurePosixPath:
    """A member name that can only ever land inside its machine's folder: relative, no
    '..', a machine id first, then plain names (no hidden files, no control characters).
    tarfile's own extraction filter (``data_filter``) refuses absolute names and names that
    leave the destination; the rest is stricter than it is (no '..' at all, one folder per
    machine, plain names), since these names also become folder names under results/."""
    name = info.name
    path = PurePosixPath(name)
    try:
        tarfile.data_filter(info, FILTER_DESTINATION)
    except tarfile.AbsolutePathError:
        raise ArchiveError(f"refusing absolute path {name!r}") from None
    except tarfile.OutsideDestinationError:
        raise ArchiveError(f"refusing path with '..': {name!r}") from None
    except tarfile.FilterError:
        pass  # links and special files: refused by _check_header, which names the kind
    if path.is_absolute() or name.startswith(("/", "\\")):
        raise ArchiveError(f"refusing absolute path {name!r}")
    if ".." in path.parts:
        raise ArchiveError(f"refusing path with '..': {name!r}")
    if name == MANIFEST:
        return path
    try:
        check_machine_id(path.parts[0], "its folder")
    except MachineIdError as error:
        raise ArchiveError(f"refusing member {name!r}: {error}") from None
    if len(name) > MAX_NAME_LENGTH or not all(NAME_PART.fullmatch(p) for p in path.parts[1:]):
        raise ArchiveError(f"refusing member name {name!r}: each part must be letters, digits, "
                           f"'.', '_', '+' or '-', not starting with '.', '+' or '-', "
                           f"{MAX_NAME_LENGTH} characters in all at most")
    return path


def _check_header(info: tarfile.TarInfo, count: int, total: int) -> None:
    """Refuse a member from its header alone, before any of its content is read."""
    if count > MAX_MEMBERS:
        raise ArchiveError(f"more than {MAX_MEMBERS} members: not a results archive")
    if info.isdir():
        return
    if not info.isfile() or info.issparse():
        kind = "link" if info.issym() or info.islnk() else "special file"
        raise ArchiveError(f"refusing {kind} {info.name!r}")
    if info.size > MAX_MEMBER_BYTES:
        raise ArchiveError(f"member {info.name} is {info.size} bytes, more than the limit of "
                           f"{MAX_MEMBER_BYTES} per file")
    if info.name.endswith(".csv") and info.size > MAX_TABLE_BYTES:
        raise ArchiveError(f"table {info.name} is {info.size} bytes, more than the limit of "
                           f"{MAX_TABLE_BYTES} per table")
    if total > MAX_TOTAL_BYTES:
        raise ArchiveError(f"members add up to {total} bytes in all, more than the limit of "
                           f"{MAX_TOTAL_BYTES}")


def open_regular(archive: Path, follow_links: bool = True):
    """The archive opened for reading, when it is a regular file: a FIFO or a device (a
    link to /dev/stdin) would block or never end, so it is refused without waiting on it;
    ``follow_links=False`` refuses a symbolic link too (a kept archive must be the file the
    repository holds, not a pointer to one elsewhere)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow_links else os.O_NOFOLLOW)
    try:
        fd = os.open(archive, flags)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise ArchiveError(f"{archive}: a symbolic link, not a regular file") from None
        raise ArchiveError(f"{archive}: cannot be read ({error.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a folder" if stat.S_ISDIR(mode) \
            else "a device or other special file"
        raise ArchiveError(f"{archive}: {kind}, not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def read_members(archive: Path, handle=None) -> dict[str, bytes]:
    """Every regular file of the archive, checked for unsafe names, kinds, sizes and
    duplicates from its header before it is read (the archive is read as a stream, from
    ``handle`` where given, else opened with ``open_regular``)."""
    members: dict[str, bytes] = {}
    seen: set[str] = set()
    total = 0
    if handle is None:
        with open_regular(archive) as opened:
            return read_members(archive, opened)
    try:
        with tarfile.open(fileobj=handle, mode="r|gz", tarinfo=_BoundedTarInfo) as tar:
            for count, info in enumerate(tar, start=1):
                path = _safe_name(info).as_posix()
                if path in seen:
                    raise ArchiveError(f"member twice: {path}")
                seen.add(path)
                total += info.size if info.isfile() else 0
                _check_header(info, count, total)
                if info.isdir():
                    continue
                handle = tar.extractfile(info)
                members[path] = handle.read() if handle else b""
    except (tarfile.TarError, EOFError, zlib.error, OSError) as error:
        raise ArchiveError(f"{archive}: truncated or not a gzip'd tar archive ({error})") from None
    return members


def _json(members: dict[str, bytes], name: str, mapping: bool = False) -> Any:
    try:
        value = json.loads(members[name])
    except ValueError as error:
        raise ArchiveError(f"{name}: not JSON ({error})") from None
    if mapping and not isinstance(value, dict):
        raise ArchiveError(f"{name}: not a JSON object")
    return value


def _rows(members: dict[str, bytes], name: str, required: tuple[str, ...]) -> list[dict]:
    """A CSV member's rows, after checking its header names every required column."""
    try:
        text = members[name].decode("utf-8")
        # an older archive's columns, under the current format's names
        columns, rows = current_rows(csv.DictReader(io.StringIO(text, newline="")))
        missing = [c for c in required if c not in columns]
        if missing:
            raise ArchiveError(f"{name}: missing column {missing[0]}")
    except (UnicodeDecodeError, csv.Error) as error:
        raise ArchiveError(f"{name}: not a readable CSV ({error})") from None
    for number, row in enumerate(rows, start=2):
        if None in row or None in row.values():
            raise ArchiveError(f"{name}: row {number}: not as many cells as columns")
        newer = newer_format(row.get("format_version"))
        if newer:
            raise ArchiveError(f"{name}: row {number}: {newer}")
    return rows


def _check_summary(members: dict[str, bytes], machine: str, schema: Path) -> None:
    """summary.csv's columns, its numbers and what they mean (d2lperf.tables), and the raw
    results behind every figure in it."""
    name = f"{machine}/summary.csv"
    figures = set()
    rows = _rows(members, name, SUMMARY_COLUMNS)
    try:
        check_summary_rows(rows, name, summary_schema(schema.parent))
    except TableError as error:
        raise ArchiveError(str(error)) from None
    for row in rows:
        if row["median"]:
            figures.add(section_folder(row["section"], row.get("framework") or DOCUMENTS))
    for folder in sorted(figures):
        for raw in ("samples.csv", "run.json"):
            if f"{machine}/{folder}/{raw}" not in members:
                raise ArchiveError(f"{name} has figures of {folder} but no "
                                   f"{machine}/{folder}/{raw}")


def _check_schema(value: Any, name: str, schema: Path) -> None:
    validator = jsonschema.Draft202012Validator(yaml.safe_load(schema.read_text("utf-8")))
    error = next(iter(validator.iter_errors(value)), None)
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "the file"
        raise ArchiveError(f"{name}: {where}: {error.message}")


def _check_verdicts(members: dict[str, bytes], machine: str) -> None:
    name = f"{machine}/verdicts.csv"
    claims: set[tuple[str, str]] = set()
    for number, row in enumerate(_rows(members, name, VERDICTS_COLUMNS), start=2):
        if row["verdict"] not in VERDICTS:
            raise ArchiveError(f"{name}: row {number}: verdict {row['verdict']!r} is not one "
                               f"of {', '.join(VERDICTS)}")
        key = (row.get("framework") or DOCUMENTS, row["name"])
        if key in claims:
            raise ArchiveError(f"{name}: row {number}: claim {row['name']!r} twice"
                               + (f" for {key[0]}" if row.get("framework") else ""))
        claims.add(key)


def _check_listing(listing: Any, schemas: Path) -> tuple[str, dict[str, str]]:
    """The manifest's machine id and files: its format and machine id by hand (the one
    rule every id follows, and a plain word for another format), the rest by its schema."""
    if not isinstance(listing, dict):
        raise ArchiveError(f"unreadable {MANIFEST}: not a JSON object")
    if listing.get("format") != FORMAT:
        raise ArchiveError(f"archive format {listing.get('format')!r}; this code reads {FORMAT}")
    try:
        machine = check_machine_id(listing.get("machine"), f"{MANIFEST}: machine")
    except MachineIdError as error:
        raise ArchiveError(str(error)) from None
    try:
        _check_schema(listing, MANIFEST, schemas / "manifest.schema.yaml")
    except ArchiveError as error:
        raise ArchiveError(f"unreadable {error}") from None
    return machine, listing["files"]


def verify(members: dict[str, bytes], schema: Path) -> dict[str, Any]:
    """Check the manifest against the files, every JSON file and every table."""
    if MANIFEST not in members:
        raise ArchiveError(f"no {MANIFEST} in the archive")
    try:
        listing = json.loads(members.pop(MANIFEST))
    except ValueError as error:
        raise ArchiveError(f"unreadable {MANIFEST}: {error}") from None
    machine, files = _check_listing(listing, schema.parent)
    unlisted = sorted(set(members) - set(files))
    if unlisted:
        raise ArchiveError(f"file not in the manifest: {unlisted[0]}")
    missing = sorted(set(files) - set(members))
    if missing:
        raise ArchiveError(f"manifest entry with no file: {missing[0]}")
    for name, digest in sorted(files.items()):
        if sha256(members[name]) != digest:
            raise ArchiveError(f"checksum mismatch: {name}")
        if PurePosixPath(name).parts[0] != machine:
            raise ArchiveError(f"file outside the machine's folder {machine!r}: {name}")
    if f"{machine}/machine.json" not in members:
        raise ArchiveError(f"no {machine}/machine.json in the archive")
    for name in sorted(n for n in members if n.endswith(".json")):
        value = _json(members, name, mapping=name == f"{machine}/machine.json"
                      or name.endswith("/run.json"))
        if name.endswith("/run.json"):
            try:
                current_run(value, name, PurePosixPath(name).parent.name, schema.parent)
            except RecordError as error:
                raise ArchiveError(str(error)) from None
        if name == f"{machine}/machine.json":
            _check_schema(value, name, schema.parent / "machine.schema.yaml")
    tables = [f"{machine}/summary.csv", f"{machine}/verdicts.csv"]
    present = [t for t in tables if t in members]
    if present and len(present) < len(tables):
        lacking = next(t for t in tables if t not in members)
        raise ArchiveError(f"{present[0]} without {lacking}: the comparison needs both")
    if present:
        _check_summary(members, machine, schema)
        _check_verdicts(members, machine)
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(n for n in members if n.endswith("/samples.csv")):
            path = Path(tmp) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(members[name])
            try:
                load_samples(path, schema)
            except TableError as error:
                raise ArchiveError(str(error).replace(str(Path(tmp)) + "/", "")) from None
    return listing


def hardware(machine_json: dict[str, Any]) -> dict[str, Any]:
    return {key: machine_json.get(key) for key in HARDWARE_KEYS}


def _remove_dead_staging(results_root: Path) -> None:
    """Staging folders of imports that were killed (their process is gone)."""
    for folder in results_root.glob(f"{STAGING_PREFIX}*"):
        pid = folder.name[len(STAGING_PREFIX):].split("-", 1)[0]
        if folder.is_dir() and pid.isdigit() and not children.alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def import_archive(archive: Path, results_root: Path, schema: Path,
                   rename: str | None = None, *, kept: bool = False) -> Path:
    """Verify the archive, then add it as results/<machine> (or <rename>); return that folder.
    Nothing under results_root changes unless every check passes. The files arrive
    read-only, with imported.json, which the workflow refuses to run into (``kept``: an
    archive the repository keeps under report/machines/, see ``import_kept``)."""
    if rename is not None:
        try:
            check_machine_id(rename, "--as")
        except MachineIdError as error:
            raise ArchiveError(str(error)) from None
    with open_regular(archive, follow_links=not kept) as handle:
        members = read_members(archive, handle)
        handle.seek(0)
        digest = hashlib.sha256()
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    listing = verify(members, schema)
    source = listing["machine"]
    target_id = rename or source
    target = results_root / target_id
    incoming = json.loads(members[f"{source}/machine.json"])
    if target.exists():
        present = target / "machine.json"
        try:
            here = json.loads(present.read_text()) if present.exists() else {}
        except (OSError, ValueError):
            here = {}
        if not isinstance(here, dict) or hardware(here) != hardware(incoming):
            raise ArchiveError(
                f"machine id {target_id!r} collides with a different machine already present "
                f"in {target}; import it under another id (--as NEW_ID)")
        raise ArchiveError(f"machine {target_id!r} is already present in {target}; "
                           "remove that folder first to replace it")
    results_root.mkdir(parents=True, exist_ok=True)
    _remove_dead_staging(results_root)
    # hidden, so that nothing reading results/ takes it for a machine (machine ids never
    # start with '.'); named after this process, so a later import removes it if we die
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=results_root))
    try:
        for name, data in members.items():
            path = staging / PurePosixPath(name).relative_to(source)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            path.chmod(0o444)
        (staging / "imported.json").write_text(json.dumps({
            "archive": archive.name, "archive_sha256": digest.hexdigest(),
            "machine_in_archive": source, "imported_as": target_id, "code": listing["code"],
            "kept": kept,
        }, indent=2, sort_keys=True) + "\n")
        (staging / "imported.json").chmod(0o444)
        os.chmod(staging, 0o755)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _kept_import_of(target: Path, archive: Path) -> dict[str, Any] | None:
    """The import record of ``target`` when it was made from a kept archive of this name."""
    try:
        record = json.loads((target / "imported.json").read_text())
    except (OSError, ValueError):
        return None
    if isinstance(record, dict) and record.get("kept") is True \
            and record.get("archive") == archive.name:
        return record
    return None


def _digest_of(path: Path) -> str:
    with open_regular(path, follow_links=False) as handle:
        digest = hashlib.sha256()
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def kept_id(stem: str, local_ids: tuple[str, ...] = ()) -> str:
    """The id a kept archive is imported under: its file name less .tar.gz, unless that is
    the id of the machine running here (a GPU check kept on the machine it ran on), whose
    results folder is the local run's: then ``<name>--kept``, so the local run still works."""
    return f"{stem}{KEPT_SUFFIX}" if stem in local_ids else stem


def _import_one_kept(path: Path, results_root: Path, schema: Path,
                     local_ids: tuple[str, ...]) -> str:
    """Import one kept archive (see import_kept); what happened, or ArchiveError."""
    stem = path.name[: -len(".tar.gz")]
    try:
        check_machine_id(stem, "its name")
    except MachineIdError as error:
        raise ArchiveError(str(error)) from None
    target_id = kept_id(stem, local_ids)
    try:
        check_machine_id(target_id, "the id it would take")
    except MachineIdError as error:
        raise ArchiveError(str(error)) from None
    if not stat.S_ISREG(path.lstat().st_mode):
        kind = "a symbolic link" if path.is_symlink() else "a FIFO" if \
            stat.S_ISFIFO(path.lstat().st_mode) else "not a plain file"
        raise ArchiveError(f"{kind}, not a regular file")
    if target_id != stem and _kept_import_of(results_root / stem, path) is not None:
        # imported under this machine's own id by earlier code: that folder is the local
        # run's, so the copy made from the kept archive goes (the archive itself stays)
        shutil.rmtree(results_root / stem)
    target = results_root / target_id
    previous = None
    if target.exists():
        record = _kept_import_of(target, path)
        if record is None:
            raise ArchiveError(
                f"results/{target_id} holds results it did not import "
                "(a run here or an import of yours); rename or remove that folder")
        if record.get("archive_sha256") == _digest_of(path):
            return "already imported"
        # hidden, so never taken for a machine; put back if the new archive is refused
        previous = results_root / f"{STAGING_PREFIX}{os.getpid()}-replaced-{target_id}"
        os.rename(target, previous)
    try:
        import_archive(path, results_root, schema, target_id, kept=True)
    except BaseException:
        if previous is not None:
            os.rename(previous, target)
        raise
    if previous is not None:
        shutil.rmtree(previous)
    what = "imported" if previous is None else "replaced an earlier import"
    return what if target_id == stem else \
        f"{what} as {target_id} (its name is this machine's own id)"


def import_kept(folder: Path, results_root: Path, schema: Path,
                local_ids: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """Import every archive the repository keeps in ``folder`` (report/machines/), so that
    every report compares against those machines: each under its file name less .tar.gz
    (the GPU check keeps ``<machine>-<date>.tar.gz``), or ``kept_id``'s when that is one of
    ``local_ids`` (the machine running here). One already imported is left as it is; one
    replaced in the repository replaces its earlier import, which is restored if the new one
    is refused. A folder the kept archive did not make (a run here, the user's own import)
    is never touched. A bad kept archive is refused and the others go on: nothing the
    repository keeps may stop the user's own run. Returns (archive name, what happened) for
    each, a refusal as ``refused: <reason>``; the same list goes to
    ``results_root/kept-archives.json`` for the report."""
    done = []
    for path in sorted(folder.glob("*.tar.gz")):
        try:
            done.append((path.name, _import_one_kept(path, results_root, schema, local_ids)))
        except ArchiveError as error:
            reason = str(error).replace(f"{path}: ", "")
            done.append((path.name, f"refused: {reason}"))
        except (OSError, ValueError, LookupError, TypeError) as error:  # trust nothing kept
            done.append((path.name, f"refused: could not be read ({error})"))
    if done or (results_root / KEPT_RECORD).exists():
        _write_kept_record(results_root / KEPT_RECORD, folder, done)
    return done


def _write_kept_record(path: Path, folder: Path, done: list[tuple[str, str]]) -> None:
    """What became of each kept archive (imported, or refused and why), rewritten only when
    that changes: the report depends on it, and a second import of the same archives must
    not make the report out of date."""
    text = json.dumps({"folder": str(folder), "archives": [
        {"archive": name, "outcome": what if what.startswith("refused: ") else "imported"}
        for name, what in done]},
        indent=2, sort_keys=True) + "\n"
    if path.exists() and path.read_text(encoding="utf-8", errors="replace") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def kept_refusals(record: Path) -> list[dict[str, str]]:
    """The kept archives that were refused (archive, reason), from kept-archives.json;
    empty when there is none or the record is unreadable."""
    try:
        listing = json.loads(record.read_text(encoding="utf-8"))
        entries = listing["archives"]
        return [{"archive": str(e["archive"]), "reason": str(e["outcome"])[len("refused: "):]}
                for e in entries if str(e["outcome"]).startswith("refused: ")]
    except (OSError, ValueError, KeyError, TypeError):
        return []
