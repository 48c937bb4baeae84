"""Which BLAS the sections run on, what kernel it picked, and whether it computes right.

The ``mxnet`` wheel bundles its own OpenBLAS (0.3.13, built with OpenMP). A system
OpenBLAS can be loaded in its place (``LD_PRELOAD``) to answer "is my hardware slow,
or is it this build of MXNet?". Such results are a variant of the machine's, kept
in their own folder; before any timing, each BLAS-dependent section checks that the
variant's ``dot`` equals the stock one's on a stored reference, and refuses to run
otherwise.

OpenBLAS picks its kernel at load time from the CPU's model number; a CPU newer than
its tables gets the generic SSE3 one ("Prescott"), a quarter of what an AVX-512 CPU can
do, and ``OPENBLAS_CORETYPE`` forces another. So every run checks, before any timing,
that its framework's matrix product agrees with a float64 reference computed without
any BLAS (``probe``): a kernel, a build or an inherited variable that computes wrong
(``OPENBLAS_CORETYPE`` set but empty does, in the mxnet wheel's OpenBLAS 0.3.13) stops
the section instead of being timed.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from d2lperf import frameworks
from d2lperf.frameworks import DOCUMENTS, REGISTRY
from d2lperf.records import BlasLibrary, RunRecord

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


# --- what is loaded ---------------------------------------------------------------------

def _openblas_info(path: str) -> BlasLibrary:
    """OpenBLAS's own build string, kernel and threads; numpy's 64-bit build suffixes
    its symbols with 64_."""
    info: BlasLibrary = {"path": path}
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return info
    for prefix, suffix in (("", ""), ("", "64_"), ("scipy_", "64_"), ("scipy_", "")):
        try:
            for field, symbol in (("config", "openblas_get_config"),
                                  ("core", "openblas_get_corename")):
                function = getattr(lib, prefix + symbol + suffix)
                function.restype = ctypes.c_char_p
                info[field] = function().decode()
            info["threads"] = getattr(lib, prefix + "openblas_get_num_threads" + suffix)()
            info["kernel_bits"] = CORE_BITS.get(info["core"].lower())
            return info
        except AttributeError:
            continue
    return info


def loaded_blas() -> list[BlasLibrary]:
    """Every BLAS library this process has mapped (MXNet's and numpy's each bring one)."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as handle:
            paths = {line.split()[-1] for line in handle
                     if "blas" in line.lower() and line.split()[-1].startswith("/")}
    except OSError:
        return []
    return [_openblas_info(p) if "openblas" in p.lower() else {"path": p} for p in sorted(paths)]


def check_blas(reference: Path, record: RunRecord) -> None:
    """Refuse to time on a BLAS whose dot differs from the stock one's."""
    from d2lperf.errors import Refused

    error = max_relative_error(reference)
    record["blas_check"] = {"max_relative_error": error, "tolerance": REFERENCE_RTOL,
                            "reference": str(reference)}
    print(f"BLAS check against the stock dot: max relative error {error:.2e}", flush=True)
    if not error <= REFERENCE_RTOL:
        raise Refused(f"this BLAS's dot differs from the stock one by {error:.2e} "
                      f"(relative; allowed {REFERENCE_RTOL:g}): no figures reported")


# --- kernels ----------------------------------------------------------------------------

# OpenBLAS's x86 kernel names (its DYNAMIC_ARCH core table, the names OPENBLAS_CORETYPE
# takes, matched without case) and the float vector width each kernel computes with.
CORE_BITS = {
    "katmai": 128, "coppermine": 128, "northwood": 128, "prescott": 128, "banias": 128,
    "atom": 128, "core2": 128, "penryn": 128, "dunnington": 128, "nehalem": 128,
    "athlon": 128, "opteron": 128, "opteron_sse3": 128, "barcelona": 128, "nano": 128,
    "bobcat": 128, "sandybridge": 256, "bulldozer": 256, "piledriver": 256,
    "steamroller": 256, "excavator": 256, "haswell": 256, "zen": 256,
    "skylakex": 512, "cooperlake": 512, "sapphirerapids": 512,
}
CORETYPES = ("Prescott", "Core2", "Nehalem", "Sandybridge", "Haswell", "Zen", "SkylakeX",
             "Cooperlake", "SapphireRapids", "Barcelona", "Bulldozer", "Piledriver",
             "Steamroller", "Excavator", "Atom", "Penryn", "Dunnington", "Opteron", "Nano",
             "Bobcat", "Katmai", "Coppermine", "Northwood", "Banias", "Athlon", "Opteron_SSE3")


def check_coretype(value: object, key: str = "blas_coretype") -> str:
    """The OpenBLAS kernel name as OpenBLAS spells it, or BlasError naming the config key;
    empty means stock (the kernel OpenBLAS picks itself)."""
    if value in ("", None):
        return ""
    known = {name.lower(): name for name in CORETYPES}
    if not isinstance(value, str) or value.lower() not in known:
        raise BlasError(f"config key {key} = {value!r} is not an OpenBLAS kernel; allowed: "
                        f"{', '.join(CORETYPES)} (or empty: the kernel OpenBLAS picks)")
    return known[value.lower()]


def narrow_kernels(libraries: list[BlasLibrary], cpu_bits: int) -> list[BlasLibrary]:
    """The loaded OpenBLAS libraries whose kernel computes with narrower vectors than
    the CPU offers (Prescott's 128 bits on a 512-bit AVX-512 CPU)."""
    return [lib for lib in libraries
            if lib.get("kernel_bits") is not None and lib["kernel_bits"] < cpu_bits]


# --- the environment a BLAS reads -------------------------------------------------------

BLAS_VARIABLE_PREFIXES = ("OPENBLAS_", "GOTO", "MKL_", "BLIS_", "OMP_", "KMP_", "ATEN_",
                          "TORCH_")
BLAS_VARIABLES = ("LD_PRELOAD", "LD_LIBRARY_PATH")


def blas_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The variables a BLAS reads at load time that this process inherited, set or empty:
    each changes the kernel, the threads or the library, so a run records them."""
    environ = os.environ if environ is None else environ
    return {name: environ[name] for name in sorted(environ)
            if name.startswith(BLAS_VARIABLE_PREFIXES) or name in BLAS_VARIABLES}


def empty_variables(environ: dict[str, str] | None = None) -> list[str]:
    """BLAS variables set to nothing: OpenBLAS 0.3.13 reads an empty OPENBLAS_CORETYPE as
    a kernel name it does not know and computes wrong; a job never passes one on."""
    return [name for name, value in blas_environment(environ).items() if value == ""]


# --- the correctness probe ----------------------------------------------------------------

# The documents' matrix side (their dot is 2000 x 2000).
PROBE_SIZE = 2000
PROBE_ROWS = 4
# The products each framework's process is checked on: its own GEMM, and numpy's where
# numpy's BLAS is loaded beside it (MXNet's results pass through numpy, and the ceilings
# time numpy's), each in float32 (what is timed, at the documents' size) and float64 (the
# same kernel set, one that computes either wrong is not trusted with the other; a wrong
# double kernel is off at any size, so a smaller one keeps the check short).
def probes(framework: str) -> tuple[tuple[str, str], ...]:
    """The products (library, dtype) a framework's process is checked on: its own, and
    numpy's in the documents' framework's, whose results pass through numpy and whose
    ceilings time numpy's; none for a name the framework registry does not know."""
    if framework not in REGISTRY:
        return ()
    libraries = (framework, "numpy") if framework == DOCUMENTS else (framework,)
    return tuple((library, dtype) for library in libraries for dtype in ("float32", "float64"))


UNIT_ROUNDOFF = {"float32": 2.0 ** -24, "float64": 2.0 ** -53}
FLOAT64_PROBE_SIZE = 500


def probe_tolerance(n: int, dtype: str = "float32") -> float:
    """Worst-case rounding of a dot of n non-negative terms, relative to the largest:
    n units of roundoff (1.2e-4 in float32 at n = 2000). Kernels that sum in another order
    stay far inside it (about 5e-7 here in float32); a wrong kernel is off by percent."""
    return n * UNIT_ROUNDOFF[dtype]


def probe_matrices(n: int, seed: int = 0):
    """Two n x n float32 matrices of uniform [0, 1) entries (all products positive, so an
    error is relative to a sum without cancellation)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)


class Reference:
    """a @ b in float64 without any BLAS (elementwise products and numpy's own sums):
    every entry of a few random rows and columns, and every row's and column's sum, so
    that an error anywhere in the product shows."""

    def __init__(self, a, b, rows: int = PROBE_ROWS, seed: int = 0) -> None:
        import numpy as np

        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        pick = np.random.default_rng(seed + 1)
        self.shape = (a.shape[0], b.shape[1])
        self.rows = pick.choice(a.shape[0], size=min(rows, a.shape[0]), replace=False)
        self.columns = pick.choice(b.shape[1], size=min(rows, b.shape[1]), replace=False)
        self.row_entries = np.stack([(a64[i][:, None] * b64).sum(axis=0) for i in self.rows])
        self.column_entries = np.stack([(a64 * b64[:, j][None, :]).sum(axis=1)
                                        for j in self.columns], axis=1)
        self.row_sums = (a64 * b64.sum(axis=1)[None, :]).sum(axis=1)
        self.column_sums = (a64.sum(axis=0)[:, None] * b64).sum(axis=0)

    def error(self, got) -> float:
        """Largest error of ``got`` over the checked values, each kind relative to its
        largest reference value; infinite for a wrong shape or a non-finite entry."""
        import numpy as np

        got = np.asarray(got, dtype=np.float64)
        if got.shape != self.shape or not np.isfinite(got).all():
            return float("inf")
        scale = max(np.abs(self.row_entries).max(), np.abs(self.column_entries).max())
        return float(max(
            np.abs(self.row_entries - got[self.rows]).max() / scale,
            np.abs(self.column_entries - got[:, self.columns]).max() / scale,
            np.abs(self.row_sums - got.sum(axis=1)).max() / np.abs(self.row_sums).max(),
            np.abs(self.column_sums - got.sum(axis=0)).max() / np.abs(self.column_sums).max()))


def multiply_for(library: str, dtype: str = "float32") -> Callable[[Any, Any], Any]:
    """The matrix product a library's timings are built on, numpy arrays in and out,
    computed in ``dtype``."""
    if library == "numpy":
        return lambda a, b: a.astype(dtype) @ b.astype(dtype)
    if library in REGISTRY:  # each framework's module: its d2l-style matrix_product
        return frameworks.module(library).matrix_product(dtype)
    raise ValueError(f"no matrix product known for {library!r}")


def blas_in_use(libraries: list[BlasLibrary]) -> BlasLibrary | None:
    """The BLAS MXNet's dot runs on: the one in MXNet's package unless another was preloaded."""
    import mxnet as mx

    package = str(Path(mx.__file__).parent)
    preloaded = {os.path.realpath(p) for p in os.environ.get("LD_PRELOAD", "").replace(
        ":", " ").split()}
    for lib in libraries:
        if os.path.realpath(lib["path"]) in preloaded:
            return lib
    return next((lib for lib in libraries if lib["path"].startswith(package)),
                libraries[0] if libraries else None)


def library_blas(library: str, loaded: list[BlasLibrary] | None = None) -> BlasLibrary:
    """The loaded BLAS a library computes with (MXNet's own or a preloaded one; numpy's
    from numpy.libs or scipy_openblas)."""
    loaded = loaded_blas() if loaded is None else loaded
    if library == "mxnet":
        return blas_in_use(loaded) or {}
    others = [x for x in loaded if Path(x["path"]).parent.name != "mxnet"]
    return next((x for x in others if "numpy" in x["path"] or "scipy_openblas" in x["path"]),
                others[0] if others else {})


def kernel_of(library: str) -> str:
    """The library and kernel a product runs on, in words: what a framework's module says
    of its own BLAS (``blas_kernel``, where it has one: torch names its build's), else
    OpenBLAS's version and core name as loaded in this process."""
    own = getattr(frameworks.module(library), "blas_kernel", None) if library in REGISTRY \
        else None
    if own is not None:
        return own()
    lib = library_blas(library)
    if lib.get("core"):
        version = " ".join((lib.get("config") or "OpenBLAS").split(" ")[:2])
        return f"{version} kernel {lib['core']}"
    return Path(lib["path"]).name if lib.get("path") else "unknown BLAS"


def probe_record(n: int) -> dict[str, object]:
    """The probe's record before any product: its size and the BLAS variables inherited
    (those set but empty named apart)."""
    return {"size": n, "environment": blas_environment(), "empty": empty_variables(),
            "checks": []}


def probe(framework: str, record: RunRecord, n: int = PROBE_SIZE,
          products: dict[tuple[str, str], Callable[[Any, Any], Any]] | None = None) -> None:
    """Refuse the section (harness.Refused) when one of the framework's matrix
    products (``probes``) of n x n is off a float64 reference computed without BLAS by more
    than probe_tolerance; record each check, its kernel and the BLAS variables inherited.
    Runs in the process that calls it; a section calls ``probe_apart``. ``products``:
    stand-ins (a test's wrong BLAS) for the real ones."""
    from d2lperf.errors import Refused

    record["blas_probe"] = probe_record(n)
    record["blas_probe"].update(
        reference=f"float64 without BLAS: every entry of {PROBE_ROWS} rows and {PROBE_ROWS} "
                  "columns, every row and column sum", pid=os.getpid())
    forced = record["blas_probe"]["environment"].get("OPENBLAS_CORETYPE")
    checks = record["blas_probe"]["checks"]
    if products is None:
        products = {}
        for library, dtype in probes(framework):
            try:
                products[library, dtype] = multiply_for(library, dtype)
            except ImportError as missing:  # the section's own import says so, if it needs it
                checks.append({"library": library, "dtype": dtype,
                               "skipped": f"not installed here: {missing}"})
    references: dict[int, tuple] = {}
    for (library, dtype), multiply in products.items():
        size = n if dtype == "float32" else min(n, FLOAT64_PROBE_SIZE)
        if size not in references:
            a, b = probe_matrices(size)
            references[size] = (a, b, Reference(a, b))
        a, b, reference = references[size]
        error = reference.error(multiply(a, b))
        check = {"library": library, "dtype": dtype, "size": size,
                 "max_relative_error": error, "tolerance": probe_tolerance(size, dtype),
                 "kernel": "stand-in" if library.startswith("stand-in") else kernel_of(library)}
        checks.append(check)
        print(f"{library} {dtype} matrix product {size}x{size} against float64: max relative "
              f"error {error:.1e} (allowed {check['tolerance']:.1e}; {check['kernel']})",
              file=sys.stderr, flush=True)  # stdout is the section's own figures
        if not error <= check["tolerance"]:
            empty = (f"; set but empty: {', '.join(record['blas_probe']['empty'])}"
                     if record["blas_probe"]["empty"] else "")
            forcing = f"; OPENBLAS_CORETYPE={forced!r}" if forced else ""
            raise Refused(f"{library}'s {dtype} matrix product {size}x{size} ({check['kernel']}) "
                          f"is off a float64 reference by {error:.2e} relative, allowed "
                          f"{check['tolerance']:.1e}{empty}{forcing}: no figures reported")


# What the probe's own process runs: the probe, then the variant's check against the stock
# dot where there is one; what they recorded (and a refusal's reason) is its last line.
_APART = """\
import json, sys
from pathlib import Path
from d2lperf import blas
from d2lperf.errors import Refused
record, refused = {}, None
try:
    blas.probe(sys.argv[1], record, int(sys.argv[2]))
    if sys.argv[3]:
        blas.check_blas(Path(sys.argv[3]), record)
except Refused as why:
    refused = str(why)
print(json.dumps({"record": record, "refused": refused}))
"""


def probe_apart(framework: str, record: RunRecord, n: int = PROBE_SIZE,
                reference: Path | None = None, timeout: float = 600) -> None:
    """``probe`` (and ``check_blas`` against ``reference``, on a variant BLAS) in a fresh
    process of this interpreter and environment, never in the one that times: products
    of the probe's size there change what is timed after them (on the build machine,
    MXNet's hybridized MLP ran 3-4x slower in a process that had run the probe first).
    The fresh process loads the same libraries and reads the same variables, so what it
    finds holds here; it goes into ``record``. Refuses the section where the probe
    refused, or where the products crashed (a forced kernel this CPU lacks) or hung."""
    from d2lperf import children
    from d2lperf.errors import Refused

    record["blas_probe"] = probe_record(n)  # what is known here; the probe's own replaces it
    forced = record["blas_probe"]["environment"].get("OPENBLAS_CORETYPE")
    forcing = f"OPENBLAS_CORETYPE={forced!r}: " if forced is not None else ""
    try:
        done = subprocess.run([sys.executable, "-c", _APART, framework, str(n),
                               str(reference or "")], stdout=subprocess.PIPE, text=True,
                              timeout=timeout, preexec_fn=children.die_with_parent)
    except subprocess.TimeoutExpired:
        how = f"did not finish in {timeout:.0f} s"
    else:
        how = (f"crashed with {signal.Signals(-done.returncode).name}" if done.returncode < 0
               else f"failed (exit code {done.returncode})" if done.returncode else None)
    if how:
        record["blas_probe"]["crashed"] = how
        raise Refused(f"{forcing}{framework}'s matrix products {how} in the BLAS probe's "
                      "process: no figures reported")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    record.update(found["record"])
    if found["refused"]:
        raise Refused(found["refused"])
