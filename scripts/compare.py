"""Compare machines: every measured case, a column per machine, speed-ups against a baseline.

Reads each machine's summary.csv and verdicts.csv (this machine's and those imported
under results/), writes comparison.csv (one row per case and machine: median, 95%
interval, speed-up against the baseline with its interval), verdicts_by_machine.csv
and a plot of the speed-ups.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from d2lperf.frameworks import DOCUMENTS  # noqa: E402

plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "svg.hashsalt": "d2l-perf"})
CASE = ["framework", "experiment", "case", "metric", "epoch"]
COMPARED_METRICS = ("time", "memory", "rate")


def load(summaries: list[Path]) -> pd.DataFrame:
    frames = []
    for path in summaries:
        frame = pd.read_csv(path)
        # summaries from before there were two frameworks are MXNet's
        frame["framework"] = frame.get("framework", pd.Series(dtype=str)).fillna(DOCUMENTS)
        frame = frame[frame["median"].notna() & frame["metric"].isin(COMPARED_METRICS)]
        frame = frame.drop_duplicates(subset=CASE)  # one row per case, whatever documents
        frames.append(frame.assign(machine=path.parent.name))
    return pd.concat(frames, ignore_index=True)


def speedups(table: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Baseline's median over each machine's (rates: the other way round), with the
    interval from the ends of the two medians' intervals."""
    base = table[table["machine"] == baseline].set_index(CASE, drop=False)
    rows = []
    for row in table.to_dict("records"):
        key = tuple(row[c] for c in CASE)
        if key not in base.index:
            rows.append({**row, "speedup": None, "speedup_low": None, "speedup_high": None})
            continue
        b = base.loc[[key]].iloc[0]
        if row["metric"] == "rate":  # higher is better
            s, lo, hi = (row["median"] / b["median"], row["ci_low"] / b["ci_high"],
                         row["ci_high"] / b["ci_low"])
        else:  # times and memory: lower is better
            s, lo, hi = (b["median"] / row["median"], b["ci_low"] / row["ci_high"],
                         b["ci_high"] / row["ci_low"])
        rows.append({**row, "speedup": s, "speedup_low": lo, "speedup_high": hi})
    columns = CASE + ["unit", "devices", "label", "machine", "count", "median", "ci_low",
                      "ci_high", "speedup", "speedup_low", "speedup_high"]
    return pd.DataFrame(rows)[columns]


def plot(table: pd.DataFrame, baseline: str, out: Path) -> None:
    others = table[(table["machine"] != baseline) & table["speedup"].notna()
                   & table["epoch"].isna()]
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.22 * max(len(others), 1)))
    if others.empty:
        ax.axis("off")
        ax.text(0.5, 0.5, "no case measured on both the baseline and another machine",
                ha="center")
    else:
        labels = [f"{r.experiment}/{r.case} ({r.machine})" for r in others.itertuples()]
        y = range(len(others))
        ax.barh(y, others["speedup"], xerr=[others["speedup"] - others["speedup_low"],
                                             others["speedup_high"] - others["speedup"]],
                color="#1f77b4", capsize=2)
        ax.axvline(1.0, color="black", lw=0.8)
        ax.set_xscale("log")
        ax.set_yticks(list(y), labels, fontsize=7)
        ax.set_xlabel(f"speed-up against {baseline} (>1: faster than the baseline)")
    fig.tight_layout()
    fig.savefig(out, metadata={"Date": None})
    plt.close(fig)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--summaries", type=Path, nargs="+", required=True,
                   help="results/<machine>/summary.csv of every machine")
    p.add_argument("--verdicts", type=Path, nargs="+", required=True)
    p.add_argument("--baseline", required=True, help="machine the speed-ups are against")
    p.add_argument("--table", type=Path, required=True)
    p.add_argument("--verdicts-table", type=Path, required=True)
    p.add_argument("--plot", type=Path, required=True)
    args = p.parse_args()
    machines = [s.parent.name for s in args.summaries]
    if args.baseline not in machines:
        p.error(f"baseline {args.baseline!r} is not among the machines: {', '.join(machines)}")
    table = speedups(load(args.summaries), args.baseline)
    table.to_csv(args.table, index=False)
    verdicts = pd.concat([pd.read_csv(v).assign(machine=v.parent.name) for v in args.verdicts])
    verdicts["framework"] = verdicts.get("framework", pd.Series(dtype=str)).fillna(DOCUMENTS)
    verdicts.pivot(index=["framework", "name", "claim"], columns="machine",
                   values="verdict").reset_index().to_csv(args.verdicts_table, index=False)
    args.plot.parent.mkdir(parents=True, exist_ok=True)
    plot(table, args.baseline, args.plot)
    print(f"compared {len(machines)} machines against {args.baseline}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
