"""Across machines (only where other machines' results are present): a column per
machine, the baseline's first, and each claim's verdicts per framework on each."""

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
    return {"machines": machines, "others": [m for m in machines if m != this],
            "rows": rows, "verdicts": list(verdicts.values()),
            "plot": svg_data_uri(args.comparison_plot)}
