"""Asynchronous computation, in JAX (seeds/000: 异步计算).

The JAX twin of async_computation_mxnet.py, with the same case names. In the
document's order:
1. MXNet中的异步计算: queueing ``dot(x, x).sum()`` (``dot_sum_queued``), then waiting for
   the sum (``dot_sum_finished``); the sum itself;
2. 使用同步函数让前端等待计算结果: no sync (``dot_no_sync``, the clock stops before any
   wait, on purpose) against the four synchronisations: ``y.block_until_ready()``
   (``dot_wait_to_read``: wait for this result only), every live array waited for
   (``dot_waitall``: JAX has no global barrier), ``numpy.asarray`` (``dot_asnumpy``) and
   ``float()`` of the norm (``dot_asscalar``);
3. 使用异步计算提升计算机性能: 1000 x ``y = x + 1``, waiting for each one
   (``add_loop_synchronous``) or once after all of them (``add_loop_asynchronous``).

JAX dispatches asynchronously on every device, the CPU included: each op returns once it
is queued, as MXNet's front end returns once the op is pushed to its engine. So the
chapter's queueing claims apply to JAX on a CPU, where eager PyTorch queues nothing.

All cases of a block are compared round by round (timing.compare), in a balanced order
(a Williams Latin square).
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import devices as device_options
from d2lperf import harness, timing
from d2lperf import jax as d2l
from d2lperf.results import Recorder, report

SEED = 0


def body(args: argparse.Namespace, rec: Recorder) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    device = d2l.devices(args.on, 1)[0]
    where = d2l.names([device])
    size, n = args.size, args.loop_iterations
    key = jax.device_put(d2l.seed(SEED), device)

    def rand():
        return jax.random.uniform(key, (size, size))

    x = rand()
    y = jnp.dot(x, x).sum()
    rec.output("dot_sum", str(y), float(y))

    queued = {}

    def workloads_are_queued():
        x = rand()
        queued["y"] = jnp.dot(x, x).sum()

    def workloads_are_finished():
        queued["y"].block_until_ready()

    def dot_no_sync():
        x = rand()
        return jnp.dot(x, x)

    def dot_wait_to_read():
        x = rand()
        jnp.dot(x, x).block_until_ready()

    def dot_waitall():
        x = rand()
        y = jnp.dot(x, x)
        z = jnp.dot(x, x)
        d2l.sync()
        return y, z

    x_fourth = rand()

    def dot_asscalar():
        y = jnp.dot(x_fourth, x_fourth)  # the document's fourth block reuses an x
        float(jnp.linalg.norm(y))

    def dot_asnumpy():
        x = rand()
        np.asarray(jnp.dot(x, x))

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

    x_add = rand()

    def synchronous():
        for _ in range(n):
            y = x_add + 1
            y.block_until_ready()

    def asynchronous():
        for _ in range(n):
            y = x_add + 1
        y.block_until_ready()
        return y

    samples = timing.compare({"add_loop_synchronous": synchronous,
                              "add_loop_asynchronous": asynchronous}, d2l.sync,
                             warmup=args.warmup, rounds=args.repeats, seed=args.seed,
                             process=args.process)
    rec.timings(samples, devices=where)
    report(samples)

    rec.notes.update(
        dot_sum_queued=("time to queue uniform + dot + sum without waiting: the queue, on "
                        "purpose (the document's 'Workloads are queued.')"),
        dot_no_sync=("the clock stops before any synchronisation: queueing time only, on "
                     "purpose (the document's first block)"),
        dot_wait_to_read="y.block_until_ready(): this result only",
        dot_waitall="every live array's block_until_ready (JAX has no global barrier)",
        dot_asnumpy="listed by the document as a synchronising function, not timed there",
    )


def build_parser() -> argparse.ArgumentParser:
    p = harness.parser(__doc__.splitlines()[0], section="async_computation")
    device_options.add_argument(p, default="cpu")
    return p


if __name__ == "__main__":
    sys.exit(harness.main("async_computation", "jax", build_parser(), body))
