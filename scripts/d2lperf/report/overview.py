"""The overview figure: every timed figure of the documents as this machine's time over
the document's, drawn by hand as an inline SVG with its text alternative."""

from __future__ import annotations

import math

from markupsafe import Markup, escape

from d2lperf.frameworks import DOCUMENTS, REGISTRY
from d2lperf.report.figures_view import figure_key
from d2lperf.report.values import FRAMEWORKS, Row, number
from d2lperf.workloads import AT_LIMIT

LEGEND_STEP, LEGEND_ENTRY, LEGEND_ROW = 260, 250, 18  # a legend entry's room, its width, a row


def marker(shape: str, cx: float, cy: float, colour: str) -> str:
    """A framework's mark (the registry's ``shape``) centred on (cx, cy): a circle, a
    diamond, a triangle or a square, each about 9 px across (a float coordinate written
    to a tenth, a whole one as it is)."""
    def at(v: float) -> str:
        return f"{v:.1f}" if isinstance(v, float) else str(v)

    if shape == "circle":
        return f'<circle cx="{at(cx)}" cy="{at(cy)}" r="4" fill="{colour}"/>'
    if shape == "triangle":
        return f'<path d="M{at(cx)} {at(cy - 5)} l5 9 l-10 0 z" fill="{colour}"/>'
    if shape == "square":
        return f'<rect x="{at(cx - 4)}" y="{at(cy - 4)}" width="8" height="8" fill="{colour}"/>'
    return f'<path d="M{at(cx)} {at(cy - 5)} l5 5 l-5 5 l-5 -5 z" fill="{colour}"/>'


OVERVIEW = {"width": 960, "label": 430, "right": 20, "row": 13, "group": 19, "top": 34,
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
        group = (r["section"], r["case"], r["document"], r["variant"],
                 r["epoch"] is None)
        measured = any(c["measured"] for c in r["cells"])
        best = keep.get(group)
        if best is None or (measured, r["epoch"] or 0) >= (best["_measured"], best["epoch"] or 0):
            keep[group] = {**r, "_measured": measured}
    return [r for r in timed if keep[(r["section"], r["case"], r["document"], r["variant"],
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
        rows.append({"section": r["section"], "label": label, "marks": marks})
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
    """The overview drawn: a row per figure grouped by section, a mark per framework with
    its interval on a log axis from ``low`` to ``high``, and a legend; its title and
    description name it for a screen reader (the table beside it gives every value)."""
    g = OVERVIEW
    x0, x1 = g["label"] + 10, g["width"] - g["right"]

    def x(value: float) -> float:
        value = min(max(value, low), high)
        return x0 + (x1 - x0) * (math.log10(value) - math.log10(low)) / (
            math.log10(high) - math.log10(low))

    # a section none of whose figures was measured here takes one row, not one a figure
    # (the table below the figure lists each)
    measured_in = {r["section"] for r in rows if any(r["marks"])}
    drawn: list[Row] = []
    for row in rows:
        if row["section"] in measured_in:
            drawn.append(row)
        elif drawn and drawn[-1]["section"] == row["section"]:
            drawn[-1]["count"] += 1
        else:
            drawn.append({"section": row["section"], "marks": [], "count": 1})
    for row in drawn:
        if "count" in row:
            row["label"] = f"its {row['count']} figure{'s' if row['count'] != 1 else ''}"
    parts: list[str] = []
    y = g["top"]
    last = None
    for row in drawn:
        if row["section"] != last:
            last = row["section"]
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
            parts.append(marker(shape, x(mark["ratio"]), dy, colour))
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
    lx, ly = x0, bottom + 32
    for framework in frameworks:  # a row of entries, as many rows as they need
        if lx + LEGEND_ENTRY > g["width"]:
            lx, ly = x0, ly + LEGEND_ROW
        shape, colour = MARKS.get(framework, ("circle", "#333"))
        name = FRAMEWORKS.get(framework, framework)
        legend.append(marker(shape, lx, ly - 4, colour))
        legend.append(f'<text x="{lx + 9}" y="{ly}">{escape(name)} here (median, 95% '
                      'interval)</text>')
        lx += LEGEND_STEP
    height = ly - 32 + g["bottom"]
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
