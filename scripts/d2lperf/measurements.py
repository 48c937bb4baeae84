"""Measurements a claim is judged on: one framework's raw samples by process, or the
documents' printed figures (one per case), and ratios of their medians with intervals."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from d2lperf import stats

MIN_SAMPLES = 3  # fewer samples a side cannot support an interval


@dataclass
class Ratio:
    """A ratio of medians with its interval, and what it says against the band."""

    value: float
    low: float
    high: float
    effect: str
    # p of "the truth lies above (True) or below an edge", from the same data; None for
    # printed figures, which have no spread
    tail: Callable[[float, bool], float] | None = None

    def text(self, label: str) -> str:
        return f"{label} {self.value:.3g} [{self.low:.3g}–{self.high:.3g}]"

    def p_value(self, edges: tuple[float, float], effect: str | None = None) -> float:
        """How often chance alone would give this verdict against the band (or the rule's
        edges): the one-sided p of the side the interval cleared; both sides for "no
        meaningful difference" (two one-sided tests)."""
        if self.tail is None:
            return float("nan")
        low, high = edges
        effect = effect or self.effect
        if effect == stats.FASTER:
            return self.tail(low, False)
        if effect == stats.SLOWER:
            return self.tail(high, True)
        if effect == stats.SAME:
            return max(self.tail(low, True), self.tail(high, False))
        return float("nan")


def tail_of(estimate: stats.Estimate | None, replicates: np.ndarray | None = None):
    if estimate is not None:
        return estimate.p_value
    return lambda edge, above: stats.replicate_p_value(replicates, edge, above)


class Measurements:
    """One framework's raw samples (for ratios) and summary (for accuracies).

    ``exact``: the figures are printed ones, one per case (the documents'): a ratio's
    interval is the point itself, and a single figure is enough to decide."""

    def __init__(self, samples: pd.DataFrame, summary: pd.DataFrame,
                 runs: dict[str, dict[str, Any]], band: float, exact: bool = False) -> None:
        self.samples, self.runs, self.band, self.exact = samples, runs, band, exact
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
                 & (s["metric"] == metric)]
        if not self.exact:  # the documents print either epochs or their mean: either does
            rows = rows[rows["epoch"].notna() == epochs]
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

    def decidable(self, *groups: dict[int, list[float]]) -> bool:
        return self.exact or min(map(count, groups)) >= MIN_SAMPLES

    def ratio(self, experiment: str, a: str, b: str, metric: str = "time",
              epochs: bool = False) -> Ratio | None:
        ga, gb = (self.groups(experiment, c, metric, epochs) for c in (a, b))
        if ga is None or gb is None:
            return None
        if self.exact:
            value = stats.pooled_median(ga) / stats.pooled_median(gb)
            return Ratio(value, value, value, stats.classify(value, value, self.band))
        estimate = stats.log_ratio_estimate(ga, gb)
        replicates = None
        if estimate is not None:
            value, low, high = estimate.interval()
        else:
            value, low, high = stats.bootstrap_ratio_interval(ga, gb)
            replicates = stats.bootstrap_ratio_replicates(ga, gb)
        effect = stats.classify(low, high, self.band) if self.decidable(ga, gb) \
            else stats.UNSURE
        return Ratio(value, low, high, effect, tail_of(estimate, replicates))

    @property
    def edges(self) -> tuple[float, float]:
        return 1 - self.band, 1 + self.band


def count(groups: dict[int, list[float]]) -> int:
    return sum(len(v) for v in groups.values())


def alternates(reference: pd.DataFrame) -> list[str]:
    """Variants that are alternate runs of the same figures (Linux, Windows 10), not a
    name of the devices: the same document, case and epoch printed more than once."""
    key = ["document", "experiment", "case", "metric", "epoch"]
    figures = reference[reference["metric"] != "output"]
    repeated = figures[figures.duplicated(key, keep=False)]
    return list(dict.fromkeys(repeated["variant"].dropna()))


def document_figures(reference: pd.DataFrame, band: float, variant: str | None = None,
                     prefer: str | None = None) -> Measurements:
    """The documents' printed figures as measurements: one sample per figure (of one
    alternate ``variant``), the figure of ``prefer`` where several documents printed one."""
    figures = reference[reference["metric"].isin(["time", "memory"])].copy()
    others = alternates(reference)
    figures = figures[~figures["variant"].isin(others) | (figures["variant"] == variant)]
    if prefer:
        figures["_rank"] = (figures["document"] != prefer).astype(int)
        figures = figures.sort_values("_rank", kind="stable")
    figures = figures.drop_duplicates(["experiment", "case", "metric", "epoch"])
    # a per-epoch figure and a mean of epochs: keep the mean where a document printed one
    means = set(figures[figures["epoch"].isna()]["case"])
    figures = figures[figures["epoch"].isna() | ~figures["case"].isin(means)]
    samples = pd.DataFrame({
        "experiment": figures["experiment"], "case": figures["case"],
        "metric": figures["metric"], "process": 0, "repeat": 0,
        "value": pd.to_numeric(figures["printed"], errors="coerce"),
        "epoch": figures["epoch"], "devices": figures["variant"].fillna("")})
    summary = samples.rename(columns={"value": "median"})
    runs = {e: {"status": "ok"} for e in reference["experiment"].unique()}
    return Measurements(samples.dropna(subset=["value"]), summary, runs, band, exact=True)
