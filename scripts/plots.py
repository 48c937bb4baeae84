"""Plots of one machine's results (SVG), drawn from summary.csv and the raw samples.

Each plot shows this machine's median with its interquartile range, every raw
sample as a dot, and the document's figure beside it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

plt.rcParams.update({"svg.fonttype": "none", "font.size": 10, "figure.dpi": 96})
# An SVG's date and id seeds change every render; pin them so unchanged data
# gives byte-identical plots (and archives that do not churn).
plt.rcParams["svg.hashsalt"] = "d2l-perf"
METADATA = {"Date": None}

MEASURED, DOCUMENT = "#1f77b4", "#999999"


def timing_bars(summary: pd.DataFrame, samples: pd.DataFrame, title: str, out: Path) -> None:
    """Before/after style bars: document figure vs this machine's median and samples."""
    rows = summary.dropna(subset=["median"]).reset_index(drop=True)
    fig, ax = plt.subplots(figsize=(6.4, 0.9 + 0.7 * max(len(rows), 1)))
    for i, row in rows.iterrows():
        y = len(rows) - 1 - i
        ax.barh(y + 0.18, row["median"], height=0.34, color=MEASURED,
                label="this machine (median, IQR)" if i == 0 else None,
                xerr=[[row["median"] - row["q1"]], [row["q3"] - row["median"]]], capsize=3)
        values = samples[samples["case"] == row["case"]]["value"]
        ax.plot(values, [y + 0.18] * len(values), "o", ms=3, color="black", alpha=0.6,
                label="raw samples" if i == 0 else None)
        if pd.notna(row["document_value"]):
            ax.barh(y - 0.18, row["document_value"], height=0.34, color=DOCUMENT,
                    label="document" if i == 0 else None)
    ax.set_yticks(range(len(rows)), [str(c) for c in rows["case"][::-1]])
    ax.set_xlabel("seconds")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, metadata=METADATA)
    plt.close(fig)


def hybridize(summary: pd.DataFrame, samples: pd.DataFrame, out: Path) -> None:
    timing_bars(summary[summary["metric"] == "time"], samples,
                "MLP forward passes before and after hybridize()", out)


PLOTS = {"hybridize": hybridize}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--summary", required=True, type=Path)
    p.add_argument("--samples", required=True, type=Path, nargs="+")
    p.add_argument("--out", required=True, type=Path, nargs="+",
                   help="<experiment>.svg for each plot to draw")
    args = p.parse_args()
    summary = pd.read_csv(args.summary, keep_default_na=False,
                          na_values={c: [""] for c in ("median", "q1", "q3", "document_value")})
    samples = pd.concat([pd.read_csv(s, keep_default_na=False) for s in args.samples])
    for out in args.out:
        experiment = out.stem
        out.parent.mkdir(parents=True, exist_ok=True)
        PLOTS[experiment](summary[summary["experiment"] == experiment],
                          samples[samples["experiment"] == experiment], out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
