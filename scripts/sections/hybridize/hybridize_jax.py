"""Hybrid imperative and symbolic programming, in JAX (seeds/000: 命令式和符号式混合编程).

The JAX twin of hybridize_mxnet.py. ``jax.jit`` is what ``hybridize()`` was:
the Python function is traced once into a program (a jaxpr), which XLA compiles and then
runs without the Python code. Models are written with Flax, as d2l's JAX edition writes
them. In the document's order:
1. the imperative-vs-symbolic demo (plain Python, d2lperf.symbolic);
2. the 512-256-128-2 MLP as ``flax.linen.Sequential``: its output called op by op (JAX's
   imperative mode: every operation dispatched on its own) and jitted; 1000 forward
   passes of a (1, 512) input op by op (``mlp_before_hybridize``) and jitted
   (``mlp_after_hybridize``), compared round by round with a second op-by-op copy (an A/A
   pair); the exported model (the counterpart of Gluon's ``export``: ``jax.export``'s
   serialized program, ``my_mlp.jax_exported``, and the parameters, ``my_mlp.params``);
   the net applied to a symbolic input (``jax.make_jaxpr``: the program, as
   ``net(sym.var('data'))`` gives a Symbol);
3. the ``HybridBlock`` demo's counterpart: a forward function that prints what it sees,
   called op by op (arrays) and jitted (tracers, as Gluon's F is the symbol module once
   hybridized), and after the first jitted call never run again.

Compiling is timed on its own (``jax_jit_compile``: the first jitted call, where jax
traces and XLA compiles), never inside the forward-pass timing. Every timing ends in
d2lperf.jax.sync before the clock stops: JAX dispatches asynchronously on the CPU too.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from d2lperf import harness, symbolic, timing
from d2lperf import jax as d2l
from d2lperf.results import Recorder, report

SEED = 0
NO_F = "the forward function takes no F (no module to print); jax.jit traces the same code"


def get_net():
    """Factory for networks (the book's), in Flax."""
    from flax import linen as nn

    return nn.Sequential([nn.Dense(256), nn.relu, nn.Dense(128), nn.relu, nn.Dense(2)])


def array_output(rec: Recorder, name: str, array) -> None:
    import numpy as np

    rec.output(name, str(np.asarray(array)), np.asarray(array).tolist())


def mlp(args: argparse.Namespace, rec: Recorder) -> None:
    import jax

    key = d2l.seed(SEED)
    k_x, k_net, k_twin = jax.random.split(key, 3)
    device = d2l.devices(args.on, 1)[0]
    x = jax.device_put(jax.random.uniform(k_x, (1, 512)), device)
    net = get_net()
    params = jax.device_put(net.init(k_net, x), device)
    twin = jax.device_put(net.init(k_twin, x), device)  # an identical net, its own weights
    array_output(rec, "mlp_output_imperative", net.apply(params, x))

    jitted = jax.jit(net.apply)
    start = time.perf_counter()
    y = jitted(params, x)  # traced and compiled here, before any timing
    d2l.sync(y)
    rec.samples("jax_jit_compile", "time", "s", [time.perf_counter() - start],
                devices=d2l.names([device]))
    array_output(rec, "mlp_output_hybridized", y)

    def forward_passes(apply, weights):
        def work():
            for _ in range(args.forward_passes):
                y = apply(weights, x)
            return y  # one device runs its work in order: the last done, all are

        return work

    plain, other = timing.aa_roles(params, twin, args.process)
    cases = {"mlp_before_hybridize": forward_passes(net.apply, plain),
             "mlp_before_hybridize_twin": forward_passes(net.apply, other),
             "mlp_after_hybridize": forward_passes(jitted, params)}
    samples = timing.compare(cases, d2l.sync, warmup=args.warmup, rounds=args.repeats,
                             seed=args.seed, process=args.process)
    rec.timings(samples, devices=d2l.names([device]))
    report(samples, f"of {args.forward_passes} passes")
    rec.notes["mlp_before_hybridize_twin"] = (
        "a second op-by-op copy of the same MLP (its own weights), timed beside the first: "
        "an A/A pair (not in the document) that shows how far apart identical work is "
        "measured")
    export(args, rec, net, params, x)
    rec.output("mlp_symbolic_output", str(jax.make_jaxpr(net.apply)(params, x)))


def export(args: argparse.Namespace, rec: Recorder, net, params, x) -> None:
    """Gluon's ``export``: the program (``jax.export``, serialized) and the parameters."""
    import jax
    from flax import serialization

    folder = Path(args.export_dir)
    folder.mkdir(parents=True, exist_ok=True)
    program = jax.export.export(jax.jit(net.apply))(params, x)
    (folder / "my_mlp.jax_exported").write_bytes(program.serialize())
    (folder / "my_mlp.params").write_bytes(serialization.to_bytes(params))
    files = sorted(p for p in folder.glob("my_mlp*") if p.is_file())
    rec.artifacts += [p.name for p in files]
    rec.notes["artifact_bytes"] = {p.name: p.stat().st_size for p in files}


def hybrid_block(rec: Recorder) -> None:
    """Gluon's HybridNet prints F, x and the hidden layer from ``hybrid_forward``: op by op
    it sees NDArrays, once hybridized Symbols, and after the first hybridized call nothing
    runs the Python code again. ``jax.jit`` plays hybridize: it calls the function once
    with tracers and runs the compiled program after that."""
    import jax
    from flax import linen as nn

    seen: list[dict[str, object]] = []

    class HybridNet(nn.Module):
        @nn.compact
        def __call__(self, x):
            print("x:", x)
            h = nn.relu(nn.Dense(10, name="hidden")(x))
            print("hidden:", h)
            seen.append({"type": type(x).__name__, "x": str(x), "hidden": str(h), "h": h})
            return nn.Dense(2, name="output")(h)

    k_x, k_net = jax.random.split(d2l.seed(SEED))
    x = jax.random.uniform(k_x, (1, 4))
    net = HybridNet()
    params = net.init(k_net, x)
    seen.clear()  # init traced the function too
    array_output(rec, "hybridnet_output_imperative", net.apply(params, x))
    rec.output("hybridnet_F_imperative", f"the function saw a {seen[-1]['type']}",
               by_design=NO_F)
    array_output(rec, "hybridnet_x", x)
    array_output(rec, "hybridnet_hidden", seen[-1]["h"])
    jitted = jax.jit(net.apply)
    array_output(rec, "hybridnet_output_hybridized", jitted(params, x))
    rec.output("hybridnet_F_hybridized", f"the function saw a {seen[-1]['type']}",
               by_design=NO_F)
    rec.output("hybridnet_x_hybridized", str(seen[-1]["x"]))
    rec.output("hybridnet_hidden_hybridized", str(seen[-1]["hidden"]))
    calls_before = len(seen)
    d2l.sync(jitted(params, x))  # the compiled program runs without the Python code
    rec.output("hybridnet_prints_after_first_hybridized_call", str(len(seen) - calls_before))


def body(args: argparse.Namespace, rec: Recorder) -> None:
    rec.output("symbolic_program_result", symbolic.run_program())
    mlp(args, rec)
    hybrid_block(rec)


def build_parser() -> argparse.ArgumentParser:
    from d2lperf import devices as device_options

    p = harness.parser(__doc__.splitlines()[0], section="hybridize")
    p.add_argument("--export-dir", required=True, help="folder for the exported my_mlp files")
    device_options.add_argument(p, default="cpu")
    return p


if __name__ == "__main__":
    sys.exit(harness.main("hybridize", "jax", build_parser(), body))
