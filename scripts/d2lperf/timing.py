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
