"""Each figure beside the document's: one row per figure of the documents (or case they
did not print), a cell per framework, and the printed outputs likewise."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from d2lperf import workloads
from d2lperf.frameworks import DOCUMENTS
from d2lperf.labels import Labels
from d2lperf.report.values import Row, like_document, ratio
from d2lperf.workloads import AT_LIMIT


def figure_key(row: Row) -> tuple:
    """What makes one figure: a summary row per framework shares it with the document's."""
    return (row["section"], row["case"], row["metric"], row.get("epoch"),
            row.get("document"), row.get("variant"))


def side_by_side(summary: Iterable[Row], frameworks: list[str], labels: Labels) -> list[Row]:
    """One row per figure (a document's, or a case the documents did not print), with a
    cell per framework: the documents' rows in their order, then the extra ones."""
    rows: dict[tuple, Row] = {}
    for r in summary:
        key = figure_key(r)
        if key not in rows:
            extra = r.get("document_printed") is None
            label = r.get("label") if not extra else labels(r["section"], r["case"],
                                                           r["metric"], r.get("epoch"))
            rows[key] = {"key": key, "section": r["section"], "case": r["case"],
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
    """A cell's unit; a fraction reads as the bare number."""
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
        images = workloads.examples_per_second(row["section"], row["case"], cell["achieved"])
        if images:  # a training epoch: its images per second first
            rate = f"{images:,.0f} images/s, {rate}"
        if cell.get("fraction_of_ceiling"):
            rate += f", {share_text(cell)}"
    return {"measured": True, "text": f"{value} {unit}".rstrip(), "notes": " · ".join(notes),
            "noisy": bool(cell.get("noisy")), "rate": rate, "devices": cell.get("devices")}


def outputs_side_by_side(outputs: Iterable[Row], frameworks: list[str],
                         labels: Labels) -> list[Row]:
    """One row per printed output, a cell per framework (None where it printed none); an
    output summarise labelled with its bare case name takes its label from labels.csv."""
    rows: dict[tuple, Row] = {}
    for o in outputs:
        key = (o["section"], o["case"])
        label = o.get("label") if o.get("label") not in (None, o["case"]) else labels(
            o["section"], o["case"], "output")
        row = rows.setdefault(key, {"section": o["section"], "case": o["case"],
                                    "label": label or o["case"], "labelled": bool(label),
                                    "document_printed": o.get("document_printed"),
                                    "extra": o.get("document_printed") is None, "cells": {}})
        row["cells"][o.get("framework") or DOCUMENTS] = o
    for row in rows.values():
        row["cells"] = [row["cells"].get(f) for f in frameworks]
    return list(rows.values())


def share_text(cell: Row) -> str:
    """A rate's share of the machine's best ceiling, naming which ceiling it is of."""
    kernel = f" ({cell['ceiling_kernel']})" if cell.get("ceiling_kernel") else ""
    mark = ", at the limit" if cell["fraction_of_ceiling"] >= AT_LIMIT else ""
    return (f"{100 * cell['fraction_of_ceiling']:.0f}% of the machine's best, "
            f"{cell['ceiling_case']}{kernel}{mark}")
