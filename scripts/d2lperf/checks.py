"""The checks of the measurement itself, judged beside the chapter's claims: an A/A pair
(identical work under two labels, measured side by side), the first-position effect and
the machine's steadiness. They are not the chapter's (``kind == "check"``): they say how
far the claims can be trusted."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from d2lperf import stats, steadiness
from d2lperf.measurements import MIN_SAMPLES, Measurements
from d2lperf.records import RunRecord
from d2lperf.sections import SECTIONS
from d2lperf.verdicts import FAILS, HOLDS, NA, STAGED, UNSURE, Verdict

if TYPE_CHECKING:
    import pandas as pd


class PairCheck(NamedTuple):
    """An A/A pair as it is judged: the pair a section declares (``sections.AAPair``), and
    the section."""

    name: str
    section: str
    case: str
    other: str
    swapped: bool = False


AA_PAIRS = [PairCheck(pair.name, entry.name, pair.case, pair.other, pair.swapped)
            for entry in SECTIONS.values() for pair in entry.aa_pairs]


def aa_checks(m: Measurements, section: str | None = None) -> list[Verdict]:
    """The A/A pairs (of ``section``, or every one): identical work should read inside
    the band, at the confidence its section's looks had."""
    checks = []
    for name, own, a, b, swapped in AA_PAIRS:
        if section not in (None, own):
            continue
        ratio = m.ratio(own, a, b, swapped=swapped)
        crossover = ("; the two copies swap labels in every other process, so the interval "
                     "is a crossover's: what tells the copies apart is left out of the "
                     "spread, the design balances it") if swapped else ""
        rule = (f"the same work under two labels{crossover}; holds when its ratio's interval "
                f"({STAGED}) lies wholly inside 1 ± {m.band:g}, does not hold when wholly "
                "outside")
        claim = f"identical work measured side by side ({own}: {a} vs {b})"
        if ratio is None:
            checks.append(Verdict(claim, name, own, NA,
                                  m.missing(own) or "not measured", rule, "check",
                                  identical_work=True))
            continue
        verdict = {stats.SAME: HOLDS, stats.UNSURE: UNSURE}.get(ratio.effect, FAILS)
        apart = abs(ratio.value - 1)
        checks.append(Verdict(
            claim, name, own, verdict,
            f"identical work measured {apart:.1%} apart: {ratio.text(f'{a}/{b}')}", rule,
            "check", effect=ratio.effect, ratio=ratio.value, ratio_low=ratio.low,
            ratio_high=ratio.high, identical_work=True))
    return checks


def first_position_ratios(samples: pd.DataFrame) -> list[float]:
    """For every process of a side-by-side comparison with 2+ rounds: the case that led
    the process (round 0, position 0) against its own median in its later rounds."""
    import pandas as pd
    compared = samples[pd.to_numeric(samples.get("position"), errors="coerce").notna()]
    ratios = []
    for _, process in compared.groupby(["framework", "section", "process"]):
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


def steadiness_check(runs: dict[str, RunRecord]) -> Verdict:
    """Whether the machine stayed steady: the section-level flags, with the rule as the
    probe now runs (on the timing's thread count, the run queue and the stages' count of
    other programs' cores beside it)."""
    rule = (f"a fixed CPU probe ({steadiness.PROBE_REPEATS} runs) on as many processes at "
            "once as the timing has threads (its figure the slowest of them: one busy core "
            "of two shows), the run queue, the load average and /proc/stat, before and after "
            f"each section; a section is flagged when its probe's times before and after are "
            f"more than {1 + steadiness.PROBE_MOVED:g}× apart or more than "
            f"{steadiness.STEAL_SHARE:.0%} of the "
            "CPU time was stolen. A section measured in stages also counts, stage by stage, "
            "the cores other programs kept busy and probes again after each stage: a stage "
            f"with more than {steadiness.BUSY_CORES:g} of a core busy beyond those the "
            f"timing leaves free, or whose probe ran over {steadiness.PROBE_SLOWER:.0%} "
            "slower than the median of the section's probes, is measured again rather than pooled")
    claim = "the machine stayed steady while it measured"
    measured = {name: run["steadiness"] for name, run in runs.items() if run.get("steadiness")}
    if not measured:
        return Verdict(claim, "machine_steadiness", "all", NA, "no section measured it", rule,
                       "check")
    flagged = {name: flags for name, s in measured.items()
               if (flags := steadiness.recorded_flags(s))}
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
