"""The manager of a section's measurement (docs/design.md, "Worker and manager").

A section script is a worker: in its framework's environment it measures and writes
samples and a run record, and nothing it imports judges a claim. This module, in the
workflow's environment (modern numpy and scipy), is the manager: it holds the host's
timing lock, measures how steady the machine is before and after, starts the worker in
fresh processes, one after the other, in the stages of ``d2lperf.stages`` (which judge
the section's claims after each stage, as the report will), and writes the section's
samples and run record from the workers'. With one process (``--processes 1``: the
training sections, or a preset that asks for one) it runs the worker once, no stages.

Its own options are the ones that shape the measurement as a whole (``--processes``,
``--budget-seconds``, ``--band``); the outputs, threads and probe length are the
worker's too; every other option goes to the worker as it is. The worker's run record
carries the manager's options in its ``parameters`` (``processes``, ``budget_seconds``,
``band``: what was asked, beside what ran).

Nothing outlives its section, nor waits without end (docs/design.md, "One timing at a time
per host; nothing outlives its section"). Each worker process runs in a session of its own
within a limit (``worker_limit``): past it, it is killed with every process it started and
the section fails, saying which process, the limit and what to do. The manager ends with
its job: SIGTERM when the job's shell dies kills its workers and writes nothing, and it
writes its outputs only while that shell still lives.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from d2lperf import children, hostlock, progress, sections, stages, steadiness
from d2lperf.arguments import (
    DEFAULT_BAND,
    DEFAULT_BUDGET_S,
    positive_float,
    positive_fraction,
    positive_int,
)
from d2lperf.frameworks import REGISTRY
from d2lperf.records import RunRecord, SampleRow, Snapshot
from d2lperf.results import read_json, write_run

PACKAGE_ROOT = str(Path(__file__).resolve().parents[1])  # the folder holding d2lperf

STAGE_PROBE_REPEATS = 3  # the threaded probe after each stage (before and after: 5)
MANAGER_OPTIONS = ("processes", "budget_seconds", "band")  # added to the worker's parameters
# A worker process may run for its section's budget and this much more: a process costs
# its start (the interpreter, the framework's import, a first compile: 8-10 s for PyTorch
# here) beyond its share of the budget, and the first processes of a section run whatever
# the budget (the CI preset's 2 s buys processes of 10 s on a busy 2-core machine). Ten
# minutes past its whole section's budget a process is hung, not slow.
WORKER_MARGIN_S = 600.0
# Within that limit, a worker says it is alive (``progress.beat``: every line, sample, and
# second a group of its waits on live processes); one silent for this many times its
# longest silence so far, and never less than the floor (twice the minute a worker's
# longest step goes without a line), is hung and killed.
SILENCE_FACTOR = 10
SILENCE_FLOOR_S = 2 * progress.EVERY_S
TIMED_OUT = 124  # a worker killed at its limit: the exit code `timeout` gives
OUTPUTS_MISSING = 1  # a worker that ended well without writing what it was asked to
ORPHANED = 1  # the job ended before the manager could write: nothing written


class WorkerFailed(Exception):
    """A worker process ended non-zero: the section ends with its exit code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Measure one section: its worker script in fresh processes, in stages "
                    "until its claims are decided or its budget is spent. Options not "
                    "listed here go to the worker.")
    p.add_argument("--section", required=True, help="the section (its rule's name)")
    p.add_argument("--framework", required=True, choices=sorted(REGISTRY))
    p.add_argument("--script", required=True, type=Path, help="the section's worker script")
    p.add_argument("--python", help="the framework's interpreter (default: the registry's)")
    p.add_argument("--csv", required=True, help="tidy CSV of raw samples to write")
    p.add_argument("--sidecar", required=True, help="JSON run record to write")
    p.add_argument("--threads", type=positive_int, default=1,
                   help="OpenMP/BLAS threads of the worker and the probe (default: 1)")
    p.add_argument("--probe-seconds", type=positive_float, default=0.2,
                   help="length of the steadiness probe run before and after (default: 0.2)")
    p.add_argument("--processes", type=positive_int, default=None,
                   help="fresh processes of the first stage (default: 1, no stages)")
    p.add_argument("--budget-seconds", type=positive_float, default=None,
                   help="seconds the section may spend on further stages while its claims "
                        f"are undecided (default: {DEFAULT_BUDGET_S:g})")
    p.add_argument("--band", type=positive_fraction, default=None,
                   help=f"practical band the stages decide against (default: {DEFAULT_BAND:g})")
    p.add_argument("--worker-limit-seconds", type=positive_float, default=None,
                   help="seconds a worker process may run before it is killed, with every "
                        "process it started, and the section fails (default: the budget plus "
                        f"{WORKER_MARGIN_S:g} s, at most the section's cluster time limit; "
                        "without a budget, that time limit)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args, worker_args = parser().parse_known_args(argv)
    job = children.end_with_parent()  # its job's shell: when it dies, SIGTERM here
    python = args.python or REGISTRY[args.framework].default_interpreter
    progress.introduce(args.section, REGISTRY[args.framework].label)
    try:
        lock = hostlock.acquire(args.section)
    except hostlock.LockError as error:
        progress.say(f"{args.section}: {error}", out=sys.stderr)
        return 1
    try:
        before = steadiness.snapshot(args.probe_seconds, threads=args.threads)
        worker = Worker(python, args, worker_args)
        if (args.processes or 1) > 1:
            record, rows = _run_stages(args, worker, before)
        else:
            with children.temporary_folder(f"{args.section}-processes-") as tmp:
                record, rows = worker.run(Path(tmp), 0)
        record["parameters"] = {**record.get("parameters", {}), **manager_options(args)}
        after = steadiness.snapshot(args.probe_seconds, threads=args.threads)
        record["steadiness"] = steadiness.summary(before, after)
    except WorkerFailed as failed:
        progress.say(str(failed), out=sys.stderr)
        return failed.code
    finally:
        hostlock.release(lock)
    if children.orphaned(job):  # its job ended (and its outputs were restored): hands off
        print(f"{args.section}: the job that started this section (pid {job}) has ended; "
              f"nothing written to {args.csv} or {args.sidecar}", file=sys.stderr, flush=True)
        return ORPHANED
    from d2lperf.results import RecordError, check_run, section_folder

    try:  # a record no later step can read never replaces the last good one
        check_run(record, "the run record of this section's workers",
                  section_folder(args.section, args.framework))
    except RecordError as error:
        progress.say(f"{args.section}: {error}; nothing written: {args.csv} and "
                     f"{args.sidecar} keep the last good run", out=sys.stderr)
        return 1
    write_run(args.csv, args.sidecar, rows, record)  # the workers' rows, in the same columns
    return 0


def worker_limit(args: argparse.Namespace) -> tuple[float, str]:
    """How long one worker process may run, and why that long: ``--worker-limit-seconds``
    where given; else the section's budget plus ``WORKER_MARGIN_S``, never more than the
    time its cluster job asks for (``sections.Section.runtime``), which is the limit of a
    section without a budget (one process: the training sections, the ceilings)."""
    if args.worker_limit_seconds is not None:
        return args.worker_limit_seconds, "--worker-limit-seconds"
    entry = sections.SECTIONS.get(args.section)
    runtime_s = 60.0 * (entry.runtime if entry else sections.Section.runtime)
    job = f"the {runtime_s / 60:g} min its cluster job asks for"
    budget = manager_options(args).get("budget_seconds")
    if budget is None or budget + WORKER_MARGIN_S > runtime_s:
        return runtime_s, job
    return budget + WORKER_MARGIN_S, (f"the section's budget of {budget:g} s plus "
                                      f"{WORKER_MARGIN_S:g} s")


def manager_options(args: argparse.Namespace) -> dict[str, object]:
    """The manager's options as the run record keeps them: all three where stages ran
    (the defaults they ran with filled in), else those given."""
    staged = (args.processes or 1) > 1
    defaults = {"budget_seconds": DEFAULT_BUDGET_S, "band": DEFAULT_BAND} if staged else {}
    return {key: getattr(args, key) if getattr(args, key) is not None else defaults[key]
            for key in MANAGER_OPTIONS if getattr(args, key) is not None or key in defaults}


def worker_environment() -> dict[str, str]:
    """This environment, with the folder holding this d2lperf first on PYTHONPATH: a worker
    is a script started by its path in its framework's interpreter, which may have no
    d2lperf installed (a GPU image's Python, a conda environment) or another copy of it, and
    must import the very package its manager runs (a checkout or a copy of the workflow
    measures with its own code). Its own children inherit it."""
    rest = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [PACKAGE_ROOT, rest]))}


class Worker:
    """The section's script in its framework's interpreter, one fresh process per call,
    each in a session of its own and within ``worker_limit``."""

    def __init__(self, python: str, args: argparse.Namespace, worker_args: list[str]) -> None:
        self.command = [python, str(args.script), *worker_args,
                        "--threads", str(args.threads),
                        "--probe-seconds", str(args.probe_seconds)]
        self.section = args.section
        self.processes = args.processes or 1
        self.limit, self.why_limit = worker_limit(args)

    def run(self, tmp: Path, index: int) -> tuple[RunRecord, list[SampleRow]]:
        """Process ``index``: its run record and its rows. A process that fails ends the
        section with its exit code (a usage error stays a usage error); one past its limit,
        or stopped with the manager, is killed with every process it started."""
        csv_path, sidecar = tmp / f"{index}.csv", tmp / f"{index}.json"
        heartbeat = tmp / f"{index}.alive"
        command = [*self.command, "--process", str(index),
                   "--csv", str(csv_path), "--sidecar", str(sidecar)]
        process = subprocess.Popen(command, preexec_fn=children.die_with_parent,
                                   env={**worker_environment(),
                                        progress.HEARTBEAT: str(heartbeat)},
                                   start_new_session=True, pass_fds=progress.console_fds())
        name = f"process {index + 1} of {self.processes} (pid {process.pid})"
        try:
            code, silence = watch(process, self.limit, heartbeat)
        except BaseException:  # stopped (SIGTERM, Ctrl-C, its job's end): it goes too
            children.kill_group(process.pid)
            process.wait()
            raise
        if code is None:
            children.kill_group(process.pid)
            process.wait()
        if silence:
            raise WorkerFailed(TIMED_OUT, (
                f"{name} made no progress for {silence} and was killed, with every process "
                "it started: it hung. Look at the end of this section's log for its last "
                "lines, then run it again"))
        if code is None:
            raise WorkerFailed(TIMED_OUT, (
                f"{name} ran past its limit of {self.limit:g} s ({self.why_limit}) and was "
                "killed, with every process it started: it hung, or this machine is far "
                "slower than the preset assumes. Look at the end of this section's log for "
                "its last lines, then run it again (a larger budget_seconds in the preset "
                "raises the limit)"))
        if code != 0:
            code = code if code > 0 else 128 - code
            raise WorkerFailed(code, f"{name} failed with exit code {code}")
        return _outputs(name, csv_path, sidecar)


def watch(process: subprocess.Popen, limit: float, heartbeat: Path) -> tuple[int | None, str]:
    """Wait for ``process`` to end within ``limit`` seconds, while it beats (``heartbeat``:
    the file it writes anew, holding its longest silence so far). Returns (its exit code,
    or None where it was still running; why it was given up, where it fell silent for
    ``SILENCE_FACTOR`` times its longest silence, at least ``SILENCE_FLOOR_S``). It wakes
    only when a bound falls due, never beside a timing in between."""
    started = time.time()
    while True:
        try:
            last, longest = heartbeat.stat().st_mtime, float(heartbeat.read_text() or 0)
        except (OSError, ValueError):  # no beat yet (or one half written): from its start
            last, longest = started, 0.0
        allowed = max(SILENCE_FLOOR_S, SILENCE_FACTOR * longest)
        now = time.time()
        if now - last >= allowed:
            return None, (f"{now - last:.0f} s (its longest silence before was "
                          f"{longest:.3g} s; allowed: {SILENCE_FACTOR} times that, at least "
                          f"{SILENCE_FLOOR_S:g} s)")
        remaining = started + limit - now
        if remaining <= 0:
            return None, ""
        code = children.wait(process, min(remaining, last + allowed - now))
        if code is not None:
            return code, ""


def _outputs(name: str, csv_path: Path, sidecar: Path) -> tuple[RunRecord, list[SampleRow]]:
    """What worker ``name`` wrote, its run record and rows; WorkerFailed, naming the file
    and what to do, where it ended well without writing them whole."""
    advice = ("; look at this section's log for what it printed (a worker writes both "
              "files before it exits), then run it again")
    try:
        with open(csv_path, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except FileNotFoundError:
        raise WorkerFailed(OUTPUTS_MISSING, f"{name} exited 0 but wrote no samples: "
                                            f"{csv_path} is missing{advice}") from None
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise WorkerFailed(OUTPUTS_MISSING, f"{name} exited 0 but its samples {csv_path} "
                                            f"cannot be read ({error}){advice}") from None
    try:
        record = read_json(sidecar)
    except FileNotFoundError:
        raise WorkerFailed(OUTPUTS_MISSING, f"{name} exited 0 but wrote no run record: "
                                            f"{sidecar} is missing{advice}") from None
    except (OSError, ValueError) as error:
        raise WorkerFailed(OUTPUTS_MISSING, f"{name} exited 0 but its run record {sidecar} "
                                            f"is not JSON ({error}){advice}") from None
    if not isinstance(record, dict):
        raise WorkerFailed(OUTPUTS_MISSING, f"{name} exited 0 but its run record {sidecar} "
                                            f"is not a JSON object{advice}")
    return record, rows


def _run_stages(args: argparse.Namespace, worker: Worker,
                before: Snapshot) -> tuple[RunRecord, list[SampleRow]]:
    """The worker in fresh processes, in the stages of ``d2lperf.stages`` (``--processes``
    first, more while its claims are undecided and its budget allows); the first one's
    record (parameters, outputs, build) is the section's, with every process's own
    figures under ``processes`` and the stages under ``stages``. Only the pooled stages'
    rows are the section's; a stage set aside (measured on a busy machine) keeps its rows
    in its stage's entry. A process that skips (or refuses) ends the section there,
    skipped: no other process is started."""
    with children.temporary_folder(f"{args.section}-processes-") as tmp:
        def spawn(first: int, count: int, room: stages.Room) -> stages.Stage:
            return _run_stage(args, worker, Path(tmp), first, count, room)

        options = manager_options(args)
        done, pooled, staging = stages.run(
            spawn, args.processes, section=args.section, band=options["band"],
            budget=options["budget_seconds"], threads=args.threads,
            probe_s=statistics.median(before["probe_s"]))
    records = [r for stage in done for r in stage.records]
    rows = [row for stage, keep in zip(done, pooled) if keep for row in stage.rows]
    for entry, stage, keep in zip(staging["history"], done, pooled):
        if not keep:
            entry["set_aside_rows"] = stage.rows
    record = dict(records[0])
    statuses = {r["status"] for r in records}
    if statuses != {"ok"}:
        record["status"] = next(s for s in ("refused", "skipped") if s in statuses)
        rows = []
    record["processes"] = [
        {key: r.get(key) for key in ("pid", "started", "finished", "wall_seconds",
                                     "peak_rss_mb", "load_average_at_start",
                                     "load_average_at_end", "status")}
        for r in records]
    record["stages"] = staging
    record["started"], record["finished"] = records[0]["started"], records[-1]["finished"]
    record["wall_seconds"] = round(sum(r["wall_seconds"] for r in records), 3)
    return record, rows


def _run_stage(args: argparse.Namespace, worker: Worker, tmp: Path, first: int, count: int,
               room: stages.Room) -> stages.Stage:
    """Processes ``first`` to ``first + count - 1``, one after the other, while ``room``
    allows the next, with the cores other programs used meanwhile and the threaded probe
    after them."""
    records, rows = [], []
    window = steadiness.Window()
    for index in range(first, first + count):
        if records and not room(records):
            print(f"{args.section}: no room for process {index + 1} in the budget", flush=True)
            break
        progress.say(f"process {index + 1} (stage of {first + 1}-{first + count})")
        record, found = worker.run(tmp, index)
        records.append(record)
        rows += found
        if record["status"] != "ok":
            break  # skipped here means skipped in every process: the machine is the same
    load = window.close()
    probe = statistics.median(steadiness.probe(args.probe_seconds, STAGE_PROBE_REPEATS,
                                               threads=args.threads))
    return stages.Stage(records, rows, load, probe)
