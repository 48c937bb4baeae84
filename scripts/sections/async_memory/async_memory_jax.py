"""The effect of asynchronous computation on memory, in JAX (seeds/000: 异步计算对内存的影响).

The JAX twin of async_memory_mxnet.py, with the same case names: the document's
training loop, an MLP 512-2048-512-1 (Flax) with the L2 loss (Gluon's L2Loss: half the
squared error) and SGD at lr 0.005 (optax) on random batches, a training step compiled
with ``jax.jit`` as d2l's JAX edition writes it, in its two modes: ``sync`` reads
``float(l.mean())`` every batch (the document's ``asscalar``), so the Python front end
waits for each batch; ``async`` reads nothing inside the loop and waits once at the end.
For each it records the elapsed time the document prints every ``--report-every``
batches (read without synchronising, as the document does), the time until the work is
finished, and how much the process's resident memory grew (at the end, and at its peak).

JAX dispatches asynchronously on the CPU too: in ``async`` mode the front end runs ahead
of the work, and the batches queued meanwhile are held in memory, as the document found
for MXNet.

The document's figures are measured as the seed ran: no warm-up, so the first batch also
compiles the step and allocates the parameters. With ``--warmup N`` the same runs again
after N untimed steps (``*_warmed_*``), an extra measurement.

Each (mode, repeat) trains in a fresh child process (this script re-run with ``--child``)
so that no mode inherits the other's allocations or compiled step; the child pins the same
thread count and hands its figures back in a JSON file.
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import devices as device_options
from d2lperf import jax as d2l
from d2lperf import memory, timing
from d2lperf.results import Recorder

SEED = 0  # both modes train the same initial network on the same batches


def get_mem() -> float:
    """This process's RSS in MB: the document's ``ps u`` reading, without a subprocess."""
    return memory.rss_bytes() / memory.MB


def train(mode: str, args: argparse.Namespace) -> memory.MemoryRun:
    """One run of the document's loop in ``mode``; runs in a child process."""
    import jax
    import jax.numpy as jnp
    import optax
    from flax import linen as nn

    device = d2l.devices(args.on, 1)[0]
    key = jax.device_put(d2l.seed(SEED), device)
    net = nn.Sequential([nn.Dense(2048), nn.relu, nn.Dense(512), nn.relu, nn.Dense(1)])
    params = jax.device_put(net.init(key, jnp.zeros((1, 512))), device)
    optimizer = optax.sgd(0.005)
    state = optimizer.init(params)

    def loss(params, X, y):
        """Gluon's L2Loss, one value per example."""
        return 0.5 * (net.apply(params, X).reshape(y.shape) - y) ** 2

    @jax.jit
    def step(params, state, X, y):
        value, grads = jax.value_and_grad(lambda p: loss(p, X, y).mean())(params)
        updates, state = optimizer.update(grads, state)
        return optax.apply_updates(params, updates), state, value

    keys = jax.random.split(key, args.batches)
    y = jnp.ones((args.batch_size,))
    batch_seconds: dict[int, float] = {}

    def data_iter(report=None):
        for i in range(args.batches):
            yield jax.random.normal(keys[i], (args.batch_size, 512)), y
            if report is not None and (i + 1) % args.report_every == 0:
                report(i + 1)

    # The document's commented-out warm-up: steps before memory is measured (here it
    # also compiles the step).
    for _, (X, y_) in zip(range(args.warmup), data_iter()):
        float(step(params, state, X, y_)[2])

    def report(batch: int) -> None:
        # No synchronisation here, as in the document.
        batch_seconds[batch] = loop.lap()
        print(f"batch {batch}, time {batch_seconds[batch]:f} sec", flush=True)

    l_sum, mem = 0.0, get_mem()
    with memory.PeakRSS() as rss:
        with timing.Stopwatch(d2l.sync) as loop:  # its exit is the document's nd.waitall()
            for X, y_ in data_iter(report):
                params, state, l = step(params, state, X, y_)  # noqa: E741 (the document's)
                if mode == "sync":
                    l_sum += float(l)
    return memory.run_figures(batch_seconds, loop.seconds, rss, mem)


def body(args: argparse.Namespace, rec: Recorder) -> None:
    memory.check_workload(args)
    where = d2l.names(d2l.devices(args.on, 1))  # Skipped here, before any child runs
    runs = memory.run_modes(args, __file__, ["--on", args.on])
    memory.record_runs(rec, args, runs, memory.MEMORY_FIGURES, where)
    rec.notes.update(
        batch_times=("elapsed seconds since the loop started, read without synchronising, as the "
                     "document prints them; {mode}_total ends when the final sync returns"),
        memory=("RSS after the final sync (memory_increase), and its peak during the loop "
                "(peak_memory_increase), minus RSS before the loop; MB = 1e6 bytes"),
        step="one jax.jit-compiled training step per batch (value_and_grad, optax.sgd)",
    )


def add_workload_options(p: argparse.ArgumentParser) -> None:
    memory.add_workload_options(p)
    device_options.add_argument(p, default="cpu")


if __name__ == "__main__":
    sys.exit(memory.main("jax", __doc__.splitlines()[0], body, train, add_workload_options))
