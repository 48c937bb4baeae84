"""The chapter's claims, and the checks of the measurement itself, with stated rules.

Every "A is faster than B" claim is decided on the ratio of the two medians, with
a 95% hierarchical bootstrap interval (processes, then samples: ``stats``),
against a practical band of 1 +- ``band`` (docs/design.md, "Measured side by side"): the claimed
side is faster when the whole interval lies below the band, slower when above,
"no meaningful difference" when inside, inconclusive otherwise. Overlap claims
are decided the same way on "together / (a + b)" and on the hidden share.

Verdicts: "holds", "does not hold", "inconclusive" or "not applicable" (the
section did not run here, and why). Checks (``kind == "check"``) are not the
chapter's: an A/A pair (identical work under two labels), the first-position
effect and the machine's steadiness, which say how far the claims can be trusted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from d2lperf import stats

HOLDS, FAILS, UNSURE, NA = "holds", "does not hold", "inconclusive", "not applicable"
MIN_SAMPLES = 3  # fewer samples a side cannot support an interval
OVERLAP_NEEDED = 0.5  # share of the shorter job hidden behind the longer one
QUEUE_SHARE = 0.1  # queueing "returns at once": under this share of the wait
ACCURACY_MARGIN = 0.05  # absolute test accuracy
DEFAULT_BAND = 0.05


@dataclass
class Verdict:
    claim: str
    name: str
    section: str
    verdict: str
    evidence: str
    rule: str
    kind: str = "claim"
    framework: str = ""
    effect: str = ""
    ratio: float = float("nan")
    ratio_low: float = float("nan")
    ratio_high: float = float("nan")


@dataclass
class Ratio:
    """A ratio of medians with its interval, and what it says against the band."""

    value: float
    low: float
    high: float
    effect: str

    def text(self, label: str) -> str:
        return f"{label} {self.value:.3g} [{self.low:.3g}–{self.high:.3g}]"


class Measurements:
    """One framework's raw samples (for ratios) and summary (for accuracies)."""

    def __init__(self, samples: pd.DataFrame, summary: pd.DataFrame,
                 runs: dict[str, dict[str, Any]], band: float) -> None:
        self.samples, self.runs, self.band = samples, runs, band
        measured = summary[summary["median"].notna()]
        self.rows = {
            (r["experiment"], r["case"], r["metric"],
             None if pd.isna(r["epoch"]) else int(r["epoch"])): r
            for r in measured.to_dict("records")
        }

    def get(self, experiment: str, case: str, metric: str = "time", epoch: int | None = None):
        return self.rows.get((experiment, case, metric, epoch))

    def last_epoch(self, experiment: str, case: str, metric: str):
        epochs = [k[3] for k in self.rows if k[:3] == (experiment, case, metric) and k[3]]
        return self.get(experiment, case, metric, max(epochs)) if epochs else None

    def groups(self, experiment: str, case: str, metric: str = "time",
               epochs: bool = False) -> dict[int, list[float]] | None:
        """A case's raw samples by process; epoch times when ``epochs``."""
        s = self.samples
        if s.empty:
            return None
        rows = s[(s["experiment"] == experiment) & (s["case"] == case)
                 & (s["metric"] == metric) & (s["epoch"].notna() == epochs)]
        if rows.empty:
            return None
        return {int(p): list(g["value"]) for p, g in rows.groupby("process")}

    def missing(self, experiment: str) -> str | None:
        """Why a section has no figures here, or None when it has them."""
        run = self.runs.get(experiment)
        if run is None:
            return f"{experiment} did not run"
        if run.get("status") in ("skipped", "refused"):
            return f"{experiment} was skipped: {run.get('reason')}"
        if run.get("status") == "failed":
            return f"{experiment} failed (see its log)"
        return None

    def ratio(self, experiment: str, a: str, b: str, metric: str = "time",
              epochs: bool = False) -> Ratio | None:
        ga, gb = (self.groups(experiment, c, metric, epochs) for c in (a, b))
        if ga is None or gb is None:
            return None
        value, low, high = stats.ratio_interval(ga, gb)
        effect = stats.classify(low, high, self.band) if min(
            count(ga), count(gb)) >= MIN_SAMPLES else stats.UNSURE
        return Ratio(value, low, high, effect)


def count(groups: dict[int, list[float]]) -> int:
    return sum(len(v) for v in groups.values())


def _result(verdict: str, evidence: str, ratio: Ratio | None = None) -> dict[str, Any]:
    found = {"verdict": verdict, "evidence": evidence}
    if ratio is not None:
        found.update(effect=ratio.effect, ratio=ratio.value, ratio_low=ratio.low,
                     ratio_high=ratio.high)
    return found


def _speed_claim(m: Measurements, experiment: str, fast: str, slow: str, label: str,
                 metric: str = "time", epochs: bool = False) -> dict[str, Any]:
    ratio = m.ratio(experiment, fast, slow, metric, epochs)
    if ratio is None:
        return _result(NA, m.missing(experiment) or "the cases were not measured")
    verdict = {stats.FASTER: HOLDS, stats.SLOWER: FAILS, stats.SAME: FAILS}.get(
        ratio.effect, UNSURE)
    speedup = 1 / ratio.value if ratio.value else float("nan")
    return _result(verdict, f"{ratio.text(label)}: {speedup:.2f}× ({ratio.effect})", ratio)


def speed_rule(m: Measurements) -> str:
    return (f"ratio of medians with a 95% hierarchical bootstrap interval; holds when the "
            f"whole interval lies below 1 − {m.band:g}, does not hold when it lies above "
            f"1 + {m.band:g} or wholly inside the band (no meaningful difference), "
            f"otherwise (or with fewer than {MIN_SAMPLES} samples a side) inconclusive")


def hybridize_is_faster(m: Measurements):
    return _speed_claim(m, "hybridize", "mlp_after_hybridize", "mlp_before_hybridize",
                        "after/before")


def queueing_returns_at_once(m: Measurements):
    ratio = m.ratio("async_computation", "dot_sum_queued", "dot_sum_finished")
    if ratio is None:
        return _result(NA, m.missing("async_computation") or "not measured")
    verdict = (HOLDS if ratio.high < QUEUE_SHARE else FAILS if ratio.low >= QUEUE_SHARE
               else UNSURE)
    return _result(verdict, ratio.text("queued/finished") + " of the wait", ratio)


def sync_call_slows_the_loop(m: Measurements):
    return _speed_claim(m, "async_computation", "add_loop_asynchronous",
                        "add_loop_synchronous", "asynchronous/synchronous")


def asynchrony_uses_more_memory(m: Measurements):
    ratio = m.ratio("async_memory", "async_peak_memory_increase",
                    "sync_peak_memory_increase", "memory")
    if ratio is None:
        return _result(NA, m.missing("async_memory") or "not measured")
    verdict = {stats.SLOWER: HOLDS, stats.FASTER: FAILS, stats.SAME: FAILS}.get(
        ratio.effect, UNSURE)
    effect = {stats.SLOWER: "more", stats.FASTER: "less"}.get(ratio.effect, ratio.effect)
    return _result(verdict, f"peak RSS increase {ratio.text('asynchronous/synchronous')} "
                   f"({effect})", ratio)


def _overlap(m: Measurements, experiment: str, a: str, b: str, both: str):
    """together / (a + b) and the hidden share (a + b - together) / shorter, each with
    its interval, from one bootstrap of the three cases' medians."""
    groups = [m.groups(experiment, c) for c in (a, b, both)]
    if any(g is None for g in groups):
        return None
    medians = stats.bootstrap_medians(groups)
    point = np.array([stats.pooled_median(g) for g in groups])

    def share(x):
        return (x[..., 0] + x[..., 1] - x[..., 2]) / np.minimum(x[..., 0], x[..., 1])

    def together(x):
        return x[..., 2] / (x[..., 0] + x[..., 1])

    low, high = stats.interval(together(medians))
    effect = stats.classify(low, high, m.band) if min(map(count, groups)) >= MIN_SAMPLES \
        else stats.UNSURE
    hidden = (float(share(point)), *stats.interval(share(medians)))
    return Ratio(float(together(point)), low, high, effect), hidden


def _overlap_text(ratio: Ratio, hidden: tuple[float, float, float]) -> str:
    return (f"{ratio.text('together/(a+b)')} ({ratio.effect}); hidden share of the shorter "
            f"{hidden[0]:.0%} [{hidden[1]:.0%}–{hidden[2]:.0%}]")


def _overlap_claim(m: Measurements, experiment: str, a: str, b: str, both: str):
    found = _overlap(m, experiment, a, b, both)
    if found is None:
        return _result(NA, m.missing(experiment) or "not measured")
    ratio, hidden = found
    verdict = (HOLDS if hidden[1] >= OVERLAP_NEEDED else FAILS if hidden[2] < OVERLAP_NEEDED
               else UNSURE)
    return _result(verdict, _overlap_text(ratio, hidden), ratio)


def cpu_and_gpu_overlap(m: Measurements):
    return _overlap_claim(m, "auto_parallelism", "cpu_only", "gpu_only", "cpu_and_gpu")


def compute_and_copy_overlap(m: Measurements):
    return _overlap_claim(m, "auto_parallelism", "gpu_compute", "copy_to_cpu",
                          "compute_and_copy")


def small_ops_do_not_overlap(m: Measurements):
    found = _overlap(m, "small_ops_parallel", "generate_x", "generate_y", "generate_x_and_y")
    if found is None:
        return _result(NA, m.missing("small_ops_parallel") or "not measured")
    ratio, hidden = found
    verdict = {stats.SAME: HOLDS, stats.SLOWER: HOLDS, stats.FASTER: FAILS}.get(
        ratio.effect, UNSURE)
    return _result(verdict, _overlap_text(ratio, hidden), ratio)


def two_devices_speed_up_resnet(m: Measurements):
    found = _speed_claim(m, "multi_gpu_gluon", "resnet18_2_devices", "resnet18_1_device",
                         "2 devices/1 device", epochs=True)
    row = m.get("multi_gpu_gluon", "resnet18_2_devices")
    if row is not None and str(row.get("devices", "")).startswith("cpu"):
        found["evidence"] += "; on CPU contexts, which share one processor"
    if found["verdict"] != NA:
        found["evidence"] = "epoch times: " + found["evidence"]
    return found


def _accuracy_claim(m: Measurements, experiment: str, reference: pd.DataFrame,
                    cases: list[str]) -> dict[str, Any]:
    if m.missing(experiment):
        return _result(NA, m.missing(experiment))
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
        return _result(NA, "; ".join(notes) or "no accuracy measured")
    return _result(HOLDS if all(v == HOLDS for v in verdicts) else FAILS, "; ".join(notes))


OVERLAP_RULE = (f"holds when the 95% interval of the hidden share of the shorter job "
                f"((a + b − together) / shorter) lies wholly above {OVERLAP_NEEDED:.0%}, does "
                f"not hold when wholly below, otherwise inconclusive")

CLAIMS: list[tuple[str, str, str, Callable, str | None]] = [
    ("hybridize_speeds_up_mlp", "hybridize", "hybridize() makes the MLP's forward passes faster",
     hybridize_is_faster, None),
    ("queueing_returns_at_once", "async_computation",
     "MXNet's front end returns as soon as work is queued",
     queueing_returns_at_once, "holds when the upper end of the 95% interval of "
     f"queued/finished is under {QUEUE_SHARE:g}, does not hold when its lower end is above"),
    ("sync_call_slows_loop", "async_computation",
     "a synchronising call in every iteration makes the loop slower",
     sync_call_slows_the_loop, None),
    ("asynchrony_uses_more_memory", "async_memory",
     "without synchronising calls, training uses more memory",
     asynchrony_uses_more_memory, "ratio of the peak RSS increases with its 95% interval; "
     "holds when it lies wholly above the band, does not hold when below or inside it"),
    ("cpu_gpu_overlap", "auto_parallelism",
     "CPU and GPU work overlap: together takes close to the longer, not the sum",
     cpu_and_gpu_overlap, OVERLAP_RULE),
    ("compute_copy_overlap", "auto_parallelism",
     "computation and copying to the CPU overlap", compute_and_copy_overlap, OVERLAP_RULE),
    ("small_ops_no_overlap", "small_ops_parallel",
     "two small random draws gain nothing from running together",
     small_ops_do_not_overlap, "holds when the 95% interval of together/(x + y) lies wholly "
     "inside the band or above it, does not hold when wholly below, otherwise inconclusive"),
    ("two_devices_speed_up_resnet", "multi_gpu_gluon",
     "two devices make the ResNet-18 epoch faster",
     two_devices_speed_up_resnet, None),
]

# A/A pairs: the same work under two labels, measured side by side.
AA_PAIRS = [
    ("aa_hybridize", "hybridize", "mlp_before_hybridize_twin", "mlp_before_hybridize"),
    ("aa_small_ops", "small_ops_parallel", "generate_y", "generate_x"),
]


def aa_checks(m: Measurements) -> list[Verdict]:
    checks = []
    for name, experiment, a, b in AA_PAIRS:
        ratio = m.ratio(experiment, a, b)
        rule = ("the same work under two labels; holds when its ratio's 95% interval lies "
                f"wholly inside 1 ± {m.band:g}, does not hold when wholly outside")
        claim = f"identical work measured side by side ({experiment}: {a} vs {b})"
        if ratio is None:
            checks.append(Verdict(claim, name, experiment, NA,
                                  m.missing(experiment) or "not measured", rule, "check"))
            continue
        verdict = {stats.SAME: HOLDS, stats.UNSURE: UNSURE}.get(ratio.effect, FAILS)
        apart = abs(ratio.value - 1)
        checks.append(Verdict(
            claim, name, experiment, verdict,
            f"identical work measured {apart:.1%} apart: {ratio.text(f'{a}/{b}')}", rule,
            "check", effect=ratio.effect, ratio=ratio.value, ratio_low=ratio.low,
            ratio_high=ratio.high))
    return checks


def first_position_ratios(samples: pd.DataFrame) -> list[float]:
    """For every process of a side-by-side comparison with 2+ rounds: the case that led
    the process (round 0, position 0) against its own median in its later rounds."""
    compared = samples[pd.to_numeric(samples.get("position"), errors="coerce").notna()]
    ratios = []
    for _, process in compared.groupby(["framework", "experiment", "process"]):
        position = pd.to_numeric(process["position"])
        leads = process[(process["repeat"] == 0) & (position == 0)]
        for case in leads["case"].unique():
            rest = process[(process["case"] == case) & (process["repeat"] > 0)]["value"]
            if len(rest):
                ratios.append(float(leads[leads["case"] == case]["value"].iloc[0]
                                    / np.median(rest)))
    return ratios


def first_position_check(samples: pd.DataFrame, band: float) -> Verdict:
    ratios = first_position_ratios(samples)
    rule = ("the case that leads its process against its own median in the later rounds, "
            "median over every process with a 95% bootstrap interval; holds (no penalty) "
            f"when the interval lies wholly inside 1 ± {band:g}")
    claim = "a case measured first in its process is not slower"
    if len(ratios) < MIN_SAMPLES:
        return Verdict(claim, "first_position_effect", "all", NA,
                       f"{len(ratios)} processes with 2 or more rounds", rule, "check")
    value, low, high = stats.ratio_interval({i: [r] for i, r in enumerate(ratios)},
                                            {0: [1.0]})
    effect = stats.classify(low, high, band)
    verdict = {stats.SAME: HOLDS, stats.UNSURE: UNSURE}.get(effect, FAILS)
    return Verdict(claim, "first_position_effect", "all", verdict,
                   f"leading its process: {value - 1:+.1%} [{low - 1:+.1%}–{high - 1:+.1%}] "
                   f"over {len(ratios)} processes", rule, "check", effect=effect, ratio=value,
                   ratio_low=low, ratio_high=high)


def steadiness_check(runs: dict[str, dict[str, Any]]) -> Verdict:
    rule = ("a fixed CPU probe (5 runs) and /proc/stat before and after each section; a "
            "section is flagged when its probe moved more than 10% or more than 5% of the "
            "CPU time was stolen")
    claim = "the machine stayed steady while it measured"
    measured = {name: run["steadiness"] for name, run in runs.items() if run.get("steadiness")}
    if not measured:
        return Verdict(claim, "machine_steadiness", "all", NA, "no section measured it", rule,
                       "check")
    flagged = {name: s["flags"] for name, s in measured.items() if s["flags"]}
    probes = [s["probe_before_s"] for s in measured.values()]
    moved = max(measured.values(), key=lambda s: abs(s["probe_moved"]))["probe_moved"]
    steals = [s["steal_share"] for s in measured.values() if s.get("steal_share") is not None]
    evidence = (f"probe {np.median(probes):.3f} s (range {min(probes):.3f}–{max(probes):.3f}); "
                f"moved at most {moved:+.0%} within a section; steal at most "
                f"{max(steals, default=0):.1%}; {len(flagged)} of {len(measured)} sections "
                "flagged")
    if flagged:
        evidence += ": " + "; ".join(f"{k}: {', '.join(v)}" for k, v in flagged.items())
    return Verdict(claim, "machine_steadiness", "all", FAILS if flagged else HOLDS, evidence,
                   rule, "check")


def judge(summary: pd.DataFrame, runs: dict[str, dict[str, Any]], reference: pd.DataFrame,
          samples: pd.DataFrame, *, band: float = DEFAULT_BAND,
          framework: str = "mxnet") -> list[Verdict]:
    """Every claim and check for one framework's results."""
    if "framework" in samples:
        samples = samples[samples["framework"] == framework]
    if "framework" in summary:
        summary = summary[summary["framework"].fillna(framework) == framework]
    m = Measurements(samples, summary, runs, band)
    verdicts = aa_checks(m) + [first_position_check(samples, band), steadiness_check(runs)]
    for name, section, claim, check, rule in CLAIMS:
        verdicts.append(Verdict(claim, name, section, rule=rule or speed_rule(m), **check(m)))
    for name, experiment, cases in (
        ("lenet_accuracy_as_documented", "multi_gpu_scratch",
         ["lenet_1_device", "lenet_2_devices"]),
        ("resnet_accuracy_as_documented", "multi_gpu_gluon",
         ["resnet18_1_device", "resnet18_2_devices"]),
    ):
        verdicts.append(Verdict(
            f"test accuracy after the documents' epochs is within {ACCURACY_MARGIN} of theirs",
            name, experiment, rule=f"holds when every measured accuracy is within "
            f"±{ACCURACY_MARGIN} of the document's figure for the same epoch",
            **_accuracy_claim(m, experiment, reference, cases)))
    for verdict in verdicts:
        verdict.framework = framework
    return verdicts


def as_frame(verdicts: list[Verdict]) -> pd.DataFrame:
    return pd.DataFrame([asdict(v) for v in verdicts])
