"""Across machines (only where other machines' results are present): a column per
machine, the baseline's first, and each claim's verdicts per framework on each; where a
framework's verdict differs between machines, what tells those machines apart (the CPU,
its cores and vector unit, the BLAS kernel, the GPUs, the Python and numpy)."""

from __future__ import annotations

import argparse
from typing import Any

import pandas as pd

from d2lperf.claims import Claim
from d2lperf.frameworks import DOCUMENTS
from d2lperf.report.claims_view import CHECK_GROUPS, short_name
from d2lperf.report.values import FRAMEWORKS, Row, records, svg_data_uri


def comparison(args: argparse.Namespace, claims_table: dict[str, Claim],
               this: str = "") -> dict[str, Any] | None:
    """The cross-machine section: a column per machine, the baseline's first; a claim's
    cell holds each framework's verdict on that machine. ``others``: the machines this
    one (``this``) is compared with, for the first screen."""
    if not args.comparison:
        return None
    table = pd.read_csv(args.comparison)
    if "framework" not in table:
        table = table.assign(framework=DOCUMENTS)
    table = table[table["epoch"].isna()]  # per-epoch rows stay in each machine's report
    speedups = table.dropna(subset=["speedup"])
    baseline = speedups[speedups["speedup"] == 1.0]["machine"].mode()
    machines = sorted(table["machine"].unique(),
                      key=lambda m: (m != (baseline.iloc[0] if len(baseline) else m), m))
    table = table.astype(object).where(table.notna(), None)
    rows = []
    for (framework, _section, case, metric), group in table.groupby(
            ["framework", "section", "case", "metric"], sort=False):
        cells = {r["machine"]: r for r in group.to_dict("records")}
        first = group.iloc[0]
        label = first.get("label") or case
        rows.append({"framework": FRAMEWORKS.get(framework, framework), "label": label,
                     "metric": metric, "unit": first["unit"],
                     "cells": [cells.get(m) for m in machines]})
    verdicts: dict[str, Row] = {}
    checks = {n for _, names in CHECK_GROUPS for n in names}
    for v in records(args.comparison_verdicts):
        if v["name"] in checks:
            continue
        row = verdicts.setdefault(v["name"], {
            "short": short_name(claims_table[v["name"]]) if v["name"] in claims_table
            else v["claim"],
            "claim": v["claim"], "cells": [[] for _ in machines]})
        for k, machine in enumerate(machines):
            if v.get(machine):
                row["cells"][k].append({"framework": FRAMEWORKS.get(v.get("framework"),
                                                                    v.get("framework")),
                                        "verdict": v[machine]})
    facts = machine_facts(getattr(args, "comparison_machines", None))
    for row in verdicts.values():
        row["why"] = differences(row["cells"], machines, facts)
    return {"machines": machines, "others": [m for m in machines if m != this],
            "rows": rows, "verdicts": list(verdicts.values()),
            "plot": svg_data_uri(args.comparison_plot)}


# What can make a verdict differ between machines, as machines_compared.csv names it.
FACTS = {"cpu": "CPU", "cores": "cores", "vector": "vector unit", "kernel": "MXNet's BLAS kernel",
         "gpus": "GPUs", "python": "Python", "numpy": "numpy"}
SETTLED = ("holds", "does not hold", "inconclusive")  # the verdicts a comparison weighs


def machine_facts(path) -> dict[str, dict[str, str]]:
    """Each machine's facts (compare.py's machines_compared.csv), as text; none where the
    table is absent (archives and rules of an earlier version)."""
    if not path:
        return {}
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    return {r["machine"]: {k: r.get(k, "") for k in FACTS} for r in table.to_dict("records")}


def differences(cells: list[list[Row]], machines: list[str],
                facts: dict[str, dict[str, str]]) -> list[str]:
    """For each framework whose verdict on a claim differs between machines (of those that
    judged it), what tells those machines apart, or that nothing recorded does."""
    found = []
    frameworks = dict.fromkeys(c["framework"] for cell in cells for c in cell)
    for framework in frameworks:
        judged = {m: c["verdict"] for m, cell in zip(machines, cells) for c in cell
                  if c["framework"] == framework and c["verdict"] in SETTLED}
        if len(set(judged.values())) < 2:
            continue
        known = [m for m in judged if m in facts]
        if not known:
            continue
        apart = [f"{label} {' / '.join(dict.fromkeys(facts[m].get(key) or '?' for m in known))}"
                 for key, label in FACTS.items()
                 if len({facts[m].get(key) or "" for m in known}) > 1]
        found.append(f"{framework}: the machines differ in " + "; ".join(apart) if apart else
                     f"{framework}: the machines' recorded hardware is the same: the "
                     "difference is the measurement's, run to run")
    return found
