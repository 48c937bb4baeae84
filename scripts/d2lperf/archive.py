"""One machine's results as a portable, verifiable archive, and its safe import.

An archive is a gzip'd tar of ``<machine>/...`` (raw samples, run records,
machine.json, the tables, plots and report, the config used, the locked
environments, the code's commit) plus ``manifest.json`` with a SHA-256 per file.
It is deterministic: entries sorted, owners and times fixed, so archiving the same
results twice gives the same bytes.

Import trusts nothing in the file: it refuses an archive that is not a regular file (a
FIFO, a device), absolute paths, ``..``, hidden or odd names, links, device and sparse
files, members and extended (PAX, GNU long name) headers over the size limits, chains of
extended headers and global ones (all from their headers, before reading them), too many
members, duplicate names, files missing from the manifest or manifest entries without a
file, checksum mismatches, JSON that does not parse, is too large or nests too deep, a
manifest, machine.json or run.json that fails its schema (workflow/schemas/), tables
whose figures mean nothing (see d2lperf.tables), figures without their raw samples,
truncated or non-gzip files, and a machine id that is invalid, already taken or a name
the project writes under results/ itself, and it writes nothing unless all is well.
Imported folders arrive read-only, marked by imported.json; imports into one results
folder take turns. The archives the repository keeps are imported one by one
(``import_kept``): a bad one is refused by name, whatever is wrong with it, and never
stops the others, nor the run. Nothing in an archive is ever read as configuration: its
config.yaml is one of its files, never loaded.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import fcntl
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import stat
import sys
import tarfile
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

import yaml

from d2lperf import children, logcap
from d2lperf.frameworks import DOCUMENTS
from d2lperf.machine import RESERVED_RESULT_NAMES, MachineIdError, check_machine_id
from d2lperf.results import (
    RecordError,
    current_rows,
    current_run,
    current_verdict,
    finite_validator,
    newer_format,
    schema_message,
    section_folder,
)
from d2lperf.tables import (
    TableError,
    case_plan,
    check_planned,
    check_summary_rows,
    load_samples,
    summary_schema,
)
from d2lperf.verdicts import FAILS, HOLDS, NA, NOT_HERE, UNSURE

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
# The archive caps each log (d2lperf.logcap: head and tail kept) rather than refuse it.
assert logcap.MAX_LOG_BYTES < MAX_MEMBER_BYTES // 2, "a capped log must fit an archive"
MAX_TABLE_BYTES = 2 << 20
MAX_TOTAL_BYTES = 64 << 20
MAX_MEMBERS = 10_000
MAX_NAME_LENGTH = 400
# JSON from an archive: the project's nests a few levels (a run record's notes the most)
# and is some KB. json.loads recurses once a level (200,000 levels end in RecursionError),
# and whatever walks the value later recurses as deep; and a flat list of empty objects
# takes some 24 bytes of memory per byte of JSON.
MAX_JSON_DEPTH = 32
MAX_JSON_BYTES = 1 << 20
# An extended (PAX or GNU long-name) header holds a member's name and a few numbers; tarfile
# reads one whole into memory before the member it describes, so it is bounded from its
# own header block, before it is read.
MAX_HEADER_BYTES = 64 << 10
EXTENDED_HEADERS = (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE,
                    tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)
# One member needs at most a PAX header, or a GNU long name and long link: a few more
# before one member are a chain, which tarfile would follow by recursion.
MAX_EXTENDED_IN_A_ROW = 4
# All of an archive's extended headers together: names of MAX_NAME_LENGTH need some 500
# bytes of header each, so 10,000 of them some 5 MB; this bounds the time spent parsing.
MAX_HEADERS_TOTAL = 16 << 20
# Where tarfile's own extraction filter places members when it checks them: a name it
# accepts lands under this folder, which never exists, so no link on disk changes the answer.
FILTER_DESTINATION = "/nonexistent-d2lperf-import"
NAME_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._+-]{0,119}")
STAGING_PREFIX = ".import-"
KEPT_SUFFIX = "--kept"
KEPT_RECORD = "kept-archives.json"  # under results/: what became of each kept archive
# What the project itself writes directly under results/ beside the machines' folders
# (hidden names, such as the staging folders, are never machine ids): an import taking
# one would put a folder where the project writes its file, and every later run would
# fail on it. Compared without case, for case-insensitive disks. check_machine_id refuses
# d2lperf.machine's list everywhere; the importer holds to its own record's name besides.
RESERVED_IDS = RESERVED_RESULT_NAMES | {KEPT_RECORD}
# What the comparison reads of another machine's tables (d2lperf compare).
SUMMARY_COLUMNS = ("section", "case", "metric", "epoch", "unit", "count", "median",
                   "ci_low", "ci_high", "status")
VERDICTS_COLUMNS = ("claim", "name", "section", "verdict", "evidence", "rule")
VERDICTS = (HOLDS, FAILS, UNSURE, NOT_HERE, NA)


class ArchiveError(ValueError):
    """The archive cannot be imported; the message says why and nothing was written."""


def check_import_id(text: object, where: str) -> str:
    """``text`` when an import may take it as the name of its folder under results/: a
    machine id (d2lperf.machine), and none of the names the project writes there itself."""
    try:
        check_machine_id(text, where)
    except MachineIdError as error:
        raise ArchiveError(str(error)) from None
    for name in sorted(RESERVED_IDS):
        if str(text).casefold() == name.casefold():
            raise ArchiveError(f"{where} {text!r} is not a valid machine id: the project "
                               f"writes {name} under results/ itself; choose another name")
    return str(text)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def collect(results: Path, extras: dict[str, Path]) -> dict[str, bytes]:
    """Archive members (posix path -> content): a machine's results folder, and extra
    files (config used, lock files, commit) placed under ``<machine>/provenance/``. A log
    is capped as the workflow caps its logs (``logcap.cap_file``), so that one a step wrote
    uncapped (a worker printing without end) still fits the import's limits."""
    machine = results.name
    members = {}
    for path in sorted(results.rglob("*")):
        if path.is_file() and not path.name.startswith("."):
            read = logcap.cap_file if path.suffix == ".log" else Path.read_bytes
            members[f"{machine}/{path.relative_to(results).as_posix()}"] = read(path)
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
                  code: dict[str, Any], schema: Path | None = None) -> dict[str, Any]:
    """Write the archive deterministically; return its manifest. With ``schema`` (the
    samples schema an import checks against), the archive is first read back as an import
    reads it (``read_members``, ``verify``: every limit and check, from this module alone)
    and only put at ``out`` when the import would take it; else ArchiveError says what the
    import would refuse, naming the file and the limit, and nothing is written."""
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
    if schema is not None:
        try:
            verify(read_members(tmp), schema)
        except ArchiveError as error:
            tmp.unlink()
            raise ArchiveError(f"{out} not written: its import would refuse it: {error}") \
                from None
    os.replace(tmp, out)
    return listing


class _BoundedTarInfo(tarfile.TarInfo):
    """tarfile's member header, bounded before tarfile reads what a header announces.

    tarfile reads an extended header (PAX, GNU long name) whole, then calls itself for the
    header it describes, so a chain of them recurses until RecursionError; it reads a GNU
    sparse map, of any of its four formats, into a list however long it is (a map of
    millions of entries gzips to some KB); a global PAX header applies to every later
    member; and it keeps every member it has read, each with its parsed extended header.
    So: an extended header over MAX_HEADER_BYTES, more than MAX_EXTENDED_IN_A_ROW of them
    before one member, or more than MAX_HEADERS_TOTAL bytes of them in all are refused from
    their own header blocks, before they are read; a sparse member is refused before its
    map is read (the archives written here never hold one); a global header is refused;
    and a member keeps no parsed header once read, nor an owner, group or link target
    longer than a name may be. The overridden methods keep tarfile's own signatures."""

    def _proc_member(self, tar):
        if self.type == tarfile.XGLTYPE:
            raise ArchiveError(f"global extended header before member {len(tar.members) + 1}"
                               ": not a results archive (it would apply to every later "
                               "member; archives written here never hold one)")
        if self.type in EXTENDED_HEADERS:
            if self.size > MAX_HEADER_BYTES:
                raise ArchiveError(f"extended header of {self.size} bytes before member "
                                   f"{len(tar.members) + 1}, more than the limit of "
                                   f"{MAX_HEADER_BYTES}: not a results archive")
            # counted on the archive: each header of a chain is read by a call of its own
            in_a_row = getattr(tar, "_extended_in_a_row", 0) + 1
            if in_a_row > MAX_EXTENDED_IN_A_ROW:
                raise ArchiveError(f"more than {MAX_EXTENDED_IN_A_ROW} extended headers in "
                                   f"a row before member {len(tar.members) + 1}: not a "
                                   "results archive")
            tar._extended_in_a_row = in_a_row
            total = getattr(tar, "_extended_bytes", 0) + self.size
            if total > MAX_HEADERS_TOTAL:
                raise ArchiveError(f"extended headers add up to more than the limit of "
                                   f"{MAX_HEADERS_TOTAL} bytes by member "
                                   f"{len(tar.members) + 1}: not a results archive")
            tar._extended_bytes = total
        else:
            tar._extended_in_a_row = 0
        if self.type == tarfile.GNUTYPE_SPARSE:
            # refused before _proc_sparse reads its chain of extension blocks
            raise ArchiveError(f"refusing sparse file {self.name!r}")
        member = super()._proc_member(tar)
        member.pax_headers = {}  # applied already; tarfile would keep it, up to 64 KB a member
        for field, what in (("uname", "owner"), ("gname", "group"), ("linkname",
                                                                      "link target")):
            if len(getattr(member, field)) > MAX_NAME_LENGTH:
                raise ArchiveError(f"refusing member {member.name[:MAX_NAME_LENGTH]!r}: its "
                                   f"{what} is {len(getattr(member, field))} characters, more "
                                   f"than the limit of {MAX_NAME_LENGTH}")
        return member

    # tarfile calls these for the GNU sparse formats 0.0, 0.1 and 1.0 (PAX keywords
    # GNU.sparse.*) before it reads or splits the map: refused there, nothing allocated.
    def _refuse_sparse(self, member, pax_headers):
        name = pax_headers.get("GNU.sparse.name", member.name)
        raise ArchiveError(f"refusing sparse file {name!r}")

    def _proc_gnusparse_00(self, next, pax_headers, buf):
        self._refuse_sparse(next, pax_headers)

    def _proc_gnusparse_01(self, next, pax_headers):
        self._refuse_sparse(next, pax_headers)

    def _proc_gnusparse_10(self, next, pax_headers, tarfile):
        self._refuse_sparse(next, pax_headers)

    def _apply_pax_info(self, pax_headers, encoding, errors):
        # any other GNU.sparse keyword (a size alone) makes no sparse file tarfile reads as
        # one, but it is not ours either, and its number is parsed unchecked
        if any(key.startswith("GNU.sparse.") for key in pax_headers):
            self._refuse_sparse(self, pax_headers)
        super()._apply_pax_info(pax_headers, encoding, errors)


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
    if info.size < 0:
        raise ArchiveError(f"member {info.name} claims a size of {info.size} bytes")
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


def _nests_deeper(value: Any, limit: int) -> bool:
    """Whether a parsed JSON value nests lists and objects more than ``limit`` deep
    (walked with a stack of its own, so any depth is measured without recursing)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict)
                                                  else item))
    return False


def load_json(data: bytes | str, name: str) -> Any:
    """JSON read from an archive (or written by an import), or ArchiveError naming ``name``:
    over MAX_JSON_BYTES, nested over MAX_JSON_DEPTH (json.loads's own RecursionError on a
    deeper one included), or not JSON."""
    if len(data) > MAX_JSON_BYTES:
        raise ArchiveError(f"{name}: {len(data)} bytes of JSON, more than the limit of "
                           f"{MAX_JSON_BYTES}")
    nested = ArchiveError(f"{name}: JSON nested more than {MAX_JSON_DEPTH} levels deep")
    try:
        value = json.loads(data)
    except RecursionError:
        raise nested from None
    except ValueError as error:
        raise ArchiveError(f"{name}: not JSON ({error})") from None
    if _nests_deeper(value, MAX_JSON_DEPTH):
        raise nested
    return value


def _json(members: dict[str, bytes], name: str, mapping: bool = False) -> Any:
    value = load_json(members[name], name)
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
    """``value`` against ``schema``, its numbers finite (results.finite_validator)."""
    validator = finite_validator()(yaml.safe_load(schema.read_text("utf-8")))
    error = next(iter(validator.iter_errors(value)), None)
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "the file"
        raise ArchiveError(f"{name}: {where}: {schema_message(error)}")


def _check_verdicts(members: dict[str, bytes], machine: str) -> None:
    name = f"{machine}/verdicts.csv"
    claims: set[tuple[str, str]] = set()
    for number, row in enumerate(_rows(members, name, VERDICTS_COLUMNS), start=2):
        if current_verdict(row["verdict"]) not in VERDICTS:  # an older table's words too
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
    listing = load_json(members.pop(MANIFEST), MANIFEST)
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
    plan = case_plan()  # a case no section plans is refused here as summarise refuses it
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(n for n in members if n.endswith("/samples.csv")):
            path = Path(tmp) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(members[name])
            try:
                check_planned(load_samples(path, schema), plan, name)
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


class _Verified(NamedTuple):
    """An archive read and verified, not yet placed under results/."""
    archive: Path
    members: dict[str, bytes]
    digest: str
    listing: dict[str, Any]
    target_id: str
    kept: bool


def _verified(archive: Path, schema: Path, rename: str | None, kept: bool) -> _Verified:
    """Read and verify the archive, and the id it would take; nothing is written."""
    if rename is not None:
        check_import_id(rename, "--as")
    with open_regular(archive, follow_links=not kept) as handle:
        members = read_members(archive, handle)
        handle.seek(0)
        digest = hashlib.sha256()
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    listing = verify(members, schema)
    target_id = rename or check_import_id(listing["machine"], f"{MANIFEST}: machine")
    return _Verified(archive, members, digest.hexdigest(), listing, target_id, kept)


@contextlib.contextmanager
def imports_locked(results_root: Path) -> Iterator[None]:
    """Hold the lock of imports into ``results_root`` (an advisory ``flock`` on the folder
    itself, so no file of its own appears there). Between the check that an id is free and
    the rename that takes it, another import could take it first: two `make report`s at
    once then refused each other's good archives. One that waits says so. On a file system
    without ``flock`` the imports go on unlocked, as before."""
    results_root.mkdir(parents=True, exist_ok=True)
    fd = os.open(results_root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another import into {results_root} to finish",
                  file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)  # releases the lock


def import_archive(archive: Path, results_root: Path, schema: Path,
                   rename: str | None = None, *, kept: bool = False) -> Path:
    """Verify the archive, then add it as results/<machine> (or <rename>); return that folder.
    Nothing under results_root changes unless every check passes. The files arrive
    read-only, with imported.json, which the workflow refuses to run into (``kept``: an
    archive the repository keeps under report/machines/, see ``import_kept``)."""
    ready = _verified(archive, schema, rename, kept)
    with imports_locked(results_root):
        return _place(ready, results_root)


def _place(ready: _Verified, results_root: Path) -> Path:
    """Put a verified archive's files in place as results/<target id>, whole or not at all
    (under ``imports_locked``)."""
    archive, members, listing, target_id = (ready.archive, ready.members, ready.listing,
                                            ready.target_id)
    source = listing["machine"]
    target = results_root / target_id
    incoming = load_json(members[f"{source}/machine.json"], f"{source}/machine.json")
    if target.exists():
        present = target / "machine.json"
        try:
            here = load_json(present.read_bytes(), str(present)) if present.exists() else {}
        except (OSError, ArchiveError):
            here = {}
        if not isinstance(here, dict) or hardware(here) != hardware(incoming):
            raise ArchiveError(
                f"machine id {target_id!r} collides with a different machine already present "
                f"in {target}; import it under another id (--as NEW_ID)")
        raise ArchiveError(f"machine {target_id!r} is already present in {target}; "
                           "remove that folder first to replace it")
    _remove_dead_staging(results_root)
    # hidden, so that nothing reading results/ takes it for a machine (machine ids never
    # start with '.'); unique and named after this process, so a later import removes it
    # if we die
    staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=results_root))
    try:
        for name, data in members.items():
            path = staging / PurePosixPath(name).relative_to(source)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            path.chmod(0o444)
        (staging / "imported.json").write_text(json.dumps({
            "archive": archive.name, "archive_sha256": ready.digest,
            "machine_in_archive": source, "imported_as": target_id, "code": listing["code"],
            "kept": ready.kept,
        }, indent=2, sort_keys=True) + "\n")
        (staging / "imported.json").chmod(0o444)
        os.chmod(staging, 0o755)
        try:
            os.rename(staging, target)
        except OSError as error:
            if error.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR,
                                   errno.EISDIR):
                raise
            # made meanwhile by something that takes no lock (a run of the workflow here)
            raise ArchiveError(f"{target} appeared while importing; remove it or import "
                               "under another id (--as NEW_ID)") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _kept_import_of(target: Path, archive: Path) -> dict[str, Any] | None:
    """The import record of ``target`` when it was made from a kept archive of this name."""
    try:
        record = load_json((target / "imported.json").read_bytes(), "imported.json")
    except (OSError, ArchiveError):
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
    stem = check_import_id(path.name[: -len(".tar.gz")], "its name")
    target_id = check_import_id(kept_id(stem, local_ids), "the id it would take")
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
        _place(_verified(path, schema, target_id, kept=True), results_root)
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
    repository keeps may stop the user's own run, whatever goes wrong with it (an error
    nobody foresaw, RecursionError or MemoryError included: only Ctrl-C and exits pass).
    Imports at once wait for each other (``imports_locked``). Returns (archive name, what
    happened) for each, a refusal as ``refused: <reason>`` (one printable line); the same
    list goes to ``results_root/kept-archives.json`` for the report."""
    archives = sorted(folder.glob("*.tar.gz"))
    record = results_root / KEPT_RECORD
    if not archives and not record.exists():
        return []
    done = []
    with imports_locked(results_root):
        if record.is_dir() and not record.is_symlink() and \
                _kept_import_of(record, Path(f"{KEPT_RECORD}.tar.gz")) is not None:
            # imported by earlier code from a kept archive of that name, which took the
            # record's place: it goes (the archive itself stays, and is refused below)
            shutil.rmtree(record)
        for path in archives:
            try:
                done.append((path.name, _import_one_kept(path, results_root, schema,
                                                         local_ids)))
            except ArchiveError as error:
                reason = str(error).replace(f"{path}: ", "")
                done.append((path.name, f"refused: {one_line(reason)}"))
            except Exception as error:  # noqa: BLE001 (trust nothing kept; see above)
                said = f"{type(error).__name__}: {error}" if str(error) \
                    else type(error).__name__
                done.append((path.name, f"refused: could not be read ({one_line(said)})"))
        try:
            _write_kept_record(record, folder, done)
        except ArchiveError as error:  # the imports stand; only the report's list is lost
            print(error, file=sys.stderr, flush=True)
    return done


def one_line(text: str, limit: int = 300) -> str:
    """``text`` as one printable line of at most about ``limit`` characters: a reason may
    quote what an archive holds, and it reaches a terminal and the report."""
    plain = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[: limit * 2])
    return plain if len(plain) <= limit else plain[: limit - 3] + "..."


def _write_kept_record(path: Path, folder: Path, done: list[tuple[str, str]]) -> None:
    """What became of each kept archive (imported, or refused and why), rewritten only when
    that changes: the report depends on it, and a second import of the same archives must
    not make the report out of date. ArchiveError when it cannot be written."""
    text = json.dumps({"folder": str(folder), "archives": [
        {"archive": name, "outcome": what if what.startswith("refused: ") else "imported"}
        for name, what in done]},
        indent=2, sort_keys=True) + "\n"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        if path.is_file() and path.read_text(encoding="utf-8", errors="replace") == text:
            return
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as error:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise ArchiveError(f"{path} cannot be written ({error.strerror or error}); the "
                           "report will not list the refused kept archives") from None


def kept_refusals(record: Path) -> list[dict[str, str]]:
    """The kept archives that were refused (archive, reason), from kept-archives.json;
    empty when there is none or the record is unreadable."""
    try:
        listing = load_json(record.read_bytes(), str(record))
        entries = listing["archives"]
        return [{"archive": str(e["archive"]), "reason": str(e["outcome"])[len("refused: "):]}
                for e in entries if str(e["outcome"]).startswith("refused: ")]
    except (OSError, ValueError, KeyError, TypeError):  # ArchiveError is a ValueError
        return []
