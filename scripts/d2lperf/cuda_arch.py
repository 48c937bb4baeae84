"""Which GPU architectures a shared library has code for, read from the file itself.

nvcc puts a library's device code into the ELF section ``.nv_fatbin``: one fat
binary per translation unit, each a header (magic 0xBA55ED50, version, header
size, size of what follows) and entries, each with its own header: the kind
(1: PTX, to be compiled by the driver for any later GPU; 2: ELF, machine code,
SASS, for one architecture), the payload's size and the ``sm`` number (86 for
sm_86). Only the headers are read, so a 900 MB libmxnet.so takes well under a
second. Standard library only: it runs in every environment.

Which code runs where (CUDA's compatibility rules): SASS built for sm_XY runs on
a GPU of compute capability X.Z with Z >= Y (the same major version); PTX for
compute_XY runs, compiled at load time, on any GPU of compute capability >= X.Y.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

FATBIN_MAGIC = 0xBA55ED50
FATBIN_SECTION = ".nv_fatbin"
KIND_PTX = 1
KIND_SASS = 2
_ELF_MAGIC = b"\x7fELF"
_FATBIN_HEADER = struct.Struct("<IHHQ")  # magic, version, header size, size of the entries
_ENTRY_HEADER = struct.Struct("<HHIQIIHHI")  # kind, -, header size, payload size, -, -, -, -, sm
_ALIGNMENT = 8  # fat binaries in the section start on 8-byte boundaries


class NotAnElfLibrary(ValueError):
    """The file is not a 64-bit little-endian ELF file (what CUDA libraries on Linux are)."""


@dataclass(frozen=True)
class DeviceCode:
    """The architectures a library carries code for, as ``sm`` numbers (80 = 8.0)."""

    sass: tuple[int, ...]
    ptx: tuple[int, ...]
    fatbins: int

    def as_dict(self) -> dict[str, object]:
        return {"sass": [f"sm_{a}" for a in self.sass], "ptx": [f"compute_{a}" for a in self.ptx],
                "fatbins": self.fatbins}


def _sections(handle: BinaryIO) -> dict[str, tuple[int, int]]:
    """Section name -> (file offset, size), from the ELF section header table."""
    handle.seek(0)
    ident = handle.read(64)
    if len(ident) < 64 or ident[:4] != _ELF_MAGIC:
        raise NotAnElfLibrary("not an ELF file")
    if ident[4] != 2 or ident[5] != 1:
        raise NotAnElfLibrary("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", ident, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", ident, 0x3A)
    handle.seek(shoff)
    table = handle.read(shentsize * shnum)
    headers = [struct.unpack_from("<IIQQQQ", table, i * shentsize) for i in range(shnum)]
    # (name offset, type, flags, address, file offset, size)
    _, _, _, _, names_offset, names_size = headers[shstrndx]
    handle.seek(names_offset)
    names = handle.read(names_size)
    found = {}
    for name_at, _, _, _, offset, size in headers:
        name = names[name_at:names.index(b"\0", name_at)].decode("ascii", "replace")
        found[name] = (offset, size)
    return found


def _entries(handle: BinaryIO, start: int, size: int) -> Iterator[tuple[int, int] | None]:
    """(kind, sm) of every entry of every fat binary in the region; None marks each
    fat binary's start. Padding between fat binaries is skipped."""
    position, end = start, start + size
    while position + _FATBIN_HEADER.size <= end:
        handle.seek(position)
        magic, _, header_size, entries_size = _FATBIN_HEADER.unpack(
            handle.read(_FATBIN_HEADER.size))
        if magic != FATBIN_MAGIC:
            position += _ALIGNMENT
            continue
        yield None
        entry, entries_end = position + header_size, position + header_size + entries_size
        while entry + _ENTRY_HEADER.size <= entries_end:
            handle.seek(entry)
            kind, _, entry_header_size, payload, *_, sm = _ENTRY_HEADER.unpack(
                handle.read(_ENTRY_HEADER.size))
            if entry_header_size < _ENTRY_HEADER.size:
                raise ValueError(f"corrupt fat binary entry at byte {entry}")
            yield kind, sm
            entry += entry_header_size + payload
        position = entries_end


def read_device_code(path: str | Path) -> DeviceCode:
    """The SASS and PTX architectures in ``path``'s ``.nv_fatbin``; none without one."""
    with open(path, "rb") as handle:
        region = _sections(handle).get(FATBIN_SECTION)
        sass: set[int] = set()
        ptx: set[int] = set()
        fatbins = 0
        if region is not None:
            for item in _entries(handle, *region):
                if item is None:
                    fatbins += 1
                elif item[0] == KIND_SASS:
                    sass.add(item[1])
                elif item[0] == KIND_PTX:
                    ptx.add(item[1])
    return DeviceCode(sass=tuple(sorted(sass)), ptx=tuple(sorted(ptx)), fatbins=fatbins)


def sm_number(compute_capability: str) -> int:
    """``"8.6"`` -> 86, as nvidia-smi's ``compute_cap`` field gives it."""
    major, dot, minor = compute_capability.strip().partition(".")
    if not (dot and major.isdigit() and minor.isdigit() and len(minor) == 1):
        raise ValueError(f"not a compute capability: {compute_capability!r} (like 8.6)")
    return int(major) * 10 + int(minor)


def runnable_code(sm: int, sass: Iterable[int], ptx: Iterable[int]) -> str | None:
    """Which of the code runs on a GPU of compute capability ``sm`` (86 for 8.6):
    ``"sm_80"`` (SASS, the best match), ``"compute_70"`` (PTX, compiled at load), or
    None when nothing can."""
    matches = [a for a in sass if a // 10 == sm // 10 and a % 10 <= sm % 10]
    if matches:
        return f"sm_{max(matches)}"
    earlier = [a for a in ptx if a <= sm]
    return f"compute_{max(earlier)}" if earlier else None


def main(argv: list[str] | None = None) -> int:
    """``python -m d2lperf.cuda_arch LIB...``: each library's architectures."""
    paths = argv if argv is not None else sys.argv[1:]
    if not paths:
        print("usage: python -m d2lperf.cuda_arch LIBRARY...", file=sys.stderr)
        return 2
    for path in paths:
        code = read_device_code(path).as_dict()
        sass, ptx = " ".join(code["sass"]) or "-", " ".join(code["ptx"]) or "-"  # type: ignore
        print(f"{path}: {code['fatbins']} fat binaries; SASS: {sass}; PTX: {ptx}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
