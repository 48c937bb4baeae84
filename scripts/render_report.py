"""Render one machine's self-contained HTML report (no network requests, images inline).

Reads machine.json, summary.csv, outputs.csv, each experiment's run.json and the
plots; the documents' figures come from summary.csv and outputs.csv, which took
them from report/reference.csv. Autoescaping is on: machine names and log text
are data, never markup.
"""

from __future__ import annotations

import argparse
import base64
import sys
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from d2lperf import provenance
from d2lperf.results import read_json


def like_document(value: float | None, printed: str | None) -> str:
    """Format a measured value with as many decimals as the document printed (0.4270 -> 4)."""
    if value is None:
        return "–"
    decimals = len(printed.split(".")[1]) if printed and "." in printed else 4
    return f"{value:.{decimals}f}"


def ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


NUMERIC = ("median", "q1", "q3", "ci_low", "ci_high", "ratio", "count", "outliers", "noisy",
           "achieved", "ceiling", "fraction_of_ceiling")


def records(path: Path) -> list[dict[str, Any]]:
    """Rows of a table: the documents' figures stay strings exactly as printed, and an
    empty cell is None (never NaN, which a template would take for true)."""
    frame = pd.read_csv(path, dtype={"document_printed": str, "measured": str, "variant": str},
                        keep_default_na=False, na_values={c: [""] for c in NUMERIC})
    frame = frame.astype(object).where(frame.notna(), None)
    return frame.to_dict("records")


def svg_data_uri(path: Path) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def machine_rows(machine: dict[str, Any]) -> dict[str, str]:
    """The machine section as label -> text; any field of machine.json may be absent."""
    cpu, software = machine.get("cpu", {}), machine.get("software", {})
    mxnet = software.get("mxnet") or {}
    blas = mxnet.get("blas") or {}
    gpus = machine.get("gpus") or []
    memory = machine.get("memory_bytes")
    return dict([
        ("machine id", f"{machine.get('machine')} (derived from the hardware: "
                       f"{machine.get('derived_machine_id')})"),
        ("CPU", f"{cpu.get('model')}, {cpu.get('logical_cores')} logical cores, "
                f"{cpu.get('architecture')}, frequency governor "
                f"{cpu.get('governor') or 'not readable'}"),
        ("memory", f"{memory / 2**30:.1f} GiB" if memory else "unknown"),
        ("OS", str(machine.get("os", {}).get("platform"))),
        ("GPUs", "; ".join(f"{g['name']} (driver {g['driver']}, {g['memory']})" for g in gpus)
         + (f"; CUDA {machine['cuda_driver_version']}" if machine.get("cuda_driver_version")
            else "") if gpus else "none"),
        ("software", f"Python {software.get('python')}, numpy {software.get('numpy')}, "
                     f"MXNet {mxnet.get('version')} "
                     f"({', '.join(mxnet.get('features', [])) or mxnet.get('error', '')})"),
        ("BLAS", ", ".join(filter(None, [blas.get("config") or blas.get("path"),
                                         blas.get("core") and f"kernel {blas['core']}"]))
         or "unknown"),
    ])


def ceilings_text(summary: list[dict[str, Any]]) -> str:
    rates = [r for r in summary if r["experiment"] == "ceilings" and r["metric"] == "rate"
             and r["median"] is not None]
    return "; ".join(f"{r['case']} {r['median']:.1f} {r['unit']}" for r in rates) \
        or "not measured"


def job_figures(paths: list[Path]) -> dict[str, dict[str, Any]]:
    """Snakemake's own per-job wall time (benchmark files); peak memory comes from each
    script's getrusage instead, since the benchmark's sampling misses short jobs."""
    figures = {}
    for path in paths:
        row = pd.read_csv(path, sep="\t").iloc[-1]
        figures[path.stem] = {"wall_s": float(row["s"])}
    return figures


def comparison(args: argparse.Namespace) -> dict[str, Any] | None:
    """The cross-machine section: a column per machine, the baseline's first."""
    if not args.comparison:
        return None
    table = pd.read_csv(args.comparison)
    table = table[table["epoch"].isna()]  # per-epoch rows stay in each machine's report
    speedups = table.dropna(subset=["speedup"])
    baseline = speedups[speedups["speedup"] == 1.0]["machine"].mode()
    machines = sorted(table["machine"].unique(),
                      key=lambda m: (m != (baseline.iloc[0] if len(baseline) else m), m))
    table = table.astype(object).where(table.notna(), None)
    rows = []
    for (experiment, case, metric), group in table.groupby(["experiment", "case", "metric"],
                                                           sort=False):
        cells = {r["machine"]: r for r in group.to_dict("records")}
        first = group.iloc[0]
        rows.append({"experiment": experiment, "case": case, "metric": metric,
                     "unit": first["unit"], "cells": [cells.get(m) for m in machines]})
    return {"machines": machines, "rows": rows,
            "verdicts": records(args.comparison_verdicts),
            "plot": svg_data_uri(args.comparison_plot)}


def render(args: argparse.Namespace) -> str:
    template: Path = args.template
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(template.parent),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(like_document=like_document, ratio=ratio)
    machine = read_json(args.machine)
    runs = [read_json(p) for p in args.runs]
    titles = {r["experiment"]: r for r in records(args.sections)}
    plots = {p.stem: p for p in args.plots}
    summary = records(args.summary)
    outputs = records(args.outputs)
    verdicts = records(args.verdicts)
    sections = []
    order = list(titles)
    for run in sorted(runs, key=lambda r: order.index(r["experiment"])
                      if r["experiment"] in order else len(order)):
        experiment = run["experiment"]
        sections.append({
            "experiment": experiment,
            "title": titles.get(experiment, {"title": experiment, "heading": "",
                                             "document": ""}),
            "run": run,
            "figures": [r for r in summary if r["experiment"] == experiment],
            "outputs": [r for r in outputs if r["experiment"] == experiment],
            "plot": svg_data_uri(plots[experiment]) if experiment in plots else None,
        })
    return env.get_template(template.name).render(
        machine=machine,
        machine_rows={**machine_rows(machine), "ceilings (measured here)": ceilings_text(summary)},
        jobs=job_figures(args.benchmarks),
        preset=args.preset,
        sections=sections,
        verdicts=verdicts,
        comparison=comparison(args),
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--machine", required=True, type=Path, help="machine.json")
    p.add_argument("--summary", required=True, type=Path, help="summary.csv")
    p.add_argument("--outputs", required=True, type=Path, help="outputs.csv")
    p.add_argument("--verdicts", required=True, type=Path, help="verdicts.csv")
    p.add_argument("--runs", required=True, type=Path, nargs="+", help="each run.json")
    p.add_argument("--plots", type=Path, nargs="*", default=[], help="<experiment>.svg files")
    p.add_argument("--benchmarks", type=Path, nargs="*", default=[],
                   help="Snakemake benchmark files of the experiment jobs")
    p.add_argument("--sections", required=True, type=Path,
                   help="report/sections.csv: each experiment's heading in the documents")
    p.add_argument("--comparison", type=Path, help="comparison.csv (other machines present)")
    p.add_argument("--comparison-verdicts", type=Path, help="verdicts_by_machine.csv")
    p.add_argument("--comparison-plot", type=Path, help="plots/comparison.svg")
    p.add_argument("--template", required=True, type=Path)
    p.add_argument("--preset", required=True)
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args()
    args.out.write_text(render(args), encoding="utf-8")
    print(f"wrote {args.out}; peak memory {provenance.peak_rss_mb()['self']:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
