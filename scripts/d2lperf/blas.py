"""Which BLAS the experiments run on, and whether a replacement computes the same.

The ``mxnet`` wheel bundles its own OpenBLAS (0.3.13, built with OpenMP). A system
OpenBLAS can be loaded in its place (``LD_PRELOAD``) to answer "is my hardware slow,
or is it this build of MXNet?". Such results are a variant of the machine's, kept
in their own folder; before any timing, each BLAS-dependent section checks that the
variant's ``dot`` equals the stock one's on a stored reference, and refuses to run
otherwise.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

# Debian's libopenblas0-pthread, then whatever the dynamic linker knows.
SYSTEM_CANDIDATES = (
    "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
    "/usr/lib/aarch64-linux-gnu/openblas-pthread/libopenblas.so.0",
    "/usr/lib64/libopenblas.so.0",
)
REFERENCE_SIZE = 512
# float32 sgemm with K = 512 terms: different kernels sum in different orders, which
# moves results by a few units of float32 rounding relative to the largest entry.
REFERENCE_RTOL = 1e-5


class BlasError(ValueError):
    """The configured BLAS cannot be used; the message says why."""


def find_system_blas(configured: str = "") -> Path:
    """The configured library, or the system OpenBLAS; BlasError when none is usable."""
    if configured:
        path = Path(configured)
        if not path.is_file():
            raise BlasError(f"system_blas_path {configured!r} does not exist")
        return check_is_blas(path)
    for candidate in SYSTEM_CANDIDATES:
        if Path(candidate).is_file():
            return check_is_blas(Path(candidate))
    found = _ldconfig_openblas()
    if found:
        return check_is_blas(found)
    raise BlasError(
        "no system OpenBLAS found (looked in " + ", ".join(SYSTEM_CANDIDATES) + " and "
        "ldconfig); install Debian's libopenblas0-pthread (`make blas`) or set "
        "system_blas_path to a libopenblas.so"
    )


def _ldconfig_openblas() -> Path | None:
    if shutil.which("ldconfig") is None:
        return None
    try:
        listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True,
                                 timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in listing.splitlines():
        if "libopenblas.so.0" in line and "=>" in line:
            return Path(line.split("=>")[-1].strip())
    return None


def check_is_blas(path: Path) -> Path:
    """A shared library that exports cblas_sgemm, or BlasError."""
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as error:
        raise BlasError(f"system_blas_path {str(path)!r} is not a loadable library: {error}") \
            from None
    if not hasattr(lib, "cblas_sgemm"):
        raise BlasError(f"system_blas_path {str(path)!r} is not a BLAS: no cblas_sgemm")
    return path


def write_reference(path: Path) -> None:
    """x and dot(x, x) computed with the BLAS this process loaded (the stock one)."""
    import mxnet as mx
    import numpy as np
    from mxnet import nd

    mx.random.seed(0)
    x = nd.random.uniform(shape=(REFERENCE_SIZE, REFERENCE_SIZE))
    np.savez(path, x=x.asnumpy(), dot=nd.dot(x, x).asnumpy())


def max_relative_error(path: Path) -> float:
    """How far this process's dot(x, x) is from the stored stock one, relative to its
    largest entry."""
    import numpy as np
    from mxnet import nd

    stored = np.load(path)
    got = nd.dot(nd.array(stored["x"]), nd.array(stored["x"])).asnumpy()
    reference = stored["dot"]
    return float(np.abs(got - reference).max() / np.abs(reference).max())
