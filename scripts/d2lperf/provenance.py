"""What ran, when and how: code version, thread settings and the state of the machine."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import sys
from pathlib import Path

from d2lperf import frameworks
from d2lperf.frameworks import REGISTRY
from d2lperf.machine import cpu_governor

# Thread knobs of OpenMP, the BLAS libraries and MXNet's engine. Every run records
# all of them, set or not, because each one changes timings (docs/design.md,
# "Thread counts are pinned and recorded").
# The ones a run pins to its thread count (set_threads, and the rule's shell line).
PINNED_THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "GOTO_NUM_THREADS",
)
THREAD_VARIABLES = (
    *PINNED_THREAD_VARIABLES,
    "MXNET_CPU_WORKER_NTHREADS",
    "MXNET_CPU_PRIORITY_NTHREADS",
    "MXNET_GPU_WORKER_NTHREADS",
    "MXNET_ENGINE_TYPE",
    "MXNET_CPU_TEMP_COPY",
    "MXNET_CPU_PARALLEL_RAND_COPY",
)

REPO_ROOT = Path(__file__).resolve().parents[2]

# MXNet's GPU knobs that change GPU timings, with MXNet 1.9.1's defaults (docs/faq/
# env_var.md): cuDNN tunes each convolution on the first use of every input shape,
# pointwise fusion compiles with NVRTC at run time, bulking merges engine ops, and on
# Ampere and later CUDA 11 runs FP32 matrix products in TF32 unless told not to.
_BULK_TRAIN_DEFAULT = "<MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN>"
MXNET_GPU_VARIABLES: dict[str, str | None] = {
    "MXNET_CUDNN_AUTOTUNE_DEFAULT": "1",
    "MXNET_GPU_MEM_POOL_TYPE": "Naive",
    "MXNET_GPU_WORKER_NTHREADS": "2",
    "MXNET_GPU_WORKER_NSTREAMS": "1",
    "MXNET_USE_FUSION": "1",
    "MXNET_EXEC_BULK_EXEC_INFERENCE": "1",
    "MXNET_EXEC_BULK_EXEC_TRAIN": "1",
    "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN": "15",
    "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD": _BULK_TRAIN_DEFAULT,
    "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD": _BULK_TRAIN_DEFAULT,
    "MXNET_CUDA_ALLOW_TENSOR_CORE": "1",
    "NVIDIA_TF32_OVERRIDE": None,  # unset: TF32 allowed; 0 turns it off
}


def mxnet_gpu_settings(environ: dict[str, str] | None = None) -> dict[str, dict[str, str | None]]:
    """Each MXNet GPU variable: its value here (None: unset), MXNet's default, and the
    one in effect."""
    environ = os.environ if environ is None else environ
    settings = {}
    for name, default in MXNET_GPU_VARIABLES.items():
        value = environ.get(name)
        effective = value if value is not None else default
        if effective == _BULK_TRAIN_DEFAULT:
            effective = environ.get("MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN",
                                    MXNET_GPU_VARIABLES["MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN"])
        settings[name] = {"value": value, "default": default, "effective": effective}
    return settings



def now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def set_threads(threads: int, framework: str | None = None) -> None:
    """Pin OpenMP and BLAS to ``threads`` before any framework is imported (each reads
    them once, when it loads), and ``framework``'s own thread settings where its module
    has some (``thread_environment``: XLA's flags for JAX)."""
    loaded = [f.package for f in REGISTRY.values() if f.package in sys.modules]
    if loaded:
        raise RuntimeError(f"set_threads must run before {loaded[0]} is imported")
    for name in PINNED_THREAD_VARIABLES:
        os.environ[name] = str(threads)
    own = getattr(frameworks.module(framework), "thread_environment", None) if framework \
        else None
    if own:
        os.environ.update(own(threads))


def thread_settings(framework: str | None = None) -> dict[str, str | None]:
    """Every thread variable, set or not: OpenMP's, the BLAS libraries', MXNet's engine's,
    and ``framework``'s own (its module's ``THREAD_VARIABLES``)."""
    own = getattr(frameworks.module(framework), "THREAD_VARIABLES", ()) if framework else ()
    return {name: os.environ.get(name) for name in (*THREAD_VARIABLES, *own)}


def git_commit(root: Path = REPO_ROOT) -> dict[str, object]:
    """The commit the code ran at, and whether the working tree had changes."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=root, capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def load_average() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def peak_rss_mb() -> dict[str, float]:
    """Peak resident memory of this process and of its finished children (getrusage:
    exact, unlike sampling), MB = 1e6 bytes."""
    import resource

    scale = 1.0 if sys.platform == "darwin" else 1024.0  # ru_maxrss: bytes on macOS, KiB here
    return {
        "self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 1e6,
        "children": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * scale / 1e6,
    }


def installed_version(distribution: str) -> str | None:
    """The version of ``distribution`` installed for this interpreter, read from its
    metadata (nothing is imported: numpy stays unloaded until the threads are pinned);
    None where it is not installed."""
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def run_context(framework: str | None = None) -> dict[str, object]:
    """Everything about the process and code that a result should carry with it (the
    Python and the numpy that ran: MXNet's environment takes numpy 1.23, 1.26 or 2.x by
    its Python, envs/mxnet.lock.txt), and what ``framework``'s module records of its own
    settings (``run_settings``: MXNet's GPU variables)."""
    own = getattr(frameworks.module(framework), "run_settings", None) if framework else None
    gpu_settings = own() if own else {}
    return {
        "python": platform.python_version(),
        "numpy": installed_version("numpy"),
        "executable": sys.executable,
        "hostname": platform.node(),
        "pid": os.getpid(),
        "threads": thread_settings(framework),
        **gpu_settings,
        "load_average_at_start": load_average(),
        "cpu_governor": cpu_governor(),
        "code": git_commit(),
    }
