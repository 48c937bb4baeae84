"""Which MXNet build `make envs` installs, what it installs with it, and where its CUDA
libraries go so that libmxnet.so finds them.

  mxnet_build.py choose                          # prints the build, then why
  mxnet_build.py requirements --build auto --out REQUIREMENTS.txt [--dry-run]
  mxnet_build.py link-cuda-libs --venv .venv-mxnet
  mxnet_build.py install-shim --venv .venv-mxnet

The lock pins numpy (and, from Python 3.12, the setuptools that supplies distutils) per
Python, with a ``python_version`` marker: the requirements keep the pins of the Python
that runs this (the Makefile's $(PYTHON), which builds the environment), markers
resolved. ``install-shim`` makes MXNet's environment, and only it, load
d2lperf.mxnet_compat before any ``import mxnet`` (numpy's names MXNet still uses).

``auto`` asks nvidia-smi for each GPU's compute capability (d2lperf.mxnet_gpu):
where MXNet 1.9.1 has kernels for one, mxnet-cu117 and CUDA 11's libraries pinned in
envs/mxnet-cu117.lock.txt; else the CPU build. Any other --build names the build.
Standard library only: runs with the system Python before any environment exists.
"""

from __future__ import annotations

import argparse
import operator
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from d2lperf import mxnet_compat, mxnet_gpu, provenance

ENVS = provenance.REPO_ROOT / "envs"
BASE_LOCK = ENVS / "mxnet.lock.txt"
CUDA_LOCK = ENVS / "mxnet-cu117.lock.txt"
CHOICES = ("auto", *mxnet_gpu.BUILDS)


def pinned(lock: Path) -> list[str]:
    return [line.strip() for line in lock.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


MARKER = re.compile(r'^python_version\s*(<=|>=|==|!=|<|>)\s*"(\d+)\.(\d+)"$')
COMPARE = {"<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
           ">=": operator.ge, ">": operator.gt}


def for_python(pins: list[str], python: tuple[int, int]) -> list[str]:
    """The pins that apply on Python ``python``, their markers resolved: a line's one
    ``python_version OP "X.Y"`` marker (all the locks use; the standard library has no
    marker parser, and this runs before any environment exists)."""
    kept = []
    for line in pins:
        pin, _, marker = (part.strip() for part in line.partition(";"))
        if marker:
            found = MARKER.match(marker)
            if found is None:
                raise ValueError(f"{line!r}: only a python_version marker is understood here")
            op, major, minor = found.groups()
            if not COMPARE[op](tuple(python), (int(major), int(minor))):
                continue
        kept.append(pin)
    return kept


def requirements(build: str, base_lock: Path = BASE_LOCK,
                 cuda_lock: Path = CUDA_LOCK, python: tuple[int, int] | None = None
                 ) -> list[str]:
    """The pins the MXNet environment gets for ``build`` on Python ``python`` (this
    one's by default): the CPU lock's, or with its mxnet line replaced by the CUDA build
    and CUDA 11's libraries."""
    if build not in mxnet_gpu.BUILDS:
        raise ValueError(f"MXNET_BUILD={build!r}; allowed: {', '.join(CHOICES)}")
    base = for_python(pinned(base_lock), python or sys.version_info[:2])
    if build == mxnet_gpu.CPU_BUILD:
        return base
    versions = [line.partition("==")[2] for line in base if line.startswith("mxnet==")]
    if len(versions) != 1:
        raise ValueError(f"{base_lock} must pin mxnet exactly once (mxnet==VERSION)")
    cuda = [line for line in pinned(cuda_lock) if not line.startswith("mxnet-cu")]
    others = [line for line in base if not line.startswith("mxnet==")]
    return [*others, f"{build}=={versions[0]}", *cuda]


def resolve(build: str) -> tuple[str, str]:
    """(build, why): ``auto`` decides from the GPUs; a named build was asked for."""
    if build == "auto":
        return mxnet_gpu.choose_build()
    if build not in mxnet_gpu.BUILDS:
        raise ValueError(f"MXNET_BUILD={build!r}; allowed: {', '.join(CHOICES)}")
    return build, "set by MXNET_BUILD"


def describe(build: str) -> str:
    if build == mxnet_gpu.CPU_BUILD:
        return f"{build} (the CPU build)"
    return f"{build} (with CUDA 11's libraries from {CUDA_LOCK.parent.name}/{CUDA_LOCK.name})"


def site_packages(venv: Path) -> Path:
    found = sorted(venv.glob("lib/python3*/site-packages"))
    if not found:
        raise FileNotFoundError(f"no lib/python3*/site-packages under {venv}")
    return found[-1]


def link_cuda_libraries(packages: Path) -> list[Path]:
    """Symlink every library of the nvidia-*-cu11 wheels into mxnet/, beside libmxnet.so.

    libmxnet.so's RPATH is ${ORIGIN} (DT_RPATH, which its dependencies' own look-ups
    inherit), so every process that imports mxnet then finds cuDNN, cuBLAS, NCCL, ...
    there, and only libcuda.so.1 is left to the driver. Returns the links made."""
    mxnet_dir = packages / "mxnet"
    made = []
    for library in sorted(packages.glob("nvidia/*/lib/lib*.so*")):
        link = mxnet_dir / library.name
        if link.is_symlink():
            link.unlink()
        elif link.exists():
            continue  # one the mxnet wheel ships itself
        link.symlink_to(Path("..") / library.relative_to(packages))
        made.append(link)
    return made


def install_shim(packages: Path) -> Path:
    """The .pth file that loads d2lperf.mxnet_compat when the environment's Python
    starts (named after the editable install's, whose path it needs: .pth files are
    read in name order)."""
    pth = packages / mxnet_compat.PTH_NAME
    pth.write_text(mxnet_compat.PTH_LINE)
    return pth


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("choose", help="print the build auto picks, then why")
    req = sub.add_parser("requirements", help="write the pins for a build")
    req.add_argument("--build", default="auto",
                     help=f"the MXNet build (allowed: {', '.join(CHOICES)}; default: auto)")
    req.add_argument("--out", type=Path, help="requirements file to write")
    req.add_argument("--dry-run", action="store_true", help="print the pins, write nothing")
    link = sub.add_parser("link-cuda-libs", help="make CUDA 11's wheels' libraries findable")
    link.add_argument("--venv", type=Path, required=True)
    shim = sub.add_parser("install-shim",
                          help="load numpy's names MXNet uses before mxnet (d2lperf.mxnet_compat)")
    shim.add_argument("--venv", type=Path, required=True)
    args = p.parse_args(argv)

    if args.command == "install-shim":
        install_shim(site_packages(args.venv))
        return 0

    if args.command == "link-cuda-libs":
        made = link_cuda_libraries(site_packages(args.venv))
        if made:
            print(f"linked {len(made)} CUDA libraries beside libmxnet.so")
        return 0
    try:
        build, why = resolve(args.build if args.command == "requirements" else "auto")
        pins = requirements(build)
    except ValueError as error:
        print(f"mxnet_build.py: error: {error}", file=sys.stderr)
        return 2
    if args.command == "choose":
        print(build)
        print(why)
        return 0
    print(f"MXNet build: {describe(build)}: {why}")
    if args.dry_run or args.out is None:
        print("\n".join(pins))
    else:
        args.out.write_text("\n".join(pins) + "\n")
    return 0

