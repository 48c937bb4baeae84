"""The section's claim: two small random draws gain nothing from running together.

Judging, not measuring: ``d2lperf.claims`` loads this file (the workers never do)."""

from __future__ import annotations

from d2lperf import stats
from d2lperf.applicability import WHERE_WORK_IS_QUEUED
from d2lperf.claims import FAILS, HOLDS, NA, STAGED, UNSURE, Claim, overlap, overlap_text, result
from d2lperf.measurements import Measurements

SECTION = "small_ops_parallel"


def small_ops_do_not_overlap(m: Measurements):
    found = overlap(m, SECTION, "generate_x", "generate_y", "generate_x_and_y")
    if found is None:
        return result(NA, m.missing(SECTION) or "not measured")
    ratio, hidden = found
    verdict = {stats.SAME: HOLDS, stats.SLOWER: HOLDS, stats.FASTER: FAILS}.get(
        ratio.effect, UNSURE)
    return result(verdict, overlap_text(ratio, hidden), ratio, ratio.p_value(m.edges))


CLAIMS = [
    Claim("small_ops_no_overlap", SECTION,
          "two small random draws gain nothing from running together",
          small_ops_do_not_overlap,
          f"holds when the interval ({STAGED}) of together/(x + y) lies wholly inside the band or "
          "above it, does not hold when wholly below, otherwise inconclusive",
          WHERE_WORK_IS_QUEUED, short="small draws gain nothing together", form="overlap",
          figures=("generate_x_and_y", "generate_x+generate_y")),
]
