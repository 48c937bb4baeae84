"""Hybrid imperative and symbolic programming (seeds/000: 命令式和符号式混合编程).

Reproduces, in the document's order:
1. the imperative-vs-symbolic demo: a program built as a string, compiled, executed;
2. the MLP built with ``HybridSequential``: its output before and after ``hybridize()``,
   1000 forward passes timed before and after hybridizing, ``export`` of the model,
   and the network applied to a symbol;
3. the ``HybridBlock`` demo: which ``F`` (ndarray or symbol) ``hybrid_forward`` sees.

Every timing ends in ``nd.waitall()`` before the clock stops.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from d2lperf import harness, symbolic, timing
from d2lperf import mxnet as d2l
from d2lperf.results import Recorder, report

# MXNet's default seed in a fresh process is 0: seeding with it before each demo
# reproduces the figures the document printed from separate programs.
MXNET_DEFAULT_SEED = 0


def symbolic_demo(rec: Recorder) -> None:
    """The document's program built as a string, compiled, executed (d2lperf.symbolic:
    plain Python, the same in both twins)."""
    rec.output("symbolic_program_result", symbolic.run_program())


def get_net():
    from mxnet.gluon import nn

    net = nn.HybridSequential()
    net.add(nn.Dense(256, activation="relu"), nn.Dense(128, activation="relu"), nn.Dense(2))
    net.initialize()
    return net


def array_output(rec: Recorder, name: str, array) -> None:
    rec.output(name, str(array), array.asnumpy().tolist())


def hybrid_sequential(args: argparse.Namespace, rec: Recorder) -> None:
    import mxnet as mx
    from mxnet import nd, sym

    mx.random.seed(MXNET_DEFAULT_SEED)
    x = nd.random.uniform(shape=(1, 512))
    net = get_net()
    array_output(rec, "mlp_output_imperative", net(x))
    net.hybridize()
    array_output(rec, "mlp_output_hybridized", net(x))

    def forward_passes(net):
        def work():
            for _ in range(args.forward_passes):
                _ = net(x)

        return work

    # Separate objects built up front, so the cases can be timed side by side: one to
    # hybridize (built first, so its layers keep the document's names, dense3-5) and two
    # identical imperative copies (an A/A pair: identical work under two labels, which
    # must come out alike; the copies swap labels in every other process).
    net, plain, twin = get_net(), get_net(), get_net()
    net.hybridize()
    plain, twin = timing.aa_roles(plain, twin, args.process)
    cases = {"mlp_before_hybridize": forward_passes(plain),
             "mlp_before_hybridize_twin": forward_passes(twin),
             "mlp_after_hybridize": forward_passes(net)}
    samples = timing.compare(cases, d2l.sync, warmup=args.warmup, rounds=args.repeats,
                             seed=args.seed, process=args.process)
    rec.timings(samples)
    report(samples, f"of {args.forward_passes} passes")
    rec.notes["mlp_before_hybridize_twin"] = (
        "a second imperative copy of the same MLP, timed beside the first: an A/A pair "
        "(not in the document) that shows how far apart identical work is measured")

    export_dir = Path(args.export_dir)
    export_dir.mkdir(parents=True, exist_ok=True)
    net.export(str(export_dir / "my_mlp"))
    rec.artifacts += sorted(p.name for p in export_dir.glob("my_mlp*"))
    rec.output("mlp_symbolic_output", str(net(sym.var("data"))))


def hybrid_block(rec: Recorder) -> None:
    import mxnet as mx
    from mxnet import nd
    from mxnet.gluon import nn

    seen: list[dict[str, str]] = []

    class HybridNet(nn.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.hidden = nn.Dense(10)
            self.output = nn.Dense(2)

        def hybrid_forward(self, F, x):
            print("F:", F)
            print("x:", x)
            h = F.relu(self.hidden(x))
            print("hidden:", h)
            seen.append({"F": F.__name__, "x": str(x), "hidden": str(h), "h": h})
            return self.output(h)

    mx.random.seed(MXNET_DEFAULT_SEED)
    net = HybridNet()
    net.initialize()
    x = nd.random.uniform(shape=(1, 4))
    array_output(rec, "hybridnet_output_imperative", net(x))
    rec.output("hybridnet_F_imperative", seen[-1]["F"])
    array_output(rec, "hybridnet_x", x)
    array_output(rec, "hybridnet_hidden", seen[-1]["h"])
    net.hybridize()
    array_output(rec, "hybridnet_output_hybridized", net(x))
    rec.output("hybridnet_F_hybridized", seen[-1]["F"])
    rec.output("hybridnet_x_hybridized", seen[-1]["x"])
    rec.output("hybridnet_hidden_hybridized", seen[-1]["hidden"])
    calls_before = len(seen)
    net(x)  # after the first hybridized call, hybrid_forward is no longer run
    rec.output("hybridnet_prints_after_first_hybridized_call", str(len(seen) - calls_before))


def body(args: argparse.Namespace, rec: Recorder) -> None:
    symbolic_demo(rec)
    hybrid_sequential(args, rec)
    hybrid_block(rec)


def build_parser() -> argparse.ArgumentParser:
    p = harness.parser(__doc__.splitlines()[0], section="hybridize")
    p.add_argument("--export-dir", required=True, help="folder for the exported my_mlp files")
    return p


if __name__ == "__main__":
    sys.exit(harness.main("hybridize", "mxnet", build_parser(), body))
