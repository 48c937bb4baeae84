"""How training scales with devices: images/s at each device count, and its efficiency.

A data-parallel section's sample trains a fixed number of images (``workloads.examples``)
at every device count, so each raw time is also a throughput: images / seconds. For each
framework, model and device count N the summary gets two rows beside the times:
``throughput`` (images/s, the statistics of every sample's images/s) and, for every count
above the smallest m (one device, where it ran), ``efficiency``: the throughput at N over
N/m times the throughput at m, which is the ratio of the times at m and at N times m/N,
with the interval of that ratio between processes (``stats.ratio_interval``, as the
speed claims have theirs). An efficiency of 1 is perfect scaling; the chapter's small
models lose to the allreduce and the startup of each step what they gain in arithmetic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from d2lperf import stats, workloads
from d2lperf.describe import Stats

THROUGHPUT, EFFICIENCY = "throughput", "efficiency"
MODEL_NAMES = {"lenet": "LeNet", "resnet18": "ResNet-18"}


def rows(samples: pd.DataFrame, runs: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The throughput and efficiency rows of every data-parallel section that ran, with
    the summary's key columns; empty where none did."""
    found: list[dict[str, Any]] = []
    times = samples[samples["section"].isin(workloads.PER_SAMPLE)
                    & (samples["metric"] == "time")]
    for (framework, section), mine in times.groupby(["framework", "section"], sort=False):
        parameters = runs.get(framework, {}).get(section, {}).get("parameters", {})
        by_model: dict[str, dict[int, pd.DataFrame]] = {}
        for case, group in mine.groupby("case", sort=False):
            if workloads.training_model(section, case):
                model, n = workloads.training_case(case)
                by_model.setdefault(model, {})[n] = group
        for model, counts in by_model.items():
            images = workloads.examples(section, model, parameters)
            smallest = min(counts)
            for n in sorted(counts):
                group = counts[n]
                key = {"framework": framework, "section": section, "case": group["case"].iloc[0],
                       "devices": group["devices"].iloc[0], "epoch": None}
                rates = Stats(list(images / group["value"]))
                found.append({**key, "metric": THROUGHPUT, "unit": "images/s",
                              **rates.as_dict()})
                if n == smallest:
                    continue
                ratio, low, high = stats.ratio_interval(
                    process_groups(counts[smallest]), process_groups(group))
                scale = smallest / n
                found.append({**key, "metric": EFFICIENCY, "unit": "fraction",
                              "count": len(group), "median": ratio * scale,
                              "ci_low": low * scale, "ci_high": high * scale})
    return pd.DataFrame(found)


def process_groups(group: pd.DataFrame) -> dict[object, list[float]]:
    """One case's samples by the process that measured them (``stats.Groups``)."""
    return {process: list(values) for process, values in group.groupby("process")["value"]}


def api_gains(summary: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Today's API against the book's design on the same GPUs: for each framework, model
    and device count that both a data-parallel section and the book's section of that
    model (``workloads.TRAINING_MODELS``: LeNet from scratch, ResNet-18 concisely) trained
    on GPUs, the images/s of each (the data-parallel throughput's median; the median of
    the book's epochs, as images/s from its GFLOP/s) and today's over the book's. The
    two are separate sections of one run, not cases timed side by side, so this is a
    figure beside the claims, never a verdict. On a CPU there is no row: the book's
    devices there are names of one CPU and all its threads, today's a core per process."""
    def median(row: Mapping[str, Any], key: str) -> float | None:
        value = row.get(key)
        return None if value in (None, "") or pd.isna(value) else float(value)

    today = {(r["framework"], r["case"]): r for r in summary
             if r["section"] in workloads.PER_SAMPLE and r["metric"] == THROUGHPUT
             and median(r, "median") and workloads.gpus_of(r.get("devices"))}
    found = []
    for r in summary:
        if (r["section"] in workloads.PER_SAMPLE or r["metric"] != "time"
                or median(r, "epoch") is not None or not median(r, "achieved")):
            continue  # the book's case over all its epochs only
        mine = today.get((r["framework"], r["case"]))
        if mine is None or len(workloads.gpus_of(r.get("devices"))) != len(
                workloads.gpus_of(mine.get("devices"))):
            continue
        model, n = workloads.training_case(r["case"])
        book = workloads.examples_per_second(r["section"], r["case"], median(r, "achieved"))
        if not book:
            continue
        found.append({"framework": r["framework"], "model": MODEL_NAMES.get(model, model),
                      "devices": n,
                      "book_section": r["section"], "book": book,
                      "today_section": mine["section"], "today": median(mine, "median"),
                      "gain": median(mine, "median") / book})
    return sorted(found, key=lambda g: (g["framework"], g["model"], g["devices"]))
