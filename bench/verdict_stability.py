"""Do the verdicts survive a re-run? Runs the sections under a minute K times. Prints figures.

    .venv/bin/python bench/verdict_stability.py [--runs K] [--sections ...] [--band 0.05]

Each run times every listed section at the documents' parameters (config/config.yaml's
`documents` preset: the same processes, rounds and warm-ups as `make report`), one
section after the other, nothing else running, and decides the claims and checks the
report would. Then, per claim or check: the verdict of each run, and whether two runs
contradict each other (one says it holds, another that it does not); the A/A ratios of
every run; the first-position effect; and the drift of every case's median between runs
(largest over smallest). Nothing here asserts: it prints. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from d2lperf import claims, experiment  # noqa: E402
from d2lperf.frameworks import REGISTRY  # noqa: E402
from d2lperf.presets import cli_args, for_framework  # noqa: E402
from d2lperf.sections import SECTIONS as SECTION_TABLE  # noqa: E402
from d2lperf.tables import load_reference, load_samples, summarise_samples  # noqa: E402

# Each framework's interpreter: $EXPERIMENT_PYTHON, $TORCH_PYTHON (its config key, upper
# case), else the one `make envs` builds.
PYTHONS = {name: Path(os.environ.get(f.interpreter_key.upper(), REPO / f.default_interpreter))
           for name, f in REGISTRY.items()}
# The side-by-side timings that run on a CPU: the sections the A/A ratios come from.
SECTIONS = [name for name, s in SECTION_TABLE.items() if s.plot == "timing" and not s.gpus]
SCHEMA = REPO / "workflow/schemas/samples.schema.yaml"


def run_section(section: str, framework: str, python: Path, options: dict,
                out: Path) -> tuple[dict, pd.DataFrame, float]:
    script = REPO / "scripts/sections" / framework / f"{section}.py"
    out.mkdir(parents=True)
    extra = {"export_dir": out / "model"} if section == "hybridize" else {}
    command = [str(python), str(script), *cli_args({**options, **extra}),
               "--csv", str(out / "samples.csv"), "--sidecar", str(out / "run.json")]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{section} failed:\n{done.stderr[-3000:]}")
    run = json.loads((out / "run.json").read_text())
    return run, load_samples(out / "samples.csv", SCHEMA), seconds


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=experiment.positive_int, default=3,
                   help="K: runs of every section (default: 3)")
    p.add_argument("--sections", nargs="+", default=SECTIONS, choices=SECTIONS)
    p.add_argument("--frameworks", nargs="+", default=list(PYTHONS), choices=list(PYTHONS))
    p.add_argument("--preset", default="documents",
                   help="preset of config/config.yaml (default: documents; ci for a smoke test)")
    p.add_argument("--band", type=experiment.positive_fraction, default=None,
                   help="practical band (default: practical_band of config/config.yaml)")
    args = p.parse_args()
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    if args.preset not in config["presets"]:
        p.error(f"--preset: unknown preset {args.preset!r}; allowed: "
                f"{', '.join(config['presets'])}")
    width = args.band or config.get("practical_band", claims.DEFAULT_BAND)
    threads = os.cpu_count() if config["threads"] == "auto" else config["threads"]
    reference = load_reference(REPO / "report/reference.csv")
    verdicts, medians, walls = [], [], []
    with tempfile.TemporaryDirectory(prefix="verdict-stability-") as tmp:
        for k in range(args.runs):
            runs, frames, wall = {f: {} for f in args.frameworks}, [], 0.0
            for framework in args.frameworks:
                for section in args.sections:
                    options = {"threads": threads, **for_framework(
                        config["presets"][args.preset][section], framework)}
                    run, samples, seconds = run_section(
                        section, framework, PYTHONS[framework], options,
                        Path(tmp) / f"{k}" / framework / section)
                    runs[framework][section], wall = run, wall + seconds
                    frames.append(samples)
                    print(f"run {k + 1}/{args.runs}: {framework} {section} {seconds:.1f} s",
                          flush=True)
            samples = pd.concat(frames, ignore_index=True)
            summary = summarise_samples(samples)
            judged = [v for framework in args.frameworks for v in claims.judge(
                summary, runs[framework], reference, samples, band=width, framework=framework)]
            verdicts.append({f"{v.framework}/{v.name}": v for v in judged
                             if v.section in (*args.sections, "all") and v.verdict != claims.NA})
            medians.append(summary.set_index(["framework", "experiment", "case"])["median"])
            walls.append(wall)

    print(f"\n== verdicts over {args.runs} runs of preset {args.preset} (band ±{width:g}, "
          f"{threads} threads)")
    contradictions = 0
    for name in verdicts[0]:
        seen = [v[name] for v in verdicts if name in v]
        said = {v.verdict for v in seen}
        contradicts = {claims.HOLDS, claims.FAILS} <= said
        contradictions += contradicts
        print(f"{name:38} {' | '.join(v.verdict for v in seen)}"
              + ("   <- CONTRADICTION" if contradicts else ""))
        for index, v in enumerate(seen):
            print(f"{'':40}run {index + 1}: {v.evidence}")
    print(f"contradictions: {contradictions}")

    print("\n== A/A pairs (identical work under two labels)")
    for framework in args.frameworks:
        for pair, *_ in claims.AA_PAIRS:
            name = f"{framework}/{pair}"
            ratios = [f"{v[name].ratio:.3f} [{v[name].ratio_low:.3f}-{v[name].ratio_high:.3f}] "
                      f"{v[name].verdict}" for v in verdicts if name in v]
            print(f"{name:38} " + " | ".join(ratios))

    print("\n== drift of each median between runs (largest / smallest - 1)")
    table = pd.concat(medians, axis=1)
    for (framework, section, case), row in table.iterrows():
        print(f"{framework:8} {section:20} {case:28} " + " ".join(f"{v:.4f}" for v in row)
              + f"  drift {row.max() / row.min() - 1:+.1%}")
    print("\nwall time per run (the sections' processes): "
          + ", ".join(f"{w:.0f} s" for w in walls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
