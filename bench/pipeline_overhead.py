"""What the pipeline itself costs: no-op re-run time and the timing harness's overhead.

    .venv/bin/python bench/pipeline_overhead.py [--preset ci] [--runs 5]

Runs the workflow once in a temporary copy (the CI preset by default), then times
`snakemake --cores 4` when everything is up to date (target: under 3 s), and the
harness's own cost per timed call: with a no-op workload and a no-op sync, and with
MXNet's `nd.waitall()` on an empty queue as the sync, in the experiment environment.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "tests"))

from conftest import EXPERIMENT_PYTHON, copy_workflow, snakemake  # noqa: E402
from d2lperf.stats import Stats  # noqa: E402
from d2lperf.timing import measure  # noqa: E402

NOOP_TARGET_S = 3.0
HARNESS_CALLS = 20000
WAITALL_HARNESS = f"""
import sys; sys.path.insert(0, {str(REPO / 'scripts')!r})
from mxnet import nd
from d2lperf.timing import measure
from d2lperf.stats import Stats
print(Stats(measure(lambda: None, nd.waitall, warmup=100, repeats={HARNESS_CALLS})).median)
"""


def describe(label: str, stats: Stats, unit: str = "s", scale: float = 1.0) -> str:
    return (f"{label}: median {stats.median * scale:.3f} {unit} "
            f"(min {stats.min * scale:.3f}, max {stats.max * scale:.3f}, n={stats.count})")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="ci")
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    config = ["--config", f"preset={args.preset}", f"experiment_python={EXPERIMENT_PYTHON}"]

    with tempfile.TemporaryDirectory() as tmp:
        work = copy_workflow(Path(tmp) / "wf")
        start = time.perf_counter()
        first = snakemake(work, "--cores", "4", *config)
        if first.returncode != 0:
            print(first.stderr[-3000:], file=sys.stderr)
            return 1
        print(f"full run, {args.preset} preset: {time.perf_counter() - start:.1f} s")
        noop = []
        for _ in range(args.runs):
            start = time.perf_counter()
            done = snakemake(work, "--cores", "4", *config)
            noop.append(time.perf_counter() - start)
            assert "Nothing to be done" in done.stdout + done.stderr, done.stderr[-2000:]
    stats = Stats(noop)
    verdict = "meets" if stats.median < NOOP_TARGET_S else "MISSES"
    print(describe("no-op re-run", stats) + f" -> {verdict} the {NOOP_TARGET_S:.0f} s target")

    python_overhead = Stats(measure(lambda: None, lambda: None, warmup=100,
                                    repeats=HARNESS_CALLS))
    print(describe("harness overhead per timed call, no-op work and sync", python_overhead,
                   "µs", 1e6))
    waitall = subprocess.run([str(EXPERIMENT_PYTHON), "-c", WAITALL_HARNESS],
                             capture_output=True, text=True, check=True)
    print(f"harness overhead per timed call, nd.waitall() as sync on an empty queue: "
          f"median {float(waitall.stdout.strip()) * 1e6:.3f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
