import pytest

from d2lperf.timing import Stopwatch, measure


class Trace:
    """A fake clock and workload that log the order of events."""

    def __init__(self):
        self.events = []
        self.now = 0.0

    def clock(self):
        self.events.append("clock")
        return self.now

    def work(self):
        self.events.append("work")
        self.now += 1.0  # queued work: cheap

    def sync(self):
        self.events.append("sync")
        self.now += 10.0  # finishing the work: expensive


def test_sync_happens_before_the_clock_stops():
    t = Trace()
    samples = measure(t.work, t.sync, warmup=1, repeats=2, clock=t.clock)
    assert t.events == ["work", "sync"] + ["clock", "work", "sync", "clock"] * 2
    assert samples == [11.0, 11.0]


def test_measuring_the_queue_on_purpose_still_syncs_between_samples():
    t = Trace()
    samples = measure(t.work, t.sync, warmup=0, repeats=2, clock=t.clock,
                      clock_stops_before_sync=True)
    assert t.events == ["clock", "work", "clock", "sync"] * 2
    assert samples == [1.0, 1.0]


def test_every_raw_sample_is_kept():
    times = iter([0.0, 1.0, 5.0, 7.0, 10.0, 13.0])
    samples = measure(lambda: None, lambda: None, warmup=0, repeats=3,
                      clock=lambda: next(times))
    assert samples == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("warmup, repeats", [(-1, 3), (0, 0), (1, -2)])
def test_rejects_bad_counts(warmup, repeats):
    with pytest.raises(ValueError):
        measure(lambda: None, lambda: None, warmup=warmup, repeats=repeats)


def test_stopwatch_syncs_before_it_stops():
    t = Trace()
    with Stopwatch(t.sync, clock=t.clock) as watch:
        t.work()
    assert t.events == ["clock", "work", "sync", "clock"]
    assert watch.seconds == 11.0


def test_stopwatch_lap_reads_without_syncing():
    t = Trace()
    with Stopwatch(t.sync, clock=t.clock) as watch:
        t.work()
        assert watch.lap() == 1.0
    assert t.events == ["clock", "work", "clock", "sync", "clock"]


def test_what_work_returns_is_alive_while_the_sync_waits():
    """A sync that waits for the arrays still alive (JAX's) must find the result: it is
    held until the sync has run, and let go after the clock stopped."""
    import weakref

    from d2lperf import timing

    class Result:
        pass

    seen = []
    alive: list = []

    def work():
        result = Result()
        alive.append(weakref.ref(result))
        return result

    def sync():
        seen.append(alive[-1]() is not None)

    timing.measure(work, sync, warmup=1, repeats=2)
    timing.compare({"a": work, "b": work}, sync, warmup=1, rounds=2, seed=0)
    assert seen and all(seen)
    assert all(ref() is None for ref in alive)  # none kept past its sample
