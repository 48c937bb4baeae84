"""Render one machine's self-contained HTML report (no network requests, images inline).

Reads machine.json, summary.csv, outputs.csv, verdicts.csv, each section's run.json
(one per framework that ran it) and the plots; the documents' figures come from
summary.csv and outputs.csv, which took them from report/reference.csv; the sections'
order and headings from sections.csv (written from the table of sections, d2lperf.sections).
In report/ lies the report's own table labels.csv (human labels of the cases the
documents did not print); how each claim is worded (its short name, how its ratio
reads, which of the documents' figures give the document's own ratio) comes with the
claim, from d2lperf.claims.

The page: the answer first (machine, frameworks, preset, date, the measurement checks,
then every claim with a verdict per framework, or "not applicable here" with the reason
and what was measured, beside the documents' own verdict by the same rule, and how many
decisive verdicts chance could have decided), one overview figure of every timed case
against the document, then a section each with its headline, plot and folded tables.
Autoescaping is on: machine names and log text are data, never markup.
"""

from __future__ import annotations

import argparse
import base64
import math
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd
from markupsafe import Markup, escape

from d2lperf import claims, provenance, stages, workloads
from d2lperf.archive import kept_refusals
from d2lperf.blas import CORE_BITS, narrow_kernels
from d2lperf.claims import words as claim_words
from d2lperf.frameworks import DOCUMENTS, LABELS, REGISTRY
from d2lperf.labels import Labels
from d2lperf.results import migrate_run, read_json, section_folder
from d2lperf.workloads import AT_LIMIT

Row = dict[str, Any]
FRAMEWORKS = LABELS  # display names, in column order (the framework registry's)
REPORT_FOLDER = Path(__file__).resolve().parents[1] / "report"  # labels.csv
RAN = ("ok", "failed")  # statuses of a section that did something worth showing
CHECK_GROUPS = [  # the first screen's lines of the measurement check: (title, names)
    ("Identical work (A/A)", ("aa_hybridize", "aa_small_ops")),
    ("First in its process", ("first_position_effect",)),
    ("Machine steadiness", ("machine_steadiness",)),
]
VERDICT_RANK = {"does not hold": 0, "inconclusive": 1, "holds": 2, "not applicable here": 3,
                "not applicable": 3}
DECISIVE = ("holds", "does not hold")
# Holm's correction over each framework's claims, every look of a staged section counted
# (d2lperf.claims.holm): the chance that any of one framework's decisive verdicts is
# chance's doing is at most this.
WRONG_BY_CHANCE = claims.HOLM_ALPHA


def like_document(value: float | None, printed: str | None) -> str:
    """Format a measured value with as many decimals as the document printed (0.4270 -> 4)."""
    if value is None:
        return "–"
    decimals = len(printed.split(".")[1]) if printed and "." in printed else 4
    return f"{value:.{decimals}f}"


def ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def number(value: float) -> str:
    """A ratio for a reader: two significant figures, no exponent."""
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:#.2g}".rstrip(".") if value >= 0.01 else f"{value:.1g}"


NUMERIC = ("median", "q1", "q3", "ci_low", "ci_high", "ratio", "count", "outliers", "noisy",
           "achieved", "ceiling", "fraction_of_ceiling", "epoch", "document_value",
           "ratio_low", "ratio_high")


def records(path: Path) -> list[Row]:
    """Rows of a table: the documents' figures stay strings exactly as printed, and an
    empty cell is None (never NaN, which a template would take for true)."""
    frame = pd.read_csv(path, dtype={"document_printed": str, "measured": str, "variant": str},
                        keep_default_na=False, na_values={c: [""] for c in NUMERIC})
    frame = frame.astype(object).where(frame.notna() & (frame != ""), None)
    rows = frame.to_dict("records")
    for row in rows:
        if "framework" in row and not row["framework"]:
            row["framework"] = DOCUMENTS
    return rows


def svg_data_uri(path: Path) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


# --- the side-by-side rows -----------------------------------------------------------

def figure_key(row: Row) -> tuple:
    return (row["experiment"], row["case"], row["metric"], row.get("epoch"),
            row.get("document"), row.get("variant"))


def side_by_side(summary: Iterable[Row], frameworks: list[str], labels: Labels) -> list[Row]:
    """One row per figure (a document's, or a case the documents did not print), with a
    cell per framework: the documents' rows in their order, then the extra ones."""
    rows: dict[tuple, Row] = {}
    for r in summary:
        key = figure_key(r)
        if key not in rows:
            extra = r.get("document_printed") is None
            label = r.get("label") if not extra else labels(r["experiment"], r["case"],
                                                           r["metric"], r.get("epoch"))
            rows[key] = {"key": key, "experiment": r["experiment"], "case": r["case"],
                         "metric": r["metric"], "epoch": r.get("epoch"),
                         "extra": extra, "labelled": label is not None,
                         "label": label or f"{r['case']} ({r['metric']})",
                         "document_printed": r.get("document_printed"),
                         "document_value": r.get("document_value"), "unit": r.get("unit"),
                         "variant": r.get("variant"), "document": r.get("document"),
                         "cells": {}}
        if r.get("median") is not None or r.get("framework") not in rows[key]["cells"]:
            rows[key]["cells"][r.get("framework") or DOCUMENTS] = r
    ordered = sorted(rows.values(), key=lambda row: row["extra"])  # stable: keeps the order
    for row in ordered:
        row["cells"] = [cell_view(row, row["cells"].get(f)) for f in frameworks]
    return ordered


def unit_text(unit: Any) -> str:
    return "" if unit in (None, "fraction") else str(unit)


def cell_view(row: Row, cell: Row | None) -> Row:
    """What one framework's cell shows: the median as the document printed it, then
    its interval, sample count and ratio to the document; the rate it achieved."""
    if cell is None or cell.get("median") is None:
        status = (cell or {}).get("status")
        why = {"skipped": "skipped", "refused": "refused", "failed": "failed",
               "missing": "did not run"}.get(status, "not measured")
        return {"measured": False, "text": why}
    printed = row["document_printed"]
    unit = unit_text(cell.get("unit") or row["unit"])
    value = like_document(cell["median"], printed)
    notes = []
    if cell.get("ci_low") is not None:
        notes.append(f"[{like_document(cell['ci_low'], printed)}–"
                     f"{like_document(cell['ci_high'], printed)}]")
    if cell.get("count"):
        notes.append(f"n {int(cell['count'])}")
    if cell.get("ratio") is not None:
        notes.append(f"{ratio(cell['ratio'])} the document")
    rate = None
    if cell.get("achieved"):
        rate = f"{cell['achieved']:.1f} {cell['achieved_unit']}"
        if cell.get("fraction_of_ceiling"):
            rate += f", {share_text(cell)}"
    return {"measured": True, "text": f"{value} {unit}".rstrip(), "notes": " · ".join(notes),
            "noisy": bool(cell.get("noisy")), "rate": rate, "devices": cell.get("devices")}


def outputs_side_by_side(outputs: Iterable[Row], frameworks: list[str],
                         labels: Labels) -> list[Row]:
    rows: dict[tuple, Row] = {}
    for o in outputs:
        key = (o["experiment"], o["case"])
        label = o.get("label") if o.get("label") not in (None, o["case"]) else labels(
            o["experiment"], o["case"], "output")
        row = rows.setdefault(key, {"experiment": o["experiment"], "case": o["case"],
                                    "label": label or o["case"], "labelled": bool(label),
                                    "document_printed": o.get("document_printed"),
                                    "extra": o.get("document_printed") is None, "cells": {}})
        row["cells"][o.get("framework") or DOCUMENTS] = o
    for row in rows.values():
        row["cells"] = [row["cells"].get(f) for f in frameworks]
    return list(rows.values())


# --- claims ----------------------------------------------------------------------------

def effect_words(form: str, value: float | None, low: float | None, high: float | None,
                 effect: str | None = None) -> str:
    """A claim's ratio in words: '4.1× faster [3.6–4.6]'."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value <= 0:
        return ""
    interval = (low is not None and high is not None and low > 0 and high > 0
                and not (math.isnan(low) or math.isnan(high)))
    if form == "speedup":
        if effect == "no meaningful difference":
            return f"no meaningful difference (×{number(value)})"
        if value <= 1:
            span = f" [{number(1 / high)}–{number(1 / low)}]" if interval else ""
            return f"{number(1 / value)}× faster{span}"
        span = f" [{number(low)}–{number(high)}]" if interval else ""
        return f"{number(value)}× slower{span}"
    span = f" [{100 * low:.0f}–{100 * high:.0f}%]" if interval else ""
    if form == "share":
        if value >= 2:  # a front end that waits: queueing takes longer than the wait
            span = f" [{number(low)}–{number(high)}]" if interval else ""
            return f"queueing {number(value)}× the wait{span}"
        return f"queued in {100 * value:.0f}% of the wait{span}"
    if form == "overlap":
        return f"together {100 * value:.0f}% of the sum{span}"
    if form == "more":
        span = f" [{number(low)}–{number(high)}]" if interval else ""
        return f"{number(value)}× the memory{span}"
    return ""


def document_ratio(claim: Row, summary: list[Row]) -> tuple[float, str] | None:
    """The documents' own ratio for a claim, from the figures the claim names: the
    figure without an epoch first (a mean of epochs), then the first variant."""
    if not claim.get("document_numerator"):
        return None
    figures: dict[str, tuple[float, str]] = {}
    for r in summary:
        if r.get("document_value") is None or r["metric"] not in ("time", "memory"):
            continue
        rank = (r.get("epoch") is not None, r.get("variant") or "")
        found = figures.get(r["case"])
        if found is None or rank < found[2]:
            figures[r["case"]] = (r["document_value"], r.get("variant") or "", rank)
    parts = [[figures.get(c) for c in side.split("+")]
             for side in (claim["document_numerator"], claim["document_denominator"])]
    if any(f is None for side in parts for f in side):
        return None
    numerator, denominator = (sum(f[0] for f in side) for side in parts)
    variants = {f[1] for side in parts for f in side}
    return numerator / denominator, variants.pop() if len(variants) == 1 else ""


def device_words(case: str) -> str:
    """``lenet_2_devices`` -> ``2 devices``."""
    return " ".join(case.split("_")[-2:])


def accuracy_words(claim: Row, framework: str | None, summary: list[Row]) -> str:
    """An accuracy claim in words: each case's accuracy after the document's last epoch
    (``framework`` None: the document's own figures)."""
    cases = (claim.get("document_numerator") or "").split("+")
    parts, epoch = [], None
    for case in filter(None, cases):
        rows = [r for r in summary if r["case"] == case and r["metric"] == "accuracy"
                and r.get("epoch") is not None]
        documented = [r for r in rows if r.get("document_value") is not None]
        if claim.get("document") and any(r.get("document") == claim["document"]
                                          for r in documented):
            documented = [r for r in documented if r.get("document") == claim["document"]]
        if not documented:
            continue
        last = max(documented, key=lambda r: r["epoch"])
        epoch = int(last["epoch"])
        if framework is None:
            parts.append(f"{last['document_printed']}")
            continue
        mine = [r for r in rows if (r.get("framework") or DOCUMENTS) == framework
                and r.get("median") is not None]
        at = [r for r in mine if r["epoch"] == last["epoch"]]
        if at:
            parts.append(f"{device_words(case)} {at[0]['median']:.2f}")
        elif mine:
            parts.append(f"{device_words(case)}: ran {int(max(r['epoch'] for r in mine))} of "
                         f"{epoch} epochs")
    if not parts:
        return ""
    ran = {p.split(": ", 1)[-1] for p in parts if ": ran " in p}
    if len(ran) == 1 and len(ran) == len({p.split(": ", 1)[-1] for p in parts}):
        return ran.pop()  # every case ran as far: say it once
    return ", ".join(parts) + (f" at epoch {epoch}" if "ran " not in parts[0] else "")


def evidence_words(verdict: Row, labels: dict[str, str]) -> str:
    """A verdict's evidence with the case names it quotes put in words."""
    text = str(verdict.get("evidence") or "")
    for case, label in sorted(labels.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(case, label)
    return text


def not_run_words(run: Row | None) -> str:
    """Why a section has no verdict: it did not run, failed, or was skipped."""
    if run is None:
        return "did not run"
    if run.get("status") == "failed":
        return "its log is in the section"
    if run.get("status") in ("skipped", "refused"):
        return f"{run['status']}: {run.get('reason')}"
    return ""


def claim_rows(verdicts: list[Row], frameworks: list[str], claims_table: dict[str, Row],
               summary: list[Row], case_words: dict[str, str],
               runs: dict[tuple[str, str], Row]) -> list[Row]:
    """Each claim once, with a verdict per framework and the document's own ratio."""
    rows: dict[str, Row] = {}
    for v in verdicts:
        if v.get("kind") == "check":
            continue
        meta = claims_table.get(v["name"], {"short": v["claim"], "form": ""})
        row = rows.setdefault(v["name"], {"name": v["name"], "claim": v["claim"],
                                          "short": meta["short"], "section": v["section"],
                                          "rule": v.get("rule"), "by": {}, "document": "",
                                          "applies": "", "rules": {}})
        framework = v["framework"] or DOCUMENTS
        row["rules"][FRAMEWORKS.get(framework, framework)] = v.get("rule")
        effect = effect_words(meta["form"], v.get("ratio"), v.get("ratio_low"),
                              v.get("ratio_high"), v.get("effect"))
        if meta["form"] == "accuracy":
            effect = accuracy_words(meta, framework, summary)
            row["document"] = accuracy_words(meta, None, summary)
        elif meta["form"] == "outputs":
            effect = str(v.get("evidence") or "")
        shown = v["verdict"]
        if not effect and v["verdict"] == "not applicable":
            run = runs.get((framework, v["section"]))
            effect = not_run_words(run)
            # a section that failed is no claim that does not apply: say what happened
            shown = "failed" if run and run.get("status") == "failed" else shown
        if v["verdict"] == "not applicable here":  # the reason, then what was measured
            effect = f"{v['evidence']}; measured: {effect or v.get('finding') or '–'}"
        line, more = first_screen_words(v["verdict"], meta["form"], effect)
        row["by"][framework] = {"verdict": shown, "effect": effect, "line": line, "more": more,
                                "evidence": evidence_words(v, case_words),
                                "finding": evidence_words({"evidence": v.get("finding")},
                                                          case_words),
                                "decisive": v["verdict"] in DECISIVE
                                and v.get("ratio_low") is not None}
        found = document_ratio(meta, summary) if meta["form"] != "accuracy" else None
        if found is not None:
            words = effect_words(meta["form"], found[0], None, None)
            row["document"] = f"{words} ({found[1]})" if found[1] else words
        row["document_verdict"] = v.get("document_verdict") or ""
        row["document_by_variant"] = v.get("document_by_variant") or ""
        row["document_evidence"] = v.get("document_evidence") or ""
        if v.get("applies"):
            row["applies"] = v["applies"]
    for row in rows.values():
        row["cells"] = [row["by"].get(f) for f in frameworks]
        if len(set(row["rules"].values())) > 1:  # a twin judged its own way (accuracy)
            row["rule"] = "; ".join(f"{name}: {rule}" for name, rule in row["rules"].items())
    return list(rows.values())


def first_screen_words(verdict: str, form: str, effect: str) -> tuple[str, str]:
    """A claim cell's words split for the first screen: a short line under the verdict and
    the longer rest, folded under it, so that every verdict of every claim fits one screen.
    A claim that does not apply here folds its reason and what was measured anyway; the
    outputs claim shows its count and folds what it left uncompared."""
    if verdict == "not applicable here":
        return "", effect
    if form == "outputs" and "; " in effect:
        line, more = effect.split("; ", 1)
        return line, more
    return effect, ""


def chance_line(claims: list[Row]) -> Row:
    """How many of this run's decisive verdicts on an interval chance alone could have
    decided, for the first screen: at most WRONG_BY_CHANCE per framework that has any."""
    counts = [sum(1 for c in claims if c["cells"][k] and c["cells"][k]["decisive"])
              for k in range(max((len(c["cells"]) for c in claims), default=0))]
    return {"decisive": sum(counts), "expected": WRONG_BY_CHANCE * sum(1 for n in counts if n),
            "per_framework": WRONG_BY_CHANCE}


def percent(value: float) -> str:
    return f"{100 * value:+.0f}%" if abs(value) >= 0.1 else f"{100 * value:+.1f}%"


def check_text(name: str, mine: list[Row], runs: list[Row]) -> str:
    """A check's figures in short, from its numbers (the evidence column says it long)."""
    if name.startswith("aa_"):
        apart = [f"{100 * abs(v['ratio'] - 1):.0f}%" for v in mine if v.get("ratio") is not None]
        return f"{' and '.join(apart)} apart" if apart else str(mine[0]["evidence"])
    v = mine[0]
    if name == "first_position_effect" and v.get("ratio") is not None:
        return (f"{percent(v['ratio'] - 1)} [{percent(v['ratio_low'] - 1)}, "
                f"{percent(v['ratio_high'] - 1)}]")
    steady = [r["steadiness"] for r in runs if r.get("steadiness")]
    if name == "machine_steadiness" and steady:
        moved = max((s["probe_moved"] for s in steady), key=abs)
        steal = max((s.get("steal_share") or 0 for s in steady), default=0)
        flagged = sum(1 for s in steady if s.get("flags"))
        return (f"probe ≤ {percent(moved)}, steal {100 * steal:.1f}%, "
                f"{flagged} of {len(steady)} flagged")
    return str(v["evidence"])


def check_lines(verdicts: list[Row], frameworks: list[str],
                runs: dict[tuple[str, str], Row]) -> list[Row]:
    """The measurement check, one line per kind: the worst verdict per framework, with
    its figures in short."""
    lines = []
    checks = [v for v in verdicts if v.get("kind") == "check"]
    for title, names in CHECK_GROUPS:
        cells = []
        for framework in frameworks:
            mine = [v for v in checks if v["name"] in names
                    and (v["framework"] or DOCUMENTS) == framework]
            if not mine:
                cells.append(None)
                continue
            worst = min(mine, key=lambda v: VERDICT_RANK.get(v["verdict"], 1))
            text = check_text(names[0], mine, [r for k, r in runs.items() if k[0] == framework])
            cells.append({"framework": FRAMEWORKS.get(framework, framework),
                          "verdict": worst["verdict"], "text": text})
        lines.append({"title": title, "cells": cells})
    return lines


# --- the overview figure ---------------------------------------------------------------

OVERVIEW = {"width": 960, "label": 430, "right": 20, "row": 14, "group": 21, "top": 34,
            "bottom": 40}
MARKS = {name: (f.shape, f.colour) for name, f in REGISTRY.items()}


def overview_rows(figures: list[Row], frameworks: list[str]) -> list[Row]:
    """Every timed figure of the documents, as ratios to the document's figure; of a
    per-epoch case, only the last epoch that some framework measured (or the last the
    document printed, when none did)."""
    timed = [r for r in figures if not r["extra"] and r["metric"] == "time"
             and r["document_value"]]
    keep: dict[tuple, Row] = {}
    for r in timed:
        group = (r["experiment"], r["case"], r["document"], r["variant"],
                 r["epoch"] is None)
        measured = any(c["measured"] for c in r["cells"])
        best = keep.get(group)
        if best is None or (measured, r["epoch"] or 0) >= (best["_measured"], best["epoch"] or 0):
            keep[group] = {**r, "_measured": measured}
    return [r for r in timed if keep[(r["experiment"], r["case"], r["document"], r["variant"],
                                      r["epoch"] is None)]["key"] == r["key"]]


def overview(figures: list[Row], summary: list[Row], frameworks: list[str],
             titles: dict[str, Row]) -> Row | None:
    """The overview: rows of (label, per framework: ratio with its interval), drawn as
    an inline SVG, and the same numbers as a table (the figure's text alternative)."""
    by_key: dict[tuple, dict[str, Row]] = {}
    for r in summary:
        by_key.setdefault(figure_key(r), {})[r.get("framework") or DOCUMENTS] = r
    rows = []
    for r in overview_rows(figures, frameworks):
        doc = r["document_value"]
        marks = []
        for framework in frameworks:
            cell = by_key.get(r["key"], {}).get(framework)
            if cell is None or cell.get("median") is None:
                marks.append(None)
                continue
            low, high = cell.get("ci_low"), cell.get("ci_high")
            share = cell.get("fraction_of_ceiling")
            marks.append({"framework": framework, "ratio": cell["median"] / doc,
                          "low": low / doc if low else None, "high": high / doc if high else None,
                          "at_limit": bool(share and share >= AT_LIMIT)})
        label = r["label"] + (f" ({r['variant']})" if r["variant"] else "")
        rows.append({"experiment": r["experiment"], "label": label, "marks": marks})
    if not rows:
        return None
    values = [v for row in rows for m in row["marks"] if m
              for v in (m["ratio"], m["low"], m["high"]) if v and v > 0]
    low = 10 ** math.floor(math.log10(min(values))) if values else 0.1
    high = 10 ** math.ceil(math.log10(max(values))) if values else 10
    low, high = max(min(low, 0.1), 1e-4), min(max(high, 10), 1e4)
    return {"svg": overview_svg(rows, frameworks, titles, low, high), "rows": rows,
            "range": (low, high)}


def overview_svg(rows: list[Row], frameworks: list[str], titles: dict[str, Row],
                 low: float, high: float) -> Markup:
    g = OVERVIEW
    x0, x1 = g["label"] + 10, g["width"] - g["right"]

    def x(value: float) -> float:
        value = min(max(value, low), high)
        return x0 + (x1 - x0) * (math.log10(value) - math.log10(low)) / (
            math.log10(high) - math.log10(low))

    parts: list[str] = []
    y = g["top"]
    last = None
    for row in rows:
        if row["experiment"] != last:
            last = row["experiment"]
            y += g["group"]
            title = titles.get(last, {}).get("title", last)
            parts.append(f'<text x="4" y="{y:.0f}" class="ov-group">{escape(title)}</text>')
        y += g["row"]
        parts.append(f'<text x="{g["label"]}" y="{y + 4:.0f}" text-anchor="end">'
                     f'{escape(row["label"])}</text>')
        parts.append(f'<line x1="{x0}" x2="{x1}" y1="{y:.0f}" y2="{y:.0f}" class="ov-row"/>')
        measured = [m for m in row["marks"] if m]
        if not measured:
            parts.append(f'<text x="{x0 + 6}" y="{y + 4:.0f}" class="ov-none">not measured'
                         '</text>')
        for n, mark in enumerate(row["marks"]):
            if mark is None:
                continue
            shape, colour = MARKS.get(mark["framework"], ("circle", "#333"))
            dy = y + (n - (len(frameworks) - 1) / 2) * 4
            if mark["low"] and mark["high"]:
                parts.append(f'<line x1="{x(mark["low"]):.1f}" x2="{x(mark["high"]):.1f}" '
                             f'y1="{dy:.1f}" y2="{dy:.1f}" stroke="{colour}" stroke-width="2"/>')
            cx = x(mark["ratio"])
            if shape == "circle":
                parts.append(f'<circle cx="{cx:.1f}" cy="{dy:.1f}" r="4" fill="{colour}"/>')
            else:
                parts.append(f'<path d="M{cx:.1f} {dy - 5:.1f} l5 5 l-5 5 l-5 -5 z" '
                             f'fill="{colour}"/>')
    bottom = y + 14
    ticks = []
    decade = low
    while decade <= high * 1.0001:
        ticks.append(decade)
        decade *= 10
    axis = [f'<line x1="{x0}" x2="{x1}" y1="{bottom}" y2="{bottom}" class="ov-axis"/>']
    for t in ticks:
        axis.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{g["top"] - 6}" '
                    f'y2="{bottom}" class="{"ov-one" if t == 1 else "ov-grid"}"/>')
        axis.append(f'<text x="{x(t):.1f}" y="{bottom + 14}" text-anchor="middle">'
                    f'{t:g}×</text>')
    axis.append(f'<text x="{x(1) - 6:.1f}" y="{g["top"] - 12}" text-anchor="end">'
                '← faster here than the document</text>')
    axis.append(f'<text x="{x(1) + 6:.1f}" y="{g["top"] - 12}">slower here →</text>')
    legend = []
    lx = x0
    for framework in frameworks:
        shape, colour = MARKS.get(framework, ("circle", "#333"))
        name = FRAMEWORKS.get(framework, framework)
        ly = bottom + 32
        if shape == "circle":
            legend.append(f'<circle cx="{lx}" cy="{ly - 4}" r="4" fill="{colour}"/>')
        else:
            legend.append(f'<path d="M{lx} {ly - 9} l5 5 l-5 5 l-5 -5 z" fill="{colour}"/>')
        legend.append(f'<text x="{lx + 9}" y="{ly}">{escape(name)} here (median, 95% '
                      'interval)</text>')
        lx += 260
    height = bottom + g["bottom"]
    title = "Every timed figure of the documents: this machine's time over the document's"
    desc = (f"{len(rows)} figures on a log scale from {number(low)}× to {number(high)}×; "
            "a mark left of 1× is faster here than on the document's machine. "
            "The table below the figure gives every value.")
    return Markup(
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {g["width"]} {height}" '
        f'role="img" aria-labelledby="overview-title overview-desc" class="overview">'
        f'<title id="overview-title">{escape(title)}</title>'
        f'<desc id="overview-desc">{escape(desc)}</desc>'
        + "".join(axis) + "".join(parts) + "".join(legend) + "</svg>")


# --- sections --------------------------------------------------------------------------

def run_key(run: Row) -> tuple[str, str]:
    return run.get("framework") or DOCUMENTS, run["experiment"]


def how_to_run(experiment: str, frameworks: list[str], reason: str) -> Row:
    """The command that runs a section that did not run here, and what it does."""
    rules = " ".join(section_folder(experiment, f) for f in frameworks)
    if "GPU" in reason or "compute capability" in reason:
        elsewhere = ("a GPU this build has code for" if "compute capability" in reason
                     else "the GPUs")
        return {"command": f"snakemake --cores all --forcerun {rules} "
                           "--config gpu_sections_on_cpu=True",
                "note": "the same code on CPU contexts; or the workflow as it is on a machine "
                        f"with {elsewhere}"}
    return {"command": f"snakemake --cores all --forcerun {rules}", "note": ""}


def not_run_lines(experiment: str, mine: dict[str, Row], statuses: dict[str, str]) -> list[Row]:
    """The frameworks that did not run a section, one line per reason."""
    reasons: dict[tuple[str, str], list[str]] = {}
    for framework, status in statuses.items():
        if status not in RAN:
            why = mine[framework].get("reason") or "did not run"
            reasons.setdefault((status, why), []).append(framework)
    return [{"frameworks": [FRAMEWORKS.get(f, f) for f in found], "status": status,
             "reason": why, **how_to_run(experiment, found, why)}
            for (status, why), found in reasons.items()]


def run_line(run: Row | None) -> Row:
    """One framework's status line of a section."""
    if run is None:
        return {"status": "missing", "text": "did not run", "flags": []}
    status = run.get("status", "missing")
    if status != "ok":
        return {"status": status, "text": run.get("reason") or "", "flags": []}
    params = run.get("parameters") or {}
    text = f"{run.get('wall_seconds', '–')} s"
    if params.get("repeats") is not None:
        text += (f", {params['repeats']} shuffled rounds × {params.get('processes', 1)} "
                 f"process(es) after {params.get('warmup', 0)} warm-up")
    threads = (run.get("threads") or {}).get("OMP_NUM_THREADS")
    if threads:
        text += f", {threads} thread(s)"
    for case, why in ((run.get("notes") or {}).get("runs_not_run") or {}).items():
        count = re.search(r"_(\d+)_devices?$", case)  # training.case_name
        which = f"the {count.group(1)}-device run" if count else case
        text += f"; {which} not run: {why}"
    if run.get("stages"):  # how many stages of processes it took, and why it stopped
        text += "; " + stages.summary_text(run["stages"])
    steady = run.get("steadiness")
    flags = []
    if steady:
        text += (f"; CPU probe {steady['probe_before_s']:.3f} → {steady['probe_after_s']:.3f} s "
                 f"({100 * steady['probe_moved']:+.0f}%)")
        if steady.get("steal_share") is not None:
            text += f", {100 * steady['steal_share']:.1f}% stolen"
        flags = steady.get("flags") or []
    return {"status": status, "text": text, "flags": flags}


def sections_view(args: argparse.Namespace, runs: dict[tuple[str, str], Row],
                  frameworks: list[str], figures: list[Row], outputs: list[Row],
                  claims: list[Row], titles: dict[str, Row]) -> list[Row]:
    plots = {p.stem: p for p in args.plots}
    order = list(titles) + sorted({e for _, e in runs} - set(titles))
    sections = []
    for experiment in order:
        # the frameworks that have this section (the ceilings are the machine's, once)
        here = [i for i, f in enumerate(frameworks) if (f, experiment) in runs]
        if not here:
            continue
        mine = {frameworks[i]: runs[(frameworks[i], experiment)] for i in here}
        statuses = {f: (r or {}).get("status", "missing") for f, r in mine.items()}
        ran = any(s in RAN for s in statuses.values())
        not_run = not_run_lines(experiment, mine, statuses)
        rows = [{**r, "cells": [r["cells"][i] for i in here]} for r in figures
                if r["experiment"] == experiment]
        section_outputs = [{**o, "cells": [o["cells"][i] for i in here]} for o in outputs
                           if o["experiment"] == experiment]
        sections.append({
            "experiment": experiment,
            "title": titles.get(experiment, {"title": experiment, "heading": "",
                                             "document": ""}),
            "ran": ran,
            "frameworks": [FRAMEWORKS.get(f, f) for f in mine],
            "runs": [{"framework": FRAMEWORKS.get(f, f), "run": mine[f], **run_line(mine[f])}
                     for f in mine],
            "not_run": not_run,
            "failed": [{"framework": FRAMEWORKS.get(f, f), "run": mine[f]}
                       for f in mine if statuses[f] == "failed"],
            "claims": [c for c in claims if c["section"] == experiment],
            "figures": [r for r in rows if not r["extra"]],
            "extras": [r for r in rows if r["extra"]],
            "outputs": section_outputs,
            "outputs_matching": [
                {"framework": FRAMEWORKS.get(f, f),
                 "matching": sum(1 for o in section_outputs
                                 if o["cells"][k] and o["cells"][k].get("match") == "yes"),
                 "compared": sum(1 for o in section_outputs if o["cells"][k]
                                 and o["cells"][k].get("match") in ("yes", "no"))}
                for k, f in enumerate(mine)],
            "plot": svg_data_uri(plots[experiment]) if ran and experiment in plots else None,
        })
    return sections


# --- provenance ------------------------------------------------------------------------

def machine_rows(machine: Row) -> dict[str, str]:
    """The machine section as label -> text; any field of machine.json may be absent."""
    cpu = machine.get("cpu", {})
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
    ])


def machine_line(machine: Row) -> str:
    """The machine in one line: CPU, cores, GPUs."""
    cpu = machine.get("cpu", {})
    gpus = machine.get("gpus") or []
    names = {g["name"]: sum(1 for h in gpus if h["name"] == g["name"]) for g in gpus}
    return (f"{cpu.get('model')}, {cpu.get('logical_cores')} logical cores; GPUs: "
            + (", ".join(f"{n} × {name}" for name, n in names.items()) or "none"))


def mxnet_stack(machine: Row, runs: Iterable[Row]) -> dict[str, str] | None:
    software = machine.get("software", {})
    mxnet = software.get("mxnet") or next((r["mxnet"] for r in runs if r.get("mxnet")), None)
    if not mxnet:
        return None
    blas = mxnet.get("blas") or {}
    support = machine.get("mxnet_gpu_support") or {}
    gpus = "; ".join(f"GPU {g.get('index')}: {'usable' if g.get('usable') else 'not usable'}"
                     f" ({g.get('reason')})" for g in support.get("gpus") or [])
    return {
        "version": f"MXNet {mxnet.get('version')}"
                   + (f", {mxnet['gpus_visible']} GPU(s) visible" if mxnet.get("gpus_visible")
                      else ""),
        "build": ", ".join(mxnet.get("features", [])) or str(mxnet.get("error", "")),
        "BLAS": ", ".join(filter(None, [blas.get("config") or blas.get("path"),
                                        blas.get("core") and f"kernel {blas['core']}"]))
                or "unknown",
        "Python": f"Python {software.get('python')}, numpy {software.get('numpy')}",
        **({"GPU support": gpus or f"no GPU: nvidia-smi {support.get('nvidia_smi')}"}
           if support else {}),
    }


def torch_stack(machine: Row, runs: Iterable[Row]) -> dict[str, str] | None:
    torch = (machine.get("software", {}).get("torch")
             or next((r["torch"] for r in runs if r.get("torch")), None))
    if not torch:
        return None
    threads = torch.get("threads") or {}
    gpus = torch.get("gpus") or []
    tf32 = torch.get("tf32") or {}
    cudnn = torch.get("cudnn") or {}
    rows = {
        "version": f"PyTorch {torch.get('version')} ({torch.get('build')} build"
                   + (f", CUDA {torch['cuda_version']}" if torch.get("cuda_version") else "")
                   + (f", cuDNN {torch['cudnn_version']}" if torch.get("cudnn_version") else "")
                   + ")",
        "BLAS": str(torch.get("blas") or "unknown"),
        "threads": f"intra-op {threads.get('intra_op')}, inter-op {threads.get('inter_op')}",
        "settings": f"float32 matmul precision {torch.get('float32_matmul_precision')}; TF32 "
                    f"matmul {tf32.get('matmul')}, cuDNN {tf32.get('cudnn')}; cuDNN benchmark "
                    f"{cudnn.get('benchmark')}, deterministic {cudnn.get('deterministic')}",
    }
    if gpus:
        rows["GPUs"] = "; ".join(
            f"{g.get('name')} (compute capability {g.get('compute_capability')}, "
            f"{g.get('memory_gb')} GB)" for g in gpus)
    return rows


# Each framework's software stack for the report's machine table, by the run record's key
# of its build (the registry's package name).
STACKS = {"mxnet": mxnet_stack, "torch": torch_stack}


def share_text(cell: Row) -> str:
    """A rate's share of the machine's best ceiling, naming which ceiling it is of."""
    kernel = f" ({cell['ceiling_kernel']})" if cell.get("ceiling_kernel") else ""
    mark = ", at the limit" if cell["fraction_of_ceiling"] >= AT_LIMIT else ""
    return (f"{100 * cell['fraction_of_ceiling']:.0f}% of the machine's best, "
            f"{cell['ceiling_case']}{kernel}{mark}")


def ceiling_kernels(runs: dict[tuple[str, str], Row]) -> dict[str, str]:
    """Which library and kernel reached each ceiling, from both ceilings sections."""
    return {case: kernel for (_, experiment), run in runs.items() if experiment == "ceilings"
            for case, kernel in ((run or {}).get("notes") or {}).get("kernels", {}).items()}


def ceilings_text(summary: list[Row], runs: dict[tuple[str, str], Row] | None = None,
                  machine: Row | None = None) -> str:
    """Every ceiling with the library and kernel that reached it, a CPU product's share
    of the CPU's theoretical peak (a range: the FMA pipes cannot be read), and the peak."""
    kernels = ceiling_kernels(runs or {})
    peak = ((machine or {}).get("cpu") or {}).get("peak_float32")
    rates = sorted((r for r in summary if r["experiment"] == "ceilings"
                    and r["metric"] == "rate" and r["median"] is not None),
                   key=lambda r: (r["unit"], -r["median"]))
    parts = []
    for r in rates:
        notes = [kernels[r["case"]]] if r["case"] in kernels else []
        if peak and r["unit"] == "GFLOP/s" and not r["case"].startswith("gpu"):
            notes.append(f"{100 * r['median'] / peak['gflops_high']:.0f}–"
                         f"{100 * r['median'] / peak['gflops_low']:.0f}% of the CPU's peak")
        parts.append(f"{r['case']} {r['median']:.1f} {r['unit']}"
                     + (f" ({', '.join(notes)})" if notes else ""))
    if peak:
        parts.append(f"CPU peak {peak['gflops_low']:.0f}–{peak['gflops_high']:.0f} GFLOP/s "
                     f"float32: {peak['how']}")
    return "; ".join(parts) or "not measured"


def forced_kernel_ratios(comparison_csv: Path | None, machine_id: str) -> list[str]:
    """Each forced-kernel variant of this machine (results/<machine>--<kernel>-kernel, in the
    cross-machine table when it ran) in words: its MXNet dot rate over this run's."""
    if not comparison_csv:
        return []
    table = pd.read_csv(comparison_csv)
    if "framework" not in table:
        table = table.assign(framework=DOCUMENTS)
    dots = table[(table["framework"] == "mxnet") & (table["experiment"] == "ceilings")
                 & (table["metric"] == "rate") & table["case"].str.startswith("mxnet_dot_")]
    stock = machine_id.split("--")[0]
    rates = {m: g.set_index("case")["median"] for m, g in dots.groupby("machine")}
    if machine_id not in rates:
        return []
    found = []
    for name, variant in sorted(rates.items()):
        kind = re.fullmatch(re.escape(stock) + r"--(?:system-blas--)?([a-z0-9_]+)-kernel", name)
        shared = variant.index.intersection(rates[machine_id].index)
        if kind and name != machine_id and len(shared):
            case = max(shared, key=lambda c: int(c.rsplit("_", 1)[-1]))
            found.append(f"{name}: {variant[case]:.0f} GFLOP/s, "
                         f"{variant[case] / rates[machine_id][case]:.2f}× this run's {case}")
    return found


def blas_notice(machine: Row, runs: dict[tuple[str, str], Row], summary: list[Row],
                forced: list[str] | None = None) -> Row | None:
    """One line for the first screen when an OpenBLAS here runs a kernel narrower than the
    CPU's vectors (Prescott's 128 bits on an AVX-512 CPU) and, folded under it, what it
    costs MXNet's dot here, measured against the machine's best, and the fix: the line
    is short so that the claims' verdicts still fit the first screen."""
    bits = ((machine.get("cpu") or {}).get("vector") or {}).get("bits")
    mxnet = (machine.get("software") or {}).get("mxnet") or next(
        (r["mxnet"] for (f, _), r in runs.items() if f == "mxnet" and (r or {}).get("mxnet")),
        None) or {}
    libraries = mxnet.get("blas_libraries") or ([mxnet["blas"]] if mxnet.get("blas") else [])
    for lib in libraries:
        lib.setdefault("kernel_bits", CORE_BITS.get(str(lib.get("core", "")).lower()))
    narrow = narrow_kernels(libraries, bits) if bits else []
    if not narrow:
        return None
    names = "; ".join(f"{' '.join((lib.get('config') or 'OpenBLAS').split()[:2])} runs its "
                      f"{lib['core']} kernel ({lib['kernel_bits']}-bit)" for lib in narrow)
    ceilings = {r["case"]: r["median"] for r in summary if r["experiment"] == "ceilings"
                and r["metric"] == "rate" and r["median"] is not None}
    best = workloads.best_ceiling(ceilings, workloads.ceiling_case("GFLOP", "cpu", ""))
    if best:
        best = (ceiling_kernels(runs).get(best[0], best[0]), best[1])
    for r in summary:  # a timing of the same work beats them: the summary says so
        if r.get("achieved_unit") == "GFLOP/s" and r.get("ceiling") and (
                best is None or r["ceiling"] > best[1]) and "gpu" not in str(r.get("devices")) \
                and "cuda" not in str(r.get("devices")):
            best = (r["ceiling_case"], r["ceiling"])
    dots = [rate for case, rate in ceilings.items() if case.startswith("mxnet_dot_")]
    cost = share = ""
    if best and dots:
        share = f": MXNet's dot at {100 * max(dots) / best[1]:.0f}% of the machine's best"
        cost = (f": MXNet's dot reaches {max(dots):.0f} GFLOP/s, {100 * max(dots) / best[1]:.0f}% "
                f"of the machine's best ({best[0]}, {best[1]:.0f} GFLOP/s)")
    instructions = (machine.get("cpu") or {}).get("vector", {}).get("instructions", "")
    widths = " and ".join(sorted({f"{lib['kernel_bits']}-bit" for lib in narrow}))
    line = f"OpenBLAS runs a {widths} kernel on this {bits}-bit {instructions} CPU{share}"
    return {"line": line, "text": (
            f"{names} on this {bits}-bit {instructions} CPU{cost}; fix: --config "
            f"blas_coretype=<kernel> runs a forced kernel (SkylakeX for AVX-512 where the "
            f"OpenBLAS has it, Haswell for AVX2) as a variant of its own, checked against "
            f"float64 before any timing; make bench measures each"
            + (f". Forced here: {'; '.join(forced)}" if forced else ""))}


def job_figures(paths: list[Path]) -> dict[str, dict[str, Any]]:
    """Snakemake's own per-job wall time (benchmark files, named like the job's results
    folder); peak memory comes from each script's getrusage instead, since the
    benchmark's sampling misses short jobs."""
    figures = {}
    for path in paths:
        row = pd.read_csv(path, sep="\t").iloc[-1]
        figures[path.stem] = {"wall_s": float(row["s"])}
    return figures


def measured_when(runs: Iterable[Row]) -> str:
    started = sorted(r["started"] for r in runs if r.get("started"))
    finished = sorted(r["finished"] for r in runs if r.get("finished"))
    if not started:
        return "unknown"
    first, last = started[0], finished[-1] if finished else started[-1]
    day = first[:10]
    end = last[11:16] if last[:10] == day else last[:16].replace("T", " ")
    return f"{day} {first[11:16]}–{end} UTC" if first.endswith("+00:00") else f"{first} – {last}"


def comparison(args: argparse.Namespace, claims_table: dict[str, Row]) -> dict[str, Any] | None:
    """The cross-machine section: a column per machine, the baseline's first; a claim's
    cell holds each framework's verdict on that machine."""
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
    for (framework, _experiment, case, metric), group in table.groupby(
            ["framework", "experiment", "case", "metric"], sort=False):
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
            "short": claims_table.get(v["name"], {}).get("short") or v["claim"],
            "claim": v["claim"], "cells": [[] for _ in machines]})
        for k, machine in enumerate(machines):
            if v.get(machine):
                row["cells"][k].append({"framework": FRAMEWORKS.get(v.get("framework"),
                                                                    v.get("framework")),
                                        "verdict": v[machine]})
    return {"machines": machines, "rows": rows, "verdicts": list(verdicts.values()),
            "plot": svg_data_uri(args.comparison_plot)}


def read_table(path: Path) -> list[Row]:
    return pd.read_csv(path, dtype=str, keep_default_na=False).to_dict("records")


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
    machine = read_json(args.machine)
    # checked by summarise already (results.read_run); here only brought to today's format
    run_list = [migrate_run(read_json(p)) for p in args.runs]
    runs = {run_key(r): r for r in run_list}
    frameworks = [f for f in FRAMEWORKS if any(k[0] == f for k in runs)] + sorted(
        {k[0] for k in runs} - set(FRAMEWORKS))
    titles = {r["experiment"]: r for r in records(args.sections)}
    report_folder = REPORT_FOLDER
    labels = Labels.read(args.labels or report_folder / "labels.csv")
    claims_table = claim_words()
    summary = records(args.summary)
    outputs = records(args.outputs)
    verdicts = records(args.verdicts)
    figures = side_by_side(summary, frameworks, labels)
    case_words = {r["case"]: r["label"] for r in figures if r["epoch"] is None}
    claims = claim_rows(verdicts, frameworks, claims_table, summary, case_words, runs)
    unlabelled = sorted({f"{r['experiment']}/{r['case']} ({r['metric']})" for r in figures
                         if not r["labelled"]})
    if unlabelled:
        print("no label in report/labels.csv for: " + ", ".join(unlabelled), file=sys.stderr)
    sections = sections_view(args, runs, frameworks, figures,
                             outputs_side_by_side(outputs, frameworks, labels), claims,
                             titles)
    stacks = {f.label: STACKS[f.package](machine, (r for k, r in runs.items() if k[0] == name))
              for name, f in REGISTRY.items() if f.package in STACKS}
    return dict(
        machine=machine,
        machine_rows={**machine_rows(machine),
                      "ceilings (measured here)": ceilings_text(summary, runs, machine)},
        blas_notice=blas_notice(machine, runs, summary, forced_kernel_ratios(
            args.comparison, str(machine.get("machine", "")))),
        machine_line=machine_line(machine),
        stacks={name: rows for name, rows in stacks.items() if rows},
        frameworks=[FRAMEWORKS.get(f, f) for f in frameworks],
        when=measured_when(run_list),
        jobs=job_figures(args.benchmarks),
        preset=args.preset,
        sections=sections,
        claims=claims,
        chance=chance_line(claims),
        checks=check_lines(verdicts, frameworks, runs),
        check_rows=[v for v in verdicts if v.get("kind") == "check"],
        overview=overview(figures, summary, frameworks, titles),
        runs=[{"section": s["title"]["title"], "experiment": s["experiment"],
               "framework": r["framework"], "run": r["run"],
               "job": jobs_key(s["experiment"], r["framework"]), "code": code_text(r["run"])}
              for s in sections for r in s["runs"] if r["run"]],
        comparison=comparison(args, claims_table),
        kept_refused=kept_refusals(args.kept) if getattr(args, "kept", None) else [],
        unlabelled=unlabelled,
    )


def code_text(run: Row) -> str:
    code = run.get("code") or {}
    return (code.get("commit") or "not a git checkout")[:12] + (
        " (modified)" if code.get("dirty") else "")


def jobs_key(experiment: str, framework_name: str) -> str:
    framework = next((k for k, v in FRAMEWORKS.items() if v == framework_name), framework_name)
    return section_folder(experiment, framework)


def parser() -> argparse.ArgumentParser:
    """The report's command line (the rule ``report`` gives it every input)."""
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
                   help="sections.csv (the rule sections_table writes it): each section's "
                        "heading in the documents, in the report's order")
    p.add_argument("--labels", type=Path,
                   help="labels of the cases the documents did not print "
                        "(default: report/labels.csv)")
    p.add_argument("--comparison", type=Path, help="comparison.csv (other machines present)")
    p.add_argument("--comparison-verdicts", type=Path, help="verdicts_by_machine.csv")
    p.add_argument("--comparison-plot", type=Path, help="plots/comparison.svg")
    p.add_argument("--kept", type=Path,
                   help="results/kept-archives.json: the kept archives refused are listed")
    p.add_argument("--template", required=True, type=Path)
    p.add_argument("--preset", required=True)
    p.add_argument("--out", required=True, type=Path)
    return p


def main() -> int:
    args = parser().parse_args()
    args.out.write_text(render(args), encoding="utf-8")
    print(f"wrote {args.out}; peak memory {provenance.peak_rss_mb()['self']:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
