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
