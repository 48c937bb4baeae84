"""What a GPU drew through a timed region, its clocks and why they were held back, as NVML
reports them (docs/design.md, "Energy and clocks").

``Meter`` is a context manager around a region: on the way in and out it reads, per GPU,
the SM and memory clocks and the throttle reasons (NVML's clocks event reasons), and the
GPU's total-energy counter (``nvmlDeviceGetTotalEnergyConsumption``, mJ, Volta and later);
where the counter is not supported, a small thread samples the power draw
(``nvmlDeviceGetPowerUsage``) through the region and the energy is the area under those
samples. ``reading()`` gives it all as a run record keeps it (``notes.gpu_energy``). A
power or an energy no GPU gives (negative, not a finite number, more than MAX_WATTS:
``implausible``) is no reading, with the reason, never a figure.

It is the GPU's own power as NVML reports it (the board's sensor), not the wall's: no
CPU, host memory, fans or power supply losses. Without NVML (no nvidia-ml-py, no driver,
no GPU, every GPU hidden, the work on the CPU) a reading says why it is empty, in
``reason``; nothing here ever raises because of NVML. The standard library only; pynvml
(the nvidia-ml-py package) is imported on first use, so a worker that never meters a GPU
never loads it.
"""

from __future__ import annotations

import functools
import math
import os
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# NVML's clocks event (throttle) reason bits, named as nvml.h names them
# (nvmlClocksEventReason*, formerly nvmlClocksThrottleReason*).
REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# What a GPU at work is allowed to say without counting as held back: idle, or nothing.
NOT_THROTTLED = frozenset({"gpu_idle"})
NVML_CLOCK_SM = 1  # nvmlClockType_t, as pynvml names them (NVML_CLOCK_SM, NVML_CLOCK_MEM)
NVML_CLOCK_MEM = 2
POWER_EVERY_S = 0.02  # the power thread's period, where the energy counter is missing
WHAT = "the GPU's own power as NVML reports it (board sensor), not the wall's"
# The most one GPU draws: today's largest boards are rated about 1 kW (H100 SXM 700 W,
# B200 1000 W), so 5 kW is a broken sensor or counter, never a GPU at work.
MAX_WATTS = 5000.0
# A region shorter than this is held to this long: NVML's counter and power reading move
# in steps (the power is averaged over up to a second on some boards), so a short region
# may see a step of energy more than its seconds could draw.
SHORTEST_S = 1.0
_DEVICE = re.compile(r"^(?:cuda|gpu)(?::|\()(\d+)\)?$")


@functools.cache
def _nvml() -> tuple[Any, str | None]:
    """pynvml, initialised once per process, or None and why not."""
    try:
        import pynvml
    except ImportError:
        return None, "no NVML: the nvidia-ml-py package (pynvml) is not installed"
    try:
        pynvml.nvmlInit()
    except Exception as error:  # NVMLError_LibraryNotFound, _DriverNotLoaded, ...
        return None, f"no NVML: {_words(error)}"
    return pynvml, None


def _words(error: BaseException) -> str:
    return str(error) or type(error).__name__


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def gpu_ordinals(devices: Iterable[Any]) -> list[int]:
    """The CUDA ordinals among a run's devices as the frameworks name them (``cuda:0``,
    ``gpu(1)``, ``gpu:0``); a CPU device names none."""
    found = []
    for device in devices:
        match = _DEVICE.match(str(device).strip().lower())
        if match and int(match.group(1)) not in found:
            found.append(int(match.group(1)))
    return found


def _visible(nvml: Any) -> tuple[list[tuple[int, Any]], str | None]:
    """The GPUs a CUDA program here sees, in its ordinals' order, as (NVML index, handle):
    CUDA_VISIBLE_DEVICES's list where it is set (indices or UUIDs; CUDA stops at the first
    it cannot use), else every GPU NVML knows. The reason where there is none."""
    try:
        count = nvml.nvmlDeviceGetCount()
        handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    except Exception as error:
        return [], f"NVML lists no GPU: {_words(error)}"
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is None:
        return list(enumerate(handles)), None if handles else "NVML finds no GPU"
    found: list[tuple[int, Any]] = []
    for token in (t.strip() for t in listed.split(",")):
        if token.isdigit() and int(token) < count:
            found.append((int(token), handles[int(token)]))
            continue
        uuids = {i: _text(_call(nvml.nvmlDeviceGetUUID, h)[0]) for i, h in enumerate(handles)}
        index = next((i for i, u in uuids.items() if token and u.startswith(token)), None)
        if index is None:
            break
        found.append((index, handles[index]))
    return found, None if found else f"CUDA_VISIBLE_DEVICES={listed!r} hides every GPU"


def _call(function: Any, *args: Any) -> tuple[Any, str | None]:
    """An NVML query's value, or None and why (not supported, no permission, ...)."""
    try:
        return function(*args), None
    except Exception as error:
        return None, _words(error)


def implausible(value: float, unit: str, seconds: float | None = None) -> str | None:
    """Why ``value`` is no GPU's, in words, or None where it may be one: a power (``unit``
    "W", over ``seconds`` where it is a mean) or an energy ("J", through ``seconds``) that
    is not a finite number, is negative, or is more than MAX_WATTS draws (a region shorter
    than SHORTEST_S held to that long). What a reading here keeps and what a run record
    read elsewhere may hold alike."""
    if not math.isfinite(value):
        return f"{value:g} {unit} is not a finite number"
    if value < 0:
        return f"{value:g} {unit} is negative"
    held = max(seconds or 0.0, SHORTEST_S)
    if unit == "J":
        most, what = MAX_WATTS * held, f"{value:g} J in {seconds or 0.0:.3g} s"
    else:
        most, what = MAX_WATTS * (held / seconds if seconds else 1.0), f"{value:g} W"
    if value > most:
        return (f"{what} is more than a GPU draws (at most {MAX_WATTS:g} W, a region "
                f"shorter than {SHORTEST_S:g} s held to that long)")
    return None


def throttle_names(mask: int) -> list[str]:
    """The reason bits of a clocks event mask by name ([] for none; an unknown bit by its
    value)."""
    names = [name for bit, name in REASONS.items() if mask & bit]
    rest = mask & ~sum(REASONS)
    return names + ([hex(rest)] if rest else [])


def _clocks(nvml: Any, handle: Any) -> dict[str, Any]:
    """The SM and memory clocks (MHz) and the throttle reasons, now."""
    state: dict[str, Any] = {}
    for key, kind in (("sm_mhz", getattr(nvml, "NVML_CLOCK_SM", NVML_CLOCK_SM)),
                      ("memory_mhz", getattr(nvml, "NVML_CLOCK_MEM", NVML_CLOCK_MEM))):
        state[key], _ = _call(nvml.nvmlDeviceGetClockInfo, handle, kind)
    read = (getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
            or getattr(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None))
    mask, why = _call(read, handle) if read else (None, "this pynvml reads no clocks reasons")
    state["throttle"] = throttle_names(int(mask)) if mask is not None else None
    if mask is None:
        state["throttle_reason"] = why
    return state


class _PowerSampler(threading.Thread):
    """Samples the power draw of the GPUs without an energy counter every POWER_EVERY_S
    and integrates it (trapezoids, watts x seconds). A GPU that gives one power no GPU
    draws (``implausible``) has no energy: why is in ``broken``."""

    def __init__(self, nvml: Any, handles: Mapping[int, Any]) -> None:
        super().__init__(name="d2lperf-gpu-power", daemon=True)
        self.nvml, self.handles = nvml, dict(handles)
        self.stop_event = threading.Event()
        self.joules = {i: 0.0 for i in self.handles}
        self.samples = {i: 0 for i in self.handles}
        self.errors: dict[int, str] = {}
        self.broken: dict[int, str] = {}
        self.last: dict[int, tuple[float, float]] = {}
        self.sample()

    def sample(self) -> None:
        for i, handle in self.handles.items():
            milliwatts, why = _call(self.nvml.nvmlDeviceGetPowerUsage, handle)
            now = time.monotonic()
            if milliwatts is None:
                self.errors.setdefault(i, why or "no power reading")
                continue
            watts = float(milliwatts) / 1000
            problem = implausible(watts, "W")
            if problem:
                self.broken.setdefault(i, f"NVML's power reading: {problem}")
                continue
            if i in self.last:
                then, before = self.last[i]
                self.joules[i] += (now - then) * (watts + before) / 2
            self.last[i] = (now, watts)
            self.samples[i] += 1

    def run(self) -> None:
        while not self.stop_event.wait(POWER_EVERY_S):
            self.sample()

    def finish(self) -> None:
        self.stop_event.set()
        self.join()
        self.sample()  # the region's end


class Meter:
    """``with Meter(ordinals): ...``: the energy, clocks and throttle reasons of the GPUs
    with those CUDA ordinals (every GPU a CUDA program here sees, by default; none, ``[]``:
    the work ran on no GPU) through the region; ``reading()`` afterwards."""

    def __init__(self, ordinals: Sequence[int] | None = None) -> None:
        self.ordinals = None if ordinals is None else list(ordinals)
        self.reason: str | None = None
        self.gpus: list[dict[str, Any]] = []
        self.handles: dict[int, Any] = {}
        self.counters: dict[int, float] = {}
        self.sampler: _PowerSampler | None = None
        self.seconds: float | None = None
        self.started = 0.0

    def __enter__(self) -> Meter:
        try:
            self._start()
        except Exception as error:  # a pynvml that behaves otherwise than documented
            self.reason, self.gpus = f"NVML failed: {_words(error)}", []
        self.started = time.monotonic()
        return self

    def _start(self) -> None:
        if self.ordinals == []:
            self.reason = "the work ran on no GPU"
            return
        nvml, why = _nvml()
        if nvml is None:
            self.reason = why
            return
        visible, why = _visible(nvml)
        chosen = (list(enumerate(visible)) if self.ordinals is None else
                  [(o, visible[o]) for o in self.ordinals if o < len(visible)])
        if not chosen:
            self.reason = why or f"no GPU with CUDA ordinal {self.ordinals} is visible"
            return
        self.nvml = nvml
        for ordinal, (index, handle) in chosen:
            name, _ = _call(nvml.nvmlDeviceGetName, handle)
            self.gpus.append({"index": index, "cuda_ordinal": ordinal,
                              "name": _text(name) if name is not None else None,
                              "start": _clocks(nvml, handle)})
            self.handles[ordinal] = handle
            counter, _ = _call(nvml.nvmlDeviceGetTotalEnergyConsumption, handle)
            if counter is not None:
                self.counters[ordinal] = float(counter)
        sampled = {o: h for o, h in self.handles.items() if o not in self.counters}
        if sampled:
            self.sampler = _PowerSampler(nvml, sampled)
            self.sampler.start()

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.monotonic() - self.started
        try:
            self._finish()
        except Exception as error:
            self.reason, self.gpus = f"NVML failed: {_words(error)}", []
        finally:
            if self.sampler is not None and self.sampler.is_alive():
                self.sampler.stop_event.set()

    def _finish(self) -> None:
        if self.sampler is not None:
            self.sampler.finish()
        for gpu in self.gpus:
            ordinal = gpu["cuda_ordinal"]
            handle = self.handles[ordinal]
            if ordinal in self.counters:
                end, why = _call(self.nvml.nvmlDeviceGetTotalEnergyConsumption, handle)
                used = None if end is None else (float(end) - self.counters[ordinal]) / 1000
                if used is not None and used < 0:
                    used, why = None, "the energy counter went back (driver reloaded?)"
                source = "NVML's total-energy counter"
                gpu.update(energy_source="total_energy_counter")
            else:
                assert self.sampler is not None
                samples = self.sampler.samples[ordinal]
                used = self.sampler.joules[ordinal] if samples >= 2 else None
                why = self.sampler.errors.get(ordinal) or "fewer than two power samples"
                if ordinal in self.sampler.broken:
                    used, why = None, self.sampler.broken[ordinal]
                source = "NVML's power samples"
                gpu.update(energy_source="power_samples", power_samples=samples)
            problem = None if used is None else implausible(used, "J", self.seconds)
            if problem:  # no reading, rather than one no GPU gives
                used, why = None, f"{source}: {problem}"
            gpu["energy_j"] = used
            if used is None:
                gpu["energy_reason"] = why
            gpu["end"] = _clocks(self.nvml, handle)

    def reading(self) -> dict[str, Any]:
        """The region as a run record keeps it: its seconds, and per GPU its energy (J),
        how it was measured and its clocks and throttle reasons at start and end; or,
        where nothing could be read, the reason."""
        if self.reason or not self.gpus:
            return {"reason": self.reason or "not metered: the region never ran"}
        # the mean over the seconds the record keeps (to the microsecond), so that a check of
        # the record judges it by the same seconds; none over a region kept as 0 s
        seconds = round(self.seconds or 0.0, 6)
        for gpu in self.gpus:
            energy = gpu.get("energy_j")
            gpu.pop("mean_w", None)
            if energy is not None and seconds:
                gpu["mean_w"] = round(energy / seconds, 3)
        return {"source": "NVML", "what": WHAT, "seconds": seconds,
                "gpus": self.gpus, "throttled": throttled(self.gpus)}


def throttled(gpus: Iterable[Mapping[str, Any]]) -> bool:
    """Whether any GPU ended the region held back: a throttle reason other than idle (or
    none) at its end."""
    return any(set((gpu.get("end") or {}).get("throttle") or []) - NOT_THROTTLED
               for gpu in gpus)


def joules(reading: Mapping[str, Any]) -> float | None:
    """The energy of every GPU a reading holds, together; None where any is missing."""
    gpus = reading.get("gpus") or []
    values = [gpu.get("energy_j") for gpu in gpus]
    if not values or any(v is None for v in values):
        return None
    return float(sum(values))
