"""The sections: each with its runs' status lines, its claims, its figures and outputs
beside the documents', its plot, and for a section that did not run, why and the command
that runs it."""

from __future__ import annotations

import argparse
import math
import re
import statistics

from d2lperf import stages, steadiness
from d2lperf.errors import NEEDS_GPU_CODE, NEEDS_GPUS
from d2lperf.frameworks import DOCUMENTS
from d2lperf.report.provenance_view import measured_when
from d2lperf.report.values import FRAMEWORKS, Row, svg_data_uri
from d2lperf.results import section_folder

RAN = ("ok", "failed")  # statuses of a section that did something worth showing


def run_key(run: Row) -> tuple[str, str]:
    """A run record's (framework, section): older records name no framework, the
    documents' one."""
    return run.get("framework") or DOCUMENTS, run["section"]


def how_to_run(section: str, frameworks: list[str], needs: str | None) -> Row:
    """The command that runs a section that did not run here, and what it does, by what
    its run record says it needs (``needs``, d2lperf.errors.NEEDS_*)."""
    rules = " ".join(section_folder(section, f) for f in frameworks)
    if needs in (NEEDS_GPUS, NEEDS_GPU_CODE):
        elsewhere = "a GPU this build has code for" if needs == NEEDS_GPU_CODE else "the GPUs"
        return {"command": f"snakemake --cores all --forcerun {rules} "
                           "--config gpu_sections_on_cpu=True",
                "note": "the same code on CPU contexts; or the workflow as it is on a machine "
                        f"with {elsewhere}"}
    return {"command": f"snakemake --cores all --forcerun {rules}", "note": ""}


def not_run_lines(section: str, mine: dict[str, Row], statuses: dict[str, str]) -> list[Row]:
    """The frameworks that did not run a section, one line per reason."""
    reasons: dict[tuple[str, str, str | None], list[str]] = {}
    for framework, status in statuses.items():
        if status not in RAN:
            why = mine[framework].get("reason") or "did not run"
            needs = mine[framework].get("needs")
            reasons.setdefault((status, why, needs), []).append(framework)
    return [{"frameworks": [FRAMEWORKS.get(f, f) for f in found], "status": status,
             "reason": why, **how_to_run(section, found, needs)}
            for (status, why, needs), found in reasons.items()]


def kept_words(previous: Row | None) -> str:
    """Where a failed run's record says its section's last good run is kept (beside it,
    by d2lperf record-failure), and when that run was: the report shows the failure,
    and says the earlier figures exist rather than showing them as this run's."""
    if not previous:
        return ""
    return (f"its earlier results, of {measured_when([previous])} "
            f"({previous['samples']} samples), are kept at {previous['path']} and not shown "
            "here")


def listed(words: list[str]) -> str:
    """``4``, ``4 and 8``, ``2, 4 and 8``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def runs_not_run_words(run: Row | None) -> list[str]:
    """The runs of a section that did not fit this machine (``runs_not_run`` in its run
    record), once each: the device counts that did not run, and why in one reason
    (``the 4- and 8-device runs not run: need 4 and 8 devices, this machine has 2
    cores``) rather than a line per model and count; a run without a device count by its
    case's name."""
    found = ((run or {}).get("notes") or {}).get("runs_not_run") or {}
    by_reason: dict[str, set[int]] = {}
    others: dict[str, None] = {}
    for case, why in found.items():
        devices, reason = why.get("devices"), str(why.get("reason") or "no reason given")
        needs = re.fullmatch(r"needs (\d+) (.+)", reason, re.S)
        if isinstance(devices, int) and needs and int(needs.group(1)) == devices:
            by_reason.setdefault(needs.group(2), set()).add(devices)
        elif isinstance(devices, int):
            others[f"the {devices}-device run not run: {reason}"] = None
        else:
            others[f"{case} not run: {reason}"] = None
    words = []
    for rest, counts in by_reason.items():
        several = len(counts) > 1 or sum(
            1 for why in found.values() if why.get("devices") in counts) > 1
        counts = sorted(counts)
        which = listed([f"{n}-" for n in counts[:-1]] + [f"{counts[-1]}-device"])
        words.append(f"the {which} run{'s' if several else ''} not run: "
                     f"need{'' if several else 's'} {listed([str(n) for n in counts])} {rest}")
    return words + list(others)


def run_line(run: Row | None, shared_not_run: bool = False) -> Row:
    """One framework's status line of a section, in plain words: how it was measured and
    whether the machine was steady (``text``); the method in full, for the section's
    folded "How this was measured" (``method``). The runs that did not fit the machine
    are named in it, unless every framework's are the same (``shared_not_run``): the
    section names those once."""
    if run is None:
        return {"status": "missing", "text": "did not run", "flags": [], "method": ""}
    status = run.get("status", "missing")
    if status != "ok":
        return {"status": status, "text": "; ".join(filter(None, [
            run.get("reason"), kept_words(run.get("previous"))])), "flags": [], "method": ""}
    params = run.get("parameters") or {}
    wall = run.get("wall_seconds")
    plain, method = [f"{wall:.0f} s" if isinstance(wall, int | float) else "– s"], []
    if params.get("repeats") is not None:
        asked = params.get("processes", 1)
        ran = len(run.get("processes") or []) or asked  # the stages may run more, or fewer
        # a section without processes repeats in its own way (the memory twins: a fresh
        # process per run): its repeats, not one process
        plain.append(f"measured in {ran} fresh process{'es' if ran != 1 else ''}"
                     if "processes" in params else f"{params['repeats']} repeats")
        planned = f" ({asked} planned first)" if ran != asked else ""
        method.append(f"{params['repeats']} balanced rounds × {ran} process(es){planned} "
                      f"after {params.get('warmup', 0)} warm-up")
    threads = (run.get("threads") or {}).get("OMP_NUM_THREADS")
    if threads:
        plain.append(f"{threads} thread{'s' if str(threads) != '1' else ''}")
    if not shared_not_run:
        plain += runs_not_run_words(run)
    if run.get("stages"):  # how many stages of processes it took, and why it stopped
        method.append(stages.summary_text(run["stages"]))
    steady = run.get("steadiness")
    flags = []
    if steady:
        method.append(f"CPU probe {steady['probe_before_s']:.3f} → "
                      f"{steady['probe_after_s']:.3f} s ({100 * steady['probe_moved']:+.0f}%)"
                      + (f", {100 * steady['steal_share']:.1f}% of the CPU time stolen"
                         if steady.get("steal_share") is not None else ""))
        flags = steadiness.recorded_flags(steady)
    facts = ", ".join(plain)
    state = (steadiness_words(run.get("stages") or {}, flags, threads)
             if steady or run.get("stages") else "")
    return {"status": status, "text": "; ".join(filter(None, [facts, state])), "facts": facts,
            "steadiness": state, "flags": flags, "method": "; ".join(method)}


def steadiness_words(staging: Row, flags: list[str], threads: object = None) -> str:
    """Whether the machine was steady while a section was measured, in words: the stages
    of processes measured while other programs kept the CPU busy, and the CPU probe before
    and after the section (``flags``). Busy throughout, with more timing ``threads`` than
    cores left free, it names the thread count: each threaded step then waits for the
    thread that shares a core, which moves ratios, not only times."""
    history = staging.get("history") or []
    busy = [h for h in history if h.get("busy")]
    if busy and staging.get("all_busy"):
        return ("the machine was busy throughout" + crowded_threads_words(busy, threads)
                + " (its figures are kept: read them with care)")
    if busy:
        return (f"the machine was busy while {len(busy)} of its {len(history)} batches of "
                "processes ran (those were set aside)")
    if flags:
        return "the machine was not steady: " + "; ".join(flags)
    return "the machine was steady"


def crowded_threads_words(busy: list[Row], threads: object) -> str:
    """Where other programs left fewer cores free than the timing had threads (the
    busy stages' median load): how many, and the thread count that fits what was free."""
    loads = [h["load"] for h in busy if (h.get("load") or {}).get("others_cores") is not None]
    try:
        count = int(str(threads))
    except ValueError:
        return ""
    if not loads or count < 2:
        return ""
    others = statistics.median(load["others_cores"] for load in loads)
    cores = loads[0].get("cores") or count
    free = max(1, math.floor(cores - others + 0.25))  # a core a quarter used is still free
    if free >= count:
        return ""
    return (f": other programs kept {others:.2f} of its {cores} cores busy, so its {count} "
            f"timing threads shared a core with them, and each threaded step waited for the "
            f"thread that did (threads: {free} fits what was free)")


def sections_view(args: argparse.Namespace, runs: dict[tuple[str, str], Row],
                  frameworks: list[str], figures: list[Row], outputs: list[Row],
                  claims: list[Row], titles: dict[str, Row]) -> list[Row]:
    """Each section that some framework has, in the table of sections' order (then any
    the table does not know): its runs, its claims, its figures and outputs with a cell
    only for the frameworks that have it, and its plot where it ran."""
    plots = {p.stem: p for p in args.plots}
    order = list(titles) + sorted({e for _, e in runs} - set(titles))
    sections = []
    for section in order:
        # the frameworks that have this section (the ceilings are the machine's, once)
        here = [i for i, f in enumerate(frameworks) if (f, section) in runs]
        if not here:
            continue
        mine = {frameworks[i]: runs[(frameworks[i], section)] for i in here}
        entry = section_entry(section, mine, titles)
        rows = [{**r, "cells": [r["cells"][i] for i in here]} for r in figures
                if r["section"] == section]
        entry.update(
            claims=[c for c in claims if c["section"] == section],
            figures=[r for r in rows if not r["extra"]],
            extras=[r for r in rows if r["extra"]],
            **outputs_entry([{**o, "cells": [o["cells"][i] for i in here]} for o in outputs
                             if o["section"] == section], list(mine)),
            plot=svg_data_uri(plots[section]) if entry["ran"] and section in plots else None,
        )
        sections.append(entry)
    return sections


def section_entry(section: str, mine: dict[str, Row], titles: dict[str, Row]) -> Row:
    """A section's title and its runs, by the frameworks that have it (``mine``): which
    ran, which did not and why, which failed."""
    statuses = {f: (r or {}).get("status", "missing") for f, r in mine.items()}
    # the runs that did not fit the machine, said once where every framework that ran
    # says the same
    ran = [f for f in mine if statuses[f] == "ok"]
    not_fitting = {tuple(runs_not_run_words(mine[f])) for f in ran}
    shared = list(next(iter(not_fitting))) if len(not_fitting) == 1 and len(ran) > 1 else []
    runs = [{"framework": FRAMEWORKS.get(f, f), "run": mine[f],
             **run_line(mine[f], shared_not_run=bool(shared))} for f in mine]
    # every framework ran, the machine the same for each (steady, say): one line for all
    states = {r["steadiness"] for r in runs if r["status"] == "ok" and not r["flags"]}
    together = len(ran) == len(runs) > 1 and len(states) == 1 and "" not in states
    return {
        "section": section,
        "title": titles.get(section, {"title": section, "heading": "", "document": ""}),
        "ran": any(s in RAN for s in statuses.values()),
        "frameworks": [FRAMEWORKS.get(f, f) for f in mine],
        "runs": runs,
        "steadiness": next(iter(states)) if together else None,
        "runs_not_run": {"frameworks": [FRAMEWORKS.get(f, f) for f in ran], "words": shared}
                        if shared else None,
        "not_run": not_run_lines(section, mine, statuses),
        "failed": [{"framework": FRAMEWORKS.get(f, f), "run": mine[f]}
                   for f in mine if statuses[f] == "failed"],
    }


def outputs_entry(section_outputs: list[Row], frameworks: list[str]) -> Row:
    """A section's printed outputs, and per framework how many match the documents' out of
    those compared."""
    def counted(k: int, matches: tuple[str, ...]) -> int:
        return sum(1 for o in section_outputs
                   if o["cells"][k] and o["cells"][k].get("match") in matches)

    return {"outputs": section_outputs,
            "outputs_matching": [{"framework": FRAMEWORKS.get(f, f),
                                  "matching": counted(k, ("yes",)),
                                  "compared": counted(k, ("yes", "no"))}
                                 for k, f in enumerate(frameworks)]}
