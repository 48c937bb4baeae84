"""Groups of training processes, one per device, for the data-parallel section (every framework).

The section trains a model on N devices as today's frameworks do it: one process per
device, a collective between them (PyTorch's DistributedDataParallel, JAX's
``jax.distributed``). This module is the part that knows no framework: the section's
options, starting a group of N processes (``Group``: spawned, each told its rank, the
group's size and a rendezvous address on this host), telling every process of a group to
train a number of steps and waiting until all have (``Group.run``), and the coordinator
that times the groups side by side (``measure``). A framework's script gives the
process's own code (``target``: its process group, its replica, its share of the data,
then ``serve``) and what a device is there.

A process that dies (an exception, the kernel's OOM killer) ends the section at once
with an error naming it: the coordinator never waits on a pipe without looking whether
the process at its other end is still alive.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import socket
import time
from collections.abc import Callable
from typing import Any

from d2lperf import arguments, data, devices, timing, training, workloads
from d2lperf.arguments import positive_float, positive_int
from d2lperf.errors import NEEDS_GPUS, Skipped

MODELS = workloads.TRAINING_MODELS["data_parallel"]
POLL_S = 1.0  # how often the coordinator looks whether a process of a group has died
# A collective that waits longer than this has lost a process: far beyond the slowest
# step seen (a ResNet-18 step of 256 images on one CPU thread takes about 7 s).
COLLECTIVE_TIMEOUT_S = 600


def parser(description: str) -> argparse.ArgumentParser:
    """The section's command line in every framework: the common options, the training
    ones (the preset's keys, with the documents' values) and ``--on`` (default cpu)."""
    p = arguments.parser(description, section="data_parallel")
    train = p.add_argument_group("training")
    train.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS),
                       help="the nets to train (document: both)")
    train.add_argument("--images", type=positive_int, nargs="+", default=[8192, 2048],
                       help="images each timed sample trains, per model")
    train.add_argument("--learning-rates", type=positive_float, nargs="+", default=[0.2, 0.1],
                       help="learning rate of one device, per model, multiplied by the "
                            "device count (documents: LeNet 0.2, ResNet-18 0.1)")
    train.add_argument("--device-counts", type=positive_int, nargs="+", default=[1, 2, 4, 8],
                       help="device counts; those above the machine's are not run")
    train.add_argument("--batch-size", type=positive_int, default=256,
                       help="images per device and step (document: 256)")
    train.add_argument("--data-dir", default=None,
                       help="folder with Fashion-MNIST's four .gz files")
    train.add_argument("--train-limit", type=positive_int, default=None,
                       help="train on the first N training images only (default: all 60000)")
    devices.add_argument(p, default="cpu")
    return p


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pin(rank: int) -> int | None:
    """On a CPU a device is one core: the process of ``rank`` keeps only the rank-th of
    the cores it may use (Linux's affinity), so that a framework whose thread pools are
    sized by the machine (XLA's are, whatever its flags say) still computes on one core.
    Called first thing in a process, before the framework loads. Returns the core, or
    None where the system cannot pin."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cores = sorted(os.sched_getaffinity(0))
    core = cores[rank % len(cores)]
    os.sched_setaffinity(0, {core})
    return core


def serve(conn, train: Callable[[int], float]) -> None:
    """A process's side, once it is ready: say so, then ``train(steps)`` (which returns
    the mean training loss of those steps, after its device has finished them) each time
    the coordinator asks, until it says stop."""
    conn.send(("ready", None))
    while True:
        command, steps = conn.recv()
        if command == "stop":
            return
        conn.send(("done", train(steps)))


class Group:
    """N processes training one model data-parallel, started once (``startup``: seconds
    until the last of them is ready), told to train a number of steps at a time
    (``run``), stopped at the end. ``target(rank, world, address, on, model, options,
    conn)`` is a process's code; ``address`` a free ``host:port`` on this host."""

    def __init__(self, target: Callable[..., None], n: int, on: str, model: str,
                 options: dict[str, Any]) -> None:
        context = multiprocessing.get_context("spawn")
        address = f"127.0.0.1:{free_port()}"
        self.n, self.losses = n, []
        self.conns, self.processes = [], []
        started = time.perf_counter()
        for rank in range(n):
            mine, theirs = context.Pipe()
            process = context.Process(target=target, daemon=True, name=f"rank{rank}",
                                      args=(rank, n, address, on, model, options, theirs))
            process.start()
            theirs.close()  # a process that dies closes its end: recv then fails
            self.conns.append(mine)
            self.processes.append(process)
        self.replies()
        self.startup = time.perf_counter() - started

    def died(self, rank: int) -> RuntimeError:
        process = self.processes[rank]
        process.join(timeout=POLL_S)
        return RuntimeError(f"process {rank} of {self.n} died (exit code "
                            f"{process.exitcode}); its log is above")

    def replies(self) -> list:
        """Every process's reply, or an error naming the process that died."""
        found = []
        for rank, (conn, process) in enumerate(zip(self.conns, self.processes)):
            while not conn.poll(POLL_S):
                if not process.is_alive():
                    raise self.died(rank)
            try:
                found.append(conn.recv()[1])
            except EOFError:
                raise self.died(rank) from None
        return found

    def run(self, steps: int) -> None:
        for rank, conn in enumerate(self.conns):
            try:
                conn.send(("run", steps))
            except OSError:  # its end is closed: the process is gone
                raise self.died(rank) from None
        self.losses.append(self.replies()[0])

    def stop(self) -> None:
        for conn in self.conns:
            try:
                conn.send(("stop", 0))
            except OSError:  # it has died already
                pass
        for process in self.processes:
            process.join(timeout=60)
            if process.is_alive():
                process.kill()


def check(args: argparse.Namespace) -> list[int]:
    """The device counts asked for, in order; a usage error (exit 2) where the options
    disagree: a model without its images or learning rate, images that do not split into
    whole steps on every count (every count alike, so that machines compare), a data
    limit that leaves a device less than one batch."""
    if not len(args.models) == len(args.images) == len(args.learning_rates):
        arguments.usage_error(
            "--models, --images and --learning-rates need one value per model; got "
            f"{len(args.models)}, {len(args.images)} and {len(args.learning_rates)} values")
    counts = sorted(set(args.device_counts))
    for model, images in zip(args.models, args.images):
        for n in counts:
            if images % (args.batch_size * n):
                arguments.usage_error(
                    f"--images {images} for {model} does not split into whole steps of "
                    f"{args.batch_size} images on each of {n} devices: take a multiple of "
                    f"{args.batch_size * math.lcm(*counts)}")
    if args.train_limit and args.train_limit // counts[-1] < args.batch_size:
        arguments.usage_error(
            f"--train-limit {args.train_limit} leaves each of {counts[-1]} devices "
            f"{args.train_limit // counts[-1]} images, less than one batch of {args.batch_size}")
    return counts


# What links a group's processes, by device kind: ``design`` words it in the run record.
LINKS = {"gpu": "NCCL between GPUs", "cpu": "gloo between CPU processes of one thread"}


def measure(args: argparse.Namespace, rec: Any, target: Callable[..., None], *,
            gpus: int, names: Callable[[int], str], design: str) -> None:
    """The section's measurement, every framework alike: for each model, a group per
    device count that fits (on GPUs the ``gpus`` the framework sees, on a CPU the
    ``--threads`` cores of the timing job; the others not run, and the run record says
    why), each group's startup recorded apart and one untimed step
    (where a framework compiles its step, allocates its buffers and opens its links),
    then every group timed side by side (``timing.compare``: ``--warmup`` untimed
    samples, then ``--repeats`` rounds), each sample ``--images`` images."""
    counts = check(args)
    limit, kind = ((gpus, "GPUs") if args.on == "gpu"
                   else (args.threads, "cores (one process of one thread each)"))
    fitting = [n for n in counts if n <= limit]
    for n in counts:
        if n > limit:
            for model in args.models:
                rec.notes.setdefault("runs_not_run", {})[training.case_name(model, n)] = {
                    "devices": n, "reason": f"needs {n} devices, this machine has {limit} {kind}",
                    **({"needs": NEEDS_GPUS} if args.on == "gpu" else {})}
            print(f"{n} devices: not run, the machine has {limit} {kind}", flush=True)
    if not fitting:
        plural = "s" if counts[0] > 1 else ""
        raise Skipped(f"needs {counts[0]} device{plural}, found {limit} {kind}",
                      needs=NEEDS_GPUS if args.on == "gpu" else None)
    folder = data.found_or_exit(args.data_dir)
    rec.notes["design"] = design.format(links=LINKS[args.on])
    for model, images, lr in zip(args.models, args.images, args.learning_rates):
        options = {"seed": args.seed, "lr": lr, "batch_size": args.batch_size,
                   "folder": folder, "train_limit": args.train_limit}
        groups: dict[str, Group] = {}
        try:
            for n in fitting:
                case = training.case_name(model, n)
                groups[case] = group = Group(target, n, args.on, model, options)
                rec.samples(case, "startup", "s", [group.startup], devices=names(n))
                print(f"{case}: started in {group.startup:.1f} s", flush=True)
                group.run(1)  # one untimed step: compiles, allocates, connects the links
                group.losses.clear()
            cases = {case: (lambda g=g, s=images // (args.batch_size * g.n): g.run(s))
                     for case, g in groups.items()}
            samples = timing.compare(cases, lambda: None, warmup=args.warmup,
                                     rounds=args.repeats, seed=args.seed, process=args.process)
        finally:
            for group in groups.values():
                group.stop()
        for n in fitting:
            case = training.case_name(model, n)
            mine = [s for s in samples if s.case == case]
            rec.timings(mine, devices=names(n))
            rec.notes.setdefault("mean_training_loss", {})[case] = groups[case].losses
            best = images / min(s.value for s in mine)
            print(f"{case}: {best:.0f} images/s at best", flush=True)
        rec.notes.setdefault("images_per_sample", {})[model] = images
        rec.notes.setdefault("learning_rate_per_device_count", {})[model] = {
            str(n): lr * n for n in fitting}
