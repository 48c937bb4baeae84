"""How steady the machine was while a section measured (docs/design.md, "Measured side by side").

Before and after each section: a fixed CPU probe (the same pure-Python work on
every machine and every day, about 0.2 s on the build machine, timed 5 times),
the load average, and the CPU time stolen by the hypervisor (``/proc/stat``).
A section whose probe moved by more than ``PROBE_MOVED`` between before and
after, or whose steal exceeded ``STEAL_SHARE`` of the CPU time in between, is
flagged: its figures were taken on a machine that changed under them. The
probe's own figure lets two days' runs be related to each other.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

PROBE_REPEATS = 5
PROBE_MOVED = 0.10  # the probe's median after vs before
STEAL_SHARE = 0.05  # stolen share of all CPU time between before and after
# Loop iterations per nominal second of the probe: fixed, so that the same
# probe_seconds is the same work everywhere (measured once on the build machine).
PROBE_LOOPS_PER_SECOND = 32_000_000


def probe_work(loops: int) -> int:
    total = 0
    for i in range(loops):
        total += i & 7
    return total


def probe(seconds: float, repeats: int = PROBE_REPEATS) -> list[float]:
    """The fixed CPU probe, timed ``repeats`` times (s)."""
    loops = max(1, round(seconds * PROBE_LOOPS_PER_SECOND))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        probe_work(loops)
        samples.append(time.perf_counter() - start)
    return samples


def cpu_times() -> dict[str, int] | None:
    """Aggregate CPU jiffies from /proc/stat: total and steal; None where there is none."""
    try:
        with open("/proc/stat", encoding="utf-8") as handle:
            fields = handle.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    values = [int(v) for v in fields[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice: guest time is
    # already counted in user and nice, so the total stops at steal.
    return {"total": sum(values[:8]), "steal": values[7] if len(values) > 7 else 0}


def snapshot(seconds: float) -> dict[str, Any]:
    """The machine's state now: probe samples, load average, CPU counters."""
    try:
        load = [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        load = None
    return {"probe_s": probe(seconds), "load_average": load, "cpu_times": cpu_times()}


def summary(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Probe medians, how much the probe moved, the stolen share, and the flags."""
    probe_before = statistics.median(before["probe_s"])
    probe_after = statistics.median(after["probe_s"])
    moved = probe_after / probe_before - 1
    steal = None
    if before.get("cpu_times") and after.get("cpu_times"):
        total = after["cpu_times"]["total"] - before["cpu_times"]["total"]
        stolen = after["cpu_times"]["steal"] - before["cpu_times"]["steal"]
        steal = stolen / total if total > 0 else 0.0
    flags = []
    if abs(moved) > PROBE_MOVED:
        flags.append(f"the CPU probe moved {moved:+.0%} between before and after "
                     f"(more than {PROBE_MOVED:.0%})")
    if steal is not None and steal > STEAL_SHARE:
        flags.append(f"{steal:.1%} of the CPU time was stolen by the hypervisor "
                     f"(more than {STEAL_SHARE:.0%})")
    return {
        "before": before,
        "after": after,
        "probe_before_s": probe_before,
        "probe_after_s": probe_after,
        "probe_moved": moved,
        "steal_share": steal,
        "flags": flags,
        "steady": not flags,
    }
