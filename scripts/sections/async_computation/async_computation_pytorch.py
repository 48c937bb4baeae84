"""Asynchronous computation, in PyTorch (seeds/000: 异步计算).

The PyTorch twin of async_computation_mxnet.py, with the same case names. In
the document's order:
1. MXNet中的异步计算: queueing ``mm(x, x).sum()`` (``dot_sum_queued``), then waiting for
   the sum (``dot_sum_finished``); the sum itself;
2. 使用同步函数让前端等待计算结果: no sync (``dot_no_sync``, the clock stops before any
   wait, on purpose) against the four synchronisations: an event on the product's
   stream, waited for (``dot_wait_to_read``: wait for this result only), the device
   synchronised (``dot_waitall``: ``torch.cuda.synchronize`` on every GPU),
   ``.cpu().numpy()`` (``dot_asnumpy``) and ``.item()`` (``dot_asscalar``);
3. 使用异步计算提升计算机性能: 1000 x ``y = x + 1``, waiting for each one
   (``add_loop_synchronous``) or once after all of them (``add_loop_asynchronous``).

PyTorch queues work only on a GPU (``--on gpu``): there each op returns once its kernel is
launched, as MXNet's front end returns once the op is pushed to its engine. On the CPU
eager PyTorch runs every op to its end before returning: nothing is queued, every
synchronisation has nothing to wait for, and "queued" takes as long as "finished". The
section measures it anyway: that is the finding for PyTorch on a CPU.

All cases of a block are compared round by round (timing.compare), in a balanced order
(a Williams Latin square).
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import devices as device_options
from d2lperf import harness, timing
from d2lperf import torch as d2l
from d2lperf.results import Recorder, report

SEED = 0


def wait_to_read(y) -> None:
    """Wait for ``y`` only (MXNet's ``y.wait_to_read()``): on a GPU, an event recorded on
    the stream that computes it, then waited for; on the CPU, ``y`` is already there."""
    import torch

    if d2l.is_cuda(y.device):
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(y.device))
        event.synchronize()


def body(args: argparse.Namespace, rec: Recorder) -> None:
    import torch

    device = d2l.devices(args.on, 1)[0]
    where = d2l.names([device])
    size, n = args.size, args.loop_iterations
    d2l.seed(SEED)
    x = torch.rand(size=(size, size), device=device)
    y = torch.mm(x, x).sum()
    rec.output("dot_sum", str(y), y.item())

    queued = {}

    def workloads_are_queued():
        x = torch.rand(size=(size, size), device=device)
        queued["y"] = torch.mm(x, x).sum()

    def workloads_are_finished():
        wait_to_read(queued["y"])

    def dot_no_sync():
        x = torch.rand(size=(size, size), device=device)
        return torch.mm(x, x)

    def dot_wait_to_read():
        x = torch.rand(size=(size, size), device=device)
        y = torch.mm(x, x)
        wait_to_read(y)

    def dot_waitall():
        x = torch.rand(size=(size, size), device=device)
        y = torch.mm(x, x)
        z = torch.mm(x, x)
        d2l.sync()
        return y, z

    x_fourth = torch.rand(size=(size, size), device=device)

    def dot_asscalar():
        y = torch.mm(x_fourth, x_fourth)  # the document's fourth block reuses an x
        y.norm().item()

    def dot_asnumpy():
        x = torch.rand(size=(size, size), device=device)
        y = torch.mm(x, x)
        y.cpu().numpy()

    blocks = {
        "dot_sum": timing.Steps({"dot_sum_queued": workloads_are_queued,
                                 "dot_sum_finished": workloads_are_finished}),
        "dot_no_sync": dot_no_sync, "dot_wait_to_read": dot_wait_to_read,
        "dot_waitall": dot_waitall, "dot_asscalar": dot_asscalar, "dot_asnumpy": dot_asnumpy,
    }
    samples = timing.compare(blocks, d2l.sync, warmup=args.warmup, rounds=args.repeats,
                             seed=args.seed, process=args.process, queue_only=["dot_no_sync"])
    rec.timings(samples, devices=where)
    report(samples)

    x_add = torch.rand(size=(size, size), device=device)

    def synchronous():
        for _ in range(n):
            y = x_add + 1
            wait_to_read(y)

    def asynchronous():
        for _ in range(n):
            y = x_add + 1
        d2l.sync()
        return y

    samples = timing.compare({"add_loop_synchronous": synchronous,
                              "add_loop_asynchronous": asynchronous}, d2l.sync,
                             warmup=args.warmup, rounds=args.repeats, seed=args.seed,
                             process=args.process)
    rec.timings(samples, devices=where)
    report(samples)

    rec.notes.update(
        dot_sum_queued=("time to queue rand + mm + sum without waiting: the queue, on purpose "
                        "(the document's 'Workloads are queued.')"),
        dot_no_sync=("the clock stops before any synchronisation: queueing time only, on "
                     "purpose (the document's first block)"),
        dot_wait_to_read="a CUDA event on the product's stream, waited for (no-op on the CPU)",
        dot_waitall="torch.cuda.synchronize on every GPU (no-op on the CPU)",
        dot_asnumpy="listed by the document as a synchronising function, not timed there",
    )
    if not d2l.is_cuda(device):
        rec.notes["eager_on_cpu"] = (
            "PyTorch on the CPU runs each op to its end before returning: nothing is queued, "
            "so queued and finished, and every synchronisation, measure the same work")


def build_parser() -> argparse.ArgumentParser:
    p = harness.parser(__doc__.splitlines()[0], section="async_computation")
    device_options.add_argument(p, default="cpu")
    return p


if __name__ == "__main__":
    sys.exit(harness.main("async_computation", "pytorch", build_parser(), body))
