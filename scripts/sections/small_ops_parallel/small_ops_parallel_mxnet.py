"""Small operations in parallel (seeds/000: 简单计算量小，并行计算).

Reproduces, in the document's order: drawing one uniform (size, size) matrix X,
then another Y, then X and Y queued back to back. Both draws go to the same
context, cpu(0), so to the same engine queue and the same random-number resource:
unlike work on two devices (auto_parallelism_mxnet.py) they do not overlap, and the
document's figures say so (0.0628 s each, 0.1302 s together).

The document timed its first draw cold and each case in a block of its own; here
every case warms up first, then the three are timed side by side in rounds of a
balanced order (a Williams Latin square), and every timing ends in ``nd.waitall()``
before the clock stops. X and Y are the same work under two labels: an A/A pair.
"""

from __future__ import annotations

import argparse
import os
import sys

from d2lperf import harness, timing
from d2lperf import mxnet as d2l
from d2lperf.results import Recorder, report

# MXNet 1.9's default number of random-number resources shared by all CPU contexts.
CPU_RAND_COPY_DEFAULT = 1


def body(args: argparse.Namespace, rec: Recorder) -> None:
    import mxnet as mx
    from mxnet import nd

    shape = (args.size, args.size)
    rec.notes["context"] = str(mx.cpu())
    rec.notes["matrix_size"] = list(shape)
    copies = int(os.environ.get("MXNET_CPU_PARALLEL_RAND_COPY", CPU_RAND_COPY_DEFAULT))
    rec.notes["random_resource"] = (
        f"every draw on a CPU context takes one of MXNET_CPU_PARALLEL_RAND_COPY={copies} "
        "random-number resources that all CPU contexts share; draws holding the same one "
        "run one after the other, whatever their queues"
    )

    def generate_x():
        x = nd.random.uniform(shape=shape)
        return x

    def generate_y():
        y = nd.random.uniform(shape=shape)
        return y

    def generate_x_and_y():
        x = nd.random.uniform(shape=shape)
        y = nd.random.uniform(shape=shape)
        return x, y

    cases = {"generate_x": generate_x, "generate_y": generate_y,
             "generate_x_and_y": generate_x_and_y}
    samples = timing.compare(cases, d2l.sync, warmup=args.warmup, rounds=args.repeats,
                             seed=args.seed, process=args.process)
    rec.timings(samples, devices=d2l.names([mx.cpu()]))
    report(samples, f"of {args.size}x{args.size} draws")


def build_parser() -> argparse.ArgumentParser:
    return harness.parser(__doc__.splitlines()[0], section="small_ops_parallel")


if __name__ == "__main__":
    sys.exit(harness.main("small_ops_parallel", "mxnet", build_parser(), body))
