"""Asynchronous computation (seeds/000: 异步计算).

Reproduces, in the document's order:
1. MXNet中的异步计算: queueing ``dot(x, x).sum()`` returns at once, waiting for the
   sum takes the time; the printed sum itself;
2. 使用同步函数让前端等待计算结果: the document's four blocks (no sync,
   ``wait_to_read``, ``waitall``, ``asscalar``) and ``asnumpy``, which it lists but
   did not time;
3. 使用异步计算提升计算机性能: 1000 x ``y = x + 1``, waiting after each one or once.

The document's ``Benchmark`` is replaced by the timing harness: every case warms up,
repeats and synchronises before the clock stops, except the two that measure the
queue on purpose (``dot_sum_queued`` and ``dot_no_sync``), as the document did.
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import harness, timing
from d2lperf import mxnet as d2l
from d2lperf.results import Recorder, report

# MXNet's default seed in a fresh process is 0: seeding with it reproduces the sum
# the document printed from its own program.
MXNET_DEFAULT_SEED = 0


def queued_and_finished(args: argparse.Namespace, rec: Recorder) -> None:
    """MXNet中的异步计算: 'Workloads are queued.' then 'Workloads are finished.'"""
    import mxnet as mx
    from mxnet import nd

    mx.random.seed(MXNET_DEFAULT_SEED)
    x = nd.random.uniform(shape=(args.size, args.size))
    y = nd.dot(x, x).sum()
    rec.output("dot_sum", str(y), y.asnumpy().tolist())

    queued = {}

    def workloads_are_queued():
        x = nd.random.uniform(shape=(args.size, args.size))
        queued["y"] = nd.dot(x, x).sum()

    def workloads_are_finished():
        # The document's print('sum =', y) is what waits; wait_to_read waits the same
        # way without writing the sum into the log at every repeat.
        queued["y"].wait_to_read()

    # The first step returns as soon as the work is queued: it measures the queue on
    # purpose. The second is the wait for the same work.
    steps = timing.Steps({"dot_sum_queued": workloads_are_queued,
                          "dot_sum_finished": workloads_are_finished})
    samples = timing.compare({"queued_then_finished": steps}, d2l.sync, warmup=args.warmup,
                             rounds=args.repeats, seed=args.seed, process=args.process)
    rec.timings(samples)
    report(samples)
    rec.notes["dot_sum_queued"] = (
        "time to queue uniform + dot + sum, without waiting for them: the queue, on purpose "
        "(the document's 'Workloads are queued.')")


def synchronising_functions(args: argparse.Namespace, rec: Recorder) -> None:
    """使用同步函数让前端等待计算结果: each block exactly as the document wrote it."""
    from mxnet import nd

    size = args.size
    third_block = {}

    def dot_no_sync():
        x = nd.random.uniform(shape=(size, size))
        y = nd.dot(x, x)
        return y

    def dot_wait_to_read():
        x = nd.random.uniform(shape=(size, size))
        y = nd.dot(x, x)
        y.wait_to_read()

    def dot_waitall():
        x = nd.random.uniform(shape=(size, size))
        y = nd.dot(x, x)
        z = nd.dot(x, x)
        nd.waitall()
        third_block["x"] = x
        return y, z

    def dot_asscalar():
        x = third_block["x"]  # the document's fourth block reuses the x of the third
        y = nd.dot(x, x)
        y.norm().asscalar()

    def dot_asnumpy():
        x = nd.random.uniform(shape=(size, size))
        y = nd.dot(x, x)
        y.asnumpy()

    blocks = {"dot_no_sync": dot_no_sync, "dot_wait_to_read": dot_wait_to_read,
              "dot_waitall": dot_waitall, "dot_asscalar": dot_asscalar,
              "dot_asnumpy": dot_asnumpy}
    # Blocks that synchronise themselves leave nothing for the harness's waitall;
    # dot_no_sync does not, and its clock stops before the waitall: like the
    # document's first block it measures the queue, on purpose. dot_asscalar reuses
    # the x that the last dot_waitall left (the document's fourth block did too).
    samples = timing.compare(blocks, d2l.sync, warmup=args.warmup, rounds=args.repeats,
                             seed=args.seed, process=args.process, queue_only=["dot_no_sync"])
    rec.timings(samples)
    report(samples)
    rec.notes["dot_no_sync"] = (
        "the clock stops before any synchronisation: queueing time only, on purpose "
        "(the document's first block)")
    rec.notes["dot_asnumpy"] = "listed by the document as a synchronising function, not timed there"


def async_performance(args: argparse.Namespace, rec: Recorder) -> None:
    """使用异步计算提升计算机性能: wait after every ``x + 1``, or once after all of them."""
    from mxnet import nd

    n = args.loop_iterations

    x = nd.random.uniform(shape=(args.size, args.size))

    def synchronous():
        for _ in range(n):
            y = x + 1
            y.wait_to_read()

    def asynchronous():
        for _ in range(n):
            y = x + 1
        nd.waitall()
        return y

    samples = timing.compare({"add_loop_synchronous": synchronous,
                              "add_loop_asynchronous": asynchronous}, d2l.sync,
                             warmup=args.warmup, rounds=args.repeats, seed=args.seed,
                             process=args.process)
    rec.timings(samples)
    report(samples)


def body(args: argparse.Namespace, rec: Recorder) -> None:
    queued_and_finished(args, rec)
    synchronising_functions(args, rec)
    async_performance(args, rec)


def build_parser() -> argparse.ArgumentParser:
    p = harness.parser(__doc__.splitlines()[0], section="async_computation")
    return p


if __name__ == "__main__":
    sys.exit(harness.main("async_computation", "mxnet", build_parser(), body))
