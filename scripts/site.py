"""One page for every machine measured (asv's ``publish``): a static folder, ``site/``.

    .venv/bin/python scripts/site.py [--results results] [--out site]

Reads every machine's folder under results/ (this machine's, and those imported from
kept archives: report/machines/, archives/) that holds a verdicts table and a
machine.json, and writes ``<out>/index.html``: the machines side by side (the CPU, its
vector unit and cores, the GPUs, when it was measured, its headline figures: the best
matrix-product rate on its CPU and GPU, how much faster the hybridized MLP ran than the
imperative one per framework) and every claim's verdict per machine and framework,
filterable by framework and by device (machines with a GPU or without), each machine
linked to its own report, copied to ``<out>/<machine>/report.html``. Self-contained:
inline styles and script, no network; a machine whose folder cannot be read is left out
and named on stderr, the others are written. Nothing else under ``<out>`` is touched.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import jinja2

from d2lperf import claims, hostlock, workloads
from d2lperf.frameworks import DOCUMENTS, LABELS, REGISTRY
from d2lperf.results import RecordError, machine_traits, read_machine, read_run, write_text
from d2lperf.tables import TableError, read_table

TEMPLATE = Path(__file__).resolve().parents[1] / "report/templates/site.html.j2"
SHORT = {c.name: c.short or c.text for c in claims.CLAIMS}
VERDICTS = ("holds", "does not hold", "inconclusive", "not applicable here", "not applicable")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", type=Path, default=Path("results"),
                   help="the folder of machines' results (default: results)")
    p.add_argument("--out", type=Path, default=Path("site"),
                   help="the folder to write (default: site)")
    return p


def best_rate(summary, gpu: bool) -> float | None:
    """The best float32 matrix-product rate of the ceilings (GFLOP/s), on the CPU or on
    any GPU: the rates the report sets timings against (workloads.ceiling_case)."""
    rates = summary[(summary["section"] == "ceilings") & (summary["metric"] == "rate")]
    ceilings = dict(zip(rates["case"], rates["median"]))
    indices = sorted({c[3:c.index("_")] for c in ceilings if c.startswith("gpu")}) if gpu \
        else [None]
    found = [workloads.best_ceiling(ceilings, workloads.ceiling_case(
        "GFLOP", f"cuda:{i}" if i is not None else "cpu", "")) for i in indices]
    best = max((rate for _, rate in filter(None, found)), default=None)
    return round(float(best), 1) if best is not None and best == best else None


def machine_entry(folder: Path) -> dict[str, object]:
    """One machine's row and verdicts, from its folder (RecordError, TableError or OSError
    where it cannot be read)."""
    machine = read_machine(folder / "machine.json")
    verdicts = read_table(folder / "verdicts.csv")
    summary = read_table(folder / "summary.csv")
    verdicts["framework"] = verdicts["framework"].fillna(DOCUMENTS)
    frameworks = [f for f in REGISTRY if f in set(verdicts["framework"])]
    speedups = {}
    for framework in frameworks:
        row = verdicts[(verdicts["name"] == "hybridize_speeds_up_mlp")
                       & (verdicts["framework"] == framework)]
        ratio = float(row["ratio"].iloc[0]) if len(row) else float("nan")
        speedups[framework] = round(1 / ratio, 2) if ratio == ratio and ratio > 0 else None
    started = sorted(str(read_run(run).get("started", ""))
                     for run in folder.glob("*/run.json"))
    facts = machine_traits(machine)
    by = {(r["name"], r["framework"]): r["verdict"] for _, r in verdicts.iterrows()
          if r.get("kind") == "claim"}
    return {
        "id": folder.name,
        "report": (folder / "report.html").is_file(),
        "cpu": facts["cpu"] or "unknown CPU",
        "vector": facts["vector"],
        "cores": facts["cores"],
        "gpus": facts["gpus"],
        "device": "gpu" if machine.get("gpus") else "cpu",
        "measured": next((s[:10] for s in started if s), ""),
        "frameworks": frameworks,
        "cpu_rate": best_rate(summary, gpu=False),
        "gpu_rate": best_rate(summary, gpu=True),
        "speedups": speedups,
        "verdicts": by,
    }


def site_view(results: Path) -> dict[str, object]:
    """Every readable machine under ``results`` and the claims they judged."""
    machines, refused = [], []
    for folder in sorted(p for p in results.iterdir() if p.is_dir()):
        if not (folder / "verdicts.csv").is_file() or not (folder / "machine.json").is_file():
            continue
        try:
            machines.append(machine_entry(folder))
        except (RecordError, TableError, OSError, KeyError, ValueError) as error:
            refused.append(f"{folder.name}: {error}")
    names = [c.name for c in claims.CLAIMS]
    judged = {name for m in machines for name, _ in m["verdicts"]}
    frameworks = [f for f in REGISTRY if any(f in m["frameworks"] for m in machines)]
    return {
        "machines": machines,
        "frameworks": [{"name": f, "label": LABELS[f]} for f in frameworks],
        "claims": [{"name": n, "short": SHORT[n]} for n in names if n in judged],
        "verdict_class": {v: v.replace(" ", "-") for v in VERDICTS},
        "refused": refused,
    }


def main() -> int:
    args = parser().parse_args()
    hostlock.share("the site")  # never beside a timing's lock being taken by force
    view = site_view(args.results)
    for line in view["refused"]:
        print(f"site: left out {line}", file=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    for machine in view["machines"]:
        if machine["report"]:
            target = args.out / str(machine["id"])
            target.mkdir(exist_ok=True)
            shutil.copyfile(args.results / str(machine["id"]) / "report.html",
                            target / "report.html")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATE.parent),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    write_text(args.out / "index.html", env.get_template(TEMPLATE.name).render(**view))
    print(f"site: {args.out / 'index.html'}, {len(view['machines'])} machine(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
