"""Measure until decided, within a budget: the stages of a section's fresh processes.

A section measured in fresh processes (``--processes P``) runs them in planned
stages: P processes, then P more, then 2P more (looks at P, 2P and 4P). After
each stage the section's own claims and A/A checks are judged on everything
pooled so far by ``claims.decide``, the function the report judges by: the same
statistic for each claim (the hidden share for an overlap claim, together/(x + y)
for the small draws), the same interval, rule and Holm's correction, at this
look's confidence. There is no second list of comparisons to drift from the
claims. The section stops when every claim that applies is decisive, when what is
still undecided is out of reach (``reach``: at every process the plan and the budget
still allow, its projected interval, with its estimate where it is or moved two of
its conditional spreads either way, would still not decide), when not even
the first ``MIN_PROCESSES`` of the next stage would fit in its budget of seconds, or
after the last planned stage. Stopping out of reach only ever ends a section
undecided: it adds no wrong decisive verdict, and saves the budget a claim on the
band's edge would spend to stay inconclusive. The budget bounds every stage, the first too: no
further process is launched once the next would not fit, each process estimated at
the median wall time of the section's processes so far or the last one's, whichever
is longer, and what the stage spends after its processes (its probe) at the longest
any earlier stage spent (a machine slower than the preset assumed cuts the stage short and the look
happens on what was measured; so does a later stage of which only part fits: the
budget left buys the processes it can, and each look's share of the error rate does
not depend on how many processes it saw). The first ``MIN_PROCESSES`` run whatever
the budget: one process shows no spread between processes, and the intervals are
built on it.
A claim that does not apply here (eager PyTorch queues nothing on a CPU) is not
waited for: a section with nothing left to decide stops after its first stage, and
where neither a claim nor an A/A check of the section applies here, that stage ends
after its first ``MIN_PROCESSES``, busy or not (nor is a busy stage measured again):
the section's figures are findings beside the claims, not evidence any verdict waits
for.
Nor is an A/A check: it is judged at every look on what was measured, but it checks
the method (its interval should contain 1), and the budget belongs to the chapter's
claims. The presets size the first stage so that a quiet machine resolves most A/A
pairs too (docs/design.md, "Verdicts and measurement").

The stages see one section, the report every section's claims: in the report's
Holm step-down another section's claim may rank first and fail, which turns this
one inconclusive too, or leave it a stricter step than Holm over this section
alone would. So a claim is called decided here only when it clears Holm's
strictest step over every claim that applies to this framework and device
(``verdicts.holm``'s ``unseen``), which no other claim can undo. What the stages
call decided the report shows decided; the report may decide a little more,
never less.

Looking more than once: each look uses a Bonferroni share of the 5%, 5% / K for
the K planned looks (98.3% intervals for three), so that the chance that any look
decides wrongly stays under 5% however the looks depend on each other and
whatever interval method ``stats`` uses. Group-sequential boundaries would spend
less at the last look, but they assume a normal statistic with independent
increments of known size, which a two-level bootstrap of medians with
per-process offsets is not, and a budget that stops early would leave their
planned information fractions wrong; Bonferroni stays valid when fewer looks
happen than planned.

The gate: a stage measured while other programs kept the timing's cores busy
(``steadiness.busy``) is not pooled with quiet ones: the section waits for the
machine to quieten (bounded) and measures the stage again. Load moves ratios,
not only times (two-thread timings suffer most), so a quiet stage and a busy one
pooled give a narrow interval around neither effect. Where every stage is busy
(the machine stays loaded), the busy stages are pooled with each other, all
measured under the same load, and the record says so.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from d2lperf import checks, claims, stats, steadiness, verdicts
from d2lperf.measurements import Measurements, Projection
from d2lperf.records import Answer, Load, Reach, RunRecord, SampleRow, StageEntry, StagesRecord

ALPHA = 1 - stats.CONFIDENCE  # the error rate all looks of a section share
MIN_PROCESSES = 2  # a section's first processes, run whatever its budget
PLAN = (1, 1, 2)  # stage sizes in units of the first stage's processes
WAIT_SHARE = 0.1  # at most this share of the budget waited, once, for a busy machine
WAIT_LIMIT_S = 30.0  # and never longer than this
WAIT_POLL_S = 1.0
# Out of reach: a look at every process the plan and the budget still allow would not
# decide, with each estimate where it is or moved this many of its conditional spreads
# either way. Two, not one: the spread itself is estimated from a few processes
# (tests/test_stages.py measures what it costs: about one decision in twenty, for half
# the processes where nothing can be decided).
REACH_SHIFT = 2.0
DECIDED, BUDGET, MAX_STAGES, NOTHING, SKIPPED, OUT_OF_REACH = (
    "decided", "budget spent", "max stages", "nothing to decide", "skipped", "out of reach")


def plan(first: int) -> list[int]:
    """The planned stages' process counts for a first stage of ``first`` processes."""
    return [first * k for k in PLAN]


def look_confidence(looks: int = len(PLAN)) -> float:
    """Each look's confidence: the Bonferroni share of the section's error rate."""
    return 1 - ALPHA / looks


def sections() -> set[str]:
    """The sections whose claims or A/A checks the stages can decide."""
    return {c.section for c in claims.CLAIMS} | {pair[1] for pair in checks.AA_PAIRS}


def measurements(rows: Sequence[SampleRow], section: str, run: RunRecord,
                 band: float, confidence: float, looks: int) -> Measurements:
    """The pooled ``rows`` as the report will judge them: at ``confidence``, the p-values
    counted once per planned look."""
    staged = {**run, "stages": {"confidence_per_look": confidence, "looks_planned": looks}}
    return Measurements.from_rows(list(rows), section, {section: staged}, band)


def look(m: Measurements, section: str, run: RunRecord) -> list[Answer]:
    """The section's claims and A/A checks that apply and were measured, judged on ``m``
    by ``claims.decide`` as the report will judge them, with Holm's strictest step over
    every claim that applies to this framework where ``run`` ran."""
    framework = run["framework"]
    own = {c.name for c in claims.CLAIMS if c.section == section}
    unseen = len(set(claims.applying_claims(framework, run)) - own)
    found = verdicts.to_decide(claims.decide(m, framework, section, unseen))
    return [{"question": v.name, "kind": v.kind, "verdict": v.verdict, "effect": v.effect,
             "ratio": v.ratio, "low": v.ratio_low, "high": v.ratio_high,
             "p_value": v.p_value, "decided": v.verdict != claims.UNSURE} for v in found]


def reach(m: Measurements, section: str, run: RunRecord, open_: Sequence[Answer],
          now: int, then: int) -> Reach:
    """Whether a look at ``then`` processes could decide the claims (``open_``: their
    answers) that the look at ``now`` left undecided: each estimate of ``m`` projected
    with the spread it has (``stats.Estimate.projected``), where it is and moved
    ``REACH_SHIFT`` of its conditional spread either way. Returns the claims some
    projection decides (``could_decide``) and, for each undecided claim, its interval
    now and about where it would be at its estimate (``projected``)."""
    names = {a["question"]: a for a in open_}
    at = {shift: [a for a in look(m.projected(Projection(now, then, shift)), section, run)
                  if a["question"] in names]
          for shift in (0.0, -REACH_SHIFT, REACH_SHIFT)}
    could = {a["question"] for answers in at.values() for a in answers if a["decided"]}
    projected = [{"question": a["question"], "ratio": a["ratio"],
                  "now": [names[a["question"]]["low"], names[a["question"]]["high"]],
                  "then": [a["low"], a["high"]]} for a in at[0.0]]
    return {"processes": then, "could_decide": sorted(could), "projected": projected}


@dataclass
class Stage:
    """What one stage of processes gave back: their run records and rows, and how busy
    the machine was while they ran."""

    records: list[RunRecord]
    rows: list[SampleRow]
    load: Load
    probe_s: float | None = None


Room = Callable[[Sequence[RunRecord]], bool]


def run(spawn: Callable[[int, int, Room], Stage], first: int, *, section: str, band: float,
        budget: float, threads: int, probe_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        wait: Callable[[float], bool] | None = None,
        futility: bool = True) -> tuple[list[Stage], list[bool], StagesRecord]:
    """Run the planned stages through ``spawn(first_index, count, room)`` until decided,
    out of reach, the budget is spent or the plan ends; ``spawn`` asks ``room(records)``
    (the stage's run records so far) before each further process of the stage, and
    launches it only when that says yes. ``probe_s``: the section's threaded probe before
    its first stage. Returns every stage measured, which of them are pooled, and the
    record of how it went (``stages`` in run.json). ``wait(seconds)`` waits for the
    machine to quieten and says whether it did. ``futility``: stop when what is still
    undecided is out of reach (``reach``); off, only the plan and the budget end an
    undecided section."""
    staging = _Staging(spawn, section, budget, threads, probe_s, clock, wait or wait_for_quiet)
    sizes = plan(first)
    confidence = look_confidence(len(sizes))
    stopped = MAX_STAGES
    for number, count in enumerate(sizes):
        # a later stage starts where its first MIN_PROCESSES fit, and runs those that fit
        if number and not staging.fits(min(count, MIN_PROCESSES)):
            stopped = BUDGET
            break
        stage = staging.measure_quiet(number, count)
        if _skipped(stage):
            stopped = SKIPPED
            break
        stopped = staging.look(band, confidence, sizes, number, futility) or stopped
        if stopped != MAX_STAGES:
            break
    history, done = staging.history, staging.done
    pooled = _pool(history)
    for entry, keep in zip(history, pooled):
        entry["pooled"] = keep
    record = {
        "plan": sizes, "looks_planned": len(sizes), "confidence_per_look": confidence,
        "correction": (f"Bonferroni: {ALPHA:.2g} shared by {len(sizes)} planned looks; "
                       "Holm over the framework's claims"),
        "budget_seconds": budget, "band": band, "count": len(done),
        "looks": sum(1 for h in history if "look" in h),
        "processes_pooled": sum(len(s.records) for s, keep in zip(done, pooled) if keep),
        "stopped": stopped, "why": _why(stopped, history, budget, sizes),
        "all_busy": bool(history) and all(h["busy"] for h in history),
        "seconds": round(clock() - staging.started, 3), "history": history,
    }
    return done, pooled, record


class _Staging:
    """The stages of one section as they run: what was measured (``done``, ``history``),
    the time spent, and the steps ``run`` takes in order."""

    def __init__(self, spawn: Callable[[int, int, Room], Stage], section: str, budget: float,
                 threads: int, probe_s: float | None, clock: Callable[[], float],
                 wait: Callable[[float], bool]) -> None:
        self.spawn, self.section, self.budget, self.threads = spawn, section, budget, threads
        self.clock, self.wait = clock, wait
        self.questions = section in sections()
        self.started = clock()
        self.done: list[Stage] = []
        self.history: list[StageEntry] = []
        self.next_index, self.may_wait = 0, True
        self.probes = [probe_s] if probe_s is not None else []
        self.closings: list[float] = []  # what each stage spent after its processes (its probe)

    def spent(self) -> float:
        """Seconds spent, and those the stage under way will spend after its processes,
        as much as the longest stage so far did."""
        return self.clock() - self.started + max(self.closings, default=0.0)

    def fits(self, count: int) -> bool:
        return _fits(_walls(self.done), count, self.spent(), self.budget)

    def room(self, records: Sequence[RunRecord]) -> bool:
        walls = _walls(self.done, records)
        if len(walls) < MIN_PROCESSES:
            return True
        first_record = (self.done[0].records if self.done else records)[0]
        return (not _nothing_here(self.section, first_record)
                and _fits(walls, 1, self.spent(), self.budget))

    def measure(self, number: int, count: int, retry: bool = False) -> Stage:
        began = self.clock()
        stage = self.spawn(self.next_index, count, self.room)
        self.closings.append(max(0.0, self.clock() - began - sum(_walls([stage]))))
        reasons = steadiness.busy(stage.load, self.threads, self.probes, stage.probe_s)
        self.history.append({
            "stage": number + 1, "retry": retry,
            "processes": [self.next_index, self.next_index + len(stage.records)],
            "cut_short": len(stage.records) < count and not _skipped(stage),
            "load": stage.load, "probe_s": stage.probe_s,
            "busy": bool(reasons), "busy_why": reasons})
        self.next_index += len(stage.records)
        self.done.append(stage)
        if stage.probe_s is not None:
            self.probes.append(stage.probe_s)
        return stage

    def measure_quiet(self, number: int, count: int) -> Stage:
        """Stage ``number``; measured on a busy machine, again after waiting (bounded) for
        it to quieten; a wait that timed out says the load stays: no more waiting."""
        stage = self.measure(number, count)
        if (self.questions and not _skipped(stage) and self.history[-1]["busy"]
                and self.may_wait and not _nothing_here(self.section, self.done[0].records[0])):
            left = max(0.0, self.budget - (self.clock() - self.started))
            self.may_wait = self.wait(min(WAIT_LIMIT_S, WAIT_SHARE * self.budget, left))
            self.history[-1]["waited_for_quiet"] = self.may_wait
            if self.fits(count):
                stage = self.measure(number, count, retry=True)
        return stage

    def look(self, band: float, confidence: float, sizes: list[int], number: int,
             futility: bool) -> str | None:
        """Judge what is pooled so far; why to stop now, or None to go on."""
        pooled = _pool(self.history)
        rows = [row for s, keep in zip(self.done, pooled) if keep for row in s.rows]
        first = self.done[0].records[0]
        m = measurements(rows, self.section, first, band, confidence, len(sizes))
        answers = look(m, self.section, first)
        self.history[-1]["look"] = answers
        waited_for = [a for a in answers if a["kind"] == "claim"]
        if not waited_for:
            return NOTHING
        if all(a["decided"] for a in waited_for):
            return DECIDED
        if self.history[-1]["cut_short"]:
            return BUDGET
        now = len({row["process"] for row in rows})
        then = now + _affordable(sum(sizes[number + 1:]), _walls(self.done), self.spent(),
                                 self.budget)
        if futility and then > now:
            found = reach(m, self.section, first,
                          [a for a in waited_for if not a["decided"]], now, then)
            self.history[-1]["reach"] = found
            if not found["could_decide"]:
                return OUT_OF_REACH
        return None


def _nothing_here(section: str, record: RunRecord) -> bool:
    """Whether ``section`` has claims or A/A checks, none of which applies where
    ``record`` ran (a section without any is run for its processes: not this)."""
    if section not in sections() or any(pair[1] == section for pair in checks.AA_PAIRS):
        return False
    own = {c.name for c in claims.CLAIMS if c.section == section}
    return not own & set(claims.applying_claims(record["framework"], record))


def _skipped(stage: Stage) -> bool:
    return any(r.get("status") != "ok" for r in stage.records)


def _walls(stages: Sequence[Stage], records: Sequence[RunRecord] = ()) -> list[float]:
    """The wall times of the stages' processes, then of ``records``, in order."""
    return [r.get("wall_seconds") or 0.0
            for r in [*(r for s in stages for r in s.records), *records]]


def _fits(walls: Sequence[float], count: int, spent: float, budget: float) -> bool:
    """Whether ``count`` more processes fit, each at the median of ``walls`` or the last
    of them, whichever is longer (the median: a first process that also compiles, say,
    is not what the next costs; the last: a machine that just slowed down is judged by
    its latest process)."""
    per_process = max(statistics.median(walls), walls[-1]) if walls else 0.0
    return spent + count * per_process <= budget


def _affordable(planned: int, walls: Sequence[float], spent: float, budget: float) -> int:
    """How many of the ``planned`` further processes the budget buys (``_fits``'s
    estimate of a process), none where not even a next stage's first ``MIN_PROCESSES``
    would fit (it would not be started)."""
    count = next((k for k in range(planned, 0, -1) if _fits(walls, k, spent, budget)), 0)
    return count if count >= min(planned, MIN_PROCESSES) else 0


def _pool(history: list[StageEntry]) -> list[bool]:
    """The quiet stages, where there is one; else every stage (all measured busy)."""
    quiet = [not h["busy"] for h in history]
    return quiet if any(quiet) else [True] * len(history)


def _why(stopped: str, history: list[StageEntry], budget: float,
         sizes: list[int]) -> str:
    answers = next((h["look"] for h in reversed(history) if h.get("look")), [])
    open_ = [a["question"] for a in answers if not a["decided"] and a["kind"] == "claim"]
    if stopped == DECIDED:
        return "every claim decided: " + ", ".join(
            f"{a['question']} {a['verdict']}" for a in answers)
    if stopped == BUDGET and history and history[-1]["cut_short"]:
        last = history[-1]
        ran = last["processes"][1] - last["processes"][0]
        return (f"{budget:g} s spent after {ran} of its {sizes[last['stage'] - 1]} "
                f"processes of stage {last['stage']}; undecided: " + ", ".join(open_))
    if stopped == BUDGET:
        return (f"not even {MIN_PROCESSES} processes of the next stage would fit in "
                f"{budget:g} s; undecided: " + ", ".join(open_))
    if stopped == MAX_STAGES:
        return "every planned stage ran; undecided: " + ", ".join(open_)
    if stopped == OUT_OF_REACH:
        found = history[-1]["reach"]
        return (f"at the estimates so far, a look at {found['processes']} processes (what "
                f"the plan and {budget:g} s still allow) would not decide: " + "; ".join(
                    f"{a['question']} {a['ratio']:.3g} [{a['now'][0]:.3g}–{a['now'][1]:.3g}], "
                    f"about [{a['then'][0]:.3g}–{a['then'][1]:.3g}] there"
                    for a in found["projected"]))
    if stopped == NOTHING:
        return "nothing here for more data to decide (no claim applies or was measured)"
    return "the section was skipped"


def wait_for_quiet(limit: float, poll: float = WAIT_POLL_S) -> bool:
    """Wait until other programs use under ``steadiness.BUSY_CORES`` of a core over a
    ``poll`` window, at most ``limit`` seconds; whether the machine quietened."""
    deadline = time.monotonic() + limit
    while time.monotonic() + poll <= deadline:
        window = steadiness.Window()
        time.sleep(poll)
        others = window.close().get("others_cores")
        if others is None or others <= steadiness.BUSY_CORES:
            return True
    return False


def summary_text(record: StagesRecord) -> str:
    """One line for the report: how many stages a section took and why it stopped."""
    stages = record.get("count", 1)
    text = (f"{stages} stage{'s' if stages != 1 else ''}, {record.get('processes_pooled')} "
            f"processes pooled; stopped: {record.get('stopped')} ({record.get('why')})")
    busy = [h for h in record.get("history", []) if h.get("busy")]
    if busy:
        text += f"; {len(busy)} stage(s) measured on a busy machine"
        if not record.get("all_busy"):
            text += ", set aside"
        else:
            text += (", pooled with each other" if len(busy) > 1 else ", kept") + \
                " (busy throughout)"
    confidence = record.get("confidence_per_look")
    if confidence and not math.isnan(confidence):
        text += f"; each look at {confidence:.1%} ({record.get('correction')})"
    return text
