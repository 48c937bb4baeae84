"""Summarise one machine's raw results against the documents' figures.

Writes three tidy tables the plots and the report are built from:
- summary.csv: one row per measured case (statistics of its raw samples) and per
  document figure, side by side, with the ratio measured/document;
- outputs.csv: one row per printed output, the document's text beside this
  machine's, and whether they match under the stated rule;
- verdicts.csv: the chapter's claims, each with its verdict, evidence and rule.
Every samples.csv is validated against its schema first; a bad row stops here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from d2lperf import claims, hostlock, scaling, sections, steps, verdicts, workloads
from d2lperf.frameworks import DOCUMENTS  # older records' framework
from d2lperf.harness import positive_fraction
from d2lperf.results import FORMAT_VERSION, RecordError, read_run, write_text
from d2lperf.tables import (
    KEY,
    Plan,
    TableError,
    case_plan,
    check_planned,
    load_reference,
    load_samples,
    output_matches,
    summarise_samples,
)

Runs = dict[str, dict[str, dict]]  # framework -> section -> run record


def load_runs(sidecars: list[Path], schema: Path,
              plan: Plan | None = None) -> tuple[Runs, pd.DataFrame]:
    """Each section's run record by framework, and all samples (from the samples.csv
    beside each record); TableError names the file, row and column of a sample that is
    not of its folder's section and framework, or of a case its section does not plan
    (``plan``: ``tables.case_plan``'s, by default the report's tables')."""
    plan = case_plan() if plan is None else plan
    runs: Runs = {}
    frames = []
    for sidecar in sidecars:
        run = read_run(sidecar, schema.parent)
        runs.setdefault(run["framework"], {})[run["section"]] = run
        table = sidecar.with_name("samples.csv")
        try:
            samples = load_samples(table, schema)
        except OSError as error:  # one of the pair gone (a hand-copied folder)
            raise TableError(f"{table}: cannot be read ({error.strerror}); its run record is "
                             f"{sidecar}") from None
        frames.append(of_its_run(samples, run, table))
        check_planned(samples, plan, table)
    samples = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return runs, samples


def of_its_run(samples: pd.DataFrame, run: dict, table: Path) -> pd.DataFrame:
    """Refuse a row whose section or framework is not its folder's run record's: it would
    be filed under a section (or framework) that never ran here, beside the figures of
    the one that did. Row numbers count the header as row 1, as load_samples' do."""
    for column in ("section", "framework"):
        other = samples.index[samples[column] != run[column]]
        if len(other):
            row = other[0]
            raise TableError(f"{table}: row {row + 2}: {column}: "
                             f"{samples.at[row, column]!r} is not the {column} of its "
                             f"folder's run record ({run[column]!r})")
    return samples


def summary_table(runs: Runs, samples: pd.DataFrame, reference: pd.DataFrame):
    """Every document figure once per framework that ran here (measured or not), beside
    the statistics of that framework's samples; then the cases the documents did not print."""
    measured = summarise_samples(samples)
    derived = scaling.rows(samples, runs)  # images/s and efficiency of data-parallel training
    if len(derived):
        measured = pd.concat([measured, derived.reindex(columns=measured.columns)],
                             ignore_index=True).astype({"epoch": "Int64"})
    figures = reference[reference["metric"] != "output"].rename(
        columns={"printed": "document_printed", "unit": "document_unit"}
    )
    # Keep the documents' order, then cases the documents did not print, in run order.
    frameworks = pd.DataFrame({"framework": sorted(runs) or [DOCUMENTS]})
    figures = figures.assign(_document_order=range(len(figures))).merge(frameworks, how="cross")
    measured = measured.assign(_run_order=range(len(measured)))
    table = figures.merge(measured, on=[*KEY, "framework"], how="outer").sort_values(
        ["_document_order", "framework", "_run_order"], na_position="last")
    table["unit"] = table["unit"].fillna(table["document_unit"])
    table["document_value"] = pd.to_numeric(table["document_printed"], errors="coerce")
    table["ratio"] = table["median"] / table["document_value"]
    table["status"] = [runs.get(f, {}).get(e, {}).get("status", "missing")
                       for f, e in zip(table["framework"], table["section"])]
    table = add_rates(table, runs)
    columns = ["document", "variant", "heading", "framework", "section", "case", "metric",
               "epoch", "unit",
               "devices", "label", "document_printed", "document_value", "count", "min",
               "q1", "median", "q3", "max", "iqr", "mean", "stddev", "ci_low", "ci_high",
               "outliers", "noisy", "ratio", "achieved", "achieved_unit", "ceiling", "ceiling_case",
               "ceiling_kernel", "fraction_of_ceiling", "status"]
    return table[columns]


def add_rates(table: pd.DataFrame, runs: Runs) -> pd.DataFrame:
    """Achieved rate of every dot- or copy-built timing, and its share of the machine's
    best ceiling for that work on that device: the best of every library's ceilings
    (either framework's ceilings section) and of every timing of the same kind here. So
    no share can exceed 1: a timing that beats every ceiling is the ceiling, named so."""
    ceilings = {r["case"]: r["median"] for r in table.to_dict("records")
                if r["section"] == "ceilings" and r["metric"] == "rate"
                and pd.notna(r["median"])}
    kernels = {case: kernel for framework_runs in runs.values()
               for case, kernel in framework_runs.get("ceilings", {}).get("notes", {})
               .get("kernels", {}).items()}
    rows = table.to_dict("records")
    rates = []  # (achieved, unit, pattern) of each row, None where it does no known work
    for row in rows:
        params = runs.get(row["framework"], {}).get(row["section"], {}).get("parameters", {})
        amount = workloads.work(row["section"], row["case"], params) \
            if row["metric"] == "time" and pd.notna(row["median"]) else None
        if amount is None:
            rates.append(None)
            continue
        devices = row["devices"] if isinstance(row["devices"], str) else ""
        rates.append((amount[0] / row["median"], f"{amount[1]}/s",
                      workloads.ceiling_case(amount[1], devices, row["case"])))
    columns = {"achieved": [], "achieved_unit": [], "ceiling": [], "ceiling_case": [],
               "ceiling_kernel": [], "fraction_of_ceiling": []}
    for rate in rates:
        values = [None] * len(columns)
        if rate is not None:
            achieved, unit, pattern = rate
            best = workloads.best_ceiling(ceilings, pattern)
            case, ceiling = best if best else (None, None)
            kernel = kernels.get(case) if case else None
            beaten = [(other[0], other_row) for other, other_row in zip(rates, rows)
                      if other is not None and other[2] == pattern and other[1] == unit]
            fastest, fastest_row = max(beaten, key=lambda item: item[0])
            if ceiling is None or fastest > ceiling:
                ceiling, kernel = fastest, "a timing here beat every ceiling measured"
                case = (f"{fastest_row['framework']} {fastest_row['section']} "
                        f"{fastest_row['case']}")
            values = [achieved, unit, ceiling, case, kernel, achieved / ceiling]
        for name, value in zip(columns, values):
            columns[name].append(value)
    return table.assign(**columns)


def differing_parameters(required: str, parameters: dict) -> str:
    """The reference's `parameters` cell (``size=2000``) against the run's: an output
    that depends on the workload is compared only at the document's parameters."""
    wanted = dict(item.split("=", 1) for item in required.split() if item)
    return ", ".join(f"{k}={parameters.get(k)} (document: {v})"
                     for k, v in wanted.items() if str(parameters.get(k)) != v)


# Outputs another framework can print as the documents did: the same shape. Values drawn
# from MXNet's seed, MXNet's own symbol names and modules have counterparts in PyTorch, but
# not the same figures.
FRAMEWORK_NEUTRAL_RULES = ("shape",)
# ... and the outputs no random generator or print format enters: their numbers are the
# documents' in any framework (zeros, the allreduce of ones and twos, an arange split).
FRAMEWORK_NEUTRAL_OUTPUTS = {"b1_weight", "b1_grad", "allreduce_before", "allreduce_after",
                             "split_input", "split_output"}


def outputs_table(runs: Runs, reference: pd.DataFrame) -> pd.DataFrame:
    rows = []
    expected = reference[reference["metric"] == "output"]
    for framework, framework_runs in runs.items():
        for ref in expected.to_dict("records"):
            run = framework_runs.get(ref["section"], {})
            got = run.get("outputs", {}).get(ref["case"])
            other = differing_parameters(ref["parameters"], run.get("parameters", {}))
            match, rule = (None, "") if got is None or other else output_matches(
                ref["printed"], got, ref["match"])
            label = {True: "yes", False: "no", None: "not measured"}[match]
            designed = got and got.get("by_design")  # older records: read_run migrated
            if other and got is not None:
                label, rule = "other parameters", f"not compared: {other}"
            elif designed:
                label, rule = "by design", f"differs by {framework}'s design: {designed}"
            elif got is not None and framework != DOCUMENTS \
                    and ref["match"] not in FRAMEWORK_NEUTRAL_RULES \
                    and ref["case"] not in FRAMEWORK_NEUTRAL_OUTPUTS:
                label, rule = "counterpart", (f"{framework}'s own counterpart: not comparable "
                                              f"with MXNet's by rule '{ref['match']}'")
            rows.append({
                "heading": ref["heading"], "document": ref["document"], "framework": framework,
                "section": ref["section"], "case": ref["case"], "label": ref["label"],
                "document_printed": ref["printed"],
                "measured": None if got is None else got["text"],
                "match": label, "rule": rule, "status": run.get("status", "missing"),
            })
        known = set(zip(expected["section"], expected["case"]))
        for section, run in framework_runs.items():
            for case, got in run.get("outputs", {}).items():
                if (section, case) not in known:
                    rows.append({"framework": framework, "section": section, "case": case,
                                 "label": case, "measured": got["text"],
                                 "match": "no document figure", "status": run.get("status")})
    return pd.DataFrame(rows)


def outputs_verdict(outputs: pd.DataFrame, framework: str) -> verdicts.Verdict:
    """Whether this machine prints what the documents printed, where that is deterministic."""
    mine = outputs[outputs["framework"] == framework]
    compared = mine[mine["match"].isin(["yes", "no"])]
    failed = compared[compared["match"] == "no"]
    designed = mine[mine["match"] == "by design"]
    if compared.empty:
        verdict, evidence = claims.NA, "no printed output was measured"
    else:
        verdict = claims.HOLDS if failed.empty else claims.FAILS
        evidence = f"{len(compared) - len(failed)} of {len(compared)} printed outputs match"
        if not failed.empty:
            evidence += "; differ: " + ", ".join(failed["case"])
    if not designed.empty:
        evidence += ("; not compared, different by the framework's design: "
                     + ", ".join(designed["case"]))
    return verdicts.Verdict("the documents' printed outputs are reproduced", "outputs_reproduced",
                          "all", verdict, evidence, "each output's own rule (outputs table)",
                          framework=framework)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", required=True, type=Path, nargs="+",
                   help="each section's run.json (its samples.csv lies beside it)")
    p.add_argument("--reference", type=Path, nargs="+",
                   help="the documents' figures (default: each section's reference.csv)")
    p.add_argument("--labels", type=Path, nargs="+",
                   help="labels of the cases the documents did not print: with the "
                        "reference's, the cases each section plans (default: each "
                        "section's labels.csv)")
    p.add_argument("--schema", required=True, type=Path)
    p.add_argument("--summary", required=True)
    p.add_argument("--outputs", required=True)
    p.add_argument("--verdicts", required=True)
    p.add_argument("--band", type=positive_fraction, default=claims.DEFAULT_BAND,
                   help="practical band of the ratio verdicts: 1 +- band (default: 0.05)")
    args = p.parse_args(argv)
    hostlock.share("summarise")  # never beside a timing of any run
    try:
        references = args.reference or sections.tables("reference")
        reference = load_reference(*references)
        runs, samples = load_runs(args.runs, args.schema, case_plan(
            [*references, *(args.labels or sections.tables("labels"))]))
    except (TableError, RecordError) as error:
        # one paragraph naming the file (and the row, column or field); the tables are not
        # written, and the rule's outputs are update(): Snakemake restores the previous ones
        print(f"error: {error}. The tables were not written; previous ones are left as "
              "they were.", file=sys.stderr)
        return 1
    summary = summary_table(runs, samples, reference)
    outputs = outputs_table(runs, reference)
    verdicts = claims.as_frame([
        verdict for framework in sorted(runs) for verdict in [
            *claims.judge(summary, runs[framework], reference, samples, band=args.band,
                          framework=framework),
            outputs_verdict(outputs, framework)]])
    # each table replaced whole, so that a run stopped midway leaves the previous one
    for table, path in ((summary, args.summary), (outputs, args.outputs),
                        (verdicts, args.verdicts)):
        with steps.writing(path):
            write_text(path, table.assign(format_version=FORMAT_VERSION).to_csv(index=False))
    print(f"summarised {sum(map(len, runs.values()))} sections of {', '.join(sorted(runs))}, "
          f"{len(samples)} samples")
    return 0

