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


class DataMissing(RuntimeError):
    """Fashion-MNIST is not to be had; the message says where we looked and how to get it."""


def candidates(data_dir: str | os.PathLike | None) -> list[Path]:
    found = [Path(data_dir).expanduser()] if data_dir else []
    return found + [MXNET_CACHE, DEBIAN_PACKAGE]


def _decompressed(path: Path) -> bytes:
    with gzip.open(path, "rb") as handle:
        return handle.read()


def verify(folder: Path) -> list[str]:
    """Problems with the four files in ``folder``; empty when all are present and intact."""
    problems = []
    for name, sha1 in FILES.items():
        path = folder / name
        if not path.is_file():
            problems.append(f"{path}: missing")
            continue
        try:
            digest = hashlib.sha1(_decompressed(path)).hexdigest()
        except (OSError, EOFError, zlib.error) as error:
            problems.append(f"{path}: unreadable ({error})")
            continue
        if digest != sha1:
            problems.append(f"{path}: content differs from Fashion-MNIST (sha1 {digest})")
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


def read_idx(path: Path) -> tuple[tuple[int, ...], bytes]:
    """Shape and raw bytes of an idx file (the MNIST format)."""
    data = _decompressed(path)
    dims = data[3]
    shape = struct.unpack(f">{dims}I", data[4:4 + 4 * dims])
    return shape, data[4 + 4 * dims:]


def default_workers() -> int:
    """The documents: 4 worker processes, none on Windows."""
    return 0 if sys.platform.startswith("win") else 4


