"""Which kernel each BLAS here runs, what it reaches, and how far from the machine's best.

    .venv/bin/python bench/blas_kernels.py [--size 2000] [--repeats 5] [--threads N]
                                           [--kernels Haswell SkylakeX]

Side by side: MXNet's dot of size x size with its OpenBLAS's own kernel (stock) and with
each forced kernel (OPENBLAS_CORETYPE), numpy's matmul in the MXNet environment and
in the workflow environment, and PyTorch's mm; each in a fresh process, checked against a
float64 reference computed without BLAS before it is timed (a wrong kernel is shown as
refused, not timed), with the kernel it ran, its median rate, and its share of the best
rate here and of the CPU's theoretical float32 peak (a range: the FMA pipes per core
cannot be read). Nothing here asserts: it prints. On a busy machine the rates move.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from d2lperf import machine  # noqa: E402

ENVIRONMENTS = {"mxnet": REPO / ".venv-mxnet/bin/python", "workflow": Path(sys.executable),
                "torch": REPO / ".venv-torch/bin/python"}
# Run in the child: check the product against float64, then time it (each call synchronised).
CHILD = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from d2lperf import blas
library, n, repeats = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
a, b = blas.probe_matrices(n)
error = blas.Reference(a, b).error(blas.multiply_for(library)(a, b))
if library == "mxnet":
    from mxnet import nd
    x, y = nd.array(a), nd.array(b)
    run = lambda: nd.dot(x, y).wait_to_read()
elif library == "pytorch":
    import torch
    x, y = torch.from_numpy(a), torch.from_numpy(b)
    run = lambda: torch.mm(x, y)
else:
    run = lambda: a @ b
result = {"kernel": blas.kernel_of(library), "error": error,
          "tolerance": blas.probe_tolerance(n)}
if error <= result["tolerance"]:
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter(); run(); times.append(time.perf_counter() - start)
    result["gflops"] = 2 * n ** 3 / statistics.median(times) / 1e9
print(json.dumps(result))
"""


def measure(python: Path, library: str, args: argparse.Namespace,
            coretype: str | None = None) -> dict:
    """One library's product in a fresh process: kernel, error, median GFLOP/s."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    env.update({name: str(args.threads) for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                     "MKL_NUM_THREADS")})
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    if not python.exists():
        return {"kernel": f"not installed ({python})"}
    done = subprocess.run([str(python), "-c", CHILD, str(REPO / "scripts"), library,
                           str(args.size), str(args.repeats)], capture_output=True, text=True,
                          env=env, timeout=600)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"kernel": f"failed with exit code {done.returncode}: {last[:120]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=2000, help="side of the square matrices")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=machine.logical_cores())
    p.add_argument("--kernels", nargs="*", default=["Haswell", "SkylakeX"],
                   help="OpenBLAS kernels forced under MXNet's dot beside its stock one")
    args = p.parse_args()
    rows = [("MXNet dot, stock kernel", measure(ENVIRONMENTS["mxnet"], "mxnet", args))]
    rows += [(f"MXNet dot, OPENBLAS_CORETYPE={kernel}",
              measure(ENVIRONMENTS["mxnet"], "mxnet", args, kernel)) for kernel in args.kernels]
    rows += [("numpy matmul (MXNet env)", measure(ENVIRONMENTS["mxnet"], "numpy", args)),
             ("numpy matmul (workflow env)", measure(ENVIRONMENTS["workflow"], "numpy", args)),
             ("PyTorch mm", measure(ENVIRONMENTS["torch"], "pytorch", args))]
    best = max((r.get("gflops", 0) for _, r in rows), default=0) or None
    peak = machine.theoretical_peak(threads_cores(args.threads))
    print(f"float32 matrix product {args.size}x{args.size}, {args.threads} threads")
    if peak:
        print(f"CPU peak {peak['gflops_low']:.0f}-{peak['gflops_high']:.0f} GFLOP/s: "
              f"{peak['how']}")
    print(f"{'library':40} {'kernel':42} {'GFLOP/s':>8} {'of best':>8} {'of peak':>10} "
          f"{'max rel. error':>14}")
    for name, r in rows:
        rate = r.get("gflops")
        shown = f"{rate:8.1f} {100 * rate / best:7.0f}%" if rate else f"{'refused':>8} {'':>8}" \
            if "error" in r else f"{'-':>8} {'':>8}"
        of_peak = (f"{100 * rate / peak['gflops_high']:.0f}-{100 * rate / peak['gflops_low']:.0f}%"
                   if rate and peak else "")
        error = f"{r['error']:.1e}" if "error" in r else ""
        print(f"{name:40} {r['kernel'][:42]:42} {shown} {of_peak:>10} {error:>14}")
    return 0


def threads_cores(threads: int) -> int:
    """The cores a run of this many threads can use, for the peak it is set against."""
    return min(threads, machine.physical_cores())


if __name__ == "__main__":
    sys.exit(main())
