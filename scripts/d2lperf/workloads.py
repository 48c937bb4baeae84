"""How much work a timed case does, so its time becomes a rate beside the ceiling.

For every timing built on ``dot`` or on copies, the achieved rate (GFLOP/s or GB/s)
and its fraction of this machine's measured ceiling (scripts/ceilings.py) tell a
slow machine from a bad measurement.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

FLOAT32_BYTES = 4


def dot_gflop(n: int, count: int = 1) -> float:
    return 2.0 * n**3 * count / 1e9


def dot_flops(n: int) -> float:
    return dot_gflop(n) * 1e9


def record_rate(rec: Any, case: str, amount: float, unit: str, seconds: list[float],
                devices: str) -> None:
    """A ceiling's raw times, and the rate each one gives (both frameworks' ceilings)."""
    from d2lperf.describe import Stats

    rates = [amount / s / 1e9 for s in seconds]
    rec.samples(case, "time", "s", seconds, devices=devices)
    rec.samples(case, "rate", unit, rates, devices=devices)
    print(f"{case}: median {Stats(rates).median:.1f} {unit} on {devices}", flush=True)


def work(section: str, case: str, parameters: Mapping[str, Any]) -> tuple[float, str] | None:
    """(amount, "GFLOP" or "GB") that one sample of this case performs, where known."""
    if section == "async_computation":
        n = parameters["size"]
        dots = {"dot_wait_to_read": 1, "dot_asnumpy": 1, "dot_asscalar": 1, "dot_waitall": 2}
        if case in dots:
            return dot_gflop(n, dots[case]), "GFLOP"
    if section == "auto_parallelism":
        dots = parameters["dots"]
        if case == "cpu_only":
            return dot_gflop(parameters["cpu_size"], dots), "GFLOP"
        if case in ("gpu_only", "gpu_compute"):
            return dot_gflop(parameters["gpu_size"], dots), "GFLOP"
        if case in ("copy_to_cpu", "copy_to_cpu_pinned"):
            return dots * parameters["gpu_size"] ** 2 * FLOAT32_BYTES / 1e9, "GB"
    return None


# A figure at this share of the machine's best ceiling or above is at the limit: the
# hardware, not the framework, bounds it (the overview marks it).
AT_LIMIT = 0.8


def ceiling_case(unit: str, devices: str, case: str) -> str:
    """Which ceilings a rate compares with: a pattern over the ceilings' case names, every
    library's (MXNet's dot, numpy's, PyTorch's mm, JAX's dot) on the same device. A GPU is
    named gpu(0) by MXNet, cuda:0 by PyTorch and JAX."""
    found = re.match(r"gpu\((\d+)\)|cuda:(\d+)", devices or "")
    gpu = next((index for index in found.groups() if index is not None), None) if found else None
    if unit == "GFLOP":
        return (rf"gpu{gpu}_(dot|torch_mm|jax_dot)_\d+" if gpu
                else r"(mxnet_dot|numpy_dot|torch_mm|jax_dot)_\d+")
    if gpu and case in ("copy_to_cpu", "copy_to_cpu_pinned"):
        return (rf"gpu{gpu}_(device_to_host|torch_device_to_host_(pinned|pageable)"
                r"|jax_device_to_host_pageable)")
    return r"(mxnet|numpy|torch|jax)_copy"


def best_ceiling(ceilings: dict[str, float], pattern: str) -> tuple[str, float] | None:
    """The highest median rate among the ceilings matching the pattern."""
    found = [(name, rate) for name, rate in ceilings.items() if re.fullmatch(pattern, name)]
    return max(found, key=lambda item: item[1]) if found else None
