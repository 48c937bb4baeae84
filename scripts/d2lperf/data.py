"""Fashion-MNIST, offline first, loaded as the documents load it (docs/design.md,
"Data offline first").

Looked up in order: a configured folder, MXNet's cache (~/.mxnet/datasets/fashion-mnist),
Debian's dataset-fashion-mnist package (/usr/share/datasets/fashion-mnist); only then
downloaded by MXNet itself. The workflow refuses a configured folder without the four
intact files before any job runs (configcheck.check_data_dir), so there it is never
passed over for another copy. Debian re-gzipped the four files, so MXNet's sha1 check of
the .gz files would reject them and try to download: the files are verified here by
the SHA-1 of their decompressed content instead, and read into the same
(28, 28, 1) uint8 images and int32 labels that ``gluon.data.vision.FashionMNIST`` yields.

A configured folder is verified on every Snakemake call, dry runs included, so a file is
held to the real one's sizes before and while it is decompressed: a few megabytes that
inflate to gigabytes (a gzip bomb) cost no more than the real file, and are refused.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import struct
import sys
import zlib
from pathlib import Path

MXNET_CACHE = Path("~/.mxnet/datasets/fashion-mnist").expanduser()
DEBIAN_PACKAGE = Path("/usr/share/datasets/fashion-mnist")

# SHA-1 of the decompressed idx files (identical upstream, in MXNet's cache and in Debian).
FILES = {
    "train-images-idx3-ubyte.gz": "b9bd999c0106c9b8b4b0cefce58c9a6060f27095",
    "train-labels-idx1-ubyte.gz": "4bccf37222e01638381eaa326bf730337a597267",
    "t10k-images-idx3-ubyte.gz": "880056926db704f9f713097915f99da346f5b1d1",
    "t10k-labels-idx1-ubyte.gz": "958122e8b4b97fd4e71eca2d08ef754ed77c3ad9",
}


# Size of each file decompressed (its idx header, then the pixels or labels), the same
# upstream, in MXNet's cache and in Debian: the check holds a file to it.
SIZES = {
    "train-images-idx3-ubyte.gz": 47_040_016,
    "train-labels-idx1-ubyte.gz": 60_008,
    "t10k-images-idx3-ubyte.gz": 7_840_016,
    "t10k-labels-idx1-ubyte.gz": 10_008,
}
# Decompressed in pieces of this size, so that memory stays bounded whatever the file holds.
CHUNK = 1 << 20
# A gzip file ends with the size of its content mod 2^32 (RFC 1952, ISIZE).
TRAILER = 4
GZIP_FRAME = 18  # the fixed header (10 bytes) and the trailer (CRC-32 and ISIZE)
STORED_BLOCK = (65_535, 5)  # deflate's worst case: stored blocks of 65,535 bytes, 5 more each
HEADER_FIELDS = 65_536  # room for the header's optional fields (a file name, a comment)


class DataMissing(RuntimeError):
    """Fashion-MNIST is not to be had; the message says where we looked and how to get it."""


def candidates(data_dir: str | os.PathLike | None) -> list[Path]:
    found = [Path(data_dir).expanduser()] if data_dir else []
    return found + [MXNET_CACHE, DEBIAN_PACKAGE]


class WrongSize(ValueError):
    """A file's sizes are not those of the Fashion-MNIST file of its name."""


def largest_gzip(size: int) -> int:
    """The most bytes a gzip file of ``size`` bytes of content can take: deflate never does
    worse than stored blocks, whatever the level or the tool."""
    blocks, extra = STORED_BLOCK
    return size + extra * (size // blocks + 1) + GZIP_FRAME + HEADER_FIELDS


def size_problem(path: Path, expected: int) -> str | None:
    """What the file's size and its gzip trailer say against ``expected`` bytes of content,
    read without decompressing anything (a stat and four bytes); None when they agree."""
    size = path.stat().st_size
    if size > largest_gzip(expected):
        return (f"{size:,} bytes, more than any gzip of Fashion-MNIST's {expected:,} bytes "
                f"takes ({largest_gzip(expected):,} at most)")
    if size < GZIP_FRAME:
        return None  # too short to be gzip: decompressing it says so in gzip's words
    with open(path, "rb") as handle:
        handle.seek(-TRAILER, os.SEEK_END)
        (isize,) = struct.unpack("<I", handle.read(TRAILER))
    if isize != expected % 2**32:
        return (f"its gzip trailer gives {isize:,} bytes decompressed (mod 2^32), "
                f"Fashion-MNIST's file has {expected:,}")
    return None


def _pieces(path: Path, expected: int):
    """The decompressed content in pieces of at most CHUNK bytes, stopped with WrongSize one
    piece past ``expected`` bytes: a trailer only gives the size mod 2^32, so a bomb can
    claim the real size and only decompressing tells (never all of it)."""
    total = 0
    with gzip.open(path, "rb") as handle:
        while piece := handle.read(CHUNK):
            total += len(piece)
            if total > expected:
                raise WrongSize(f"decompresses to more than Fashion-MNIST's {expected:,} "
                                "bytes (stopped there)")
            yield piece


def _decompressed(path: Path) -> bytes:
    """The whole content of one of the four files, never more than the real file's size."""
    try:
        return b"".join(_pieces(path, SIZES[path.name]))
    except WrongSize as error:
        raise DataMissing(f"{path}: {error}") from None


def verify(folder: Path) -> list[str]:
    """Problems with the four files in ``folder``; empty when all are present and intact.
    Each is held to the real file's sizes first, then hashed as it is decompressed."""
    problems = []
    for name, sha1 in FILES.items():
        path = folder / name
        if not path.is_file():
            problems.append(f"{path}: missing")
            continue
        try:
            wrong = size_problem(path, SIZES[name])
            if wrong:
                problems.append(f"{path}: {wrong}")
                continue
            digest = hashlib.sha1()
            for piece in _pieces(path, SIZES[name]):
                digest.update(piece)
        except WrongSize as error:
            problems.append(f"{path}: {error}")
            continue
        except (OSError, EOFError, zlib.error) as error:
            problems.append(f"{path}: unreadable ({error})")
            continue
        if digest.hexdigest() != sha1:
            problems.append(f"{path}: content differs from Fashion-MNIST (sha1 "
                            f"{digest.hexdigest()})")
    return problems


def find_fashion_mnist(data_dir: str | os.PathLike | None = None) -> Path:
    """The first folder holding intact Fashion-MNIST files, or DataMissing saying why."""
    report = []
    for folder in candidates(data_dir):
        problems = verify(folder)
        if not problems:
            return folder
        report.append(f"  {folder}: " + "; ".join(problems[:2]))
    raise DataMissing(
        "Fashion-MNIST was not found intact. Looked in:\n" + "\n".join(report) + "\n"
        "Get it with one of:\n"
        "  - Debian/Ubuntu: sudo apt-get install dataset-fashion-mnist "
        f"(installs {DEBIAN_PACKAGE}; `make data` does this when run as root)\n"
        "  - set `data_dir` in config/config.yaml to a folder with the four .gz files\n"
        "  - set `data_download: true` in config/config.yaml to let MXNet download it "
        f"into {MXNET_CACHE} (needs network)"
    )


def found_or_exit(data_dir: str | os.PathLike | None = None) -> Path:
    """``find_fashion_mnist`` for a section's worker: where the data is missing, the run
    ends non-zero with the message on stderr (its log), saying where to get it."""
    try:
        return find_fashion_mnist(data_dir)
    except DataMissing as missing:
        print(missing, file=sys.stderr, flush=True)
        raise SystemExit(1) from None


def read_idx(path: Path) -> tuple[tuple[int, ...], bytes]:
    """Shape and raw bytes of an idx file (the MNIST format)."""
    data = _decompressed(path)
    dims = data[3]
    shape = struct.unpack(f">{dims}I", data[4:4 + 4 * dims])
    return shape, data[4 + 4 * dims:]


def arrays(folder: Path, train: bool, limit: int | None = None):
    """One split as numpy arrays: (N, 1, 28, 28) float32 images in [0, 1] (the layout every
    framework's nets take) and int32 labels, the first ``limit`` only where asked."""
    import numpy as np

    prefix = "train" if train else "t10k"
    shape, pixels = read_idx(folder / f"{prefix}-images-idx3-ubyte.gz")
    _, labels = read_idx(folder / f"{prefix}-labels-idx1-ubyte.gz")
    images = np.frombuffer(pixels, dtype=np.uint8).reshape(shape)[:limit]
    targets = np.frombuffer(labels, dtype=np.uint8).astype(np.int32)[:limit]
    return (images[:, None] / np.float32(255)).astype(np.float32), targets


def default_workers() -> int:
    """The documents: 4 worker processes, none on Windows."""
    return 0 if sys.platform.startswith("win") else 4


