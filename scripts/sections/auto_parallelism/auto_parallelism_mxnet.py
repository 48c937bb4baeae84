"""Automatic parallelism (seeds/000: CPU和GPU的并行计算, 计算和通信的并行计算).

Reproduces, in the document's order:
1. CPU和GPU的并行计算: ``run(x_cpu)`` alone, ``run(x_gpu)`` alone, then both queued
   back to back. MXNet's engine keeps one queue per device, so both together should
   take about as long as the slower one alone, not the sum;
2. 计算和通信的并行计算: ``run(x_gpu)`` alone, ``copy_to_cpu(y)`` of results already
   computed, then both queued back to back: each copy may start as soon as its own
   product is ready, so copying overlaps the products still being computed.

Each section starts with the document's 预热 (``run(x_cpu); run(x_gpu); nd.waitall()``),
each case also warms up on its own (the 预热 never warmed the copies), and every
timing ends in ``nd.waitall()`` before the clock stops.

Without a GPU, ``--on cpu`` runs the GPU half on ``cpu(1)``: a second engine queue
on the same processor, as seeds/000 ran its multi-device code. ``--on gpu`` on a
machine without one records the section as skipped.
"""

from __future__ import annotations

import argparse
import os
import sys

from d2lperf import devices, harness, timing, workloads
from d2lperf import mxnet as d2l
from d2lperf.describe import Stats
from d2lperf.results import Recorder

# MXNet 1.9's default number of temporary-space resources shared by all CPU contexts.
CPU_TEMP_COPY_DEFAULT = 4


def run(x, dots: int = 10):
    from mxnet import nd

    return [nd.dot(x, x) for _ in range(dots)]


def copy_to_cpu(x):
    import mxnet as mx

    return [y.copyto(mx.cpu()) for y in x]


def gpu_context(kind: str):
    """The context the document calls ``mx.gpu(0)``; Skipped without a GPU under --on gpu."""
    if kind == "cpu":
        # x_cpu's products run in cpu(0)'s queue: the stand-in needs a queue of its own.
        return d2l.devices("cpu", 2)[1]
    return d2l.devices("gpu", 1)[0]


def dot_flops(size: int, dots: int) -> float:
    return workloads.dot_gflop(size, dots) * 1e9


def timed(args: argparse.Namespace, rec: Recorder, cases: dict, ctxs: dict,
          flops: dict) -> dict[str, list[float]]:
    """Measure the cases side by side, record every sample with its case's devices, and
    note the achieved GFLOP/s of the cases that multiply."""

    samples = timing.compare(cases, d2l.sync, warmup=args.warmup, rounds=args.repeats,
                             seed=args.seed, process=args.process)
    values: dict[str, list[float]] = {}
    for case in cases:
        mine = [s for s in samples if s.case == case]
        rec.timings(mine, devices=d2l.names(ctxs[case]))
        values[case] = [s.value for s in mine]
        median = Stats(values[case]).median
        line = (f"{case}: median {median:.4f} s over {len(mine)} rounds on "
                f"{d2l.names(ctxs[case])}")
        if flops.get(case):
            gflops = flops[case] / median / 1e9
            rec.notes.setdefault("gflops", {})[case] = round(gflops, 3)
            line += f", {gflops:.1f} GFLOP/s"
        print(line, flush=True)
    return values


def cpu_and_gpu_parallel(args: argparse.Namespace, rec: Recorder, x_cpu, x_gpu) -> None:
    """CPU和GPU的并行计算."""
    cpu, gpu = x_cpu.context, x_gpu.context
    cpu_flops = dot_flops(args.cpu_size, args.dots)
    gpu_flops = dot_flops(args.gpu_size, args.dots)

    def run_on_both():
        run(x_cpu, args.dots)
        run(x_gpu, args.dots)

    timed(args, rec,
          {"cpu_only": lambda: run(x_cpu, args.dots), "gpu_only": lambda: run(x_gpu, args.dots),
           "cpu_and_gpu": run_on_both},
          {"cpu_only": [cpu], "gpu_only": [gpu], "cpu_and_gpu": [cpu, gpu]},
          {"cpu_only": cpu_flops, "gpu_only": gpu_flops, "cpu_and_gpu": cpu_flops + gpu_flops})


def compute_and_communication_parallel(args: argparse.Namespace, rec: Recorder, x_gpu) -> None:
    """计算和通信的并行计算."""
    import mxnet as mx

    gpu = x_gpu.context
    gpu_flops = dot_flops(args.gpu_size, args.dots)
    y = run(x_gpu, args.dots)

    def compute():
        # copy_to_cpu copies the y that the last compute made, as in the document
        y[:] = run(x_gpu, args.dots)

    def compute_and_copy():
        y = run(x_gpu, args.dots)
        copy_to_cpu(y)

    values = timed(
        args, rec,
        {"gpu_compute": compute, "copy_to_cpu": lambda: copy_to_cpu(y),
         "compute_and_copy": compute_and_copy},
        {"gpu_compute": [gpu], "copy_to_cpu": [gpu, mx.cpu()],
         "compute_and_copy": [gpu, mx.cpu()]},
        {"gpu_compute": gpu_flops, "compute_and_copy": gpu_flops})
    copied = args.dots * args.gpu_size**2 * workloads.FLOAT32_BYTES
    rec.notes["copy_to_cpu_bytes"] = copied
    rec.notes["copy_to_cpu_GBps"] = round(copied / Stats(values["copy_to_cpu"]).median / 1e9, 3)


def body(args: argparse.Namespace, rec: Recorder) -> None:
    gpu = gpu_context(args.on)  # first, so that a skipped run has done no work
    d2l.check_two_cpu_queues(args.on, args.threads)
    import mxnet as mx
    from mxnet import nd

    x_cpu = nd.random.uniform(shape=(args.cpu_size, args.cpu_size))
    x_gpu = nd.random.uniform(shape=(args.gpu_size, args.gpu_size), ctx=gpu)
    rec.notes["gpu_context"] = str(gpu)
    rec.notes["matrix_sizes"] = {"x_cpu": list(x_cpu.shape), "x_gpu": list(x_gpu.shape)}
    rec.notes["gflops_basis"] = "2 n^3 flop per nd.dot(x, x), over the case's median time"
    if args.on == "cpu":
        rec.notes["stand_in"] = (
            f"{gpu} stands in for gpu(0): the overlap figures measure two MXNet engine "
            f"queues, {mx.cpu(0)} and {gpu}, sharing one processor, not a CPU beside a GPU"
        )
        # MXNet pushes a CPU-to-CPU copy to its source context (src/ndarray/ndarray.cc,
        # CopyFromTo), a GPU-to-CPU copy to a separate copy queue.
        rec.notes["copy_queue"] = (
            f"copies from {gpu} to {mx.cpu(0)} run in {gpu}'s own queue, behind its "
            "products, so compute_and_copy cannot overlap the way a GPU's copy queue lets it"
        )
        # A GPU has a pool of its own (MXNET_GPU_TEMP_COPY); every CPU context shares one.
        copies = int(os.environ.get("MXNET_CPU_TEMP_COPY", CPU_TEMP_COPY_DEFAULT))
        rec.notes["temp_space"] = (
            f"nd.dot takes one of MXNET_CPU_TEMP_COPY={copies} temporary-space resources "
            f"that all CPU contexts share, handed out in turn as products are queued; each "
            f"product waits for the one queued {copies} places before it, whatever its "
            f"context, so in cpu_and_gpu {gpu} starts only when {mx.cpu(0)} has fewer than "
            f"{copies} products left"
        )

    def warm_up():  # the document's 预热
        run(x_cpu, args.dots)
        run(x_gpu, args.dots)
        nd.waitall()

    for _ in range(args.warmup):
        warm_up()
    cpu_and_gpu_parallel(args, rec, x_cpu, x_gpu)
    # the document's second program warms up again before its own timings
    for _ in range(args.warmup):
        warm_up()
    compute_and_communication_parallel(args, rec, x_gpu)


def build_parser() -> argparse.ArgumentParser:
    p = harness.parser(__doc__.splitlines()[0], section="auto_parallelism")
    devices.add_argument(p)
    return p


if __name__ == "__main__":
    sys.exit(harness.main("auto_parallelism", "mxnet", build_parser(), body))
