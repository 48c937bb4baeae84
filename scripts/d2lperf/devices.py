"""Which MXNet contexts a section runs on (DESIGN.md decision 7).

Sections written for GPUs run on GPUs when the machine has enough that MXNet has
code for, and are skipped with the reason when it does not (MXNet 1.9.1 has no
kernels for compute capability 9.0 and later: d2lperf.mxnet_gpu), unless the
config asks for CPU contexts instead (``cpu(0)``, ``cpu(1)``, ...: separate engine
queues on the same processor, exactly as seeds/000 ran its multi-device code
without GPUs).
"""

from __future__ import annotations

import argparse

from d2lperf import experiment, mxnet_gpu
from d2lperf.experiment import Skipped

KINDS = ("gpu", "cpu")


def add_argument(parser: argparse.ArgumentParser, default: str = "gpu") -> None:
    parser.add_argument("--on", choices=KINDS, default=default,
                        help=f"device kind for the section's GPU contexts (default: {default})")


def contexts(kind: str, count: int) -> list:
    """``count`` contexts of ``kind``; Skipped when the machine has too few GPUs, or
    GPUs the installed MXNet has no code for (before any work, rather than crash)."""
    import mxnet as mx

    if kind == "cpu":
        return [mx.cpu(i) for i in range(count)]
    if kind != "gpu":
        raise ValueError(f"unknown device kind {kind!r}; allowed: {', '.join(KINDS)}")
    unusable = mxnet_gpu.unusable_reason(count)
    if unusable is not None:
        raise Skipped(unusable)
    found = mx.context.num_gpus()
    if found < count:
        plural = "s" if count > 1 else ""
        raise Skipped(f"needs {count} GPU{plural}, found {found}")
    return [mx.gpu(i) for i in range(count)]


def names(ctxs) -> str:
    """How a results row names its devices: ``cpu(0),cpu(1)``."""
    return ",".join(str(c) for c in ctxs)


def check_two_cpu_queues(kind: str, threads: int) -> None:
    """Skipped, before any work, where two CPU engine queues would hang.

    An OpenBLAS built with USE_OPENMP (the mxnet 1.9.1 wheel bundles 0.3.13) hangs for
    good, one core spinning in exec_blas, once two engine workers call its
    multithreaded sgemm at the same time: CPU contexts with more than one OpenMP
    thread. One thread per queue runs (the workflow passes --threads 1 there).
    """
    if kind != "cpu" or threads == 1:
        return
    config = (experiment.mxnet_blas(experiment.loaded_blas()) or {}).get("config", "")
    if "USE_OPENMP" in config:
        raise Skipped(
            f"CPU contexts need --threads 1 with {config.split(' DYNAMIC_ARCH')[0]} "
            f"(USE_OPENMP): two engine queues calling its sgemm at once hang; "
            f"got --threads {threads}"
        )
