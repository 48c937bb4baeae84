"""A stand-in for pynvml (nvidia-ml-py) with GPUs whose counters move, so that the code
that meters a GPU (d2lperf.energy) runs on a machine without one.

Set by the environment, so that child processes see the same GPUs:
FAKE_NVML_GPUS (how many, default 1), FAKE_NVML_NAME (default "NVIDIA H200"),
FAKE_NVML_WATTS (each GPU's draw, default 300; GPU i draws 10 W more than GPU i-1),
FAKE_NVML_NO_ENERGY_COUNTER=1 (the total-energy counter is not supported, as before
Volta), FAKE_NVML_THROTTLE (the clocks event mask every read returns, default 0),
FAKE_NVML_INIT_FAILS (nvmlInit raises with that message).
"""

from __future__ import annotations

import os
import time

NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_ERROR_NOT_SUPPORTED = 3
STAND_IN = True
_T0 = time.monotonic()
calls: dict[str, int] = {}


class NVMLError(Exception):
    def __init__(self, value: int, text: str = "") -> None:
        super().__init__(text or f"NVML error {value}")
        self.value = value


class NVMLError_NotSupported(NVMLError):
    def __init__(self) -> None:
        super().__init__(NVML_ERROR_NOT_SUPPORTED, "Not Supported")


def _count(name: str) -> None:
    calls[name] = calls.get(name, 0) + 1


def _gpus() -> int:
    return int(os.environ.get("FAKE_NVML_GPUS", "1"))


def _watts(index: int) -> float:
    return float(os.environ.get("FAKE_NVML_WATTS", "300")) + 10 * index


def nvmlInit() -> None:
    _count("nvmlInit")
    if os.environ.get("FAKE_NVML_INIT_FAILS"):
        raise NVMLError(12, os.environ["FAKE_NVML_INIT_FAILS"])


def nvmlShutdown() -> None:
    _count("nvmlShutdown")


def nvmlDeviceGetCount() -> int:
    return _gpus()


def nvmlDeviceGetHandleByIndex(index: int) -> int:
    if not 0 <= index < _gpus():
        raise NVMLError(2, "Invalid Argument")
    return index


def nvmlDeviceGetUUID(handle: int) -> str:
    return f"GPU-0000000{handle}-stand-in"


def nvmlDeviceGetName(handle: int) -> str:
    return os.environ.get("FAKE_NVML_NAME", "NVIDIA H200")


def nvmlDeviceGetTotalEnergyConsumption(handle: int) -> int:
    """mJ since the driver loaded: this GPU's watts since the stand-in was imported, on
    top of a large count already there."""
    _count("nvmlDeviceGetTotalEnergyConsumption")
    if os.environ.get("FAKE_NVML_NO_ENERGY_COUNTER"):
        raise NVMLError_NotSupported()
    return 7_000_000_000 + int(1000 * _watts(handle) * (time.monotonic() - _T0))


def nvmlDeviceGetPowerUsage(handle: int) -> int:
    _count("nvmlDeviceGetPowerUsage")
    return int(1000 * _watts(handle))


def nvmlDeviceGetClockInfo(handle: int, kind: int) -> int:
    """The SM clock moves between reads (1980, 1965, 1950 ... MHz), the memory's stays."""
    _count("nvmlDeviceGetClockInfo")
    if kind == NVML_CLOCK_MEM:
        return 2619
    return 1980 - 15 * (calls["nvmlDeviceGetClockInfo"] // 2 % 5)


def nvmlDeviceGetCurrentClocksEventReasons(handle: int) -> int:
    _count("nvmlDeviceGetCurrentClocksEventReasons")
    return int(os.environ.get("FAKE_NVML_THROTTLE", "0"), 0)


nvmlDeviceGetCurrentClocksThrottleReasons = nvmlDeviceGetCurrentClocksEventReasons
