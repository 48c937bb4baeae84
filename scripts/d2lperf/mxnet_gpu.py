"""Which of this machine's GPUs MXNet 1.9.1 can run on, and so which build to install.

MXNet 1.9.1's CUDA builds on PyPI (``mxnet-cu112``, ``mxnet-cu117``) carry machine
code (SASS) for sm_50, 60, 70, 80 and 86 and no PTX (read out of mxnet-cu117's
libmxnet.so with d2lperf.cuda_arch): they run on compute capability 5.0 to 8.9,
not on 9.0 (H100, H200) or later, where the PyTorch sections run instead. Before
MXNet is installed the choice of build rests on that list (``WHEEL_SASS``); once it
is, the verdict rests on the archs of the installed libmxnet.so, read from the file.

Standard library only: the Makefile runs this with the system Python, before any
environment exists.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from d2lperf import cuda_arch

MXNET_VERSION = "1.9.1"
# Read from mxnet_cu117-1.9.1's libmxnet.so (cuda_arch: 197 fat binaries); the same
# MXNET_CUDA_ARCH "5.0;6.0;7.0;8.0;8.6" builds mxnet-cu112.
WHEEL_SASS = (50, 60, 70, 80, 86)
WHEEL_PTX: tuple[int, ...] = ()
CPU_BUILD = "mxnet"
CUDA_BUILD = "mxnet-cu117"  # NVRTC 11.8 (libnvrtc.so.11.2) knows sm_89, for MXNet's fusion
CUDA_BUILDS = ("mxnet-cu112", CUDA_BUILD)  # both load CUDA 11's libraries
BUILDS = (CPU_BUILD, *CUDA_BUILDS)
QUERY_FIELDS = ("index", "uuid", "name", "compute_cap")


class GpuQueryFailed(Exception):
    """nvidia-smi is there but could not list the GPUs with their compute capability."""


@dataclass(frozen=True)
class Gpu:
    index: int
    uuid: str
    name: str
    compute_capability: str  # "8.6", as nvidia-smi's compute_cap gives it


@dataclass(frozen=True)
class Verdict:
    """Whether MXNet's code can run on one GPU, and why (or why not)."""

    gpu: Gpu
    runnable_code: str | None  # "sm_80" (SASS) or "compute_70" (PTX), None: nothing runs
    reason: str

    @property
    def supported(self) -> bool:
        return self.runnable_code is not None

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self.gpu), "supported": self.supported,
                "runnable_code": self.runnable_code, "reason": self.reason}


def query_gpus(timeout: float = 20) -> list[Gpu] | None:
    """The GPUs nvidia-smi lists; None where there is no nvidia-smi (no NVIDIA driver).
    GpuQueryFailed, with nvidia-smi's own words, where it cannot answer."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        done = subprocess.run(
            ["nvidia-smi", f"--query-gpu={','.join(QUERY_FIELDS)}", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=timeout,
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise GpuQueryFailed(f"nvidia-smi did not answer: {error}") from None
    said = (done.stdout + done.stderr).strip().splitlines()
    if done.returncode != 0:
        first = said[0] if said else "no output"
        raise GpuQueryFailed(f"nvidia-smi failed (exit {done.returncode}): {first}")
    gpus = []
    for line in done.stdout.strip().splitlines():
        values = [v.strip() for v in line.split(",")]
        try:
            index, uuid, name, capability = values
            cuda_arch.sm_number(capability)
            gpus.append(Gpu(int(index), uuid, name, capability))
        except ValueError:
            raise GpuQueryFailed(
                f"nvidia-smi's answer is not index, uuid, name, compute capability: {line!r}"
            ) from None
    return gpus


def _listed(sass: Sequence[int], ptx: Sequence[int]) -> str:
    code = f"SASS for {' '.join(f'sm_{a}' for a in sass)}" if sass else "no SASS"
    return code + (f", PTX for {' '.join(f'compute_{a}' for a in ptx)}" if ptx else " and no PTX")


def judge(gpu: Gpu, sass: Sequence[int], ptx: Sequence[int], what: str) -> Verdict:
    """The verdict for one GPU on code with these archs; ``what`` names the code, with
    its verb, in the reason ("its CUDA builds carry")."""
    capability = f"compute capability {gpu.compute_capability}"
    runs = cuda_arch.runnable_code(cuda_arch.sm_number(gpu.compute_capability), sass, ptx)
    if runs is None:
        return Verdict(gpu, None, f"MXNet {MXNET_VERSION} has no kernels for {gpu.name}, "
                                  f"{capability} ({what} {_listed(sass, ptx)})")
    return Verdict(gpu, runs, f"{gpu.name}, {capability}, runs MXNet {MXNET_VERSION}'s "
                              f"{runs} code")


def wheel_verdicts(gpus: Iterable[Gpu]) -> list[Verdict]:
    """The verdicts for PyPI's CUDA builds, before any is installed."""
    return [judge(g, WHEEL_SASS, WHEEL_PTX, "its CUDA builds carry") for g in gpus]


def installed_verdicts(gpus: Iterable[Gpu], library: str | Path) -> list[Verdict]:
    """The verdicts for the installed libmxnet.so, from the archs the file carries.
    On the CPU build, why: no CUDA build has kernels for the GPU, or which one does."""
    gpus = list(gpus)
    code = cuda_arch.read_device_code(library)
    if code.sass or code.ptx:
        return [judge(g, code.sass, code.ptx, "the installed libmxnet.so carries")
                for g in gpus]
    verdicts = []
    for wheel in wheel_verdicts(gpus):
        reason = wheel.reason
        if wheel.supported:
            reason = (f"the installed MXNet {MXNET_VERSION} is its CPU build; "
                      f"`make MXNET_BUILD={CUDA_BUILD} envs` installs the CUDA build, on which "
                      f"{wheel.reason}")
        verdicts.append(Verdict(wheel.gpu, None, reason))
    return verdicts


def choose_build() -> tuple[str, str]:
    """(build, why in one line): MXNet's CUDA 11.7 build where it has kernels for a
    GPU of this machine, else the CPU build."""
    try:
        gpus = query_gpus()
    except GpuQueryFailed as failed:
        return CPU_BUILD, str(failed)
    if gpus is None:
        return CPU_BUILD, "no NVIDIA driver answers (no nvidia-smi)"
    if not gpus:
        return CPU_BUILD, "nvidia-smi lists no GPU"
    verdicts = wheel_verdicts(gpus)
    supported = "; ".join(dict.fromkeys(v.reason for v in verdicts if v.supported))
    unsupported = "; ".join(dict.fromkeys(v.reason for v in verdicts if not v.supported))
    if not supported:
        return CPU_BUILD, f"{unsupported}; the PyTorch sections use the GPU"
    return CUDA_BUILD, supported + (f"; {unsupported}: sections skip it" if unsupported else "")


def visible(verdicts: Sequence[Verdict], environ: dict[str, str] | None = None) -> list[Verdict]:
    """The GPUs a CUDA process sees: those CUDA_VISIBLE_DEVICES names (by nvidia-smi
    index or UUID), all of them where it is unset or names them otherwise."""
    environ = os.environ if environ is None else environ
    wanted = environ.get("CUDA_VISIBLE_DEVICES")
    if wanted is None:
        return list(verdicts)
    chosen = []
    for token in (t.strip() for t in wanted.split(",") if t.strip()):
        match = [v for v in verdicts if token in (str(v.gpu.index), v.gpu.uuid)]
        if not match:
            return list(verdicts)
        chosen += match
    return chosen


def installed_library() -> Path:
    """The libmxnet.so that ``import mxnet`` would load (its package folder's)."""
    import importlib.util

    spec = importlib.util.find_spec("mxnet")
    if spec is None or spec.origin is None:
        raise ImportError("mxnet is not installed in this environment")
    return Path(spec.origin).parent / "libmxnet.so"


SMOKE_TEST = ("import mxnet as mx; "
              "print(mx.nd.ones((2, 2), ctx=mx.gpu(0)).asnumpy().sum())")


def smoke_test(gpu: Gpu, python: str = sys.executable, timeout: float = 180) -> dict[str, object]:
    """``nd.ones((2, 2), ctx=mx.gpu(0)).asnumpy()`` in a fresh process that sees this
    GPU alone (CUDA_VISIBLE_DEVICES: its UUID, which no device order can confuse)."""
    environment = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu.uuid or str(gpu.index)}
    started = time.perf_counter()
    try:
        done = subprocess.run([python, "-c", SMOKE_TEST], capture_output=True, text=True,
                              timeout=timeout, env=environment)
    except subprocess.TimeoutExpired:
        return {"ok": False, "seconds": timeout, "error": f"no answer within {timeout:g} s"}
    seconds = round(time.perf_counter() - started, 2)
    if done.returncode == 0 and done.stdout.strip().splitlines()[-1:] == ["4.0"]:
        return {"ok": True, "seconds": seconds, "error": None}
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    said = lines[-1] if lines else f"exit {done.returncode}, printed {done.stdout.strip()!r}"
    return {"ok": False, "seconds": seconds, "error": said}


def preflight(library: str | Path | None = None, python: str = sys.executable,
              timeout: float = 180) -> dict[str, object]:
    """machine.json's ``mxnet_gpu_support``: per GPU, whether the installed MXNet has code
    for it and whether a smoke test ran on it (only where the build has CUDA code)."""
    report: dict[str, object] = {"nvidia_smi": "ok", "gpus": []}
    try:
        library = Path(library) if library is not None else installed_library()
        code = cuda_arch.read_device_code(library)
    except (ImportError, OSError, ValueError) as error:
        return {**report, "library": None, "error": f"libmxnet.so not readable: {error}"}
    report.update(library=str(library), device_code=code.as_dict())
    try:
        gpus = query_gpus()
    except GpuQueryFailed as failed:
        return {**report, "nvidia_smi": str(failed)}
    if gpus is None:
        return {**report, "nvidia_smi": "not found: no NVIDIA driver"}
    entries = []
    for verdict in installed_verdicts(gpus, library):
        entry = verdict.as_dict()
        if code.sass or code.ptx:
            entry["smoke_test"] = smoke_test(verdict.gpu, python, timeout)
        else:
            entry["smoke_test"] = {"ok": None, "error": "not run: the CPU build has no GPU code"}
        entry["usable"] = bool(verdict.supported and entry["smoke_test"]["ok"])
        entries.append(entry)
    report["gpus"] = entries
    return report


def unusable_reason(count: int, environ: dict[str, str] | None = None) -> str | None:
    """Why MXNet cannot run a section needing ``count`` GPUs on the GPUs this process
    sees, or None: where it can, where fewer than ``count`` are there (MXNet's count
    then says so), or where no nvidia-smi says which GPUs there are."""
    try:
        gpus = query_gpus()
        if not gpus:
            return None
        seen = visible(installed_verdicts(gpus, installed_library()), environ)
    except (GpuQueryFailed, ImportError, OSError, ValueError):
        return None
    unsupported = [v for v in seen if not v.supported]
    if len(seen) < count or not unsupported:
        return None
    reasons = "; ".join(dict.fromkeys(v.reason for v in unsupported))
    if len(unsupported) == len(seen):
        return f"{reasons}; the PyTorch sections run on {'it' if len(seen) == 1 else 'them'}"
    return (f"{reasons}; CUDA_VISIBLE_DEVICES can hide it so that MXNet runs on the others "
            f"({', '.join(v.gpu.name for v in seen if v.supported)})")
