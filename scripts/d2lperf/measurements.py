"""Measurements a claim is judged on: one framework's raw samples by process, or the
documents' printed figures (one per case), and ratios of their medians with intervals.

No pandas at import: a section's own process (whose environment has none) judges its
stages' rows through ``Measurements.from_rows``, by the same claims as the report."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from d2lperf import stats, workloads
from d2lperf.records import RunRecord, SampleRow, StagesRecord

if TYPE_CHECKING:
    import pandas as pd

MIN_SAMPLES = 3  # fewer samples a side cannot support an interval


class Projection(NamedTuple):
    """Estimates from ``now`` processes read as from ``then``, each mean moved by
    ``shift`` of the spread where it can still land (``stats.Estimate.projected``): the
    stages ask whether a look at ``then`` processes could decide what ``now`` did not."""

    now: int
    then: int
    shift: float = 0.0


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
    looks: int = 1  # the looks its section planned: each p counts once per look

    def text(self, label: str) -> str:
        return f"{label} {self.value:.3g} [{self.low:.3g}–{self.high:.3g}]"

    def p_value(self, edges: tuple[float, float], effect: str | None = None) -> float:
        """How often chance alone would give this verdict against the band (or the rule's
        edges): the one-sided p of the side the interval cleared; both sides for "no
        meaningful difference" (two one-sided tests). A section measured in stages looked
        ``looks`` times: its p is multiplied by them (Bonferroni over the looks, capped at
        1), which is what its interval at the per-look confidence says."""
        if self.tail is None:
            return float("nan")
        low, high = edges
        effect = effect or self.effect
        if effect == stats.FASTER:
            p = self.tail(low, False)
        elif effect == stats.SLOWER:
            p = self.tail(high, True)
        elif effect == stats.SAME:
            p = max(self.tail(low, True), self.tail(high, False))
        else:
            return float("nan")
        return min(1.0, p * self.looks)


def tail_of(estimate: stats.Estimate | None, replicates: np.ndarray | None = None):
    if estimate is not None:
        return estimate.p_value
    return lambda edge, above: stats.replicate_p_value(replicates, edge, above)


class Measurements:
    """One framework's raw samples (for ratios) and summary (for accuracies).

    ``exact``: the figures are printed ones, one per case (the documents'): a ratio's
    interval is the point itself, and a single figure is enough to decide.

    A section measured in stages (its run record's ``stages``) is judged at the
    confidence each of its looks had (``confidence``), its p-values counted once per
    planned look (``looks``): a section that stopped undecided at 98.3% must not read
    decisive at 95% on the same pooled data."""

    def __init__(self, samples: pd.DataFrame, summary: pd.DataFrame,
                 runs: dict[str, RunRecord], band: float, exact: bool = False) -> None:
        found = samples.assign(_epoch=samples["epoch"].notna()).to_dict("records") \
            if len(samples) else []
        measured = summary[summary["median"].notna()]
        measured = measured.assign(_epoch=measured["epoch"].notna())
        self._setup(found, measured.to_dict("records"), runs, band, exact)

    @classmethod
    def from_rows(cls, rows: list[SampleRow], section: str,
                  runs: dict[str, RunRecord], band: float) -> Measurements:
        """A section's own rows (as its CSV holds them: strings, an empty epoch) before
        any summary: what the stages decide on, by the report's own claims."""
        found = [{**row, "section": section, "metric": row.get("metric") or "time",
                  "value": float(row["value"]),
                  "_epoch": row.get("epoch") not in (None, "")}
                 for row in rows if row.get("value") not in (None, "")]
        made = cls.__new__(cls)
        made._setup(found, [], runs, band, False)
        return made

    def projected(self, projection: Projection) -> Measurements:
        """The same measurements, their estimates read as ``projection`` says (the rows
        are shared, not copied)."""
        made = copy.copy(self)
        made.projection = projection
        return made

    def _setup(self, samples: list[dict[str, Any]], summary: list[dict[str, Any]],
               runs: dict[str, RunRecord], band: float, exact: bool) -> None:
        self.runs, self.band, self.exact = runs, band, exact
        self.projection: Projection | None = None
        self.index: dict[tuple, list[tuple[int, float, bool]]] = {}
        for r in samples:
            if r["process"] in (None, "") or r["process"] != r["process"]:
                continue
            self.index.setdefault((r["section"], r["case"], r["metric"]), []).append(
                (int(r["process"]), float(r["value"]), bool(r["_epoch"])))
        self.rows = {
            (r["section"], r["case"], r["metric"], int(r["epoch"]) if r["_epoch"] else None): r
            for r in summary
        }

    def get(self, section: str, case: str, metric: str = "time", epoch: int | None = None):
        return self.rows.get((section, case, metric, epoch))

    def last_epoch(self, section: str, case: str, metric: str):
        epochs = [k[3] for k in self.rows if k[:3] == (section, case, metric) and k[3]]
        return self.get(section, case, metric, max(epochs)) if epochs else None

    def groups(self, section: str, case: str, metric: str = "time",
               epochs: bool = False) -> dict[int, list[float]] | None:
        """A case's raw samples by process; epoch times when ``epochs``."""
        found: dict[int, list[float]] = {}
        for process, value, has_epoch in self.index.get((section, case, metric), []):
            # the documents print either epochs or their mean: either does
            if self.exact or has_epoch == epochs:
                if value == value:
                    found.setdefault(process, []).append(value)
        return dict(sorted(found.items())) or None

    def staged(self, section: str) -> StagesRecord:
        return (self.runs.get(section) or {}).get("stages") or {}

    def confidence(self, section: str) -> float:
        """The confidence a section's intervals are judged at: each look's, where it was
        measured in stages, else ``stats.CONFIDENCE``."""
        return float(self.staged(section).get("confidence_per_look") or stats.CONFIDENCE)

    def looks(self, section: str) -> int:
        """How many looks the section's stages planned (1 where it was not staged)."""
        return int(self.staged(section).get("looks_planned") or 1)

    def missing(self, section: str, *cases: str) -> str | None:
        """Why a section has no figures here, or why one of its ``cases`` has none where
        the section ran (its run record's ``runs_not_run``, by the case or by the model it
        trains); None when they have them."""
        run = self.runs.get(section)
        if run is None:
            return f"{section} did not run"
        if run.get("status") in ("skipped", "refused"):
            return f"{section} was skipped: {run.get('reason')}"
        if run.get("status") == "failed":
            return f"{section} failed (see its log)"
        found = (run.get("notes") or {}).get("runs_not_run") or {}
        for case in cases:
            model = (workloads.training_case(case) or (None,))[0]
            for key in (case, model):
                if isinstance(found.get(key), dict):
                    return f"{key} not run here: {found[key].get('reason')}"
        return None

    def decidable(self, *groups: dict[int, list[float]]) -> bool:
        return self.exact or min(map(count, groups)) >= MIN_SAMPLES

    def ratio(self, section: str, a: str, b: str, metric: str = "time",
              epochs: bool = False, swapped: bool = False) -> Ratio | None:
        """a / b by ``stats.log_ratio_estimate`` (``swapped``: copies that swap labels by
        process parity, a crossover) at the section's confidence, or the within-process
        bootstrap where only one process measured them."""
        ga, gb = (self.groups(section, c, metric, epochs) for c in (a, b))
        if ga is None or gb is None:
            return None
        if self.exact:
            value = stats.pooled_median(ga) / stats.pooled_median(gb)
            return Ratio(value, value, value, stats.classify(value, value, self.band))
        confidence = self.confidence(section)
        estimate = self.project(stats.log_ratio_estimate(ga, gb, swapped))
        replicates = None
        if estimate is not None:
            value, low, high = estimate.interval(confidence)
        else:
            value, low, high = stats.bootstrap_ratio_interval(ga, gb, confidence=confidence)
            replicates = stats.bootstrap_ratio_replicates(ga, gb)
        effect = stats.classify(low, high, self.band) if self.decidable(ga, gb) \
            else stats.UNSURE
        return Ratio(value, low, high, effect, tail_of(estimate, replicates),
                     self.looks(section))

    def project(self, estimate: stats.Estimate | None) -> stats.Estimate | None:
        """``estimate`` as this projection reads it (unchanged without one)."""
        if estimate is None or self.projection is None:
            return estimate
        return estimate.projected(*self.projection)

    @property
    def edges(self) -> tuple[float, float]:
        return 1 - self.band, 1 + self.band


def count(groups: dict[int, list[float]]) -> int:
    return sum(len(v) for v in groups.values())


def alternates(reference: pd.DataFrame) -> list[str]:
    """Variants that are alternate runs of the same figures (Linux, Windows 10), not a
    name of the devices: the same document, case and epoch printed more than once."""
    key = ["document", "section", "case", "metric", "epoch"]
    figures = reference[reference["metric"] != "output"]
    repeated = figures[figures.duplicated(key, keep=False)]
    return list(dict.fromkeys(repeated["variant"].dropna()))


def document_figures(reference: pd.DataFrame, band: float, variant: str | None = None,
                     prefer: str | None = None) -> Measurements:
    """The documents' printed figures as measurements: one sample per figure (of one
    alternate ``variant``), the figure of ``prefer`` where several documents printed one."""
    import pandas as pd
    figures = reference[reference["metric"].isin(["time", "memory"])].copy()
    others = alternates(reference)
    figures = figures[~figures["variant"].isin(others) | (figures["variant"] == variant)]
    if prefer:
        figures["_rank"] = (figures["document"] != prefer).astype(int)
        figures = figures.sort_values("_rank", kind="stable")
    figures = figures.drop_duplicates(["section", "case", "metric", "epoch"])
    # a per-epoch figure and a mean of epochs: keep the mean where a document printed one
    means = set(figures[figures["epoch"].isna()]["case"])
    figures = figures[figures["epoch"].isna() | ~figures["case"].isin(means)]
    samples = pd.DataFrame({
        "section": figures["section"], "case": figures["case"],
        "metric": figures["metric"], "process": 0, "repeat": 0,
        "value": pd.to_numeric(figures["printed"], errors="coerce"),
        "epoch": figures["epoch"], "devices": figures["variant"].fillna("")})
    summary = samples.rename(columns={"value": "median"})
    runs = {e: {"status": "ok"} for e in reference["section"].unique()}
    return Measurements(samples.dropna(subset=["value"]), summary, runs, band, exact=True)
