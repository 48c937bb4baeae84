"""A verdict, its words, and Holm's correction over a framework's verdicts: what the
chapter's claims (``d2lperf.claims``) and the checks of the measurement
(``d2lperf.checks``) both give.

Verdicts: "holds", "does not hold", "inconclusive", "does not apply" (the claim is not
about what runs here: nothing to do, the evidence says why) or "not measured" (the section
did not run here: the evidence says why, and so what it needs to run); the documents'
verdict may also be "mixed" (their alternate runs disagree). Tables written before these
two words said "not applicable here" and "not applicable" (``results.OLDER_VERDICTS``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

HOLDS, FAILS, UNSURE, NA = "holds", "does not hold", "inconclusive", "not measured"
NOT_HERE, MIXED = "does not apply", "mixed"
# A 95% interval clears an edge by chance at most 2.5% of the time; Holm's step-down
# keeps the chance of any wrong decisive verdict among a framework's claims (over all the
# looks of their sections) at that.
HOLM_ALPHA = 0.025

STAGED = ("95%, or for a section measured in stages each look's confidence (98.3% for "
          "three looks)")


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
    applies: str = ""  # where the claim applies, in words
    p_value: float = float("nan")  # chance alone giving this decisive verdict (holm)
    finding: str = ""  # where it does not apply: what was measured anyway
    document_verdict: str = ""  # the same rule applied to the documents' own figures
    document_evidence: str = ""
    document_by_variant: str = ""  # "Linux: holds; Windows 10: does not hold"
    identical_work: bool = False  # an A/A check: the same work under two labels


def to_decide(verdicts: list[Verdict]) -> list[Verdict]:
    """The verdicts more data could settle: claims and checks that apply and were
    measured (not "not measured", not "does not apply")."""
    return [v for v in verdicts if v.verdict in (HOLDS, FAILS, UNSURE) and v.ratio == v.ratio]


def holm(verdicts: list[Verdict], unseen: int = 0) -> None:
    """Holm's step-down over a framework's claims judged on an interval (m of them,
    decisive or not): in order of their p-values, the k-th decisive one stays decisive
    only while p <= HOLM_ALPHA / (m - k + 1); from the first that does not, it and every
    later one become inconclusive, saying why. So the chance that any decisive verdict
    of the framework is chance's doing stays under 2.5% however many claims apply; one
    clear of its band by far keeps its verdict.

    With stages: a staged section's p-values come multiplied by its planned looks
    (``Ratio.p_value``), Bonferroni over the looks inside Holm over the claims. For
    sections that all planned K looks this is Holm at HOLM_ALPHA / K, the same share of
    the error rate each look's interval has; a section measured once counts once. The
    composition is valid however the looks depend on each other and wherever the stages
    stopped: the p at the look that stopped, times K, is a p-value in its own right.

    ``unseen``: claims the correction will also count whose p-values are not known here
    (the stages see one section; the report, every section). They could rank before
    any of these and fail, so each claim here must clear the strictest step,
    HOLM_ALPHA / (m + unseen): what Holm keeps decisive whatever the others show. A
    claim the stages call decided therefore stays decided in the report."""
    tested = [v for v in to_decide(verdicts) if v.kind == "claim"]
    decisive = sorted((v for v in tested if v.verdict != UNSURE and v.p_value == v.p_value),
                      key=lambda v: v.p_value)
    total = len(tested) + unseen
    kept, limit = holm_kept([v.p_value for v in decisive], HOLM_ALPHA, total,
                                  strictest=bool(unseen))
    for later in decisive[kept:]:
        later.evidence += (f"; {later.verdict} by its own interval, but not after the "
                           f"correction for the {total} claims judged (Holm: "
                           f"p {later.p_value:.2g} > {limit:.2g})")
        later.verdict = UNSURE


def holm_kept(p_values: Sequence[float], alpha: float, total: int,
              strictest: bool = False) -> tuple[int, float]:
    """Holm's step-down over ``total`` tests, of which ``p_values`` (ascending) are the
    ones that could be kept: how many are kept, and the limit the first one dropped
    failed (the last limit where none is). The k-th (from 0) is kept while
    p <= alpha / (total - k) and every one before it was; ``strictest``: each must clear
    alpha / total (other tests, not seen here, may rank first)."""
    limit = alpha / total if total else alpha
    for k, p in enumerate(p_values):
        limit = alpha / (total if strictest else total - k)
        if p > limit:
            return k, limit
    return len(p_values), limit
