"""The timing harness: warm-up, side-by-side rounds, synchronisation before the clock stops.

MXNet's front end only queues work; a timing that stops the clock before
``nd.waitall()`` measures the queue, not the work. ``compare`` and ``measure``
therefore call ``sync`` inside every timed region. The one exception, measuring
the queue on purpose (the asynchronous-computation section), is spelled out
(``queue_only`` / ``clock_stops_before_sync=True``); ``sync`` still runs before
the next sample so that no sample inherits another's queued work.

Cases that are compared are measured side by side (docs/design.md, "Measured side by side"):
``compare`` warms every case up first, then runs rounds in which every case is
timed once, in balanced orders (``round_orders``: a Williams Latin square, seeded), so
that a drift of the machine or a first-in-process penalty spreads over all cases
instead of landing on whichever was measured first. Each sample keeps its round and its
position in the round.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass

Clock = Callable[[], float]
# Called after every sample and warm-up run, outside its clock: a worker's harness makes it
# the worker's heartbeat (progress.beat), so that its manager sees it is alive.
after_each_sample: Callable[[], None] = lambda: None  # noqa: E731


@dataclass(frozen=True)
class Sample:
    """One timed run of one case: which round, where in the round, how long (s)."""

    case: str
    round: int
    position: int
    value: float


class Steps:
    """A case made of consecutive steps timed separately, such as the document's
    "Workloads are queued" then "Workloads are finished": each step becomes a case
    of its own in the samples, and the sync runs untimed after the last step."""

    def __init__(self, steps: Mapping[str, Callable[[], object]]) -> None:
        if not steps:
            raise ValueError("Steps needs at least one step")
        self.steps = dict(steps)

    def __call__(self) -> None:
        for step in self.steps.values():
            step()


def williams_rounds(n: int) -> list[list[int]]:
    """Williams's balanced Latin square on n cases: n orders (2n for odd n, each also
    reversed) in which every case takes every position, and follows every other case,
    equally often."""
    base = [(j + 1) // 2 if j % 2 else (n - j // 2) % n for j in range(n)]  # 0, 1, n-1, 2, ...
    orders = [[(case + shift) % n for case in base] for shift in range(n)]
    return (orders + [order[::-1] for order in orders]) if n % 2 else orders


def round_orders(names: list[str], rounds: int, seed: int, process: int) -> Iterator[list[str]]:
    """The order of the cases in every round, in blocks that balance the order: within a
    block of ``williams_rounds`` each case runs in every position, and just after every
    other case, equally often. The same seed gives every run the same orders, so an effect
    of what ran just before (a cache or allocator left warm) would otherwise be one fixed
    bias between the cases, in every run alike. A generator seeded with (seed, process)
    assigns the cases to the square and shuffles the rounds of each block; the first round
    is led by ``names[process % n]``, so that the processes of a section take turns at
    leading. Made one block at a time, as the rounds run: what a count of rounds asks
    for is never built before the first is timed."""
    rng = random.Random(f"{seed}/{process}")
    n = len(names)
    cases = rng.sample(names, n)
    square = [[cases[i] for i in order] for order in williams_rounds(n)]
    block = rng.sample(square, len(square))  # the first block, its lead moved to round 0
    lead = next(i for i, order in enumerate(block) if order[0] == names[process % n])
    block[0], block[lead] = block[lead], block[0]
    left = rounds
    while left > 0:
        yield from block[:left]
        left -= len(block)
        block = rng.sample(square, len(square))


def aa_period(process: int) -> int:
    """Which order of an A/A pair's two copies ``process`` measures (0 or 1): the one
    rule ``aa_roles`` swaps by and ``stats.crossover_estimate`` groups by."""
    return process % 2


def aa_roles(first, second, process: int) -> tuple:
    """The two copies of an A/A pair, as (the case, its twin): swapped in every other
    process. Whatever tells the copies apart (which was built first, what else shares
    its weights) then cancels out between processes instead of biasing the pair."""
    return (first, second) if aa_period(process) == 0 else (second, first)


def compare(
    cases: Mapping[str, Callable[[], object] | Steps],
    sync: Callable[[], object],
    *,
    warmup: int,
    rounds: int,
    seed: int,
    process: int = 0,
    clock: Clock = time.perf_counter,
    queue_only: Collection[str] = (),
) -> list[Sample]:
    """Time every case once per round, side by side; return every sample.

    Every case first runs ``warmup`` times (each followed by ``sync``), before any
    timed round, so no case is timed while another is still cold. Within a round
    the order comes from ``round_orders``. ``sync`` runs inside every timed region
    except for the ``queue_only`` cases, whose clock stops first, on purpose.
    """
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if not cases:
        raise ValueError("compare needs at least one case")
    unknown = set(queue_only) - set(cases)
    if unknown:
        raise ValueError(f"queue_only names unknown cases: {', '.join(sorted(unknown))}")
    for work in cases.values():
        for _ in range(warmup):
            result = work()  # noqa: F841  (held until the sync: see measure)
            sync()
            after_each_sample()
    samples = []
    for index, order in enumerate(round_orders(list(cases), rounds, seed, process)):
        for position, name in enumerate(order):
            work = cases[name]
            if isinstance(work, Steps):
                samples += _time_steps(work, sync, clock, index, position)
                continue
            start = clock()
            result = work()  # noqa: F841  (held until the sync: see measure)
            if name in queue_only:
                stop = clock()
                sync()
            else:
                sync()
                stop = clock()
            del result
            samples.append(Sample(name, index, position, stop - start))
            after_each_sample()  # after the clock: the manager's watch sees a live worker
    return samples


def _time_steps(steps: Steps, sync, clock: Clock, index: int, position: int) -> list[Sample]:
    samples = []
    start = clock()
    for name, step in steps.steps.items():
        step()
        stop = clock()
        samples.append(Sample(name, index, position, stop - start))
        start = stop
    sync()
    return samples


def measure(
    work: Callable[[], object],
    sync: Callable[[], object],
    *,
    warmup: int,
    repeats: int,
    clock: Clock = time.perf_counter,
    clock_stops_before_sync: bool = False,
) -> list[float]:
    """Time ``work`` ``repeats`` times after ``warmup`` untimed runs; return every sample (s).

    What ``work`` returns is held until ``sync`` has run, then let go outside the timed
    region: a framework whose sync waits for the arrays still alive (JAX has no global
    barrier) would otherwise find the result gone, and stop the clock while its work
    still runs."""
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for _ in range(warmup):
        result = work()  # noqa: F841  (held until the sync)
        sync()
        after_each_sample()
    samples = []
    for _ in range(repeats):
        start = clock()
        result = work()  # noqa: F841  (held until the sync)
        if clock_stops_before_sync:
            stop = clock()
            sync()
        else:
            sync()
            stop = clock()
        del result
        samples.append(stop - start)
        after_each_sample()
    return samples


class Stopwatch:
    """One timed region that synchronises before the clock stops, for loops whose
    samples are epochs rather than repeats::

        with Stopwatch(nd.waitall) as epoch:
            for X, y in train_iter: ...
        print(epoch.seconds)
    """

    def __init__(self, sync: Callable[[], object], clock: Clock = time.perf_counter) -> None:
        self.sync, self.clock = sync, clock
        self.seconds = float("nan")

    def __enter__(self) -> Stopwatch:
        self.start = self.clock()
        return self

    def lap(self) -> float:
        """Seconds since the start, read without synchronising: queueing time, on purpose
        (the document's per-batch prints in the asynchronous-memory section)."""
        return self.clock() - self.start

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.sync()
            self.seconds = self.clock() - self.start
