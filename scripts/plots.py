"""Plots of one machine's results (SVG), drawn from summary.csv and the raw samples.

Timing plots show this machine's median with its interquartile range, every raw
sample as a dot, and the document's figure beside it; training plots show test
accuracy and epoch time per epoch, one line per device count, the document's
dashed. A section that did not run gets a plot that says so.
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
NUMERIC = ("median", "q1", "q3", "document_value", "epoch")


def save(fig, out: Path) -> None:
    fig.tight_layout()
    fig.savefig(out, metadata=METADATA)
    plt.close(fig)


def nothing_to_show(out: Path, title: str, why: str) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, f"{title}\n{why}", ha="center", va="center", wrap=True)
    save(fig, out)


def timing_bars(summary: pd.DataFrame, samples: pd.DataFrame, title: str, out: Path,
                unit: str = "seconds") -> None:
    """Per case: this machine's median (IQR whiskers, raw samples as dots) and the
    document's figure (its first printed one where two documents printed it)."""
    rows = summary.dropna(subset=["median"]).drop_duplicates(
        subset=["case", "metric"]).reset_index(drop=True)
    if rows.empty:
        nothing_to_show(out, title, "no measurements")
        return
    documents = summary.dropna(subset=["document_value"]).drop_duplicates(subset=["case"])
    document = dict(zip(documents["case"], documents["document_value"]))
    fig, ax = plt.subplots(figsize=(6.8, 1.0 + 0.62 * len(rows)))
    for i, row in rows.iterrows():
        y = len(rows) - 1 - i
        ax.barh(y + 0.18, row["median"], height=0.34, color=MEASURED,
                xerr=[[row["median"] - row["q1"]], [row["q3"] - row["median"]]], capsize=3,
                label="this machine (median, IQR)" if i == 0 else None)
        values = samples[(samples["case"] == row["case"]) & (samples["metric"] == row["metric"])]
        ax.plot(values["value"], [y + 0.18] * len(values), "o", ms=3, color="black", alpha=0.6,
                label="raw samples" if i == 0 else None)
        if row["case"] in document:
            ax.barh(y - 0.18, document[row["case"]], height=0.34, color=DOCUMENT,
                    label="document" if "document" not in ax.get_legend_handles_labels()[1]
                    else None)
    values = list(rows["median"]) + list(document.values())
    if min(values) > 0 and max(values) / min(values) > 100:
        ax.set_xscale("log")  # queueing (ms) beside waiting (s): both must be readable
    ax.set_yticks(range(len(rows)), [str(c) for c in rows["case"][::-1]])
    ax.set_xlabel(unit)
    ax.set_title(title)
    ax.legend(loc="best", fontsize=8)
    save(fig, out)


def training_curves(summary: pd.DataFrame, title: str, out: Path) -> None:
    """Test accuracy and epoch time per epoch, per case; the documents' dashed."""
    per_epoch = summary.dropna(subset=["epoch"])
    if per_epoch.dropna(subset=["median"]).empty:
        nothing_to_show(out, title, "no epochs measured")
        return
    fig, axes = plt.subplots(1, 2, figsize=(8.0, 3.2))
    for ax, metric, label in ((axes[0], "accuracy", "test accuracy"),
                              (axes[1], "time", "epoch time (s)")):
        rows = per_epoch[per_epoch["metric"] == metric].sort_values("epoch")
        for n, (case, group) in enumerate(rows.groupby("case", sort=False)):
            colour = f"C{n}"
            mine = group.dropna(subset=["median"]).drop_duplicates(subset=["epoch"])
            ax.plot(mine["epoch"], mine["median"], "o-", color=colour, label=f"{case}")
            theirs = group.dropna(subset=["document_value"]).drop_duplicates(subset=["epoch"])
            if not theirs.empty:
                ax.plot(theirs["epoch"], theirs["document_value"], "--", color=colour,
                        alpha=0.6, label=f"{case} (document)")
        ax.set_xlabel("epoch")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=7)
    fig.suptitle(title)
    save(fig, out)


def batch_number(cases: pd.Series) -> pd.Series:
    return cases.str.rsplit("_", n=1).str[-1].astype(int)


def async_memory(summary: pd.DataFrame, samples: pd.DataFrame, out: Path) -> None:
    """Elapsed time at each reported batch, and the memory increases, per mode."""
    title = "Memory impact of asynchronous computation"
    if summary.dropna(subset=["median"]).empty:
        nothing_to_show(out, title, "no measurements")
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 3.4))
    times = summary[summary["metric"] == "time"]
    for n, mode in enumerate(("sync", "async")):
        rows = times[times["case"].str.startswith(f"{mode}_batch_")]
        mine = rows.dropna(subset=["median"]).drop_duplicates(subset=["case"])
        left.plot(batch_number(mine["case"]), mine["median"], "o-", color=f"C{n}",
                  label=f"{mode} (this machine)")
        theirs = rows.dropna(subset=["document_value"])
        if not theirs.empty:
            left.plot(batch_number(theirs["case"]), theirs["document_value"], "--",
                      color=f"C{n}", alpha=0.6, label=f"{mode} (document)")
    left.set_xlabel("batch")
    left.set_ylabel("elapsed seconds (async: queued)")
    left.legend(fontsize=7)

    memory = summary[summary["metric"] == "memory"]
    rows = memory.dropna(subset=["median"]).drop_duplicates(subset=["case"]).reset_index()
    right.bar(range(len(rows)), rows["median"], color=MEASURED, capsize=3,
              yerr=[rows["median"] - rows["q1"], rows["q3"] - rows["median"]],
              label="this machine (median, IQR)")
    document = dict(zip(memory["case"], memory["document_value"]))
    marked = [(i, document[c]) for i, c in enumerate(rows["case"]) if pd.notna(document.get(c))]
    if marked:
        right.plot(*zip(*marked), "D", color=DOCUMENT, label="document")
    right.set_xticks(range(len(rows)),
                     [c.replace("_memory_increase", "") for c in rows["case"]], fontsize=8)
    right.set_ylabel("RSS increase (MB)")
    right.legend(fontsize=7)
    fig.suptitle(title)
    save(fig, out)


def plot(experiment: str, summary: pd.DataFrame, samples: pd.DataFrame, out: Path) -> None:
    titles = {
        "hybridize": "MLP forward passes before and after hybridize()",
        "async_computation": "Asynchronous computation",
        "auto_parallelism": "Automatic parallelism: CPU and GPU, compute and copy",
        "small_ops_parallel": "Two small random draws, separately and together",
    }
    if experiment == "async_memory":
        async_memory(summary, samples, out)
    elif experiment.startswith("multi_gpu"):
        training_curves(summary, {"multi_gpu_scratch": "LeNet from scratch, 1 vs 2 devices",
                                  "multi_gpu_gluon": "ResNet-18 with Gluon, 1 vs 2 devices"}
                        [experiment], out)
    elif experiment == "ceilings":
        timing_bars(summary[summary["metric"] == "rate"], samples[samples["metric"] == "rate"],
                    "Machine ceilings (GFLOP/s for dot, GB/s for copies)", out, unit="rate")
    else:
        timing_bars(summary[summary["metric"] == "time"], samples, titles.get(experiment,
                                                                               experiment), out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--summary", required=True, type=Path)
    p.add_argument("--samples", required=True, type=Path, nargs="+")
    p.add_argument("--out", required=True, type=Path, nargs="+",
                   help="<experiment>.svg for each plot to draw")
    args = p.parse_args()
    summary = pd.read_csv(args.summary, keep_default_na=False,
                          na_values={c: [""] for c in NUMERIC})
    samples = pd.concat([pd.read_csv(s, keep_default_na=False) for s in args.samples])
    for out in args.out:
        experiment = out.stem
        out.parent.mkdir(parents=True, exist_ok=True)
        plot(experiment, summary[summary["experiment"] == experiment],
             samples[samples["experiment"] == experiment], out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
