"""The section's claim with a rule of its own: without synchronising calls, training uses
more memory.

Judging, not measuring: ``d2lperf.claims`` loads this file (the workers never do)."""

from __future__ import annotations

from d2lperf import stats
from d2lperf.applicability import WHERE_WORK_IS_QUEUED
from d2lperf.claims import FAILS, HOLDS, NA, STAGED, UNSURE, Claim, result
from d2lperf.measurements import Measurements

SECTION = "async_memory"


def asynchrony_uses_more_memory(m: Measurements):
    ratio = m.ratio(SECTION, "async_memory_increase", "sync_memory_increase", "memory")
    if ratio is None:
        return result(NA, m.missing(SECTION) or "not measured")
    verdict = {stats.SLOWER: HOLDS, stats.FASTER: FAILS, stats.SAME: FAILS}.get(
        ratio.effect, UNSURE)
    effect = {stats.SLOWER: "more", stats.FASTER: "less"}.get(ratio.effect, ratio.effect)
    return result(verdict, f"RSS increase at the end {ratio.text('asynchronous/synchronous')} "
                  f"({effect})", ratio, ratio.p_value(m.edges))


CLAIMS = [
    Claim("asynchrony_uses_more_memory", SECTION,
          "without synchronising calls, training uses more memory",
          asynchrony_uses_more_memory,
          "ratio of the RSS increases at the end of the loop (as the document printed them) "
          f"with its interval ({STAGED}); holds when it lies wholly above the band, does not hold "
          "when below or inside it", WHERE_WORK_IS_QUEUED,
          short="no sync calls: more memory", form="more",
          figures=("async_memory_increase", "sync_memory_increase")),
]
