"""The chapter's qualitative claims as named checks with stated rules.

Each check reads this machine's summary (medians of the raw samples with their 95%
bootstrap intervals) and returns a verdict: "holds", "does not hold",
"inconclusive" (the intervals of the two sides overlap, so the data cannot tell)
or "not applicable" (the section did not run here, and why). Rules are stated in
words next to every verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

HOLDS, FAILS, UNSURE, NA = "holds", "does not hold", "inconclusive", "not applicable"
MIN_SAMPLES = 3  # fewer samples a side cannot support an interval
OVERLAP_NEEDED = 0.5  # share of the shorter job hidden behind the longer one
ACCURACY_MARGIN = 0.05  # absolute test accuracy


@dataclass
class Verdict:
    claim: str
    name: str
    section: str
    verdict: str
    evidence: str
    rule: str


class Measurements:
    """Lookup of summary rows by (experiment, case, metric, epoch)."""

    def __init__(self, summary: pd.DataFrame, runs: dict[str, dict[str, Any]]) -> None:
        measured = summary[summary["median"].notna()]
        self.rows = {
            (r["experiment"], r["case"], r["metric"],
             None if pd.isna(r["epoch"]) else int(r["epoch"])): r
            for r in measured.to_dict("records")
        }
        self.runs = runs

    def get(self, experiment: str, case: str, metric: str = "time", epoch: int | None = None):
        return self.rows.get((experiment, case, metric, epoch))

    def last_epoch(self, experiment: str, case: str, metric: str):
        epochs = [k[3] for k in self.rows if k[:3] == (experiment, case, metric) and k[3]]
        return self.get(experiment, case, metric, max(epochs)) if epochs else None

    def missing(self, experiment: str) -> str | None:
        """Why a section has no figures here, or None when it has them."""
        run = self.runs.get(experiment)
        if run is None:
            return f"{experiment} did not run"
        if run.get("status") == "skipped":
            return f"{experiment} was skipped: {run.get('reason')}"
        if run.get("status") == "failed":
            return f"{experiment} failed (see its log)"
        return None


def faster(fast, slow) -> str:
    """holds when the 95% intervals of the medians are apart in the claimed direction,
    does not hold when apart the other way, else inconclusive (also with fewer than
    MIN_SAMPLES samples a side)."""
    if min(fast["count"], slow["count"]) < MIN_SAMPLES:
        return UNSURE
    if fast["ci_high"] < slow["ci_low"]:
        return HOLDS
    if fast["ci_low"] > slow["ci_high"]:
        return FAILS
    return UNSURE


def overlap(a, b, both) -> float:
    """Share of the shorter job hidden by running both together: 1 = fully
    overlapped (together = the longer), 0 = none (together = the sum)."""
    shorter = min(a["median"], b["median"])
    return (a["median"] + b["median"] - both["median"]) / shorter if shorter else math.nan


def _speedup_claim(m: Measurements, experiment: str, fast_case: str, slow_case: str,
                   metric: str = "time", epoch: int | None = None) -> tuple[str, str]:
    fast, slow = m.get(experiment, fast_case, metric, epoch), m.get(experiment, slow_case, metric,
                                                                      epoch)
    if fast is None or slow is None:
        return NA, m.missing(experiment) or "the cases were not measured"
    return faster(fast, slow), (
        f"{slow_case} {slow['median']:.4g} s vs {fast_case} {fast['median']:.4g} s: "
        f"{slow['median'] / fast['median']:.2f}× (95% intervals {slow['ci_low']:.4g}–"
        f"{slow['ci_high']:.4g} and {fast['ci_low']:.4g}–{fast['ci_high']:.4g}; "
        f"n = {int(slow['count'])} and {int(fast['count'])})")


SPEED_RULE = ("holds when the 95% bootstrap intervals of the two medians do not overlap and "
              "the claimed side is faster; does not hold when they do not overlap the other "
              f"way; otherwise (or with fewer than {MIN_SAMPLES} samples a side) inconclusive")


def hybridize_is_faster(m: Measurements) -> tuple[str, str]:
    return _speedup_claim(m, "hybridize", "mlp_after_hybridize", "mlp_before_hybridize")


def queueing_returns_at_once(m: Measurements) -> tuple[str, str]:
    queued = m.get("async_computation", "dot_sum_queued")
    finished = m.get("async_computation", "dot_sum_finished")
    if queued is None or finished is None:
        return NA, m.missing("async_computation") or "not measured"
    ratio = queued["median"] / finished["median"]
    verdict = HOLDS if queued["ci_high"] < 0.1 * finished["ci_low"] else FAILS
    return verdict, (f"queued {queued['median']:.4g} s, finished {finished['median']:.4g} s "
                     f"({ratio:.1%} of the wait)")


def sync_call_slows_the_loop(m: Measurements) -> tuple[str, str]:
    return _speedup_claim(m, "async_computation", "add_loop_asynchronous",
                          "add_loop_synchronous")


def asynchrony_uses_more_memory(m: Measurements) -> tuple[str, str]:
    sync = m.get("async_memory", "sync_peak_memory_increase", "memory")
    asyn = m.get("async_memory", "async_peak_memory_increase", "memory")
    if sync is None or asyn is None:
        return NA, m.missing("async_memory") or "not measured"
    verdict = (HOLDS if asyn["ci_low"] > sync["ci_high"]
               else FAILS if asyn["ci_high"] < sync["ci_low"] else UNSURE)
    return verdict, (f"peak RSS increase: asynchronous {asyn['median']:.1f} MB, "
                     f"synchronous {sync['median']:.1f} MB")


def _overlap_claim(m: Measurements, experiment: str, a: str, b: str, both: str,
                   wanted: bool) -> tuple[str, str]:
    rows = [m.get(experiment, c) for c in (a, b, both)]
    if any(r is None for r in rows):
        return NA, m.missing(experiment) or "not measured"
    share = overlap(*rows)
    verdict = HOLDS if (share >= OVERLAP_NEEDED) == wanted else FAILS
    devices = rows[2].get("devices") or ""
    return verdict, (f"{a} {rows[0]['median']:.4g} s + {b} {rows[1]['median']:.4g} s, together "
                     f"{rows[2]['median']:.4g} s: {share:.0%} of the shorter one overlapped"
                     + (f" (devices {devices})" if isinstance(devices, str) and devices else ""))


def cpu_and_gpu_overlap(m: Measurements) -> tuple[str, str]:
    return _overlap_claim(m, "auto_parallelism", "cpu_only", "gpu_only", "cpu_and_gpu", True)


def compute_and_copy_overlap(m: Measurements) -> tuple[str, str]:
    return _overlap_claim(m, "auto_parallelism", "gpu_compute", "copy_to_cpu",
                          "compute_and_copy", True)


def small_ops_do_not_overlap(m: Measurements) -> tuple[str, str]:
    return _overlap_claim(m, "small_ops_parallel", "generate_x", "generate_y",
                          "generate_x_and_y", False)


def two_devices_speed_up_resnet(m: Measurements) -> tuple[str, str]:
    verdict, evidence = _speedup_claim(m, "multi_gpu_gluon", "resnet18_2_devices",
                                       "resnet18_1_device")
    row = m.get("multi_gpu_gluon", "resnet18_2_devices")
    if row is not None and str(row.get("devices", "")).startswith("cpu"):
        evidence += "; on CPU contexts, which share one processor"
    return verdict, "median epoch time: " + evidence


def _accuracy_claim(m: Measurements, experiment: str, reference: pd.DataFrame,
                    cases: list[str]) -> tuple[str, str]:
    if m.missing(experiment):
        return NA, m.missing(experiment)
    notes, verdicts = [], []
    for case in cases:
        documents = reference[(reference["experiment"] == experiment)
                              & (reference["case"] == case)
                              & (reference["metric"] == "accuracy")].dropna(subset=["epoch"])
        if documents.empty:
            continue
        row = documents.loc[documents["epoch"].idxmax()]
        epoch, printed = int(row["epoch"]), float(row["printed"])
        measured = m.get(experiment, case, "accuracy", epoch)
        if measured is None:
            last = m.last_epoch(experiment, case, "accuracy")
            ran = f"ran {int(last['epoch'])}" if last is not None else "no accuracy"
            notes.append(f"{case}: the document's figure is after epoch {epoch}, this run {ran}")
            continue
        gap = measured["median"] - printed
        verdicts.append(HOLDS if abs(gap) <= ACCURACY_MARGIN else FAILS)
        notes.append(f"{case}: {measured['median']:.2f} after epoch {epoch} vs document "
                     f"{row['printed']} ({gap:+.2f})")
    if not verdicts:
        return NA, "; ".join(notes) or "no accuracy measured"
    return (HOLDS if all(v == HOLDS for v in verdicts) else FAILS), "; ".join(notes)


CLAIMS: list[tuple[str, str, str, Callable, str]] = [
    ("hybridize_speeds_up_mlp", "hybridize", "hybridize() makes the MLP's forward passes faster",
     hybridize_is_faster, SPEED_RULE),
    ("queueing_returns_at_once", "async_computation",
     "MXNet's front end returns as soon as work is queued",
     queueing_returns_at_once, "holds when the upper end of queueing's 95% interval is under "
     "10% of the lower end of the wait's"),
    ("sync_call_slows_loop", "async_computation",
     "a synchronising call in every iteration makes the loop slower",
     sync_call_slows_the_loop, SPEED_RULE),
    ("asynchrony_uses_more_memory", "async_memory",
     "without synchronising calls, training uses more memory",
     asynchrony_uses_more_memory, "compares the peak RSS increase; holds when the 95% "
     "intervals of the medians do not overlap and asynchronous is higher"),
    ("cpu_gpu_overlap", "auto_parallelism",
     "CPU and GPU work overlap: together takes close to the longer, not the sum",
     cpu_and_gpu_overlap, f"holds when at least {OVERLAP_NEEDED:.0%} of the shorter job is "
     "hidden (overlap = (a + b - together) / shorter)"),
    ("compute_copy_overlap", "auto_parallelism",
     "computation and copying to the CPU overlap",
     compute_and_copy_overlap, f"holds when at least {OVERLAP_NEEDED:.0%} of the shorter job "
     "is hidden"),
    ("small_ops_no_overlap", "small_ops_parallel",
     "two small random draws gain nothing from running together",
     small_ops_do_not_overlap, f"holds when less than {OVERLAP_NEEDED:.0%} of the shorter "
     "draw is hidden"),
    ("two_devices_speed_up_resnet", "multi_gpu_gluon",
     "two devices make the ResNet-18 epoch faster",
     two_devices_speed_up_resnet, SPEED_RULE + ", over the epochs' times"),
]


def judge(summary: pd.DataFrame, runs: dict[str, dict[str, Any]],
          reference: pd.DataFrame) -> list[Verdict]:
    m = Measurements(summary, runs)
    verdicts = [Verdict(claim, name, section, *check(m), rule)
                for name, section, claim, check, rule in CLAIMS]
    for name, experiment, cases in (
        ("lenet_accuracy_as_documented", "multi_gpu_scratch",
         ["lenet_1_device", "lenet_2_devices"]),
        ("resnet_accuracy_as_documented", "multi_gpu_gluon",
         ["resnet18_1_device", "resnet18_2_devices"]),
    ):
        verdict, evidence = _accuracy_claim(m, experiment, reference, cases)
        verdicts.append(Verdict(
            f"test accuracy after the documents' epochs is within {ACCURACY_MARGIN} of theirs",
            name, experiment, verdict, evidence,
            f"holds when every measured accuracy is within ±{ACCURACY_MARGIN} of the "
            "document's figure for the same epoch"))
    return verdicts


def as_frame(verdicts: list[Verdict]) -> pd.DataFrame:
    return pd.DataFrame([asdict(v) for v in verdicts])
