"""The GPUs: the ceilings measured on each against its datasheet's peaks (report/gpu_peaks.csv,
d2lperf.peaks), and the energy, clocks and throttle reasons NVML gave through each run
and each training epoch (d2lperf.energy). Each part is None where a run shows nothing of
it (no GPU ceilings, no reading at all), and the report then leaves it out."""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping

from d2lperf import energy, peaks
from d2lperf.report.values import FRAMEWORKS, Row

# A share of the datasheet outside these bounds is said to disagree with it.
UNDER, OVER = 0.5, 1.05
_GPU_CASE = re.compile(r"gpu(?P<gpu>\d+)_(?P<library>[a-z0-9]+)_(?:"
                       r"mm(?:_(?P<precision>[a-z0-9]+))?_(?P<size>\d+)|(?P<copy>copy)|"
                       r"(?P<way>host_to_device|device_to_host)_(?P<memory>pinned|pageable))")
_PRECISION_COLUMN = {None: "fp32", "fp32": "fp32", "tf32": "tf32", "bf16": "bf16",
                     "fp16": "fp16"}
DATASHEET_WHAT = (
    "Each GPU ceiling measured here over the same figure on the GPU's datasheet "
    "(report/gpu_peaks.csv): dense matrix-product peaks per precision (NVIDIA prints TF32, "
    "BF16 and FP16 with sparsity, twice the dense figure; the table holds the dense one), "
    "the memory bandwidth against the device's own copy counting bytes read and written, "
    f"and the host link each way. Under {UNDER:.0%} or over {OVER:.0%} of the datasheet, "
    "the two disagree.")


def _gpu_names(machine: Row, runs: Mapping[tuple[str, str], Row]) -> dict[int, str]:
    """Each GPU's name by index: machine.json's (nvidia-smi's order), else what NVML said
    in a run's reading."""
    names = {i: str(g.get("name")) for i, g in enumerate(machine.get("gpus") or [])
             if g.get("name")}
    for run in runs.values():
        for gpu in (((run or {}).get("notes") or {}).get("gpu_energy") or {}).get("gpus") or []:
            if gpu.get("name"):
                names.setdefault(int(gpu.get("index", 0)), str(gpu["name"]))
    return names


def _measured(row: Row, case: re.Match) -> tuple[str, str, float, str] | None:
    """What a GPU ceiling is, the datasheet's column for it, its value in that column's
    unit and the unit; None for a kind the datasheet has no figure of."""
    unit, median = row.get("unit"), float(row["median"])
    scale = {"GFLOP/s": 1e-3, "TFLOP/s": 1.0}
    if case["size"]:
        column = _PRECISION_COLUMN.get(case["precision"])
        if column is None or unit not in scale:
            return None
        return (f"{column} matrix product {case['size']}³", f"{column}_tflops",
                median * scale[unit], "TFLOP/s")
    if unit != "GB/s":
        return None
    if case["copy"]:
        return ("device copy (bytes read and written)", "memory_tb_s", median / 1000, "TB/s")
    way = case["way"].replace("_", " ")
    return (f"{way}, {case['memory']} host memory", "host_gb_s_each_way", median, "GB/s")


def _gpu_entry(index: int, name: str | None) -> Row:
    """A GPU of the datasheet table before its rows: its name, its datasheet's row (or why
    there is none)."""
    sheet = peaks.datasheet(name) if name else None
    found: Row = {"index": index, "name": name or "unnamed", "rows": [], "sheet": sheet,
                  "missing": None if sheet else
                  f"report/gpu_peaks.csv has no row for {name or 'this GPU'}"}
    for key, column in (("datasheet", "gpu"), ("source", "source"), ("note", "note"),
                        ("host_link", "host_link")):
        found[key] = sheet[column] if sheet else None
    return found


def _share_row(row: Row, measured: tuple[str, str, float, str], peak: float) -> Row:
    """One ceiling beside its datasheet figure: both, the share, and where they disagree."""
    what, _, value, unit = measured
    share = value / peak
    return {"case": row["case"], "framework": FRAMEWORKS.get(row.get("framework"),
                                                             row.get("framework")),
            "what": what, "measured": value, "datasheet": peak, "unit": unit,
            "share": share, "measured_text": f"{value:,.1f} {unit}",
            "datasheet_text": f"{peak:,.1f} {unit}", "share_text": f"{share:.0%}",
            "disagrees": ("under half the datasheet" if share < UNDER else
                          "over the datasheet" if share > OVER else None)}


def datasheet_shares(summary: Iterable[Row], machine: Row,
                     runs: Mapping[tuple[str, str], Row]) -> Row | None:
    """Every GPU ceiling of the summary beside its datasheet figure, per GPU: the measured
    value, the datasheet's, the share and whether they disagree; None without GPU
    ceilings."""
    names = _gpu_names(machine, runs)
    gpus: dict[int, Row] = {}
    for row in summary:
        case = _GPU_CASE.fullmatch(str(row.get("case")))
        if (row.get("section") != "ceilings" or row.get("metric") != "rate" or not case
                or row.get("median") is None):
            continue
        index = int(case["gpu"])
        gpu = gpus.setdefault(index, _gpu_entry(index, names.get(index) or names.get(0)))
        measured = _measured(row, case)
        peak = (gpu["sheet"] or {}).get(measured[1]) if measured else None
        if measured and peak:
            gpu["rows"].append(_share_row(row, measured, peak))
    if not gpus:
        return None
    for gpu in gpus.values():
        del gpu["sheet"]
    return {"what": DATASHEET_WHAT, "gpus": [gpus[i] for i in sorted(gpus)]}


ENERGY_WHAT = (
    f"Energy is {energy.WHAT}: no CPU, host memory, fans or power supply losses. NVML's "
    "total-energy counter where the GPU has one, else its power sampled through the "
    "region. A run is marked throttled where a GPU ended it with a clocks event reason "
    "other than idle (a power cap, a thermal or hardware slowdown, ...).")


def _clocks_text(gpu: Row) -> str:
    start, end = gpu.get("start") or {}, gpu.get("end") or {}
    return (f"SM {start.get('sm_mhz')}→{end.get('sm_mhz')} MHz, memory "
            f"{start.get('memory_mhz')}→{end.get('memory_mhz')} MHz")


def _throttle_text(gpu: Row) -> str:
    reasons = (gpu.get("end") or {}).get("throttle")
    return "not read" if reasons is None else ", ".join(reasons) or "none"


def _gpu_text(gpu: Row) -> str:
    joules = gpu.get("energy_j")
    used = (f"{joules:,.1f} J" + (f" ({gpu['mean_w']:,.0f} W)" if gpu.get("mean_w") else "")
            if joules is not None else f"no energy: {gpu.get('energy_reason')}")
    return (f"GPU {gpu.get('index')} {gpu.get('name')}: {used}; {_clocks_text(gpu)}; "
            f"throttle at end: {_throttle_text(gpu)}")


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _held(readings: Iterable[Row]) -> list[str]:
    """The throttle reasons other than idle that any GPU ended any of these readings with."""
    return sorted({reason for reading in readings for gpu in reading.get("gpus") or []
                   for reason in set((gpu.get("end") or {}).get("throttle") or [])
                   - energy.NOT_THROTTLED})


def _per_epoch(summary: list[Row]) -> dict[tuple, dict[str, list[float]]]:
    """Each training case's per-epoch medians of joules and joules per 1000 images."""
    found: dict[tuple, dict[str, list[float]]] = {}
    for r in summary:
        if (r.get("metric") in ("energy", "energy_per_1000_images")
                and r.get("epoch") is not None and r.get("median") is not None):
            key = (r.get("framework"), r["section"], r["case"])
            found.setdefault(key, {"energy": [], "energy_per_1000_images": []})[
                r["metric"]].append(float(r["median"]))
    return found


def _seconds_per_epoch(summary: list[Row], key: tuple) -> float | None:
    """A training case's median seconds over its epochs (the summary's row without an
    epoch)."""
    return next((float(r["median"]) for r in summary
                 if (r.get("framework"), r["section"], r["case"]) == key
                 and r.get("metric") == "time" and r.get("epoch") is None
                 and r.get("median") is not None), None)


def epoch_rows(summary: list[Row], notes: Mapping[tuple[str, str], Row]) -> list[Row]:
    """Joules per training epoch (and per 1000 images), medians over its epochs, beside its
    seconds per epoch, and whether any of its epochs ended throttled."""
    rows = []
    for key, found in _per_epoch(summary).items():
        framework, section, case = key
        seconds = _seconds_per_epoch(summary, key)
        readings = ((notes.get((framework, section)) or {}).get("gpu_energy_epochs") or {}
                    ).get(case) or {}
        held = _held(readings.values())
        joules = _median(found["energy"])
        rows.append({
            "framework": FRAMEWORKS.get(framework, framework), "section": section,
            "case": case, "epochs": len(found["energy"]), "seconds_per_epoch": seconds,
            "joules_per_epoch": joules,
            "joules_per_1000_images": _median(found["energy_per_1000_images"]),
            "watts": joules / seconds if joules is not None and seconds else None,
            "throttled": bool(held), "throttle": ", ".join(held)})
    return rows


def run_rows(runs: Mapping[tuple[str, str], Row], notes: Mapping[tuple[str, str], Row]
             ) -> tuple[list[Row], list[Row]]:
    """Each run's reading through its section (energy, clocks, throttle reasons per GPU),
    and the reasons where a run read nothing, with the runs each was given for."""
    rows, reasons = [], {}
    for (framework, section), n in notes.items():
        reading = n.get("gpu_energy")
        label = FRAMEWORKS.get(framework, framework)
        if not reading:
            continue
        if not reading.get("gpus"):
            reasons.setdefault(str(reading.get("reason")), []).append(f"{section} ({label})")
            continue
        run = runs[(framework, section)] or {}
        rows.append({
            "framework": label, "section": section,
            "ran_on": (run.get("execution") or {}).get("device_kind") or "unknown",
            "seconds": reading.get("seconds"), "throttled": bool(reading.get("throttled")),
            "gpus": [_gpu_text(g) for g in reading["gpus"]]})
    return rows, [{"reason": why, "runs": ", ".join(where)} for why, where in reasons.items()]


def energy_view(summary: Iterable[Row], runs: Mapping[tuple[str, str], Row],
                machine: Row) -> Row | None:
    """Joules per training epoch beside its seconds, each run's reading, the reasons where
    nothing was read, and which runs ended throttled. None where no run has a reading
    (records from before the meter), or where none read a GPU on a machine without one."""
    summary = list(summary)
    notes = {key: ((run or {}).get("notes") or {}) for key, run in runs.items()}
    kept = any("gpu_energy" in n or "gpu_energy_epochs" in n for n in notes.values())
    read = any((n.get("gpu_energy") or {}).get("gpus") for n in notes.values()) or any(
        r.get("metric") == "energy" for r in summary)
    if not kept or (not read and not machine.get("gpus")):
        return None
    epochs = epoch_rows(summary, notes)
    metered, reasons = run_rows(runs, notes)
    return {"what": ENERGY_WHAT, "epochs": epochs, "runs": metered, "reasons": reasons,
            "throttled": sorted({f"{r['section']} ({r['framework']})"
                                 for r in [*metered, *epochs] if r["throttled"]})}
