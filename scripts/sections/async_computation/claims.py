"""The section's claims with rules of their own (its speed claims are declared in
section.py): the front end returns at once; a sync in every iteration slows the loop.

Judging, not measuring: ``d2lperf.claims`` loads this file (the workers never do)."""

from __future__ import annotations

from d2lperf import stats
from d2lperf.applicability import WHERE_WORK_IS_QUEUED
from d2lperf.claims import FAILS, HOLDS, NA, STAGED, UNSURE, Claim, result, speed_claim
from d2lperf.measurements import Measurements

SECTION = "async_computation"
# A call that returns as soon as its work is queued took under this share of the wait
# still ahead (queued / finished).
QUEUE_SHARE = 0.25


def queueing_returns_at_once(m: Measurements):
    ratio = m.ratio(SECTION, "dot_sum_queued", "dot_sum_finished")
    if ratio is None:
        return result(NA, m.missing(SECTION) or "not measured")
    verdict = (HOLDS if ratio.high < QUEUE_SHARE else FAILS if ratio.low >= QUEUE_SHARE
               else UNSURE)
    side = {HOLDS: stats.FASTER, FAILS: stats.SLOWER}.get(verdict, stats.UNSURE)
    return result(verdict, ratio.text("queued/finished") + " of the wait", ratio,
                  ratio.p_value((QUEUE_SHARE, QUEUE_SHARE), side))


def sync_call_slows_the_loop(m: Measurements):
    return speed_claim(m, SECTION, "add_loop_asynchronous", "add_loop_synchronous",
                       "asynchronous/synchronous")


CLAIMS = [
    Claim("queueing_returns_at_once", SECTION,
          "the front end returns as soon as the work is queued, before it is done",
          queueing_returns_at_once,
          f"holds when the upper end of the interval ({STAGED}) of queued/finished is under "
          f"{QUEUE_SHARE:g} (the call took under a quarter of the wait still ahead), does "
          "not hold when its lower end is above", WHERE_WORK_IS_QUEUED,
          short="front end returns at once", form="share",
          figures=("dot_sum_queued", "dot_sum_finished")),
    Claim("sync_call_slows_loop", SECTION,
          "a synchronising call in every iteration makes the loop slower",
          sync_call_slows_the_loop, None, WHERE_WORK_IS_QUEUED,
          document_note="the document says the gain is Linux's: on its Windows 10 machine "
          "the loop without the syncs was the slower one",
          short="a sync each iteration slows the loop",
          figures=("add_loop_asynchronous", "add_loop_synchronous")),
]
