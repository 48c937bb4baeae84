"""How steady the machine was while a section measured, and whether a stage was busy
(docs/design.md, "Measured side by side").

Before and after each section: a fixed CPU probe (the same pure-Python work on
every machine and every day, about 0.2 s on the build machine, timed 5 times),
the load average, the run queue and the CPU time stolen by the hypervisor
(``/proc/stat``). A section whose probe moved by more than ``PROBE_MOVED``
between before and after, or whose steal exceeded ``STEAL_SHARE`` of the CPU time
in between, is flagged: its figures were taken on a machine that changed under
them. The probe's own figure lets two days' runs be related to each other.

The probe runs on as many processes at once as the timing has threads, and its
figure is the slowest of them, repeat by repeat: a multithreaded timing waits for
its slowest thread, so one busy core of two slows it, while a single-threaded
probe simply runs on the free core and sees nothing.

During a stage of fresh processes (``d2lperf.stages``), ``Window`` measures how
many cores other programs used: the machine's busy CPU time (``/proc/stat``)
minus this process's and its children's own. ``busy`` is the gate that decides
whether a stage's samples may be pooled with the others.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # this file also runs alone, isolated (-I): the probe's own processes
    from d2lperf.records import CpuTimes, Load, Snapshot, Steadiness

PROBE_REPEATS = 5
STEAL_SHARE = 0.05  # stolen share of all CPU time between before and after
# Loop iterations per nominal second of the probe: fixed, so that the same
# probe_seconds is the same work everywhere (measured once on the build machine).
PROBE_LOOPS_PER_SECOND = 32_000_000
# A stage is busy when other programs used more than this share of a core beyond the
# cores the timing's threads leave free: a quarter of a core taken from a timing
# thread already shows in two-thread timings (one busy core of two slows them 3-8x).
BUSY_CORES = 0.25
# ... or when its threaded probe ran this much slower than the median of the section's
# probes so far. A shared host's speed swings by itself: eight 2-process probes in a row on
# the quiet build machine read 0.22-0.37 s (the slowest 1.2x their median, 1.7x the
# fastest), so the fastest is no reference and a quarter is no threshold. A core taken
# away reads about twice (each probe process then shares a core). In four quiet runs of
# the verdict-stability bench (2026-12-02) the host alone swung a section's probe by
# +60%, +61% and +63% (other programs 0.000-0.007 cores), and at 60% each of those set a
# good stage aside; in every busy stage of four busy runs the other programs' CPU time
# (0.58-1.00 cores) had already caught the load. 80% sits between the two.
PROBE_SLOWER = 0.8
# A section is flagged when its probe after it ran this much slower, or faster, than
# before it: the same threshold, for the same reason (the host's own swing reaches +63%;
# at the 10% this flag had, the quiet reference runs flagged every framework unsteady).
PROBE_MOVED = PROBE_SLOWER
RUN_QUEUE_READINGS = 5
WORKER_START_DELAY_S = 0.15  # time for the probe's processes to start before they begin


def probe_work(loops: int) -> int:
    total = 0
    for i in range(loops):
        total += i & 7
    return total


def _time_probe(loops: int, repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        probe_work(loops)
        samples.append(time.perf_counter() - start)
    return samples


def probe(seconds: float, repeats: int = PROBE_REPEATS, threads: int = 1) -> list[float]:
    """The fixed CPU probe, timed ``repeats`` times (s), on ``threads`` processes at once:
    each sample is the slowest process's time for that repeat. Separate processes (not
    threads: the probe is pure Python) started fresh, so that the probe never forks a
    process that has a framework's threads running."""
    loops = max(1, round(seconds * PROBE_LOOPS_PER_SECOND))
    if threads <= 1:
        return _time_probe(loops, repeats)
    start_at = time.time() + WORKER_START_DELAY_S
    command = [sys.executable, "-I", os.path.abspath(__file__), "--probe-worker",
               str(loops), str(repeats), repr(start_at)]
    workers = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
               for _ in range(threads)]
    try:
        outputs = [w.communicate(timeout=60 + 20 * seconds * repeats)[0] for w in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    if any(w.returncode != 0 for w in workers):
        raise RuntimeError("the steadiness probe's worker processes failed")
    per_worker = [[float(v) for v in out.split()] for out in outputs]
    return [max(times) for times in zip(*per_worker)]


def _probe_worker(loops: int, repeats: int, start_at: float) -> None:
    """One of the threaded probe's processes: waits for the common start, prints its times."""
    time.sleep(max(0.0, start_at - time.time()))
    print(" ".join(repr(v) for v in _time_probe(loops, repeats)), flush=True)


def cpu_times() -> CpuTimes | None:
    """Aggregate CPU jiffies from /proc/stat: total, steal and busy (neither idle, iowait
    nor stolen); None where there is none."""
    try:
        with open("/proc/stat", encoding="utf-8") as handle:
            fields = handle.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    values = [int(v) for v in fields[1:]] + [0] * 10
    # user nice system idle iowait irq softirq steal guest guest_nice: guest time is
    # already counted in user and nice, so the total stops at steal.
    user, nice, system, idle, iowait, irq, softirq, steal = values[:8]
    return {"total": sum(values[:8]), "steal": steal,
            "busy": user + nice + system + irq + softirq}


def run_queue(readings: int = RUN_QUEUE_READINGS, interval: float = 0.02) -> list[int] | None:
    """Runnable processes other than this one (/proc/stat procs_running - 1), read a few
    times: the instantaneous queue the load average smooths over minutes."""
    found = []
    for index in range(readings):
        try:
            with open("/proc/stat", encoding="utf-8") as handle:
                line = next((x for x in handle if x.startswith("procs_running ")), None)
        except OSError:
            return None
        if line is None:
            return None
        found.append(max(0, int(line.split()[1]) - 1))
        if index + 1 < readings:
            time.sleep(interval)
    return found


def snapshot(seconds: float, threads: int = 1) -> Snapshot:
    """The machine's state now: the run queue, probe samples on ``threads`` processes,
    load average, CPU counters."""
    try:
        load = [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        load = None
    queue = run_queue()
    return {"run_queue": queue, "probe_s": probe(seconds, threads=threads),
            "probe_threads": threads, "load_average": load, "cpu_times": cpu_times()}


def flags_for(probe_before: float, probe_after: float, steal: float | None) -> list[str]:
    """Why a section counts as measured on an unsteady machine (empty: it does not), from
    its probe's medians before and after and the stolen share between them. The report
    asks again of a record's figures, so that an older record is read by today's rule."""
    flags = []
    moved = probe_after / probe_before - 1
    if max(probe_after / probe_before, probe_before / probe_after) > 1 + PROBE_MOVED:
        flags.append(f"the CPU probe moved {moved:+.0%} between before and after "
                     f"(its two times more than {1 + PROBE_MOVED:g}× apart)")
    if steal is not None and steal > STEAL_SHARE:
        flags.append(f"{steal:.1%} of the CPU time was stolen by the hypervisor "
                     f"(more than {STEAL_SHARE:.0%})")
    return flags


def recorded_flags(record: Steadiness) -> list[str]:
    """``flags_for`` a run record's steadiness, by today's rule."""
    return flags_for(record["probe_before_s"], record["probe_after_s"],
                     record.get("steal_share"))


def summary(before: Snapshot, after: Snapshot) -> Steadiness:
    """Probe medians, how much the probe moved, the stolen share, and the flags."""
    probe_before = statistics.median(before["probe_s"])
    probe_after = statistics.median(after["probe_s"])
    moved = probe_after / probe_before - 1
    steal = None
    if before.get("cpu_times") and after.get("cpu_times"):
        total = after["cpu_times"]["total"] - before["cpu_times"]["total"]
        stolen = after["cpu_times"]["steal"] - before["cpu_times"]["steal"]
        steal = stolen / total if total > 0 else 0.0
    flags = flags_for(probe_before, probe_after, steal)
    return {
        "before": before,
        "after": after,
        "probe_threads": before.get("probe_threads", 1),
        "probe_before_s": probe_before,
        "probe_after_s": probe_after,
        "probe_moved": moved,
        "steal_share": steal,
        "flags": flags,
        "steady": not flags,
    }


def _own_cpu_seconds() -> float:
    """CPU time of this process and of its children that have been waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class Window:
    """The cores other programs kept busy between ``Window()`` and ``close()``: the
    machine's busy CPU time minus this process's and its waited-for children's (a stage's
    section processes are waited for before it closes), over the wall time."""

    def __init__(self) -> None:
        self.start_cpu, self.start_own = cpu_times(), _own_cpu_seconds()
        self.start_wall = time.monotonic()

    def close(self) -> Load:
        wall = time.monotonic() - self.start_wall
        end_cpu, own = cpu_times(), _own_cpu_seconds() - self.start_own
        found: Load = {"wall_s": round(wall, 3), "own_cores": None,
                                 "others_cores": None, "cores": os.cpu_count() or 1}
        if self.start_cpu and end_cpu and wall > 0:
            busy = (end_cpu["busy"] - self.start_cpu["busy"]) / os.sysconf("SC_CLK_TCK")
            found["own_cores"] = round(own / wall, 3)
            found["others_cores"] = round(max(0.0, busy - own) / wall, 3)
        return found


def busy(load: Load, threads: int, earlier_probes: Sequence[float] = (),
         probe_s: float | None = None) -> list[str]:
    """Why a stage counts as measured on a busy machine (empty: it does not). ``load`` is
    a ``Window``'s figures; ``probe_s`` the stage's threaded probe after it, judged
    against the median of the section's earlier probes."""
    why = []
    others, cores = load.get("others_cores"), load.get("cores") or 1
    spare = max(0, cores - threads)
    if others is not None and others > spare + BUSY_CORES:
        why.append(f"other programs kept {others:.2f} cores busy while it measured "
                   f"({cores} cores, {threads} timing thread(s))")
    typical = statistics.median(earlier_probes) if earlier_probes else None
    if typical and probe_s and probe_s > (1 + PROBE_SLOWER) * typical:
        why.append(f"the {threads}-process CPU probe ran {probe_s / typical - 1:+.0%} "
                   "slower than the section's median")
    return why


def _die_with_parent() -> None:
    """In the child, before exec: the kernel kills it when its parent dies (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@contextlib.contextmanager
def busy_cores(count: int = 1, seconds: float = 600.0) -> Iterator[list[int]]:
    """Keep ``count`` cores busy (a pure-Python spin each, pinned to the last cores where
    the machine allows) for at most ``seconds``: each spin ends on its own at its deadline,
    dies with this process, and is killed when the block ends, however it ends. Yields
    the spins' process ids. For the busy-machine benchmark and the gate's tests."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    spins = []
    try:
        for index in range(count):
            pin = cores[-1 - index % len(cores)] if cores else None
            spins.append(subprocess.Popen(
                [sys.executable, "-I", os.path.abspath(__file__), "--spin", repr(seconds),
                 "" if pin is None else str(pin)], preexec_fn=_die_with_parent))
        yield [s.pid for s in spins]
    finally:
        for spin in spins:
            if spin.poll() is None:
                spin.kill()
            spin.wait()


def _spin(seconds: float, pin: str) -> None:
    if pin and hasattr(os, "sched_setaffinity"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {int(pin)})
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        probe_work(10_000)


if __name__ == "__main__":  # the probe's and the busy load's own processes
    if sys.argv[1] == "--probe-worker":
        _probe_worker(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
    elif sys.argv[1] == "--spin":
        _spin(float(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "")
