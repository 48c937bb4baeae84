"""One page for every machine measured (asv's ``publish``): a static folder, ``site/``.

    .venv/bin/d2lperf site [--results results] [--out site]

Reads every machine's folder under results/ (this machine's, and those imported from
kept archives: report/machines/, archives/) that holds a verdicts table and a
machine.json, and writes ``<out>/index.html``: the machines side by side (the CPU, its
vector unit and cores, the GPUs, when it was measured, its headline figures: the best
matrix-product rate on its CPU and GPU, and per framework how many times faster the
faster case of each claim declared with a ``site`` heading ran: the hybridized MLP's) and
every claim's verdict per machine and framework, the same claims the report shows,
filterable by framework and by device (machines with a GPU or without).

Each machine's own page, ``<out>/<machine>/report.html``, is rendered here by the
report's code and template (d2lperf report) from the machine's checked tables
and run records, its plots drawn again by d2lperf plots: an archive's own report.html
and plots are never read, so nothing an archive brings runs in a page the site writes
(docs/design.md, "Kept archives and imports never block a run"). A machine whose page
lacks an input is listed without one, the reason on stderr.

Nothing is read through a symbolic link below ``--results``, nor written through one below
``--out`` (the two folders themselves are taken as named): a link is refused, naming it and
what to do, the other machines are still written, and the site ends 1. An ``--out`` that
is, or lies inside, ``--results`` or a machine's folder there (one a link leads to
included) is refused before anything is written, exit 2: a page written there would
replace an imported archive's checked files. Self-contained:
inline styles and script, no network; a machine whose folder cannot be read is left out
and named on stderr, the others are written. Nothing else under ``<out>`` is touched.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2

from d2lperf import hostlock, provenance, sections, workloads
from d2lperf.archive import ArchiveError, open_regular
from d2lperf.commands import render_report
from d2lperf.frameworks import DOCUMENTS, LABELS, REGISTRY
from d2lperf.report.claims_view import VERDICT_RANK, is_claim, short_name, unknown, wording
from d2lperf.results import RecordError, machine_traits, read_machine, read_run, write_text
from d2lperf.tables import REPORT, TableError, read_table

REPO = provenance.REPO_ROOT
TEMPLATE = REPORT / "templates/site.html.j2"
REPORT_TEMPLATE = REPORT / "templates/report.html.j2"
# What the site reads of a machine's folder: its record and tables, and in each section's
# folder its run record and samples. Nothing else (an archive's report.html, plots,
# sections.csv, benchmarks) is read.
TABLES = ("machine.json", "summary.csv", "verdicts.csv", "outputs.csv")
RAW = ("run.json", "samples.csv")
NO_LINK = "the site follows no link it did not make"


class Refused(Exception):
    """A path the site will not read or write (a symbolic link, a special file): the
    message names it and what to do. Unlike a machine that cannot be read, it ends the
    site with status 1 once the rest is written."""


class NoPage(ValueError):
    """A machine's page lacks an input: the machine is listed without one, the reason
    named."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", type=Path, default=Path("results"),
                   help="the folder of machines' results (default: results)")
    p.add_argument("--out", type=Path, default=Path("site"),
                   help="the folder to write (default: site)")
    return p


def out_inside_results(out: Path, results: Path) -> str | None:
    """Why the site may not write to ``out``: it is, or lies inside, ``results`` or a
    machine's folder there (where a link there leads), each as it resolves; None where
    it may."""
    target = out.resolve()
    folders = [results] + (sorted(results.iterdir()) if results.is_dir() else [])
    for folder in folders:
        if target.is_relative_to(folder.resolve()):
            what = "--results" if folder == results else f"the machine folder {folder}"
            return (f"--out {out} lies inside {what}: the site would write over the results "
                    "it reads (an imported archive's files); give it a folder of its own")
    return None


def refuse_link(path: Path, what_to_do: str) -> None:
    """Refused where ``path`` is a symbolic link: nobody's link is followed, whatever it
    points at (a planted results/<m>/report.html -> /etc/shadow, site/<m> -> elsewhere)."""
    if path.is_symlink():
        raise Refused(f"{path} is a symbolic link, and {NO_LINK}; {what_to_do}")


def copy_regular(source: Path, target: Path) -> None:
    """``source``'s bytes into ``target``, read only where ``source`` is a regular file and
    no link (d2lperf.archive.open_regular: a FIFO would block the site)."""
    refuse_link(source, "remove it, or put the file itself there")
    try:
        with open_regular(source, follow_links=False) as handle:
            data = handle.read()
    except ArchiveError as error:
        raise Refused(f"{error}: the site reads regular files only; put the file itself "
                      "there, or remove it") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def snapshot(folder: Path, into: Path) -> Path:
    """Copies of what the site reads of a machine's folder (TABLES, and RAW in each section's
    folder), under ``into``/<machine>, each read without following a link: what the site then
    reads cannot change under it, nor lead outside results/. Refused where the folder, or
    anything directly in it, is a link."""
    what_to_do = "remove it, or put the file or folder itself there"
    refuse_link(folder, what_to_do)
    copy = into / folder.name
    copy.mkdir(parents=True)
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        path = Path(entry.path)
        refuse_link(path, what_to_do)
        if entry.name in TABLES:
            copy_regular(path, copy / entry.name)
        elif entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
            for raw in RAW:
                if os.path.lexists(path / raw):
                    copy_regular(path / raw, copy / entry.name / raw)
    return copy


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


def preset_of(runs: list[dict[str, Any]]) -> str:
    """The preset a machine's sections ran under, as far as their records tell (a run
    record keeps its parameters, not the preset's name): "documents" where every workload
    option the documents' preset sets (``Section.takes``: not the shared timing options)
    was run at that value; else words that are no preset's name, so the report says its
    ratios to the documents' figures are for completeness only."""
    ran = []
    for run in runs:
        entry = sections.SECTIONS.get(str(run.get("section")))
        parameters = run.get("parameters") or {}
        documents = entry.presets.get("documents", {}) if entry else {}
        for key, value in documents.items():
            if entry.takes(key, run.get("framework")) and key in parameters:
                ran.append(parameters[key] == value)
    if not ran:
        return "not recorded"
    return "documents" if all(ran) else "not the documents' workloads"


def claim_verdicts(verdicts) -> dict[tuple[str, str], str]:
    """Each claim's verdict by (name, framework): the rows the report shows as claims
    (claims_view.is_claim), so that the site lists every claim the report does."""
    return {(r["name"], r["framework"]): r["verdict"] for r in verdicts.to_dict("records")
            if is_claim(r)}


def headlines() -> list[sections.SpeedClaim]:
    """The claims whose speed-up the index shows per machine (declared with ``site``)."""
    return [c for s in sections.SECTIONS.values() for c in s.claims if c.site]


def machine_entry(copy: Path) -> dict[str, object]:
    """One machine's row and verdicts, from the copy of its folder (RecordError, TableError
    or OSError where it cannot be read)."""
    machine = read_machine(copy / "machine.json")
    verdicts = read_table(copy / "verdicts.csv")
    summary = read_table(copy / "summary.csv")
    verdicts["framework"] = verdicts["framework"].fillna(DOCUMENTS)
    frameworks = [f for f in REGISTRY if f in set(verdicts["framework"])]
    speedups: dict[str, dict[str, float | None]] = {}
    for claim in headlines():
        for framework in frameworks:
            row = verdicts[(verdicts["name"] == claim.name)
                           & (verdicts["framework"] == framework)]
            ratio = float(row["ratio"].iloc[0]) if len(row) else float("nan")
            speedups.setdefault(claim.name, {})[framework] = (
                round(1 / ratio, 2) if ratio == ratio and ratio > 0 else None)
    runs = [read_run(path) for path in sorted(copy.glob("*/run.json"))]
    started = sorted(str(run.get("started", "")) for run in runs)
    facts = machine_traits(machine)
    words = wording()
    shorts = {r["name"]: short_name(words.get(r["name"]) or unknown(r))
              for r in verdicts.to_dict("records") if is_claim(r)}
    return {
        "id": copy.name,
        "report": False,  # until its page is written
        "no_page": "",
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
        "verdicts": claim_verdicts(verdicts),
        "shorts": shorts,
        "preset": preset_of(runs),
    }


def redraw_plots(copy: Path, out: Path) -> tuple[list[Path], str]:
    """Each section's plot drawn again by d2lperf plots from the machine's checked
    summary and samples (an archive's own SVG could carry script), and why none were
    drawn where none were."""
    samples = sorted(copy.glob("*/samples.csv"))
    if not samples:
        return [], "no samples to draw"
    targets = [out / f"{name}.svg" for name in sections.names()]
    done = subprocess.run([sys.executable, "-m", "d2lperf", "plots",
                           "--summary", str(copy / "summary.csv"),
                           "--samples", *map(str, samples),
                           "--out", *map(str, targets)],
                          capture_output=True, text=True, cwd=REPO, timeout=600)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return [], lines[-1] if lines else f"d2lperf plots ended {done.returncode}"
    return targets, ""


def render_page(copy: Path, entry: dict[str, Any], work: Path) -> tuple[str, str]:
    """The machine's page as the report's code renders it from the copy of its checked
    tables and run records: the table of sections from this code (d2lperf.sections), the
    labels and template from this repository, its plots drawn again; no comparison (the
    index is that). Also what was left out of it, in words."""
    runs = sorted(copy.glob("*/run.json"))
    if not (copy / "outputs.csv").exists():
        raise NoPage(f"no {copy.name}/outputs.csv, which its page needs")
    if not runs:
        raise NoPage(f"no run record (<section>/run.json) in {copy.name}, which its page "
                      "needs")
    work.mkdir(parents=True)
    sections.write_csv(work / "sections.csv")
    plots, why = redraw_plots(copy, work / "plots")
    args = render_report.parser().parse_args([
        "--machine", str(copy / "machine.json"), "--summary", str(copy / "summary.csv"),
        "--outputs", str(copy / "outputs.csv"), "--verdicts", str(copy / "verdicts.csv"),
        "--runs", *map(str, runs), "--plots", *map(str, plots),
        "--sections", str(work / "sections.csv"),
        "--template", str(REPORT_TEMPLATE), "--preset", str(entry["preset"]),
        "--out", str(work / "report.html")])
    with contextlib.redirect_stderr(io.StringIO()):  # the report's notes to its author
        page = render_report.render(args)
    return page, f"plots left out: {why}" if why else ""


def write_page(out: Path, machine: str, page: str) -> None:
    """``<out>/<machine>/report.html``, never through a link (to a folder elsewhere, or to a
    file the site would replace)."""
    folder = out / machine
    refuse_link(folder, f"remove it; the site makes {folder} itself")
    folder.mkdir(exist_ok=True)
    target = folder / "report.html"
    refuse_link(target, f"remove it; the site writes {target} itself")
    write_text(target, page)


def drop_stale_page(out: Path, machine: str) -> None:
    """A page an earlier site wrote for a machine that has none now (an older site copied
    an archive's own report.html there): removed, a link left as it is."""
    target = out / machine / "report.html"
    if not (out / machine).is_symlink() and not target.is_symlink() and target.is_file():
        target.unlink()


def readable_machines(results: Path, work: Path) -> tuple[list, list[str], list[str]]:
    """(entry, copy) of every readable machine under ``results``, the machines left out and
    why, and the links refused."""
    machines, left_out, refused = [], [], []
    for folder in sorted(p for p in results.iterdir() if not p.name.startswith(".")):
        if not folder.is_symlink() and not (
                folder.is_dir() and os.path.lexists(folder / "verdicts.csv")
                and os.path.lexists(folder / "machine.json")):
            continue
        try:
            copy = snapshot(folder, work / "copies")
            machines.append((machine_entry(copy), copy))
        except Refused as error:
            refused.append(f"{folder.name}: {error}")
        except (RecordError, TableError, OSError, KeyError, ValueError) as error:
            where = str(error).replace(str(work / "copies"), str(results))  # not the copy's
            left_out.append(f"{folder.name}: {where}")
    return machines, left_out, refused


def site_view(machines: list[dict[str, Any]], left_out: list[str]) -> dict[str, object]:
    """The index's view: every readable machine and the claims they judged, each claim in
    the report's words and in the report's order (then any the report does not know)."""
    order = list(wording())
    shorts = {name: short for m in machines for name, short in m["shorts"].items()}
    names = sorted(shorts, key=lambda n: order.index(n) if n in order else len(order))
    frameworks = [f for f in REGISTRY if any(f in m["frameworks"] for m in machines)]
    return {
        "machines": machines,
        "frameworks": [{"name": f, "label": LABELS[f]} for f in frameworks],
        "claims": [{"name": n, "short": shorts[n]} for n in names],
        "headlines": [{"name": c.name, "heading": c.site} for c in headlines()],
        "verdict_class": {v: v.replace(" ", "-") for v in VERDICT_RANK},
        "refused": left_out,
    }


def write_pages(out: Path, machines: list, work: Path, results: Path) -> list[str]:
    """Each machine's page, rendered here; the links refused. A machine whose page cannot
    be made is listed without one, why on stderr."""
    refused = []
    for entry, copy in machines:
        try:
            page, note = render_page(copy, entry, work / "pages" / copy.name)
            write_page(out, str(entry["id"]), page)
            entry["report"] = True
            if note:
                print(f"site: {entry['id']}: {note}", file=sys.stderr)
            continue
        except Refused as error:
            refused.append(str(error))
            entry["no_page"] = str(error)
        except NoPage as error:
            entry["no_page"] = str(error)
        except Exception as error:  # noqa: BLE001 -- one machine's page never stops the site
            entry["no_page"] = f"{type(error).__name__}: {error}".replace(
                str(copy.parent), str(results))
        print(f"site: {entry['id']}: no page: {entry['no_page']}", file=sys.stderr)
        drop_stale_page(out, str(entry["id"]))
    return refused


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    inside = out_inside_results(args.out, args.results)
    if inside:
        p.error(inside)
    hostlock.share("the site")  # never beside a timing's lock being taken by force
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="d2lperf-site-") as tmp:
        found, left_out, refused = readable_machines(args.results, Path(tmp))
        for line in left_out:
            print(f"site: left out {line}", file=sys.stderr)
        refused += write_pages(args.out, found, Path(tmp), args.results)
    view = site_view([entry for entry, _ in found], left_out)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATE.parent),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    index = args.out / "index.html"
    try:
        refuse_link(index, f"remove it; the site writes {index} itself")
        write_text(index, env.get_template(TEMPLATE.name).render(**view))
        print(f"site: {index}, {len(view['machines'])} machine(s)")
    except Refused as error:
        refused.append(str(error))
    for line in refused:
        print(f"site: refused {line}", file=sys.stderr)
    return 1 if refused else 0

