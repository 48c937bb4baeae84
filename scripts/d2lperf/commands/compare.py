"""Compare machines: every measured case, a column per machine, speed-ups against a baseline.

Reads each machine's summary.csv and verdicts.csv (this machine's and those imported
under results/), writes comparison.csv (one row per case and machine: median, 95%
interval, speed-up against the baseline with its interval), verdicts_by_machine.csv,
machines_compared.csv (what tells the machines apart where a verdict differs: the CPU, its
cores and vector unit, the kernel its MXNet's OpenBLAS runs, the GPUs, the Python and
numpy) and a plot of the speed-ups.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from d2lperf import hostlock, steps  # noqa: E402
from d2lperf.claims import FAILS, HOLDS, NA, NOT_HERE, UNSURE  # noqa: E402
from d2lperf.frameworks import DOCUMENTS  # noqa: E402
from d2lperf.results import (  # noqa: E402
    SCHEMAS,
    RecordError,
    current_rows,
    machine_traits,
    read_machine,
)
from d2lperf.tables import TableError, check_summary_rows, read_table, summary_schema  # noqa: E402

plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "svg.hashsalt": "d2l-perf"})
CASE = ["framework", "section", "case", "metric", "epoch"]
COMPARED_METRICS = ("time", "memory", "rate")
# A verdict cell's states: "does not apply" (the claim is not about that machine) is one
# of its own, beside "not measured" (the section did not run there), never a failure.
STATES = (HOLDS, FAILS, UNSURE, NOT_HERE, NA)


def usable(path: Path, validator) -> str | None:
    """Why a machine's summary.csv cannot be compared (unreadable, or figures that mean
    nothing: d2lperf.tables.check_summary_rows), or None. One machine's bad table is
    skipped, named in the log, and never stops the comparison of the others."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            _, rows = current_rows(csv.DictReader(handle))
        check_summary_rows(rows, str(path), validator)
        for column in ("section", "case", "metric", "median", "ci_low", "ci_high"):
            if rows and column not in rows[0]:
                return f"{path}: missing column {column}"
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        return f"{path}: not a readable CSV ({error})"
    except TableError as error:
        return str(error)
    return None


def readable_verdicts(path: Path) -> str | None:
    try:
        frame = read_table(path)
    except (OSError, ValueError, pd.errors.ParserError) as error:
        return f"{path}: not a readable CSV ({error})"
    missing = [c for c in ("name", "claim", "verdict") if c not in frame]
    if missing:
        return f"{path}: missing column {missing[0]}"
    unknown = sorted(set(frame["verdict"].dropna()) - set(STATES))
    return f"{path}: verdict {unknown[0]!r} is not one of {', '.join(STATES)}" if unknown \
        else None


def load(summaries: list[Path]) -> pd.DataFrame:
    frames = []
    for path in summaries:
        frame = read_table(path)
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
        labels = [f"{r.section}/{r.case} ({r.machine})" for r in others.itertuples()]
        y = range(len(others))
        # an interval that does not hold its speed-up draws no bar past it (never negative)
        ax.barh(y, others["speedup"],
                xerr=[(others["speedup"] - others["speedup_low"]).clip(lower=0).fillna(0),
                      (others["speedup_high"] - others["speedup"]).clip(lower=0).fillna(0)],
                color="#1f77b4", capsize=2)
        ax.axvline(1.0, color="black", lw=0.8)
        ax.set_xscale("log")
        ax.set_yticks(list(y), labels, fontsize=7)
        ax.set_xlabel(f"speed-up against {baseline} (>1: faster than the baseline)")
    fig.tight_layout()
    fig.savefig(out, metadata={"Date": None})
    plt.close(fig)


def verdicts_by_machine(paths: list[Path]) -> pd.DataFrame:
    """A row per framework and claim, a column per machine with its verdict. Rows are keyed
    by the claim's stable name, not its words: a claim reworded since an older archive was
    made stays one row, in the wording of the first machine that has it (this machine's,
    listed first, so the current code's)."""
    verdicts = pd.concat([read_table(v).assign(machine=v.parent.name) for v in paths])
    verdicts["framework"] = verdicts.get("framework", pd.Series(dtype=str)).fillna(DOCUMENTS)
    verdicts = verdicts.drop_duplicates(subset=["framework", "name", "machine"])
    key = ["framework", "name"]
    wording = verdicts.drop_duplicates(subset=key)[[*key, "claim"]]
    table = verdicts.pivot(index=key, columns="machine", values="verdict").reset_index()
    table = wording.merge(table, on=key)
    return table.reindex(columns=[*key, "claim", *dict.fromkeys(p.parent.name for p in paths)])


def software_traits(record: dict) -> dict[str, str]:
    """The Python and numpy machine_info ran with (the first framework's environment:
    MXNet's numpy follows its Python, envs/mxnet.lock.txt); "" where the record does not
    say."""
    software = record.get("software") or {}
    return {"python": software.get("python") or "", "numpy": software.get("numpy") or ""}


def machine_facts(paths: list[Path]) -> pd.DataFrame:
    """A row per machine (its folder's name): what can make a verdict differ between
    machines. A machine.json that cannot be read leaves its facts empty."""
    rows = []
    for path in paths:
        try:
            record = read_machine(path)
        except (OSError, RecordError):
            record = {}
        rows.append({"machine": path.parent.name, **machine_traits(record),
                     **software_traits(record)})
    # the traits' names from machine_traits itself, so the table keeps a trait added there
    return pd.DataFrame(rows, columns=["machine", *machine_traits({}), *software_traits({})])


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--summaries", type=Path, nargs="+", required=True,
                   help="results/<machine>/summary.csv of every machine")
    p.add_argument("--verdicts", type=Path, nargs="+", required=True)
    p.add_argument("--baseline", required=True, help="machine the speed-ups are against")
    p.add_argument("--table", type=Path, required=True)
    p.add_argument("--verdicts-table", type=Path, required=True)
    p.add_argument("--plot", type=Path, required=True)
    p.add_argument("--machines", type=Path, nargs="*", default=[],
                   help="results/<machine>/machine.json of every machine")
    p.add_argument("--machines-table", type=Path,
                   help="machines_compared.csv: what tells the machines apart")
    args = p.parse_args(argv)
    hostlock.share("compare")  # never beside a timing of any run
    machines = [s.parent.name for s in args.summaries]
    if args.baseline not in machines:
        p.error(f"baseline {args.baseline!r} is not among the machines: {', '.join(machines)}")
    validator = summary_schema(SCHEMAS)
    kept = []
    for summary, verdicts_path in zip(args.summaries, args.verdicts):
        why = usable(summary, validator) or readable_verdicts(verdicts_path)
        baseline = summary.parent.name == args.baseline  # the speed-ups need it
        if why is None or baseline:
            kept.append((summary, verdicts_path))
        if why is not None:
            what = "compared all the same, as the baseline" if baseline else "skipped"
            print(f"machine {summary.parent.name} {what}: {why}", file=sys.stderr)
    table = speedups(load([s for s, _ in kept]), args.baseline)
    with steps.writing(args.table):
        table.to_csv(args.table, index=False)
    with steps.writing(args.verdicts_table):
        verdicts_by_machine([v for _, v in kept]).to_csv(args.verdicts_table, index=False)
    if args.machines_table:
        compared = {s.parent.name for s, _ in kept}
        with steps.writing(args.machines_table):
            machine_facts([m for m in args.machines if m.parent.name in compared]).to_csv(
                args.machines_table, index=False)
    with steps.writing(args.plot):
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        plot(table, args.baseline, args.plot)
    print(f"compared {len(machines)} machines against {args.baseline}")
    return 0

