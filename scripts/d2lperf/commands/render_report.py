"""Render one machine's self-contained HTML report (no network requests, images inline).

Reads machine.json, summary.csv, outputs.csv, verdicts.csv, each section's run.json
(one per framework that ran it) and the plots; the documents' figures come from
summary.csv and outputs.csv, which took them from each section's reference.csv; the
sections' order and headings from sections.csv (written from the table of sections,
d2lperf.sections). Each section's folder holds its labels.csv (human labels of the cases
the documents did not print); how each claim is worded (its short name, how its ratio
reads, which of the documents' figures give the document's own ratio) comes with the
claim, from d2lperf.claims.

This script is the command line: it reads the tables and hands them to the view model's
parts, one module a concern in d2lperf.report (the claims and checks, the overview figure,
the sections, the machine and software, the comparison across machines), then fills the
template with what they return.

The page: the answer first (machine, frameworks, preset, date, the measurement checks,
then every claim with a verdict per framework, or "does not apply" with the reason
and what was measured, beside the documents' own verdict by the same rule, and how many
decisive verdicts chance could have decided), one overview figure of every timed case
against the document, then a section each with its headline, plot and folded tables.
Autoescaping is on: machine names and log text are data, never markup.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2

from d2lperf import hostlock, provenance, scaling, steps
from d2lperf import sections as section_table
from d2lperf.archive import kept_refusals
from d2lperf.labels import Labels
from d2lperf.report.claims_view import (
    chance_line,
    check_lines,
    check_rows,
    claim_rows,
    wording,
)
from d2lperf.report.comparison import comparison
from d2lperf.report.figures_view import outputs_side_by_side, side_by_side
from d2lperf.report.gpu_view import datasheet_shares, energy_view
from d2lperf.report.overview import overview
from d2lperf.report.provenance_view import (
    blas_notice,
    ceilings_text,
    code_text,
    forced_kernel_ratios,
    job_figures,
    jobs_key,
    machine_line,
    machine_rows,
    measured_when,
    stacks,
)
from d2lperf.report.sections_view import run_key, sections_view
from d2lperf.report.values import FRAMEWORKS, like_document, ratio, records
from d2lperf.results import RecordError, read_machine, read_run, write_text
from d2lperf.tables import TableError


def render(args: argparse.Namespace) -> str:
    """The page: the template filled with ``view(args)``."""
    template: Path = args.template
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(template.parent),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(like_document=like_document, ratio=ratio)
    return env.get_template(template.name).render(**view(args))


def view(args: argparse.Namespace) -> dict[str, Any]:
    """The report's view model: everything the template shows, as data (what the tests
    read instead of the page)."""
    # Each record is checked here again, not only by summarise: every field a view reads
    # has its type by the schemas, so a record changed since (or given to the report
    # directly) is refused naming the file and the field, never a crash in a view.
    machine = read_machine(args.machine)
    run_list = [read_run(p) for p in args.runs]
    runs = {run_key(r): r for r in run_list}
    frameworks = [f for f in FRAMEWORKS if any(k[0] == f for k in runs)] + sorted(
        {k[0] for k in runs} - set(FRAMEWORKS))
    titles = {r["section"]: r for r in records(args.sections)}
    labels = Labels.read(*(args.labels or section_table.tables("labels")))
    claims_table = wording()
    summary = records(args.summary)
    outputs = records(args.outputs)
    verdicts = records(args.verdicts)
    figures = side_by_side(summary, frameworks, labels)
    case_words = {r["case"]: r["label"] for r in figures if r["epoch"] is None}
    claims = claim_rows(verdicts, frameworks, claims_table, summary, case_words, runs)
    unlabelled = sorted({f"{r['section']}/{r['case']} ({r['metric']})" for r in figures
                         if not r["labelled"]})
    if unlabelled:
        print("no label in the sections' labels.csv for: " + ", ".join(unlabelled),
              file=sys.stderr)
    sections = sections_view(args, runs, frameworks, figures,
                             outputs_side_by_side(outputs, frameworks, labels), claims,
                             titles)
    # Today's data-parallel API against the book's design, in the sections of today's API
    gains = scaling.api_gains(summary)
    for s in sections:
        if s["section"] in section_table.SECTIONS and \
                section_table.SECTIONS[s["section"]].process_per_device:
            s["api_gains"] = [{**g, "framework": FRAMEWORKS.get(g["framework"], g["framework"]),
                               "book_title": titles.get(g["book_section"], {}).get(
                                   "title", g["book_section"])}
                              for g in gains if g["today_section"] == s["section"]]
    # The GPUs' datasheet shares and energy, only where a run shows any (d2lperf.report.gpu_view)
    gpus = {k: v for k, v in (("gpu_datasheet", datasheet_shares(summary, machine, runs)),
                              ("gpu_energy", energy_view(summary, runs, machine))) if v}
    return dict(
        **gpus,
        machine=machine,
        machine_rows={**machine_rows(machine),
                      "ceilings (measured here)": ceilings_text(summary, runs, machine)},
        blas_notice=blas_notice(machine, runs, summary, forced_kernel_ratios(
            args.comparison, str(machine.get("machine", "")))),
        machine_line=machine_line(machine),
        stacks=stacks(machine, runs),
        frameworks=[FRAMEWORKS.get(f, f) for f in frameworks],
        when=measured_when(run_list),
        jobs=job_figures(args.benchmarks),
        preset=args.preset,
        sections=sections,
        claims=claims,
        chance=chance_line(claims),
        checks=check_lines(verdicts, frameworks, runs),
        check_rows=check_rows(verdicts),
        overview=overview(figures, summary, frameworks, titles),
        runs=[{"title": s["title"]["title"], "section": s["section"],
               "framework": r["framework"], "run": r["run"],
               "job": jobs_key(s["section"], r["framework"]), "code": code_text(r["run"])}
              for s in sections for r in s["runs"] if r["run"]],
        comparison=comparison(args, claims_table, str(machine.get("machine", ""))),
        kept_refused=kept_refusals(args.kept) if getattr(args, "kept", None) else [],
        unlabelled=unlabelled,
    )


def parser() -> argparse.ArgumentParser:
    """The report's command line (the rule ``report`` gives it every input)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--machine", required=True, type=Path, help="machine.json")
    p.add_argument("--summary", required=True, type=Path, help="summary.csv")
    p.add_argument("--outputs", required=True, type=Path, help="outputs.csv")
    p.add_argument("--verdicts", required=True, type=Path, help="verdicts.csv")
    p.add_argument("--runs", required=True, type=Path, nargs="+", help="each run.json")
    p.add_argument("--plots", type=Path, nargs="*", default=[], help="<section>.svg files")
    p.add_argument("--benchmarks", type=Path, nargs="*", default=[],
                   help="Snakemake benchmark files of the section jobs")
    p.add_argument("--sections", required=True, type=Path,
                   help="sections.csv (the rule sections_table writes it): each section's "
                        "heading in the documents, in the report's order")
    p.add_argument("--labels", type=Path, nargs="+",
                   help="labels of the cases the documents did not print "
                        "(default: each section's labels.csv)")
    p.add_argument("--comparison", type=Path, help="comparison.csv (other machines present)")
    p.add_argument("--comparison-verdicts", type=Path, help="verdicts_by_machine.csv")
    p.add_argument("--comparison-machines", type=Path,
                   help="machines_compared.csv: what tells the machines apart")
    p.add_argument("--comparison-plot", type=Path, help="plots/comparison.svg")
    p.add_argument("--kept", type=Path,
                   help="results/kept-archives.json: the kept archives refused are listed")
    p.add_argument("--template", required=True, type=Path)
    p.add_argument("--preset", required=True)
    p.add_argument("--out", required=True, type=Path)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    hostlock.share("report")  # never beside a timing of any run
    try:
        page = render(args)
    except (RecordError, TableError) as error:
        # one paragraph naming the file and the field; the previous report stays (written
        # only whole, below, and the rule's output is update(): Snakemake restores it)
        print(f"error: {error}. The report was not written; a previous one is left as it "
              "was.", file=sys.stderr)
        return 1
    with steps.writing(args.out):
        write_text(args.out, page)
    print(f"wrote {args.out}; peak memory {provenance.peak_rss_mb()['self']:.0f} MB")
    return 0

