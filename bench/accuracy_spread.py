"""How far LeNet's test accuracy moves from seed to seed, per framework. Prints figures.

    .venv/bin/python bench/accuracy_spread.py [--seeds 5] [--frameworks mxnet pytorch jax]
        [--epochs 4] [--train-limit N]

The accuracy claims compare one training run with the documents' one figure (LeNet from
scratch, 1 device, batch 256, lr 0.2: 0.76 after 4 epochs in seeds/000). How far would the
same training land by chance alone? Each framework's multi_gpu_scratch script trains the
documents' 1-device run once per seed (--seed: the initial parameters and the data's order),
run by hand, one after another; this prints each run's test accuracy after every epoch, then
per framework the lowest, median and highest after the last epoch and their spread, beside
the claims' margin (d2lperf.claims.ACCURACY_MARGIN). Nothing here asserts: it prints.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from conftest import EXPERIMENT_PYTHON, JAX_PYTHON, TORCH_PYTHON, read_rows  # noqa: E402
from d2lperf.claims import ACCURACY_MARGIN  # noqa: E402

PYTHONS = {"mxnet": EXPERIMENT_PYTHON, "pytorch": TORCH_PYTHON, "jax": JAX_PYTHON}
CASE = "lenet_1_device"


def accuracies(out: Path) -> list[float]:
    """The run's test accuracy after each epoch, in order."""
    rows = [r for r in read_rows(out) if r["case"] == CASE and r["metric"] == "accuracy"]
    return [float(r["value"]) for r in sorted(rows, key=lambda r: int(r["epoch"]))]


def train(framework: str, seed: int, args: argparse.Namespace, tmp: Path) -> list[float]:
    out = tmp / f"{framework}-{seed}"
    out.mkdir()
    command = [str(PYTHONS[framework]),
               str(REPO / f"scripts/sections/multi_gpu_scratch/multi_gpu_scratch_{framework}.py"),
               "--devices", "1", "--batch-sizes", "256", "--learning-rates", "0.2",
               "--epochs", str(args.epochs), "--seed", str(seed),
               "--csv", str(out / "samples.csv"), "--sidecar", str(out / "run.json"),
               "--on", "cpu",  # the documents' 1-device run, on the CPU
               *(["--train-limit", str(args.train_limit)] if args.train_limit else [])]
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    found = accuracies(out) if done.returncode == 0 else []
    if not found:
        raise SystemExit(f"{framework} seed {seed} trained nothing (exit code "
                         f"{done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    return found


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--frameworks", nargs="+", default=list(PYTHONS), choices=list(PYTHONS))
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--train-limit", type=int, default=None)
    args = p.parse_args()
    data = "all 60000" if not args.train_limit else f"the first {args.train_limit}"
    print(f"LeNet from scratch, 1 device, batch 256, lr 0.2, {args.epochs} epochs on {data} "
          f"training images; seeds 0-{args.seeds - 1}; the documents: 0.76 after 4 epochs")
    with tempfile.TemporaryDirectory() as tmp:
        for framework in args.frameworks:
            finals = []
            for seed in range(args.seeds):
                start = time.monotonic()
                found = train(framework, seed, args, Path(tmp))
                finals.append(found[-1])
                print(f"{framework} seed {seed}: test accuracy by epoch "
                      f"{' '.join(f'{a:.3f}' for a in found)} "
                      f"({time.monotonic() - start:.0f} s)", flush=True)
            print(f"{framework}: after epoch {args.epochs}: lowest {min(finals):.3f}, median "
                  f"{statistics.median(finals):.3f}, highest {max(finals):.3f}; spread "
                  f"{max(finals) - min(finals):.3f} over {len(finals)} seeds (the claims' "
                  f"margin: {ACCURACY_MARGIN})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
