"""The side-by-side harness: warm-up first, shuffled rounds, positions, sync placement."""

import itertools
from collections import Counter

import pytest

from d2lperf.timing import Steps, compare, round_orders


class Clock:
    """A fake clock and workloads that log the order of events."""

    def __init__(self):
        self.events, self.now = [], 0.0

    def clock(self):
        return self.now

    def case(self, name, cost):
        def work():
            self.events.append(name)
            self.now += cost
        return work

    def sync(self):
        self.events.append("sync")
        self.now += 100.0


def test_every_case_warms_up_before_any_timed_round():
    c = Clock()
    cases = {"a": c.case("a", 1), "b": c.case("b", 2), "c": c.case("c", 3)}
    compare(cases, c.sync, warmup=2, rounds=3, seed=0, clock=c.clock)
    works = [e for e in c.events if e != "sync"]
    assert works[:6] == ["a", "a", "b", "b", "c", "c"]
    assert sorted(works[6:]) == ["a"] * 3 + ["b"] * 3 + ["c"] * 3


def test_each_round_times_every_case_once_and_records_its_position():
    c = Clock()
    cases = {name: c.case(name, cost) for name, cost in (("a", 1), ("b", 2), ("c", 3))}
    samples = compare(cases, c.sync, warmup=0, rounds=4, seed=7, clock=c.clock)
    assert len(samples) == 12
    for index in range(4):
        in_round = [s for s in samples if s.round == index]
        assert sorted(s.case for s in in_round) == ["a", "b", "c"]
        assert [s.position for s in in_round] == [0, 1, 2]
    # sync inside every timed region: each sample is its work plus one sync
    assert {s.case: s.value for s in samples} == {"a": 101, "b": 102, "c": 103}


def test_order_is_seeded_shuffled_and_the_lead_alternates_over_processes():
    names = ["a", "b", "c"]
    assert list(round_orders(names, 5, seed=1, process=0)) == list(
        round_orders(names, 5, seed=1, process=0))
    orders = [list(round_orders(names, 20, seed=1, process=p)) for p in range(6)]
    assert [o[0][0] for o in orders] == ["a", "b", "c", "a", "b", "c"]
    assert len({tuple(r) for o in orders for r in o}) > 1  # not one fixed order
    assert list(round_orders(names, 20, seed=1, process=0)) != list(
        round_orders(names, 20, seed=2, process=0))


def test_rounds_are_made_as_they_run_not_all_first():
    """repeats: 1000000000 grew the manager to 2 GB before any timing, every round's order
    built first: the orders come one block at a time, as many as asked for."""
    rounds = round_orders(["a", "b", "c"], 10**12, seed=1, process=0)
    first = list(itertools.islice(rounds, 12))
    assert first == list(round_orders(["a", "b", "c"], 12, seed=1, process=0))
    assert [len(list(round_orders(["a", "b"], n, seed=1, process=0))) for n in (1, 2, 3, 5)] \
        == [1, 2, 3, 5]


@pytest.mark.parametrize("names", [["a", "b"], ["a", "b", "c"], ["a", "b", "c", "d"]])
def test_order_balances_position_and_what_came_just_before(names):
    """In every full block of rounds each case takes each position, and follows each other
    case within a round, equally often: the same seed gives every run the same orders, so
    an effect of order (what ran just before) would otherwise be one fixed bias between
    the cases of every run (y/x of PyTorch's identical draws read 1.0025-1.0089 in 7 of 8
    runs when y followed the two-matrix draw 316 times against x's 256)."""
    block = len(names) * (2 if len(names) % 2 else 1)
    for process in range(4):
        orders = list(round_orders(names, 3 * block, seed=0, process=process))
        positions = Counter((name, i) for order in orders for i, name in enumerate(order))
        after = Counter(pair for order in orders for pair in zip(order, order[1:]))
        assert set(positions.values()) == {3 * block // len(names)}
        assert len(after) == len(names) * (len(names) - 1)
        assert len(set(after.values())) == 1, after


def test_queue_only_cases_stop_the_clock_before_the_sync_yet_sync_after():
    c = Clock()
    samples = compare({"queued": c.case("q", 1), "waited": c.case("w", 1)}, c.sync, warmup=0,
                      rounds=2, seed=0, clock=c.clock, queue_only=["queued"])
    values = {s.case: s.value for s in samples}
    assert values == {"queued": 1, "waited": 101}
    assert c.events.count("sync") == 4


def test_steps_become_cases_of_their_own_and_settle_untimed():
    c = Clock()
    steps = Steps({"queue": c.case("q", 1), "finish": c.case("f", 5)})
    samples = compare({"both": steps, "other": c.case("o", 2)}, c.sync, warmup=1, rounds=2,
                      seed=0, clock=c.clock)
    by_case = {}
    for s in samples:
        by_case.setdefault(s.case, []).append(s)
    assert set(by_case) == {"queue", "finish", "other"}
    assert [s.value for s in by_case["queue"]] == [1, 1]
    assert [s.value for s in by_case["finish"]] == [5, 5]  # the sync after is not timed
    assert all(a.position == b.position for a, b in zip(by_case["queue"], by_case["finish"]))


@pytest.mark.parametrize("warmup, rounds", [(-1, 3), (1, 0)])
def test_rejects_bad_counts(warmup, rounds):
    with pytest.raises(ValueError):
        compare({"a": lambda: None}, lambda: None, warmup=warmup, rounds=rounds, seed=0)


def test_rejects_no_cases_and_unknown_queue_only():
    with pytest.raises(ValueError):
        compare({}, lambda: None, warmup=0, rounds=1, seed=0)
    with pytest.raises(ValueError, match="unknown"):
        compare({"a": lambda: None}, lambda: None, warmup=0, rounds=1, seed=0,
                queue_only=["b"])


def test_an_aa_pair_swaps_its_copies_in_every_other_process():
    """The two copies of an A/A pair differ in how they came to be (built first or last;
    PyTorch's first copy also lends its weights to the scripted and compiled nets): each
    takes each label in half the processes, so such a difference cancels between
    processes instead of biasing the pair away from 1."""
    from d2lperf.timing import aa_roles

    roles = [aa_roles("first", "second", process) for process in range(4)]
    assert roles == [("first", "second"), ("second", "first")] * 2


def test_both_hybridize_scripts_time_the_aa_pair_with_swapped_roles():
    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "scripts/sections/hybridize"
    for framework in ("mxnet", "pytorch"):
        assert "timing.aa_roles(" in (folder / f"hybridize_{framework}.py").read_text(), framework
