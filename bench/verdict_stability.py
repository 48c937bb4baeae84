"""Do the verdicts survive a re-run? Runs the sections under a minute K times. Prints figures.

    .venv/bin/python bench/verdict_stability.py [--runs K] [--sections ...] [--band 0.05]
        [--modes quiet busy]

Each run times every listed section at the documents' parameters (config/config.yaml's
`documents` preset: the same processes, rounds and warm-ups as `make report`), one
section after the other, nothing else running, and decides the claims and checks the
report would. Then, per claim or check: the verdict of each run, and whether two runs
contradict each other (one says it holds, another that it does not); the A/A ratios of
every run; the first-position effect; and the drift of every case's median between runs
(largest over smallest). Nothing here asserts: it prints. Run it on a quiet machine.

Per framework it then tallies what the issue's acceptance asks: contradictions, how many
runs each claim was decisive in out of the runs where it applies, and the A/A pairs'
verdicts with whether each interval contains 1. "Not applicable here" is neither
decisive nor a contradiction: it is left out of every count (its runs are not runs the
claim was judged in) and named apart.

``--modes quiet busy`` runs everything twice: once quiet, once with one core kept busy
by a spin the bench starts and stops (bounded by ``--busy-limit``, killed however the
bench ends), and prints the two side by side: verdict and interval per claim and
framework, each section's stages and why they stopped, the run times, and what the busy
runs contradict or lose of the quiet runs' decisive verdicts.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from d2lperf import checks, claims, harness, steadiness  # noqa: E402
from d2lperf.frameworks import REGISTRY  # noqa: E402
from d2lperf.presets import cli_args, for_framework  # noqa: E402
from d2lperf.sections import SECTIONS as SECTION_TABLE  # noqa: E402
from d2lperf.sections import complete_presets  # noqa: E402
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
    script = REPO / "scripts/sections" / section / f"{section}_{framework}.py"
    out.mkdir(parents=True)
    extra = {"export_dir": out / "model"} if section == "hybridize" else {}
    # measured as its rule measures it: the manager (this, the workflow's interpreter)
    # running the section's worker in its framework's
    command = [sys.executable, "-m", "d2lperf", "measure", "--section", section,
               "--framework", framework, "--python", str(python), "--script", str(script),
               *cli_args({**options, **extra}),
               "--csv", str(out / "samples.csv"), "--sidecar", str(out / "run.json")]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{section} failed:\n{done.stderr[-3000:]}")
    run = json.loads((out / "run.json").read_text())
    return run, load_samples(out / "samples.csv", SCHEMA), seconds


def measure(args: argparse.Namespace, config: dict, threads: int, width: float,
            reference: pd.DataFrame, mode: str) -> dict:
    """K runs of every section in one mode; the verdicts, medians, run times and stages."""
    verdicts, medians, walls, staging = [], [], [], []
    with contextlib.ExitStack() as stack:
        if args.keep:
            tmp = args.keep / mode
            tmp.mkdir(parents=True, exist_ok=False)
        else:
            tmp = stack.enter_context(
                tempfile.TemporaryDirectory(prefix=f"verdict-stability-{mode}-"))
        for k in range(args.runs):
            runs, frames, wall = {f: {} for f in args.frameworks}, [], 0.0
            for framework in args.frameworks:
                for section in args.sections:
                    options = {"threads": threads, "band": width, **for_framework(
                        config["presets"][args.preset][section], framework)}
                    run, samples, seconds = run_section(
                        section, framework, PYTHONS[framework], options,
                        Path(tmp) / f"{k}" / framework / section)
                    runs[framework][section], wall = run, wall + seconds
                    frames.append(samples)
                    stages_run = run.get("stages") or {}
                    staging.append((k, framework, section, stages_run.get("count", 1),
                                    stages_run.get("stopped", "-"), seconds))
                    print(f"{mode} run {k + 1}/{args.runs}: {framework} {section} "
                          f"{seconds:.1f} s, {stages_run.get('count', 1)} stage(s), "
                          f"stopped: {stages_run.get('stopped', '-')}", flush=True)
            samples = pd.concat(frames, ignore_index=True)
            summary = summarise_samples(samples)
            judged = [v for framework in args.frameworks for v in claims.judge(
                summary, runs[framework], reference, samples, band=width, framework=framework)]
            verdicts.append({f"{v.framework}/{v.name}": v for v in judged
                             if v.section in (*args.sections, "all") and v.verdict != claims.NA})
            medians.append(summary.set_index(["framework", "section", "case"])["median"])
            walls.append(wall)
    return {"verdicts": verdicts, "medians": medians, "walls": walls, "stages": staging}


DECISIVE = {claims.HOLDS, claims.FAILS}
UNCOUNTED = {claims.NOT_HERE, claims.NA}  # not judged here: neither decisive nor against
# The steadiness check says how the machine was during each run: meant to differ between
# runs (and modes), it is printed but never counted as a contradiction.
MACHINE_STATE = "machine_steadiness"


def counted(name: str) -> bool:
    """Whether a claim's or check's verdicts can contradict each other across runs."""
    return not name.endswith(f"/{MACHINE_STATE}")


def tally(verdicts: list[dict], framework: str) -> dict:
    """One framework's figures over the runs (each run: {"framework/name": Verdict}):
    contradictions, per claim "decisive in k of n" (n: the runs where it was judged),
    the claims that in every run do not apply or were not measured, and each A/A pair's
    verdicts and whether its intervals contain 1."""
    names = list(dict.fromkeys(n for run in verdicts for n in run
                               if n.startswith(f"{framework}/")))
    decisive, not_here, contradictions, pairs = {}, [], 0, {}
    aa_names = {f"{framework}/{pair}" for pair, *_ in checks.AA_PAIRS}
    for name in names:
        seen = [run[name] for run in verdicts if name in run]
        judged = [v for v in seen if v.verdict not in UNCOUNTED]
        if not judged:
            not_here.append(name)
            continue
        said = {v.verdict for v in judged}
        contradictions += counted(name) and DECISIVE <= said
        if name in aa_names:
            pairs[name] = [(v.verdict, v.ratio_low <= 1 <= v.ratio_high) for v in judged]
        elif seen[0].kind == "claim":
            decisive[name] = (sum(v.verdict in DECISIVE for v in judged), len(judged))
    return {"contradictions": contradictions, "decisive": decisive, "not_here": not_here,
            "aa": pairs}


def print_tally(verdicts: list[dict], frameworks: list[str], mode: str) -> None:
    """The per-framework tally (``tally``) in words."""
    for framework in frameworks:
        found = tally(verdicts, framework)
        print(f"\n== {mode}: {framework}: {found['contradictions']} contradiction(s)")
        for name, (k, n) in found["decisive"].items():
            print(f"  {name:38} decisive in {k} of {n} run(s) where it applies")
        for name in found["not_here"]:
            print(f"  {name:38} does not apply or not measured in every run (not counted)")
        for name, runs in found["aa"].items():
            cells = [f"{verdict}, {'contains 1' if inside else 'excludes 1'}"
                     for verdict, inside in runs]
            print(f"  {name:38} A/A: " + " | ".join(cells))


def print_mode(args: argparse.Namespace, found: dict, mode: str, width: float,
               threads: int) -> int:
    """One mode's verdicts, contradictions, A/A ratios and drift; its contradictions."""
    verdicts = found["verdicts"]
    print(f"\n== {mode}: verdicts over {args.runs} runs of preset {args.preset} "
          f"(band ±{width:g}, {threads} threads)")
    contradictions = 0
    for name in verdicts[0]:
        seen = [v[name] for v in verdicts if name in v]
        said = {v.verdict for v in seen} - UNCOUNTED
        contradicts = counted(name) and DECISIVE <= said
        contradictions += contradicts
        print(f"{name:38} {' | '.join(v.verdict for v in seen)}"
              + ("   <- CONTRADICTION" if contradicts else "")
              + ("   (the machine's state in each run: not counted)" if not counted(name)
                 else ""))
        for index, v in enumerate(seen):
            print(f"{'':40}run {index + 1}: {v.evidence}")
    print(f"contradictions: {contradictions}")

    print(f"\n== {mode}: A/A pairs (identical work under two labels)")
    for framework in args.frameworks:
        for pair, *_ in checks.AA_PAIRS:
            name = f"{framework}/{pair}"
            ratios = [f"{v[name].ratio:.3f} [{v[name].ratio_low:.3f}-{v[name].ratio_high:.3f}] "
                      f"{v[name].verdict}" for v in verdicts if name in v]
            print(f"{name:38} " + " | ".join(ratios))

    print(f"\n== {mode}: drift of each median between runs (largest / smallest - 1)")
    table = pd.concat(found["medians"], axis=1)
    for (framework, section, case), row in table.iterrows():
        print(f"{framework:8} {section:20} {case:28} " + " ".join(f"{v:.4f}" for v in row)
              + f"  drift {row.max() / row.min() - 1:+.1%}")
    print(f"\n{mode}: wall time per run (the sections' processes): "
          + ", ".join(f"{w:.0f} s" for w in found["walls"]))
    print_tally(verdicts, args.frameworks, mode)
    return contradictions


def _short(v) -> str:
    interval = (f" {v.ratio:.3g} [{v.ratio_low:.3g}-{v.ratio_high:.3g}]"
                if v.ratio == v.ratio else "")
    return f"{v.verdict}{interval}"


def print_side_by_side(args: argparse.Namespace, found: dict[str, dict]) -> None:
    """The modes' verdicts, intervals, stages and run times next to each other, and what
    the busy runs contradict or lose of the quiet runs' decisive verdicts."""
    modes = list(found)
    print("\n== side by side: " + " vs ".join(modes)
          + " (verdict and interval per run, ' | ' between runs)")
    names = list(dict.fromkeys(n for f in found.values() for v in f["verdicts"] for n in v))
    for name in names:
        print(name)
        for mode in modes:
            seen = [v[name] for v in found[mode]["verdicts"] if name in v]
            print(f"  {mode:6} " + " | ".join(_short(v) for v in seen))
    print("\nstages per section (run: count, why it stopped, seconds)")
    sections = list(dict.fromkeys((framework, section) for figures in found.values()
                                  for _, framework, section, *_ in figures["stages"]))
    for framework, section in sections:
        print(f"{framework}/{section}")
        for mode in modes:
            cells = [f"{count} {stopped} {seconds:.0f} s"
                     for _, f, s, count, stopped, seconds in found[mode]["stages"]
                     if (f, s) == (framework, section)]
            print(f"  {mode:6} " + " | ".join(cells))
    print("\nrun time per run: " + "; ".join(
        f"{mode} " + ", ".join(f"{w:.0f} s" for w in found[mode]["walls"]) for mode in modes))
    if {"quiet", "busy"} <= set(modes):
        decisive = DECISIVE
        quiet = [(n, v.verdict) for f in found["quiet"]["verdicts"] for n, v in f.items()
                 if v.verdict in decisive and counted(n)]
        busy = {n: {f[n].verdict for f in found["busy"]["verdicts"] if n in f} for n in names}
        against = sum(1 for n, said in quiet if (decisive - {said}) & busy.get(n, set()))
        kept = sum(1 for f in found["busy"]["verdicts"] for n, v in f.items()
                   if v.verdict in decisive and counted(n))
        ratio = sum(found["busy"]["walls"]) / max(sum(found["quiet"]["walls"]), 1e-9)
        print(f"busy against quiet: {against} contradiction(s); decisive verdicts {kept} busy "
              f"vs {len(quiet)} quiet; run time {ratio:.2f}x the quiet runs'")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=harness.positive_int, default=3,
                   help="K: runs of every section (default: 3)")
    p.add_argument("--sections", nargs="+", default=SECTIONS, choices=SECTIONS)
    p.add_argument("--frameworks", nargs="+", default=list(PYTHONS), choices=list(PYTHONS))
    p.add_argument("--preset", default="documents",
                   help="preset (default: documents; ci for a smoke test)")
    p.add_argument("--band", type=harness.positive_fraction, default=None,
                   help="practical band (default: practical_band of config/config.yaml)")
    p.add_argument("--modes", nargs="+", default=["quiet"], choices=["quiet", "busy"],
                   help="quiet: nothing else running; busy: one core kept busy by a spin "
                        "the bench starts and stops (default: quiet)")
    p.add_argument("--keep", type=Path, default=None,
                   help="folder (new) that keeps every run's samples.csv and run.json, "
                        "under <mode>/<run>/<framework>/<section>/ (default: a temporary one)")
    p.add_argument("--busy-limit", type=harness.positive_float, default=7200.0,
                   help="seconds the busy mode's spin may run at most (default: 7200)")
    args = p.parse_args()
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["presets"] = complete_presets(config.get("presets"))  # the sections' own, completed
    if args.preset not in config["presets"]:
        p.error(f"--preset: unknown preset {args.preset!r}; allowed: "
                f"{', '.join(config['presets'])}")
    width = args.band or config.get("practical_band", claims.DEFAULT_BAND)
    threads = os.cpu_count() if config["threads"] == "auto" else config["threads"]
    reference = load_reference()
    # a SIGTERM ends the bench through its finally blocks: the spin is stopped with it
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    found = {}
    for mode in dict.fromkeys(args.modes):
        if mode == "busy":
            with steadiness.busy_cores(1, seconds=args.busy_limit):
                found[mode] = measure(args, config, threads, width, reference, mode)
        else:
            found[mode] = measure(args, config, threads, width, reference, mode)
    for mode, figures in found.items():
        print_mode(args, figures, mode, width, threads)
    print_side_by_side(args, found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
