"""The timing harness: warm-up, repeats, synchronisation before the clock stops.

MXNet's front end only queues work; a timing that stops the clock before
``nd.waitall()`` measures the queue, not the work. ``measure`` therefore calls
``sync`` inside every timed region. The one exception, measuring the queue on
purpose (the asynchronous-computation section), is spelled out with
``clock_stops_before_sync=True``; ``sync`` still runs before the next sample so
that no sample inherits another's queued work.
"""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], float]


def measure(
    work: Callable[[], object],
    sync: Callable[[], object],
    *,
    warmup: int,
    repeats: int,
    clock: Clock = time.perf_counter,
    clock_stops_before_sync: bool = False,
) -> list[float]:
    """Time ``work`` ``repeats`` times after ``warmup`` untimed runs; return every sample (s)."""
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for _ in range(warmup):
        work()
        sync()
    samples = []
    for _ in range(repeats):
        start = clock()
        work()
        if clock_stops_before_sync:
            stop = clock()
            sync()
        else:
            sync()
            stop = clock()
        samples.append(stop - start)
    return samples


def measure_steps(
    steps: dict[str, Callable[[], object]],
    settle: Callable[[], object],
    *,
    warmup: int,
    repeats: int,
    clock: Clock = time.perf_counter,
) -> dict[str, list[float]]:
    """Time consecutive steps of one repetition separately; return every sample per step.

    For figures like the document's "Workloads are queued" / "Workloads are finished":
    the first step queues work, the last one waits for it (it must synchronise, e.g.
    ``y.wait_to_read()``). ``settle`` (``nd.waitall``) runs after each repetition,
    untimed, so no repetition inherits another's queued work.
    """
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for _ in range(warmup):
        for step in steps.values():
            step()
        settle()
    samples: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(repeats):
        start = clock()
        for name, step in steps.items():
            step()
            stop = clock()
            samples[name].append(stop - start)
            start = stop
        settle()
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
