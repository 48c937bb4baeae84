"""How much work a timed case does, so its time becomes a rate beside the ceiling.

For every timing built on ``dot`` or on copies, the achieved rate (GFLOP/s or GB/s)
and its fraction of this machine's measured ceiling (scripts/ceilings.py) tell a
slow machine from a bad measurement.
"""

from __future__ import annotations

import re
from typing import Any

FLOAT32_BYTES = 4


def dot_gflop(n: int, count: int = 1) -> float:
    return 2.0 * n**3 * count / 1e9


def work(experiment: str, case: str, parameters: dict[str, Any]) -> tuple[float, str] | None:
    """(amount, "GFLOP" or "GB") that one sample of this case performs, where known."""
    if experiment == "async_computation":
        n = parameters["size"]
        dots = {"dot_wait_to_read": 1, "dot_asnumpy": 1, "dot_asscalar": 1, "dot_waitall": 2}
        if case in dots:
            return dot_gflop(n, dots[case]), "GFLOP"
    if experiment == "auto_parallelism":
        dots = parameters["dots"]
        if case == "cpu_only":
            return dot_gflop(parameters["cpu_size"], dots), "GFLOP"
        if case in ("gpu_only", "gpu_compute"):
            return dot_gflop(parameters["gpu_size"], dots), "GFLOP"
        if case in ("copy_to_cpu", "copy_to_cpu_pinned"):
            return dots * parameters["gpu_size"] ** 2 * FLOAT32_BYTES / 1e9, "GB"
    return None


def ceiling_case(unit: str, devices: str, case: str) -> str:
    """Which ceiling a rate compares with: a pattern over the ceilings' case names. A GPU
    is named gpu(0) by MXNet, cuda:0 by PyTorch."""
    found = re.match(r"gpu\((\d+)\)|cuda:(\d+)", devices or "")
    gpu = next((index for index in found.groups() if index is not None), None) if found else None
    if unit == "GFLOP":
        return rf"gpu{gpu}_dot_\d+" if gpu else r"mxnet_dot_\d+"
    if gpu and case in ("copy_to_cpu", "copy_to_cpu_pinned"):
        return rf"gpu{gpu}_device_to_host"
    return r"mxnet_copy"


def best_ceiling(ceilings: dict[str, float], pattern: str) -> tuple[str, float] | None:
    """The highest median rate among the ceilings matching the pattern."""
    found = [(name, rate) for name, rate in ceilings.items() if re.fullmatch(pattern, name)]
    return max(found, key=lambda item: item[1]) if found else None
