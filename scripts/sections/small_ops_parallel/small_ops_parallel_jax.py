"""Small operations in parallel, in JAX (seeds/000: 简单计算量小，并行计算).

The JAX twin of small_ops_parallel_mxnet.py, with the same case names: drawing
one uniform (size, size) matrix X (``generate_x``), then another Y (``generate_y``), then
X and Y back to back (``generate_x_and_y``), on one device. JAX splits the host into two
devices (d2lperf.jax), so it also draws X and Y on one device each
(``generate_x_and_y_devices``): the documents' ``cpu(0)``, ``cpu(1)``, the one way the
two draws could overlap (on a GPU, two GPUs where the machine has them).

JAX dispatches asynchronously: the second draw is queued while the first runs. On one
device the two still run one after the other, as the document found for MXNet (0.0628 s
each, 0.1302 s together).

The document timed its first draw cold; here the cases warm up first and are compared
round by round, every timing ending in d2lperf.jax.sync (``block_until_ready`` on what
the case returned) before the clock stops.
"""

from __future__ import annotations

import argparse
import sys

from d2lperf import devices as device_options
from d2lperf import harness, timing
from d2lperf import jax as d2l
from d2lperf.errors import Skipped
from d2lperf.results import Recorder, report


def body(args: argparse.Namespace, rec: Recorder) -> None:
    import jax

    device = d2l.devices(args.on, 1)[0]
    shape = (args.size, args.size)
    key_x, key_y = jax.random.split(d2l.seed(0))
    key_x, key_y = jax.device_put(key_x, device), jax.device_put(key_y, device)
    rec.notes["device"] = d2l.names([device])
    rec.notes["matrix_size"] = list(shape)
    last: list = []  # what the case returned: sync waits for it

    def generate_x():
        last[:] = [jax.random.uniform(key_x, shape)]

    def generate_y():
        last[:] = [jax.random.uniform(key_y, shape)]

    def generate_x_and_y():
        last[:] = [jax.random.uniform(key_x, shape), jax.random.uniform(key_y, shape)]

    cases = {"generate_x": generate_x, "generate_y": generate_y,
             "generate_x_and_y": generate_x_and_y}
    try:
        pair = d2l.devices(args.on, 2)
    except Skipped as why:
        pair = []
        rec.notes["generate_x_and_y_devices"] = f"not run: {why}"
    if len({d.id for d in pair}) == 2:
        keys = [jax.device_put(key_x, pair[0]), jax.device_put(key_y, pair[1])]

        def generate_x_and_y_devices():
            last[:] = [jax.random.uniform(k, shape) for k in keys]

        cases["generate_x_and_y_devices"] = generate_x_and_y_devices
        rec.notes["generate_x_and_y_devices"] = (
            f"X on {d2l.names(pair[:1])}, Y on {d2l.names(pair[1:])}: two devices, two "
            "queues")

    samples = timing.compare(cases, lambda: d2l.sync(*last), warmup=args.warmup,
                             rounds=args.repeats, seed=args.seed, process=args.process)
    rec.timings(samples, devices=d2l.names([device]))
    report(samples, f"of {args.size}x{args.size} draws")


def build_parser() -> argparse.ArgumentParser:
    p = harness.parser(__doc__.splitlines()[0], section="small_ops_parallel")
    device_options.add_argument(p, default="cpu")
    return p


if __name__ == "__main__":
    sys.exit(harness.main("small_ops_parallel", "jax", build_parser(), body))
