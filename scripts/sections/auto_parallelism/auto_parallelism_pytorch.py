"""Automatic parallelism, in PyTorch (seeds/000: CPU和GPU的并行计算, 计算和通信的并行计算).

The PyTorch twin of auto_parallelism_mxnet.py, with the same case names, and
the variant of d2l's PyTorch edition (chapter_computational-performance/
auto-parallelism.md) on two GPUs. In the document's order:
1. CPU和GPU的并行计算: ``run(x_cpu)`` alone (``cpu_only``), ``run(x_gpu)`` alone
   (``gpu_only``), then both (``cpu_and_gpu``). PyTorch runs CPU ops to their end before
   returning and only queues GPU kernels, so the GPU's work is issued first: it runs
   while the CPU computes. (The document issued the CPU's first: MXNet's engine queues
   both.) Together they should take about as long as the slower one alone;
2. 计算和通信的并行计算, as the book's PyTorch code writes it: the products alone
   (``gpu_compute``), copying them with ``.to('cpu')`` (``copy_to_cpu``: each copy
   blocks until done), then both, the copies with ``.to('cpu', non_blocking=True)``
   (``compute_and_copy``: on the products' CUDA stream, so each waits for all products
   queued before it). On a GPU, extras: the copies into pinned host buffers with
   ``copy_(non_blocking=True)``, alone and after the products
   (``copy_to_cpu_pinned``, ``compute_and_copy_pinned``: truly asynchronous copies),
   and those copies on a stream of their own, each waiting only for its own product
   (``compute_and_copy_streams``: the overlap MXNet's separate copy queue gave the
   document);
3. the book's current variant, where there are two GPUs: 50 products of 4000x4000 on
   each GPU alone (``gpu1_only``, ``gpu2_only``), then on both (``gpu1_and_gpu2``).

The cases of each block are compared round by round (timing.compare), every timing
ending in d2lperf.torch.sync (every GPU) before the clock stops; each block warms up
first (the document's 预热).

Without a GPU, ``--on cpu`` runs the GPU half on the CPU, as a code path: with one CPU
device and eager ops there is nothing to overlap (the products run one after the
other; ``.to('cpu')`` of a CPU tensor is the tensor itself, no copy), pinned memory
and CUDA streams do not apply (no pinned or streamed extras). ``--on gpu`` on a machine
without one records the section as skipped.
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import arguments, harness, timing, workloads
from d2lperf import torch as d2l
from d2lperf.describe import Stats
from d2lperf.results import Recorder, report

SEED = 0


def run(x, dots: int = 10):
    return [x.mm(x) for _ in range(dots)]


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
    cpu, gpu = str(x_cpu.device), str(x_gpu.device)

    def run_on_both():
        run(x_gpu, args.dots)  # queued: returns once the kernels are launched
        run(x_cpu, args.dots)  # runs here, while the GPU computes

    cpu_flops = workloads.dot_gflop(args.cpu_size, args.dots) * 1e9
    gpu_flops = workloads.dot_gflop(args.gpu_size, args.dots) * 1e9
    compare(args, rec,
            {"cpu_only": lambda: run(x_cpu, args.dots), "gpu_only": lambda: run(x_gpu, args.dots),
             "cpu_and_gpu": run_on_both},
            {"cpu_only": cpu_flops, "gpu_only": gpu_flops, "cpu_and_gpu": cpu_flops + gpu_flops},
            {"cpu_only": cpu, "gpu_only": gpu, "cpu_and_gpu": f"{cpu},{gpu}"})


def copy_to_cpu(x, non_blocking: bool = False) -> list:
    """The book's ``copy_to_cpu``: each product to the CPU with ``.to``."""
    return [y.to("cpu", non_blocking=non_blocking) for y in x]


def host_buffers(x_gpu, count: int) -> list:
    """Pinned (page-locked) host buffers for the extras' copies, so that ``non_blocking``
    copies are truly asynchronous (a GPU only)."""
    import torch

    return [torch.empty(x_gpu.shape, dtype=x_gpu.dtype, pin_memory=True) for _ in range(count)]


def compute_and_communication_parallel(args: argparse.Namespace, rec: Recorder,
                                       x_gpu) -> None:
    """计算和通信的并行计算."""
    import torch

    gpu = str(x_gpu.device)
    y = run(x_gpu, args.dots)  # copy_to_cpu copies products computed before it

    def compute():
        y[:] = run(x_gpu, args.dots)

    def compute_and_copy():  # the book's: y = run(x_gpu1); copy_to_cpu(y, True)
        return copy_to_cpu(run(x_gpu, args.dots), True)

    cases = {"gpu_compute": compute, "copy_to_cpu": lambda: copy_to_cpu(y),
             "compute_and_copy": compute_and_copy}
    where = {"gpu_compute": gpu, "copy_to_cpu": f"{gpu},cpu", "compute_and_copy": f"{gpu},cpu"}
    if d2l.is_cuda(x_gpu.device):
        host = host_buffers(x_gpu, args.dots)
        copy_stream = torch.cuda.Stream(x_gpu.device)

        def copy_to_cpu_pinned():
            for h, product in zip(host, y):
                h.copy_(product, non_blocking=True)

        def compute_and_copy_pinned():
            for h, product in zip(host, run(x_gpu, args.dots)):
                h.copy_(product, non_blocking=True)

        def compute_and_copy_streams():
            for h in host:
                product = x_gpu.mm(x_gpu)
                ready = torch.cuda.Event()
                ready.record()  # on the compute stream, after this product
                with torch.cuda.stream(copy_stream):
                    copy_stream.wait_event(ready)
                    h.copy_(product, non_blocking=True)
                product.record_stream(copy_stream)  # not reused before its copy is done

        cases.update(copy_to_cpu_pinned=copy_to_cpu_pinned,
                     compute_and_copy_pinned=compute_and_copy_pinned,
                     compute_and_copy_streams=compute_and_copy_streams)
        where.update(dict.fromkeys(("copy_to_cpu_pinned", "compute_and_copy_pinned",
                                    "compute_and_copy_streams"), f"{gpu},cpu"))
    else:
        rec.notes["compute_and_copy_streams"] = "not run: CUDA streams need a GPU"
        rec.notes["copy_to_cpu_pinned"] = "not run: pinned host memory needs a GPU"
    gpu_flops = workloads.dot_gflop(args.gpu_size, args.dots) * 1e9
    compare(args, rec, cases, {"gpu_compute": gpu_flops}, where)
    copied = args.dots * args.gpu_size**2 * workloads.FLOAT32_BYTES
    rec.notes["copy_to_cpu_bytes"] = copied


def two_gpus(args: argparse.Namespace, rec: Recorder) -> None:
    """The book's PyTorch variant: the same products on two GPUs, alone and together."""
    import torch

    gpus = d2l.devices("gpu", 2)
    x_gpu1 = torch.rand(size=(args.pair_size, args.pair_size), device=gpus[0])
    x_gpu2 = torch.rand(size=(args.pair_size, args.pair_size), device=gpus[1])

    def both():
        run(x_gpu1, args.pair_dots)
        run(x_gpu2, args.pair_dots)

    flops = workloads.dot_gflop(args.pair_size, args.pair_dots) * 1e9
    names = [str(g) for g in gpus]
    compare(args, rec,
            {"gpu1_only": lambda: run(x_gpu1, args.pair_dots),
             "gpu2_only": lambda: run(x_gpu2, args.pair_dots), "gpu1_and_gpu2": both},
            {"gpu1_only": flops, "gpu2_only": flops, "gpu1_and_gpu2": 2 * flops},
            {"gpu1_only": names[0], "gpu2_only": names[1], "gpu1_and_gpu2": ",".join(names)})


def body(args: argparse.Namespace, rec: Recorder) -> None:
    import torch

    gpu = d2l.devices(args.on, 1)[0]  # first, so that a skipped run has done no work
    d2l.seed(SEED)
    x_cpu = torch.rand(size=(args.cpu_size, args.cpu_size))
    x_gpu = torch.rand(size=(args.gpu_size, args.gpu_size), device=gpu)
    rec.notes["gpu_device"] = str(gpu)
    rec.notes["matrix_sizes"] = {"x_cpu": list(x_cpu.shape), "x_gpu": list(x_gpu.shape)}
    rec.notes["gflops_basis"] = "2 n^3 flop per x.mm(x), over the case's median time"
    rec.notes["issue_order"] = ("cpu_and_gpu queues the GPU's products first, then computes "
                                "the CPU's: PyTorch's CPU ops return only when done")
    if not d2l.is_cuda(gpu):
        rec.notes["stand_in"] = (
            "the CPU stands in for gpu(0): both halves run on one device, one op after the "
            "other, so nothing overlaps; copies are plain CPU copies")
    cpu_and_gpu_parallel(args, rec, x_cpu, x_gpu)
    compute_and_communication_parallel(args, rec, x_gpu)
    found = d2l.gpu_count()
    if d2l.is_cuda(gpu) and found >= 2:
        two_gpus(args, rec)
    else:
        rec.notes["two_gpus"] = f"not run: the book's two-GPU variant needs 2 GPUs, found {found}"


def build_parser() -> argparse.ArgumentParser:
    return arguments.two_gpu_parser(__doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(harness.main("auto_parallelism", "pytorch", build_parser(), body))
