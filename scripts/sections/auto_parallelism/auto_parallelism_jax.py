"""Automatic parallelism, in JAX (seeds/000: CPU和GPU的并行计算, 计算和通信的并行计算).

The JAX twin of auto_parallelism_mxnet.py, with the same case names. JAX
queues work on every device, as MXNet's engine does, so the document's code carries over
as it is written. In the document's order:
1. CPU和GPU的并行计算: ``run(x_cpu)`` alone (``cpu_only``), ``run(x_gpu)`` alone
   (``gpu_only``), then both, the CPU's issued first as the document did
   (``cpu_and_gpu``): both queued, they run at once, and together should take about as
   long as the slower one alone;
2. 计算和通信的并行计算: the products alone (``gpu_compute``), copying them to the CPU with
   ``jax.device_put`` (``copy_to_cpu``), then both (``compute_and_copy``): each copy
   queued after its product, so copies overlap the products still running;
3. the book's PyTorch edition's variant, where there are two GPUs: 50 products of
   4000x4000 on each GPU alone (``gpu1_only``, ``gpu2_only``), then on both
   (``gpu1_and_gpu2``).

The cases of each block are compared round by round (timing.compare), every timing
ending in d2lperf.jax.sync (what the case returned, and every live array) before the
clock stops; each block warms up first (the document's 预热).

Without a GPU, ``--on cpu`` puts "the GPU" on JAX's second host device: two devices,
two queues, two cores, as the document's ``cpu(0)`` and ``cpu(1)``; the copies are
copies between the two host devices. ``--on gpu`` on a machine without one records the
section as skipped.
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import arguments, harness, timing, workloads
from d2lperf import jax as d2l
from d2lperf.describe import Stats
from d2lperf.results import Recorder, report

SEED = 0


def run(x, dots: int = 10) -> list:
    import jax.numpy as jnp

    return [jnp.dot(x, x) for _ in range(dots)]


def compare(args: argparse.Namespace, rec: Recorder, cases, flops: dict[str, float],
            where: dict[str, str]) -> None:
    """Time the cases round by round, record them, note the achieved GFLOP/s."""
    samples = timing.compare(cases, d2l.sync, warmup=args.warmup, rounds=args.repeats,
                             seed=args.seed, process=args.process)
    for case in cases:
        rec.timings([s for s in samples if s.case == case], devices=where[case])
    report(samples)
    for case, amount in flops.items():
        median = Stats([s.value for s in samples if s.case == case]).median
        rec.notes.setdefault("gflops", {})[case] = round(amount / median / 1e9, 3)


def cpu_and_gpu_parallel(args: argparse.Namespace, rec: Recorder, x_cpu, x_gpu) -> None:
    """CPU和GPU的并行计算."""
    cpu, gpu = d2l.names(x_cpu.devices()), d2l.names(x_gpu.devices())
    cpu_flops = workloads.dot_gflop(args.cpu_size, args.dots) * 1e9
    gpu_flops = workloads.dot_gflop(args.gpu_size, args.dots) * 1e9
    compare(args, rec,
            {"cpu_only": lambda: run(x_cpu, args.dots),
             "gpu_only": lambda: run(x_gpu, args.dots),
             "cpu_and_gpu": lambda: (run(x_cpu, args.dots), run(x_gpu, args.dots))},
            {"cpu_only": cpu_flops, "gpu_only": gpu_flops, "cpu_and_gpu": cpu_flops + gpu_flops},
            {"cpu_only": cpu, "gpu_only": gpu, "cpu_and_gpu": f"{cpu},{gpu}"})


def copy_to_cpu(x, cpu) -> list:
    """The document's ``copy_to_cpu``: each product to the CPU."""
    import jax

    return [jax.device_put(y, cpu) for y in x]


def compute_and_communication_parallel(args: argparse.Namespace, rec: Recorder, x_gpu,
                                       cpu) -> None:
    """计算和通信的并行计算."""
    gpu, host = d2l.names(x_gpu.devices()), d2l.names([cpu])
    y = run(x_gpu, args.dots)  # copy_to_cpu copies products computed before it
    d2l.sync(*y)
    cases = {"gpu_compute": lambda: run(x_gpu, args.dots),
             "copy_to_cpu": lambda: copy_to_cpu(y, cpu),
             "compute_and_copy": lambda: copy_to_cpu(run(x_gpu, args.dots), cpu)}
    where = {"gpu_compute": gpu, "copy_to_cpu": f"{gpu},{host}",
             "compute_and_copy": f"{gpu},{host}"}
    gpu_flops = workloads.dot_gflop(args.gpu_size, args.dots) * 1e9
    compare(args, rec, cases, {"gpu_compute": gpu_flops}, where)
    rec.notes["copy_to_cpu_bytes"] = args.dots * args.gpu_size**2 * workloads.FLOAT32_BYTES


def two_gpus(args: argparse.Namespace, rec: Recorder) -> None:
    """The book's PyTorch variant: the same products on two GPUs, alone and together."""
    import jax

    gpus = d2l.devices("gpu", 2)
    keys = jax.random.split(d2l.seed(SEED))
    x1, x2 = (jax.device_put(jax.random.uniform(k, (args.pair_size, args.pair_size)), g)
              for k, g in zip(keys, gpus))
    flops = workloads.dot_gflop(args.pair_size, args.pair_dots) * 1e9
    names = d2l.names(gpus).split(",")
    compare(args, rec,
            {"gpu1_only": lambda: run(x1, args.pair_dots),
             "gpu2_only": lambda: run(x2, args.pair_dots),
             "gpu1_and_gpu2": lambda: (run(x1, args.pair_dots), run(x2, args.pair_dots))},
            {"gpu1_only": flops, "gpu2_only": flops, "gpu1_and_gpu2": 2 * flops},
            {"gpu1_only": names[0], "gpu2_only": names[1], "gpu1_and_gpu2": ",".join(names)})


def body(args: argparse.Namespace, rec: Recorder) -> None:
    import jax

    # first, so that a skipped run has done no work; without a GPU, the second host device
    gpu = d2l.devices(args.on, 1)[0] if args.on == "gpu" else d2l.devices("cpu", 2)[1]
    cpu = d2l.devices("cpu", 1)[0]
    k_cpu, k_gpu = jax.random.split(d2l.seed(SEED))
    x_cpu = jax.device_put(jax.random.uniform(k_cpu, (args.cpu_size, args.cpu_size)), cpu)
    x_gpu = jax.device_put(jax.random.uniform(k_gpu, (args.gpu_size, args.gpu_size)), gpu)
    rec.notes["gpu_device"] = d2l.names([gpu])
    rec.notes["matrix_sizes"] = {"x_cpu": list(x_cpu.shape), "x_gpu": list(x_gpu.shape)}
    rec.notes["gflops_basis"] = "2 n^3 flop per jnp.dot(x, x), over the case's median time"
    if args.on == "cpu":
        rec.notes["stand_in"] = (
            "JAX's second host device stands in for gpu(0): two devices with a queue each, "
            "sharing the machine's cores; copies go between the two host devices")
    cpu_and_gpu_parallel(args, rec, x_cpu, x_gpu)
    compute_and_communication_parallel(args, rec, x_gpu, cpu)
    found = d2l.gpu_count()
    if args.on == "gpu" and found >= 2:
        two_gpus(args, rec)
    else:
        rec.notes["two_gpus"] = f"not run: the book's two-GPU variant needs 2 GPUs, found {found}"


def build_parser() -> argparse.ArgumentParser:
    return arguments.two_gpu_parser(__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(harness.main("auto_parallelism", "jax", build_parser(), body))
