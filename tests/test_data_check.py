"""The check of a configured data_dir runs on every Snakemake call, dry runs included: it
must cost little on the real Fashion-MNIST and refuse a file that is not it by its sizes,
never decompressing more than the real file's size."""

import gzip
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from conftest import REPO, WORKFLOW_PYTHON
from d2lperf import configcheck, data
from d2lperf.configcheck import ConfigError
from d2lperf.data import find_fashion_mnist

TRAIN_IMAGES = "train-images-idx3-ubyte.gz"
TRAIN_SIZE = 47_040_016

# The check in a fresh interpreter: what it said, its seconds, and the process's peak
# resident memory in MB (the interpreter with the config check's modules is about 25 MB).
# VmHWM, not getrusage's ru_maxrss: on Linux that one keeps the peak of the process that
# forked, here pytest's, across exec.
PEAK = """
import re, sys, time
from d2lperf import configcheck
start = time.perf_counter()
try:
    configcheck.check_data_dir(sys.argv[1])
    said = "accepted"
except configcheck.ConfigError as error:
    said = "refused: " + str(error)
print(said)
print(f"{time.perf_counter() - start:.3f}")
with open("/proc/self/status") as status:
    print(int(re.search(r"VmHWM:\\s*(\\d+) kB", status.read()).group(1)) // 1024)
"""


def fashion_mnist() -> Path:
    try:
        return find_fashion_mnist()
    except data.DataMissing:
        pytest.skip("no copy of Fashion-MNIST on this machine (make data)")


def gzip_bomb(path: Path, size: int, isize: int | None = None, chunk: int = 1 << 20) -> Path:
    """A gzip file of ``size`` zero bytes, a few MB on disk, written without ever holding
    them: one deflated chunk ended by a full flush (which empties the compressor's
    history, so the same bytes may follow again), repeated. ``isize``: what the trailer
    claims (by default the truth, mod 2^32); the CRC is left wrong, as a reader stopped
    by size never reaches it."""
    block = zlib.compressobj(9, zlib.DEFLATED, -15)
    repeated = block.compress(b"\0" * chunk) + block.flush(zlib.Z_FULL_FLUSH)
    tail = zlib.compressobj(9, zlib.DEFLATED, -15)
    with open(path, "wb") as out:
        out.write(b"\x1f\x8b\x08\x00\0\0\0\0\x02\xff")
        for _ in range(size // chunk):
            out.write(repeated)
        out.write(tail.compress(b"\0" * (size % chunk)) + tail.flush())
        out.write(struct.pack("<II", 0, (size if isize is None else isize) & 0xFFFFFFFF))
    return path


def with_train_images(tmp_path: Path, make) -> Path:
    """A copy of the real folder whose training images ``make(path)`` writes."""
    folder = tmp_path / "data"
    shutil.copytree(fashion_mnist(), folder)
    (folder / TRAIN_IMAGES).unlink()
    make(folder / TRAIN_IMAGES)
    return folder


def measured(folder: Path) -> tuple[str, float, int]:
    done = subprocess.run([str(WORKFLOW_PYTHON), "-c", PEAK, str(folder)], capture_output=True,
                          text=True, timeout=300,
                          env={"PYTHONPATH": str(REPO / "scripts"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    said, seconds, peak = done.stdout.splitlines()[-3:]
    return said, float(seconds), int(peak)


@pytest.mark.slow  # over half a second on 2 cores
def test_the_sizes_are_fashion_mnists():
    """The sizes the check holds files to are those of the real files, decompressed."""
    folder = fashion_mnist()
    for name, size in data.SIZES.items():
        with gzip.open(folder / name, "rb") as handle:
            assert len(handle.read()) == size, name
    assert data.SIZES[TRAIN_IMAGES] == TRAIN_SIZE and set(data.SIZES) == set(data.FILES)


@pytest.mark.slow  # over a second on 2 cores
def test_the_real_files_are_checked_in_little_time_and_memory():
    said, seconds, peak = measured(fashion_mnist())
    assert said == "accepted"
    assert peak < 100, f"peak {peak} MB"
    assert seconds < 10, f"{seconds} s"


@pytest.mark.slow  # over half a second on 2 cores
def test_a_bomb_whose_trailer_matches_is_stopped_at_the_real_size(tmp_path):
    """4.3 GB of zeros in 4 MB, its trailer claiming 47,040,016 bytes (the size mod 2^32):
    only decompressing tells, and the check stops one chunk past the real size."""
    folder = with_train_images(tmp_path, lambda p: gzip_bomb(p, (1 << 32) + TRAIN_SIZE))
    assert (folder / TRAIN_IMAGES).stat().st_size < 10 << 20
    said, seconds, peak = measured(folder)
    assert said == (
        f"refused: config key data_dir = {str(folder)!r}: {folder / TRAIN_IMAGES}: "
        "decompresses to more than Fashion-MNIST's 47,040,016 bytes (stopped there); "
        "allowed: a folder with the four Fashion-MNIST .gz files intact, or empty")
    assert peak < 100, f"peak {peak} MB"
    assert seconds < 10, f"{seconds} s"


@pytest.mark.slow  # over half a second on 2 cores
def test_a_bomb_is_refused_by_its_trailer_before_decompressing(tmp_path):
    """The deflate stream behind this trailer is garbage: a check that decompressed it
    would call it unreadable, not name the size."""
    def bomb(path):
        path.write_bytes(b"\x1f\x8b\x08\x00\0\0\0\0\x02\xff" + b"\xff" * 1000
                         + struct.pack("<II", 0, 5 << 30 & 0xFFFFFFFF))

    folder = with_train_images(tmp_path, bomb)
    with pytest.raises(ConfigError) as error:
        configcheck.check_data_dir(str(folder))
    assert f"{folder / TRAIN_IMAGES}: its gzip trailer gives 1,073,741,824 bytes " \
        "decompressed (mod 2^32), Fashion-MNIST's file has 47,040,016" in str(error.value)


@pytest.mark.slow  # over half a second on 2 cores
def test_a_file_larger_than_any_gzip_of_the_real_one_is_never_read(tmp_path):
    """A 100 GB sparse file: reading it would take minutes; its size says enough."""
    def huge(path):
        with open(path, "wb") as handle:
            handle.truncate(100 << 30)

    folder = with_train_images(tmp_path, huge)
    said, seconds, peak = measured(folder)
    assert (f"{folder / TRAIN_IMAGES}: 107,374,182,400 bytes, more than any gzip of "
            "Fashion-MNIST's 47,040,016 bytes takes (47,109,160 at most)") in said
    assert seconds < 1, f"{seconds} s"


@pytest.mark.slow  # over a second on 2 cores
def test_a_short_file_is_refused_by_its_size(tmp_path):
    """A whole gzip of the first megabyte of the real file: its trailer is honest."""
    def short(path):
        with gzip.open(fashion_mnist() / TRAIN_IMAGES, "rb") as source:
            path.write_bytes(gzip.compress(source.read(1 << 20)))

    folder = with_train_images(tmp_path, short)
    with pytest.raises(ConfigError) as error:
        configcheck.check_data_dir(str(folder))
    assert (f"{folder / TRAIN_IMAGES}: its gzip trailer gives 1,048,576 bytes decompressed "
            "(mod 2^32), Fashion-MNIST's file has 47,040,016") in str(error.value)


def test_read_idx_never_holds_more_than_the_real_size(tmp_path):
    """The sections read the files after the check; a file swapped in between is stopped
    the same way."""
    bomb = gzip_bomb(tmp_path / TRAIN_IMAGES, (1 << 32) + TRAIN_SIZE)
    with pytest.raises(data.DataMissing, match="decompresses to more than"):
        data.read_idx(bomb)
