"""What the pipeline itself costs, and how repeatable its figures are. Prints figures.

    .venv/bin/python bench/pipeline_overhead.py [--presets documents ci] [--runs 5]

For each preset, in a temporary copy of the workflow:
- end-to-end wall time of `snakemake --cores 4` from nothing, against the sum of the
  regions the scripts time (every raw time sample; laps inside a total counted once),
  and what each job pays besides (process start, MXNet import, warm-up, data loading);
- no-op re-run time (target: under 3 s);
- report-only rebuild after a template change (target: under 15 s, no section re-run),
  and the report step's peak memory (its own getrusage, printed in its log);
- repeatability: the hybridize section timed a second time, and the drift of its medians;
- the fraction of the measured ceiling that `dot` of 2000 x 2000 reaches.
Finally the timing harness's own cost per timed call. With ``--against REV`` it first
times the whole `documents` run of that earlier commit and of this tree one after the
other, and prints both (what a change of the harness costs in run time).
Nothing here asserts: it prints.
Run it on a quiet machine: it times, and other load changes its figures.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "tests"))

from conftest import EXPERIMENT_PYTHON, copy_workflow, snakemake  # noqa: E402

TORCH_PYTHON = REPO / ".venv-torch/bin/python"
from d2lperf.describe import Stats  # noqa: E402
from d2lperf.timing import measure  # noqa: E402

MACHINE = "bench"
TARGETS = {"overhead": 0.15, "noop_s": 3.0, "report_only_s": 15.0}
LAP = re.compile(r"_batch_\d+$")  # async_memory's laps lie inside its *_total
HARNESS_CALLS = 20000
WAITALL_HARNESS = f"""
import sys; sys.path.insert(0, {str(REPO / 'scripts')!r})
from mxnet import nd
from d2lperf.timing import measure
from d2lperf.describe import Stats
print(Stats(measure(lambda: None, nd.waitall, warmup=100, repeats={HARNESS_CALLS})).median)
"""


def timed_snakemake(work: Path, *args: str) -> tuple[float, str]:
    start = time.perf_counter()
    done = snakemake(work, *args, timeout=7200)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"snakemake failed:\n{done.stderr[-3000:]}")
    return seconds, done.stdout + done.stderr


def measured_regions(results: Path) -> tuple[float, dict[str, float]]:
    """Seconds inside timed regions, per section (raw samples; laps not double-counted)."""
    per_section = {}
    for csv in sorted(results.glob("*/samples.csv")):
        frame = pd.read_csv(csv)
        times = frame[(frame["metric"] == "time") & ~frame["case"].str.contains(LAP)]
        per_section[csv.parent.name] = float(times["value"].sum())
    return sum(per_section.values()), per_section


def job_walls(results: Path) -> dict[str, float]:
    return {p.stem: float(pd.read_csv(p, sep="\t")["s"].iloc[-1])
            for p in sorted((results / "benchmarks").glob("*.tsv"))}


def verdict(value: float, target: float, lower_is_better: bool = True) -> str:
    ok = value < target if lower_is_better else value > target
    return "meets" if ok else "MISSES"


def bench_preset(preset: str, runs: int) -> None:
    config = ["--config", f"preset={preset}", f"machine={MACHINE}",
              f"experiment_python={EXPERIMENT_PYTHON}", f"torch_python={TORCH_PYTHON}"]
    print(f"\n== preset {preset}")
    with tempfile.TemporaryDirectory() as tmp:
        work = copy_workflow(Path(tmp) / "wf")
        results = work / "results" / MACHINE
        wall, _ = timed_snakemake(work, "--cores", "4", *config)
        measured, per_section = measured_regions(results)
        jobs = job_walls(results)
        overhead = (wall - measured) / wall
        print(f"end to end: {wall:.1f} s; inside timed regions: {measured:.1f} s; "
              f"pipeline overhead {overhead:.1%}"
              + (f" -> {verdict(overhead, TARGETS['overhead'])} the 15% target"
                 if preset == "documents" else " (reported, no target)"))
        for section, inside in per_section.items():
            job = jobs.get(section, float("nan"))
            script = json.loads((results / section / "run.json").read_text())
            print(f"  {section:20} job {job:7.1f} s, script {script.get('wall_seconds', 0):7.1f}"
                  f" s, timed {inside:7.1f} s, status {script['status']}")
        rest = wall - sum(jobs.values())
        print(f"  Snakemake itself and the untimed jobs' share: {rest:.1f} s")

        noop = []
        for _ in range(runs):
            seconds, said = timed_snakemake(work, "--cores", "4", *config)
            assert "Nothing to be done" in said, said[-2000:]
            noop.append(seconds)
        stats = Stats(noop)
        print(f"no-op re-run: median {stats.median:.2f} s (min {stats.min:.2f}, max "
              f"{stats.max:.2f}, n={stats.count}) -> {verdict(stats.median, TARGETS['noop_s'])}"
              " the 3 s target")

        template = work / "report/templates/report.html.j2"
        template.write_text(template.read_text() + "\n<!-- bench -->\n", encoding="utf-8")
        seconds, said = timed_snakemake(work, "--cores", "4", *config)
        reran = sorted(set(re.findall(r"^Finished jobid: \d+ \(Rule: (\w+)\)", said, re.M))
                       - {"all"})
        report_log = (results / "logs/report.log").read_text()
        report_rss = re.search(r"peak memory (\d+) MB", report_log).group(1)
        print(f"report-only rebuild after a template change: {seconds:.2f} s, jobs {reran} -> "
              f"{verdict(seconds, TARGETS['report_only_s'])} the 15 s target; report step peak "
              f"memory {report_rss} MB")

        before = pd.read_csv(results / "summary.csv")
        timed_snakemake(work, "--cores", "4", *config, "--forcerun", "hybridize")
        after = pd.read_csv(results / "summary.csv")
        for case in ("mlp_before_hybridize", "mlp_after_hybridize"):
            a, b = (table[(table["case"] == case) & (table["framework"] == "mxnet")]["median"]
                    .iloc[0] for table in (before, after))
            print(f"repeatability, {case}: {a:.4f} s then {b:.4f} s, drift {(b - a) / a:+.1%}")
        dot = after[(after["case"] == "dot_wait_to_read")].iloc[0]
        size = json.loads((results / "async_computation/run.json").read_text())["parameters"]
        if pd.notna(dot.get("fraction_of_ceiling")):
            print(f"dot of {size['size']}x{size['size']} (wait_to_read) reaches "
                  f"{dot['achieved']:.0f} GFLOP/s, {dot['fraction_of_ceiling']:.0%} of the "
                  f"measured ceiling ({dot['ceiling_case']}: {dot['ceiling']:.0f} GFLOP/s)")


def whole_run(work: Path, preset: str, label: str, *config: str) -> float:
    seconds, _ = timed_snakemake(work, "--cores", "4", "--config", f"preset={preset}",
                                 f"machine={MACHINE}", f"experiment_python={EXPERIMENT_PYTHON}",
                                 *config)
    print(f"  {label}: {seconds:.0f} s end to end", flush=True)
    jobs = sorted(job_walls(work / "results" / MACHINE).items(), key=lambda kv: -kv[1])
    print("    jobs: " + ", ".join(f"{name} {wall:.0f} s" for name, wall in jobs), flush=True)
    return seconds


def bench_against(revision: str, preset: str) -> None:
    """The whole run of an earlier commit, then of this tree with MXNet only, then with
    both frameworks, one after the other."""
    print(f"\n== preset {preset}: commit {revision} against this tree, one after the other")
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        old.mkdir()
        archive = subprocess.run(["git", "archive", revision], cwd=REPO, capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        before = whole_run(old, preset, f"{revision} (MXNet, blocked measurement)")
        mxnet = whole_run(copy_workflow(Path(tmp) / "mxnet"), preset, "this tree, MXNet only",
                          "frameworks=[mxnet]")
        both = whole_run(copy_workflow(Path(tmp) / "both"), preset,
                         "this tree, MXNet and PyTorch", f"torch_python={TORCH_PYTHON}")
    print(f"end to end: {revision} (MXNet, blocked measurement) {before:.0f} s; this tree, "
          f"MXNet only {mxnet:.0f} s ({mxnet / before - 1:+.0%}); MXNet and PyTorch "
          f"{both:.0f} s ({both / before:.2f}x the earlier commit's, {both / mxnet:.2f}x this "
          "tree's MXNet-only run)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--presets", nargs="*", default=["documents", "ci"],
                   help="presets to bench in detail (none: only --against)")
    p.add_argument("--runs", type=int, default=5, help="no-op re-runs to time")
    p.add_argument("--against", metavar="REV",
                   help="an earlier commit whose whole documents run to time beside this one")
    args = p.parse_args()
    if args.against:
        bench_against(args.against, "documents")
    for preset in args.presets:
        bench_preset(preset, args.runs)
    python_overhead = Stats(measure(lambda: None, lambda: None, warmup=100,
                                    repeats=HARNESS_CALLS))
    print(f"\nharness overhead per timed call, no-op work and sync: median "
          f"{python_overhead.median * 1e6:.3f} µs")
    waitall = subprocess.run([str(EXPERIMENT_PYTHON), "-c", WAITALL_HARNESS],
                             capture_output=True, text=True, check=True)
    print(f"harness overhead per timed call, nd.waitall() as sync on an empty queue: "
          f"median {float(waitall.stdout.strip()) * 1e6:.3f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
