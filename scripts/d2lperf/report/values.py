"""The report's values: its tables read as rows, numbers written as a reader reads them,
images inline (the page makes no network request)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from d2lperf.frameworks import DOCUMENTS, LABELS
from d2lperf.tables import read_table

Row = dict[str, Any]
FRAMEWORKS = LABELS  # display names, in column order (the framework registry's)


def like_document(value: float | None, printed: str | None) -> str:
    """Format a measured value with as many decimals as the document printed (0.4270 -> 4)."""
    if value is None:
        return "–"
    decimals = len(printed.split(".")[1]) if printed and "." in printed else 4
    return f"{value:.{decimals}f}"


def ratio(value: float | None) -> str:
    """A measured figure over the document's, as the tables print it: ``0.29×``."""
    return "–" if value is None else f"{value:.2f}×"


def number(value: float) -> str:
    """A ratio for a reader: two significant figures, no exponent."""
    if value >= 100:
        return f"{value:.0f}"
    if value >= 0.01:
        return f"{value:#.2g}".rstrip(".")
    return f"{value:.3f}" if value >= 0.001 else "<0.001"


# An interval that says nothing a reader can use: it holds 1 (the two cases alike, or a
# share of 100%), so not even the direction is known, and its ends are more than this
# factor apart (from 3x slower to 3x faster; a share from 0 to thousands of percent). The
# report says so instead of printing it; a decisive verdict never has one.
TOO_WIDE = 10.0


def too_wide(low: float | None, high: float | None) -> bool:
    """Whether the interval of a ratio (or of a share) is too wide to say anything."""
    if low is None or high is None or high != high or low != low:
        return False
    return low <= 1 <= high and (low <= 0 or high / low > TOO_WIDE)


def too_few_words(processes: int | None) -> str:
    ran = f" ({processes} ran)" if processes else ""
    return f"too few processes to tell{ran}"


NUMERIC = ("median", "q1", "q3", "ci_low", "ci_high", "ratio", "count", "outliers", "noisy",
           "achieved", "ceiling", "fraction_of_ceiling", "epoch", "document_value",
           "ratio_low", "ratio_high")


def records(path: Path) -> list[Row]:
    """Rows of a table: the documents' figures stay strings exactly as printed, and an
    empty cell is None (never NaN, which a template would take for true)."""
    frame = read_table(path, dtype={"document_printed": str, "measured": str, "variant": str},
                       keep_default_na=False, na_values={c: [""] for c in NUMERIC})
    frame = frame.astype(object).where(frame.notna() & (frame != ""), None)
    rows = frame.to_dict("records")
    for row in rows:
        if "framework" in row and not row["framework"]:
            row["framework"] = DOCUMENTS
    return rows


def svg_data_uri(path: Path) -> str:
    """A plot inline, so that the page is one file and asks the network for nothing."""
    return "data:image/svg+xml;base64," + base64.b64encode(path.read_bytes()).decode("ascii")
