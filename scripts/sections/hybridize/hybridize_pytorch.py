"""Hybrid imperative and symbolic programming, in PyTorch (seeds/000: 命令式和符号式混合编程).

The PyTorch twin of hybridize_mxnet.py. d2l's PyTorch edition
(chapter_computational-performance/hybridize.md) hybridizes with ``torch.jit.script``;
today's PyTorch also compiles with ``torch.compile``. In the document's order:
1. the imperative-vs-symbolic demo (plain Python, d2lperf.symbolic);
2. the 512-256-128-2 MLP as ``nn.Sequential``: its output eager and scripted (and
   compiled); 1000 forward passes of a (1, 512) input eager (``mlp_before_hybridize``),
   scripted (``mlp_after_hybridize``: the book's counterpart of ``hybridize()``) and
   compiled (``mlp_torch_compile``), the three cases compared round by round; the saved
   models (the book's ``net.save('my_mlp')``, a TorchScript archive, and
   ``torch.export``'s ``my_mlp.pt2``, the counterpart of Gluon's ``export``); the net
   applied to a symbolic input (``torch.fx``'s tracer: a graph, as ``net(sym.var('data'))``
   gives a Symbol);
3. the ``HybridBlock`` demo's counterpart: a module whose ``forward`` prints what it sees,
   called eagerly (tensors) and traced by ``torch.fx`` (proxies, as Gluon's F is the
   symbol module once hybridized), and after tracing never run again.

Compilation is timed on its own, never inside the forward-pass timing: ``torch.jit.script``
in this process, and ``torch.compile``'s first call (where it compiles) in fresh
processes, cold (an empty compile cache) and then warm (the cache the cold one filled).
The compiled net of the timed cases is compiled, and called once, before the timing. If
``torch.compile`` cannot work here (no C++ compiler, ...), its cases are recorded as
failed with the reason and the rest of the section runs.

As in the book, the forward passes run with autograd on (parameters that require grad),
as Gluon's ``net(x)`` runs outside ``autograd.record``: both frameworks' default call.
Every timing ends in d2lperf.torch.sync before the clock stops.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from d2lperf import children, harness, provenance, symbolic, timing
from d2lperf import devices as device_options
from d2lperf import torch as d2l
from d2lperf.results import Recorder, read_json, report, write_json

SEED = 0


def get_net():
    """Factory for networks (the book's)."""
    from torch import nn

    return nn.Sequential(nn.Linear(512, 256), nn.ReLU(),
                         nn.Linear(256, 128), nn.ReLU(),
                         nn.Linear(128, 2))


def use_cache(folder: Path) -> None:
    """Point torch.compile's on-disk caches (Inductor's, Triton's) at ``folder``."""
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(folder)
    os.environ["TRITON_CACHE_DIR"] = str(folder / "triton")


def failure(error: BaseException) -> str:
    first_line = (str(error).strip().splitlines() or [""])[0]
    return f"failed: {type(error).__name__}: {first_line[:300]}"


def compile_once(on: str) -> dict[str, Any]:
    """``torch.compile``'s first call, timed: it compiles there. Runs in a fresh process."""
    import torch

    device = d2l.devices(on, 1)[0]
    d2l.seed(SEED)
    net, x = get_net().to(device), torch.randn(size=(1, 512), device=device)
    start = time.perf_counter()
    try:
        compiled = torch.compile(net)
        compiled(x)
        d2l.sync()
    except Exception as error:  # noqa: BLE001 (any compiler failure is a result here)
        return {"status": failure(error)}
    return {"status": "ok", "seconds": time.perf_counter() - start}


def compile_in_fresh_process(args: argparse.Namespace, cache: Path, result: Path):
    command = [sys.executable, __file__, "--compile-child", "--on", args.on,
               "--cache-dir", str(cache), "--result", str(result),
               "--threads", str(args.threads)]
    sys.stdout.flush()
    done = subprocess.run(command, preexec_fn=children.die_with_parent)
    if done.returncode != 0:
        return {"status": f"failed: the compiling process exited with {done.returncode}"}
    return read_json(result)


def compile_times(args: argparse.Namespace, rec: Recorder, work: Path) -> Path | None:
    """torch.compile cold then warm, ``--compile-runs`` times, each in a fresh process with
    a cache folder of its own; the last warm folder, or None when compiling failed."""
    times: dict[str, list[float]] = {"torch_compile_cold": [], "torch_compile_warm": []}
    warm_cache = None
    for run in range(args.compile_runs):
        cache = work / f"cache-{run}"
        for case in times:
            got = compile_in_fresh_process(args, cache, work / f"{case}-{run}.json")
            if got["status"] != "ok":
                rec.notes["torch_compile"] = got["status"]
                rec.notes["failed_cases"] = dict.fromkeys(
                    [*times, "mlp_torch_compile"], got["status"])
                print(f"{case}: {got['status']}", flush=True)
                return None
            times[case].append(got["seconds"])
            print(f"{case}: {got['seconds']:.2f} s (fresh process)", flush=True)
        warm_cache = cache
    for case, values in times.items():
        rec.samples(case, "time", "s", values, devices=args.device_name)
    rec.notes["torch_compile_times"] = (
        "first call of torch.compile(net) in a fresh process (dynamo, AOTAutograd and "
        "Inductor compile there), cold: an empty cache folder, warm: the folder the cold "
        "process filled; one forward pass of the MLP is included (microseconds)")
    return warm_cache


def mlp(args: argparse.Namespace, rec: Recorder, work: Path) -> None:
    # Compiling is timed by the section's first process only; every process compiles the
    # net it times (before timing it) with torch's default cache, warm after the first.
    compiles = True
    if args.process == 0:
        compiles = compile_times(args, rec, work) is not None
    import torch

    device = d2l.devices(args.on, 1)[0]
    d2l.seed(SEED)
    x = torch.randn(size=(1, 512), device=device)
    net = get_net().to(device)
    rec.output("mlp_output_imperative", str(net(x)), net(x).tolist())

    start = time.perf_counter()
    scripted = torch.jit.script(net)
    rec.samples("jit_script_compile", "time", "s", [time.perf_counter() - start],
                devices=args.device_name)
    rec.output("mlp_output_hybridized", str(scripted(x)), scripted(x).tolist())

    # An A/A pair as in the MXNet twin: a second eager copy of the same MLP, timed beside
    # the first, shows how far apart identical work is measured. The copies swap labels
    # in every other process: only ``net`` lends its weights to the scripted and compiled
    # nets.
    plain, twin = timing.aa_roles(net, get_net().to(device), args.process)
    cases = {"mlp_before_hybridize": plain, "mlp_before_hybridize_twin": twin,
             "mlp_after_hybridize": scripted}
    if compiles:
        try:
            compiled = torch.compile(net)
            y = compiled(x)  # compiles here, before any timing
            rec.output("mlp_output_compiled", str(y), y.tolist())
            cases["mlp_torch_compile"] = compiled
        except Exception as error:  # noqa: BLE001
            rec.notes["torch_compile"] = failure(error)
            rec.notes["failed_cases"] = {"mlp_torch_compile": failure(error)}
    if "mlp_torch_compile" not in cases:
        rec.output("mlp_output_compiled", rec.notes["torch_compile"])

    def forward_passes(model):
        def work():
            for _ in range(args.forward_passes):
                model(x)

        return work

    samples = timing.compare({case: forward_passes(m) for case, m in cases.items()}, d2l.sync,
                             warmup=args.warmup, rounds=args.repeats, seed=args.seed,
                             process=args.process)
    rec.timings(samples, devices=d2l.names([device]))
    report(samples, f"of {args.forward_passes} passes")
    rec.notes["mlp_before_hybridize_twin"] = (
        "a second eager copy of the same MLP, timed beside the first: an A/A pair (not in "
        "the document) that shows how far apart identical work is measured")
    save(args, rec, net, scripted, x)
    traced = torch.fx.symbolic_trace(net)
    rec.output("mlp_symbolic_output", str(traced.graph))


def save(args: argparse.Namespace, rec: Recorder, net, scripted, x) -> None:
    """The book's ``net.save('my_mlp')``, and torch.export's program with its weights."""
    import torch

    export_dir = Path(args.export_dir)
    export_dir.mkdir(parents=True, exist_ok=True)
    scripted.save(str(export_dir / "my_mlp"))
    try:
        torch.export.save(torch.export.export(net, (x,)), str(export_dir / "my_mlp.pt2"))
    except Exception as error:  # noqa: BLE001
        rec.notes["torch_export"] = failure(error)
    files = sorted(p for p in export_dir.glob("my_mlp*") if p.is_file())
    rec.artifacts += [p.name for p in files]
    rec.notes["artifact_bytes"] = {p.name: p.stat().st_size for p in files}


def hybrid_block(rec: Recorder) -> None:
    """Gluon's HybridNet prints F, x and the hidden layer from ``hybrid_forward``: eagerly
    it sees NDArrays, once hybridized Symbols, and after the first hybridized call nothing
    runs the Python code again. torch.fx's tracer plays the symbol: it calls ``forward``
    once with proxies and records a graph that runs without the Python code."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    seen: list[dict[str, Any]] = []

    class HybridNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden = nn.Linear(4, 10)
            self.output = nn.Linear(10, 2)

        def forward(self, x):
            print("x:", x)
            h = F.relu(self.hidden(x))
            print("hidden:", h)
            seen.append({"type": type(x).__name__, "x": str(x), "hidden": str(h), "h": h})
            return self.output(h)

    d2l.seed(SEED)
    net = HybridNet()
    x = torch.rand(size=(1, 4))
    y = net(x)
    rec.output("hybridnet_output_imperative", str(y), y.tolist())
    rec.output("hybridnet_F_imperative", f"forward saw a {seen[-1]['type']}", by_design=NO_F)
    rec.output("hybridnet_x", str(x), x.tolist())
    rec.output("hybridnet_hidden", seen[-1]["hidden"], seen[-1]["h"].tolist())
    traced = torch.fx.symbolic_trace(net)
    y = traced(x)
    rec.output("hybridnet_output_hybridized", str(y), y.tolist())
    rec.output("hybridnet_F_hybridized", f"forward saw a {seen[-1]['type']}", by_design=NO_F)
    rec.output("hybridnet_x_hybridized", seen[-1]["x"])
    rec.output("hybridnet_hidden_hybridized", seen[-1]["hidden"])
    calls_before = len(seen)
    traced(x)  # the traced graph runs without forward's Python code
    rec.output("hybridnet_prints_after_first_hybridized_call", str(len(seen) - calls_before))


NO_F = "forward takes no F (no module to print); torch.fx traces the same code"


def body(args: argparse.Namespace, rec: Recorder) -> None:
    # first, so that a skipped run has done no work
    args.device_name = d2l.names(d2l.devices(args.on, 1))
    rec.output("symbolic_program_result", symbolic.run_program())
    with children.temporary_folder("hybridize-torch-") as tmp:
        mlp(args, rec, tmp)
    hybrid_block(rec)


def build_parser() -> argparse.ArgumentParser:
    p = harness.parser(__doc__.splitlines()[0], section="hybridize", framework="pytorch")
    p.add_argument("--export-dir", required=True, help="folder for the saved my_mlp files")
    device_options.add_argument(p, default="cpu")
    return p


def child_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description="one timed torch.compile (used by this script)")
    p.add_argument("--compile-child", action="store_true", required=True)
    p.add_argument("--on", choices=device_options.KINDS, required=True)
    p.add_argument("--cache-dir", type=Path, required=True)
    p.add_argument("--result", required=True)
    p.add_argument("--threads", type=harness.positive_int, required=True)
    args = p.parse_args(argv)
    provenance.set_threads(args.threads)
    use_cache(args.cache_dir)
    write_json(args.result, compile_once(args.on))
    return 0


if __name__ == "__main__":
    if "--compile-child" in sys.argv[1:]:
        sys.exit(child_main(sys.argv[1:]))
    sys.exit(harness.main("hybridize", "pytorch", build_parser(), body))
