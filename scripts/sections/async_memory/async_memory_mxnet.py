"""The effect of asynchronous computation on memory (seeds/000: 异步计算对内存的影响).

Reproduces the document's training loop (an MLP on random batches) in its two modes:
``sync`` calls ``l.mean().asscalar()`` every batch, so the front end waits for each
batch; ``async`` has no synchronising call inside the loop and ends in
``nd.waitall()``. For each it records the elapsed time the document prints every
``--report-every`` batches, the time until the work is finished, and how much the
process's resident memory grew (at the end, and at its peak).

The document's figures are measured as the seed ran: no warm-up, so the first batch
also allocates the parameters, and the RSS read when the work is finished. With
``--warmup N`` the same runs again after N untimed forward passes (``*_warmed_*``),
an extra measurement.

Each (mode, repeat) trains in a fresh child process (this script re-run with
``--child``) so that no mode inherits the other's pooled allocations; the child pins
the same thread count and hands its figures back in a JSON file.
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import memory, timing
from d2lperf import mxnet as d2l
from d2lperf.results import Recorder

# Both modes train the same initial network on the same batches.
MXNET_DEFAULT_SEED = 0


def get_mem() -> float:
    """This process's RSS in MB: the document's ``ps u`` reading, without a subprocess."""
    return memory.rss_bytes() / memory.MB


def train(mode: str, args: argparse.Namespace) -> memory.MemoryRun:
    """One run of the document's loop in ``mode``; runs in a child process."""
    import mxnet as mx
    from mxnet import autograd, gluon, nd
    from mxnet.gluon import loss as gloss
    from mxnet.gluon import nn

    mx.random.seed(MXNET_DEFAULT_SEED)
    batch_seconds: dict[int, float] = {}

    def data_iter(report=None):
        for i in range(args.batches):
            X = nd.random.normal(shape=(args.batch_size, 512))
            y = nd.ones((args.batch_size,))
            yield X, y
            if report is not None and (i + 1) % args.report_every == 0:
                report(i + 1)

    net = nn.Sequential()
    net.add(nn.Dense(2048, activation="relu"),
            nn.Dense(512, activation="relu"),
            nn.Dense(1))
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.005})
    loss = gloss.L2Loss()

    # The document's commented-out warm-up: forward passes that finish the deferred
    # initialisation of the parameters before the memory is measured.
    for _, (X, y) in zip(range(args.warmup), data_iter()):
        loss(y, net(X)).wait_to_read()

    def report(batch: int) -> None:
        # No synchronisation here, as in the document: in `async` mode this is how long
        # the front end took to queue the batches, not how long they took to compute.
        batch_seconds[batch] = loop.lap()
        print(f"batch {batch}, time {batch_seconds[batch]:f} sec", flush=True)

    l_sum, mem = 0.0, get_mem()
    with memory.PeakRSS() as rss:
        with timing.Stopwatch(d2l.sync) as loop:  # its exit is the document's nd.waitall()
            for X, y in data_iter(report):
                with autograd.record():
                    l = loss(y, net(X))  # noqa: E741 (the document's name)
                if mode == "sync":
                    l_sum += l.mean().asscalar()
                l.backward()
                trainer.step(X.shape[0])
    # The tracker's last reading is the RSS as nd.waitall() returned, so the peak it
    # reports is never below it.
    return memory.run_figures(batch_seconds, loop.seconds, rss, mem)


def body(args: argparse.Namespace, rec: Recorder) -> None:
    memory.check_workload(args)
    runs = memory.run_modes(args, __file__)
    memory.record_runs(rec, args, runs)
    rec.notes.update(
        batch_times=("elapsed seconds since the loop started, read without synchronising, as the "
                     "document prints them: for `async` the time to queue the batches, on purpose; "
                     "{mode}_total ends when nd.waitall() returns"),
        memory=("RSS after nd.waitall() (memory_increase), and its peak during the loop "
                "(peak_memory_increase), minus RSS before the loop; MB = 1e6 bytes (the "
                "document's ps KiB / 1e3 is 1.024e6 bytes)"),
    )
    import mxnet  # noqa: F401  (only so that the run record carries MXNet's build)


if __name__ == "__main__":
    sys.exit(memory.main("mxnet", __doc__.splitlines()[0], body, train))
