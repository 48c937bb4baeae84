"""One machine's results as a portable, verifiable archive, and its safe import.

An archive is a gzip'd tar of ``<machine>/...`` (raw samples, run records,
machine.json, the tables, plots and report, the config used, the locked
environments, the code's commit) plus ``manifest.json`` with a SHA-256 per file.
It is deterministic: entries sorted, owners and times fixed, so archiving the same
results twice gives the same bytes.

Import trusts nothing in the file: it refuses absolute paths, ``..``, links and
device files, files missing from the manifest or manifest entries without a file,
checksum mismatches, tables that fail their schema, truncated or non-gzip files,
and a machine id that is already taken, and it writes nothing unless all is well.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
import zlib
from pathlib import Path, PurePosixPath
from typing import Any

from d2lperf.tables import TableError, load_samples

FORMAT = 1
MANIFEST = "manifest.json"
FIXED_MTIME = 0  # every entry's time: the archive's bytes depend on content alone
HARDWARE_KEYS = ("cpu", "gpus", "memory_bytes")


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


def _safe_name(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or name.startswith(("/", "\\")):
        raise ArchiveError(f"refusing absolute path {name!r}")
    if ".." in path.parts:
        raise ArchiveError(f"refusing path with '..': {name!r}")
    return path


def read_members(archive: Path) -> dict[str, bytes]:
    """Every regular file of the archive, checked for unsafe names and kinds."""
    members: dict[str, bytes] = {}
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            for info in tar:
                path = _safe_name(info.name)
                if info.isdir():
                    continue
                if not info.isfile():
                    kind = "link" if info.issym() or info.islnk() else "special file"
                    raise ArchiveError(f"refusing {kind} {info.name!r}")
                handle = tar.extractfile(info)
                members[path.as_posix()] = handle.read() if handle else b""
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile, OSError) as error:
        raise ArchiveError(f"{archive}: truncated or not a gzip'd tar archive ({error})") from None
    return members


def verify(members: dict[str, bytes], schema: Path) -> dict[str, Any]:
    """Check the manifest against the files and every table against its schema."""
    if MANIFEST not in members:
        raise ArchiveError(f"no {MANIFEST} in the archive")
    try:
        listing = json.loads(members.pop(MANIFEST))
        machine, files = listing["machine"], listing["files"]
    except (ValueError, KeyError, TypeError) as error:
        raise ArchiveError(f"unreadable {MANIFEST}: {error}") from None
    if listing.get("format") != FORMAT:
        raise ArchiveError(f"archive format {listing.get('format')!r}; this code reads {FORMAT}")
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


def import_archive(archive: Path, results_root: Path, schema: Path,
                   rename: str | None = None) -> Path:
    """Verify the archive, then add it as results/<machine> (or <rename>); return that folder.
    Nothing under results_root changes unless every check passes."""
    members = read_members(archive)
    listing = verify(members, schema)
    source = listing["machine"]
    target_id = rename or source
    target = results_root / target_id
    incoming = json.loads(members[f"{source}/machine.json"])
    if target.exists():
        present = target / "machine.json"
        here = json.loads(present.read_text()) if present.exists() else {}
        if hardware(here) != hardware(incoming):
            raise ArchiveError(
                f"machine id {target_id!r} collides with a different machine already present "
                f"in {target}; import it under another id (--as NEW_ID)")
        raise ArchiveError(f"machine {target_id!r} is already present in {target}; "
                           "remove that folder first to replace it")
    results_root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".import-", dir=results_root))
    try:
        for name, data in members.items():
            path = staging / PurePosixPath(name).relative_to(source)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        (staging / "imported.json").write_text(json.dumps({
            "archive": archive.name, "archive_sha256": sha256(archive.read_bytes()),
            "machine_in_archive": source, "imported_as": target_id, "code": listing["code"],
        }, indent=2, sort_keys=True) + "\n")
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target
