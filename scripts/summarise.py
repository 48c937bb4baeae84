"""Summarise one machine's raw results against the documents' figures.

Writes two tidy tables the plots and the report are built from:
- summary.csv: one row per measured case (statistics of its raw samples) and per
  document figure, side by side, with the ratio measured/document;
- outputs.csv: one row per printed output, the document's text beside this
  machine's, and whether they match under the stated rule.
Every samples.csv is validated against its schema first; a bad row stops here.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from d2lperf.results import read_json
from d2lperf.tables import (
    KEY,
    TableError,
    load_reference,
    load_samples,
    output_matches,
    summarise_samples,
)


def load_runs(sidecars: list[Path], schema: Path) -> tuple[dict[str, dict], pd.DataFrame]:
    """Each experiment's run record, and all its samples (from the samples.csv beside it)."""
    runs, frames = {}, []
    for sidecar in sidecars:
        run = read_json(sidecar)
        runs[run["experiment"]] = run
        frames.append(load_samples(sidecar.with_name("samples.csv"), schema))
    samples = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return runs, samples


def summary_table(runs: dict[str, dict], samples: pd.DataFrame, reference: pd.DataFrame):
    measured = summarise_samples(samples)
    figures = reference[reference["metric"] != "output"].rename(
        columns={"printed": "document_printed", "unit": "document_unit"}
    )
    # Keep the documents' order, then cases the documents did not print, in run order.
    figures = figures.assign(_document_order=range(len(figures)))
    measured = measured.assign(_run_order=range(len(measured)))
    table = figures.merge(measured, on=KEY, how="outer").sort_values(
        ["_document_order", "_run_order"], na_position="last")
    table["unit"] = table["unit"].fillna(table["document_unit"])
    table["document_value"] = pd.to_numeric(table["document_printed"], errors="coerce")
    table["ratio"] = table["median"] / table["document_value"]
    table["status"] = [runs.get(e, {}).get("status", "missing") for e in table["experiment"]]
    columns = ["document", "section", "experiment", "case", "metric", "epoch", "unit",
               "devices", "label", "document_printed", "document_value", "count", "min",
               "q1", "median", "q3", "max", "iqr", "mean", "stddev", "ratio", "status"]
    return table[columns]


def outputs_table(runs: dict[str, dict], reference: pd.DataFrame) -> pd.DataFrame:
    rows = []
    expected = reference[reference["metric"] == "output"]
    for ref in expected.to_dict("records"):
        run = runs.get(ref["experiment"], {})
        got = run.get("outputs", {}).get(ref["case"])
        match, rule = (None, "") if got is None else output_matches(
            ref["printed"], got, ref["match"])
        rows.append({
            "section": ref["section"], "document": ref["document"],
            "experiment": ref["experiment"], "case": ref["case"], "label": ref["label"],
            "document_printed": ref["printed"], "measured": None if got is None else got["text"],
            "match": {True: "yes", False: "no", None: "not measured"}[match], "rule": rule,
            "status": run.get("status", "missing"),
        })
    known = set(zip(expected["experiment"], expected["case"]))
    for experiment, run in runs.items():
        for case, got in run.get("outputs", {}).items():
            if (experiment, case) not in known:
                rows.append({"experiment": experiment, "case": case, "label": case,
                             "measured": got["text"], "match": "no document figure",
                             "status": run.get("status")})
    return pd.DataFrame(rows)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", required=True, type=Path, nargs="+",
                   help="each experiment's run.json (its samples.csv lies beside it)")
    p.add_argument("--reference", required=True, type=Path)
    p.add_argument("--schema", required=True, type=Path)
    p.add_argument("--summary", required=True)
    p.add_argument("--outputs", required=True)
    args = p.parse_args()
    try:
        reference = load_reference(args.reference)
        runs, samples = load_runs(args.runs, args.schema)
    except TableError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    summary_table(runs, samples, reference).to_csv(args.summary, index=False)
    outputs_table(runs, reference).to_csv(args.outputs, index=False)
    print(f"summarised {len(runs)} experiments, {len(samples)} samples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
