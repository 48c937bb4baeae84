"""Plots of one machine's results (SVG), drawn from summary.csv and the raw samples.

Timing plots show, per case, the document's figure and each framework's median here
(interquartile range as whiskers, every raw sample as a dot); training plots show test
accuracy and epoch time per epoch, a line per device count and framework, the
document's dashed. Cases are named by their human labels (the documents' from
summary.csv, the others' from each section's labels.csv). A section that did not run gets a
plot that says so (the report shows a line instead).
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from d2lperf import hostlock, scaling, steps, workloads  # noqa: E402
from d2lperf.frameworks import DOCUMENTS, LABELS, REGISTRY  # noqa: E402
from d2lperf.labels import Labels  # noqa: E402
from d2lperf.sections import SECTIONS  # noqa: E402
from d2lperf.sections import tables as section_tables  # noqa: E402
from d2lperf.tables import read_table  # noqa: E402

plt.rcParams.update({"svg.fonttype": "none", "font.size": 9, "figure.dpi": 96})
# An SVG's date and id seeds change every render; pin them so unchanged data
# gives byte-identical plots (and archives that do not churn).
plt.rcParams["svg.hashsalt"] = "d2l-perf"
METADATA = {"Date": None}
DOCUMENT = "#9a9a9a"
COLOURS = {name: f.colour for name, f in REGISTRY.items()}  # as the report's overview
NAMES = LABELS
MARKERS = {name: f.marker for name, f in REGISTRY.items()}
NUMERIC = ("median", "q1", "q3", "document_value", "epoch")


def save(fig, out: Path) -> None:
    fig.tight_layout()
    fig.savefig(out, metadata=METADATA)
    plt.close(fig)


def nothing_to_show(out: Path, title: str, why: str) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 1.0))
    ax.axis("off")
    ax.text(0.5, 0.5, f"{title}\n{why}", ha="center", va="center", wrap=True)
    save(fig, out)


def frameworks_of(frame: pd.DataFrame) -> list[str]:
    found = set(frame["framework"].dropna()) if "framework" in frame else set()
    return [f for f in NAMES if f in found] + sorted(found - set(NAMES)) or [DOCUMENTS]


def label_of(row: pd.Series, labels: Labels, width: int = 32) -> str:
    """A case's human label, wrapped for a tick."""
    text = row.get("label")
    if not isinstance(text, str) or not text:
        epoch = row.get("epoch")
        text = labels(row["section"], row["case"], row["metric"],
                      None if pd.isna(epoch) else epoch) or row["case"]
    return "\n".join(textwrap.wrap(text, width)) or row["case"]


# A bar's thickness, the room between cases and the least room a case takes (its label
# wraps to two lines), in inches: a case has a bar only for what measured it (the
# document, each framework), so a plot of cases each measured by one framework (the
# ceilings: a framework's own kernels) is no taller than its bars.
BAR, GAP, LEAST = 0.14, 0.12, 0.26


def timing_bars(summary: pd.DataFrame, samples: pd.DataFrame, title: str, out: Path,
                labels: Labels, unit: str = "seconds") -> None:
    """Per case: the document's figure (its first printed one where two documents
    printed it) and each framework's median with IQR whiskers and raw samples, a bar
    each for those that have one."""
    frameworks = frameworks_of(summary)
    cases = summary.dropna(subset=["median"]).drop_duplicates(subset=["case", "metric"])
    documented = summary.dropna(subset=["document_value"]).drop_duplicates(subset=["case"])
    order = list(dict.fromkeys([*documented["case"], *cases["case"]]))
    if cases.empty:
        nothing_to_show(out, title, "no measurements")
        return
    document = dict(zip(documented["case"], documented["document_value"]))
    first = {c: summary[summary["case"] == c].iloc[0] for c in order}
    measured = {c: [(f, mine.iloc[0]) for f in frameworks
                    if not (mine := summary[(summary["case"] == c) & (summary["framework"] == f)
                                            ].dropna(subset=["median"])).empty]
                for c in order}
    blocks = [max(BAR * ((c in document) + len(measured[c])), LEAST) + GAP for c in order]
    fig, ax = plt.subplots(figsize=(6.4, 0.7 + sum(blocks)))
    seen: set[str] = set()

    def legend(name: str) -> str | None:
        if name in seen:
            return None
        seen.add(name)
        return name

    top, ticks = sum(blocks), []
    for case, block in zip(order, blocks):
        middle = top - block / 2
        ticks.append(middle)
        top -= block
        bars = ([(None, None)] if case in document else []) + measured[case]
        slots = [middle + BAR * ((len(bars) - 1) / 2 - k) for k in range(len(bars))]
        for slot, (framework, row) in zip(slots, bars):
            if framework is None:
                ax.barh(slot, document[case], height=BAR, color=DOCUMENT,
                        label=legend("document (2019)"))
                continue
            ax.barh(slot, row["median"], height=BAR, color=COLOURS.get(framework),
                    xerr=[[row["median"] - row["q1"]], [row["q3"] - row["median"]]],
                    capsize=2, label=legend(f"{NAMES.get(framework, framework)} here"))
            values = samples[(samples["case"] == case) & (samples["metric"] == row["metric"])
                             & (samples["framework"] == framework)]["value"]
            ax.plot(values, [slot] * len(values), "|", ms=5, color="black", alpha=0.7,
                    label=legend("raw samples"))
    ax.set_ylim(0, sum(blocks))
    values = [v for v in [*summary["median"].dropna(), *document.values()] if v > 0]
    if values and max(values) / min(values) > 100:
        ax.set_xscale("log")  # queueing (ms) beside waiting (s): both must be readable
    ax.set_yticks(ticks, [label_of(first[c], labels) for c in order], fontsize=8)
    ax.set_xlabel(unit)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="best", fontsize=7)
    save(fig, out)


def training_curves(summary: pd.DataFrame, title: str, out: Path) -> None:
    """Test accuracy and epoch time per epoch, per case and framework; the documents'
    dashed."""
    per_epoch = summary.dropna(subset=["epoch"])
    if per_epoch.dropna(subset=["median"]).empty:
        nothing_to_show(out, title, "no epochs measured")
        return
    fig, axes = plt.subplots(1, 2, figsize=(7.2, 2.8))
    for ax, metric, label in ((axes[0], "accuracy", "test accuracy"),
                              (axes[1], "time", "epoch time (s)")):
        rows = per_epoch[per_epoch["metric"] == metric].sort_values("epoch")
        for n, (case, group) in enumerate(rows.groupby("case", sort=False)):
            colour = f"C{n}"
            devices = " ".join(str(case).split("_")[-2:])
            for framework, mine in group.dropna(subset=["median"]).groupby("framework"):
                mine = mine.drop_duplicates(subset=["epoch"])
                ax.plot(mine["epoch"], mine["median"], marker=MARKERS.get(framework, "o"),
                        color=colour, label=f"{devices}, {NAMES.get(framework, framework)}")
            theirs = group.dropna(subset=["document_value"]).drop_duplicates(subset=["epoch"])
            if not theirs.empty:
                ax.plot(theirs["epoch"], theirs["document_value"], "--", color=colour,
                        alpha=0.6, label=f"{devices}, document")
        ax.set_xlabel("epoch")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    save(fig, out)


def batch_number(cases: pd.Series) -> pd.Series:
    return cases.str.rsplit("_", n=1).str[-1].astype(int)


def memory_curves(summary: pd.DataFrame, title: str, out: Path) -> None:
    """Elapsed time at each reported batch, per mode and framework; the memory
    increases, per case and framework, beside the document's."""
    if summary.dropna(subset=["median"]).empty:
        nothing_to_show(out, title, "no measurements")
        return
    frameworks = frameworks_of(summary)
    fig, (left, right) = plt.subplots(1, 2, figsize=(7.2, 2.8))
    times = summary[summary["metric"] == "time"]
    for n, mode in enumerate(("sync", "async")):
        rows = times[times["case"].str.match(rf"{mode}_batch_\d+$")]
        for framework, mine in rows.dropna(subset=["median"]).groupby("framework"):
            mine = mine.drop_duplicates(subset=["case"])
            left.plot(batch_number(mine["case"]), mine["median"],
                      marker=MARKERS.get(framework, "o"), color=f"C{n}",
                      label=f"{mode}, {NAMES.get(framework, framework)}")
        theirs = rows.dropna(subset=["document_value"])
        if not theirs.empty:
            left.plot(batch_number(theirs["case"]), theirs["document_value"], "--",
                      color=f"C{n}", alpha=0.6, label=f"{mode}, document")
    left.set_xlabel("batch")
    left.set_ylabel("elapsed s (async: queued)")
    left.legend(fontsize=7)

    memory = summary[summary["metric"] == "memory"]
    cases = list(dict.fromkeys(memory["case"]))
    width = 0.8 / (len(frameworks) + 1)
    document = memory.dropna(subset=["document_value"]).drop_duplicates(subset=["case"])
    document = dict(zip(document["case"], document["document_value"]))
    right.bar([i - 0.4 + width / 2 for i, c in enumerate(cases) if c in document],
              [document[c] for c in cases if c in document], width=width, color=DOCUMENT,
              label="document")
    for k, framework in enumerate(frameworks, start=1):
        mine = memory[memory["framework"] == framework].dropna(subset=["median"])
        mine = mine.drop_duplicates(subset=["case"]).set_index("case")
        at = [i for i, c in enumerate(cases) if c in mine.index]
        rows = mine.loc[[cases[i] for i in at]]
        right.bar([i - 0.4 + width * (k + 0.5) for i in at], rows["median"], width=width,
                  color=COLOURS.get(framework), capsize=2,
                  yerr=[rows["median"] - rows["q1"], rows["q3"] - rows["median"]],
                  label=f"{NAMES.get(framework, framework)} here")
    right.set_xticks(range(len(cases)), [c.replace("_memory_increase", "").replace("_", " ")
                                         for c in cases], fontsize=7)
    right.set_ylabel("memory increase (MB)")
    right.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    save(fig, out)


def scaling_curves(summary: pd.DataFrame, title: str, out: Path) -> None:
    """Images/s against devices, a line per model (solid, dashed) and framework (its
    colour) with its ideal dotted (the smallest count's rate times the devices); beside
    it the scaling efficiency with its interval, 1 being perfect."""
    rates = summary[summary["metric"] == scaling.THROUGHPUT].dropna(subset=["median"])
    if rates.empty:
        nothing_to_show(out, title, "no measurements")
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(7.2, 2.8))
    efficiency = summary[summary["metric"] == scaling.EFFICIENCY].dropna(subset=["median"])
    efficiency = efficiency.assign(**{c: pd.to_numeric(efficiency[c], errors="coerce")
                                      for c in ("ci_low", "ci_high")})
    def parts(frame: pd.DataFrame) -> pd.DataFrame:  # each row's model and device count
        model, n = zip(*frame["case"].map(workloads.training_case)) if len(frame) else ((), ())
        return frame.assign(model=model, n=n)

    rates, efficiency = parts(rates), parts(efficiency)
    models = list(dict.fromkeys(rates["model"]))
    series = [(f, k, m) for f in frameworks_of(rates) for k, m in enumerate(models)]
    for index, (framework, k, model) in enumerate(series):
        colour, marker = COLOURS.get(framework), MARKERS.get(framework, "o")
        dodge = 2 ** (0.05 * (index - (len(series) - 1) / 2))  # intervals side by side
        mine = rates[(rates["framework"] == framework) & (rates["model"] == model)]
        if mine.empty:
            continue
        mine = mine.sort_values("n")
        name = f"{model}, {NAMES.get(framework, framework)}"
        left.plot(mine["n"], mine["median"], ("-", "--")[k % 2], marker=marker,
                  color=colour, label=name)
        left.plot(mine["n"], mine["median"].iloc[0] * mine["n"] / mine["n"].iloc[0], ":",
                  color=colour, alpha=0.6)
        eff = efficiency[(efficiency["framework"] == framework) & (efficiency["model"] == model)]
        if not eff.empty:
            right.errorbar(eff["n"] * dodge, eff["median"],
                           yerr=[eff["median"] - eff["ci_low"], eff["ci_high"] - eff["median"]],
                           capsize=2, marker=marker, color=colour, linestyle="none",
                           label=name, alpha=1.0 if k % 2 == 0 else 0.6)
    counts = sorted(set(rates["n"]))
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(counts, [str(n) for n in counts])
        ax.minorticks_off()
        ax.set_xlim(counts[0] / 1.4, counts[-1] * 1.4)
    left.set_yscale("log")  # LeNet's thousands and ResNet-18's tens of images/s
    left.set_xlabel("devices (dotted: ideal)")
    left.set_ylabel("images/s (log scale)")
    left.legend(fontsize=7)
    right.axhline(1.0, color=DOCUMENT, linestyle="--", linewidth=1)
    right.set_xlabel("devices")
    right.set_ylabel("scaling efficiency (95% interval)")
    if not efficiency.empty:
        right.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    save(fig, out)


def plot(section: str, summary: pd.DataFrame, samples: pd.DataFrame, out: Path,
         labels: Labels) -> None:
    """The section's plot, of the kind and with the title the table of sections gives it
    (a section not in the table: a timing plot under its name)."""
    entry = SECTIONS.get(section)
    kind, title = (entry.plot, entry.plot_title) if entry else ("timing", section)
    if kind == "memory":
        memory_curves(summary, title, out)
    elif kind == "training":
        training_curves(summary, title, out)
    elif kind == "scaling":
        scaling_curves(summary, title, out)
    elif kind == "rates":
        timing_bars(summary[summary["metric"] == "rate"], samples[samples["metric"] == "rate"],
                    title, out, labels, unit="rate")
    else:
        off = entry.off_the_plot if entry else ()
        timing = summary[(summary["metric"] == "time") & ~summary["case"].isin(off)]
        timing_bars(timing, samples, title, out, labels)


def with_framework(frame: pd.DataFrame) -> pd.DataFrame:
    """Tables written before there were two frameworks are the documents' framework's."""
    if "framework" not in frame:
        return frame.assign(framework=DOCUMENTS)
    return frame.assign(framework=frame["framework"].replace("", DOCUMENTS).fillna(DOCUMENTS))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--summary", required=True, type=Path)
    p.add_argument("--samples", required=True, type=Path, nargs="+")
    p.add_argument("--labels", type=Path, nargs="+", default=section_tables("labels"),
                   help="labels of the cases the documents did not print (default: each "
                        "section's labels.csv)")
    p.add_argument("--out", required=True, type=Path, nargs="+",
                   help="<section>.svg for each plot to draw")
    args = p.parse_args(argv)
    hostlock.share("plots")  # never beside a timing of any run
    summary = with_framework(read_table(args.summary, keep_default_na=False,
                                        na_values={c: [""] for c in NUMERIC}))
    samples = with_framework(pd.concat([read_table(s, keep_default_na=False)
                                        for s in args.samples]))
    labels = Labels.read(*args.labels)
    for out in args.out:
        section = out.stem
        with steps.writing(out):
            out.parent.mkdir(parents=True, exist_ok=True)
            plot(section, summary[summary["section"] == section],
                 samples[samples["section"] == section], out, labels)
    return 0

