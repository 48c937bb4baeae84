"""The first screen's claims and checks: each claim once with a verdict per framework in
words, the documents' own ratio beside it, how many decisive verdicts chance could have
decided, and the measurement check one line per kind."""

from __future__ import annotations

import math
from typing import Any

from d2lperf import checks, claims, steadiness, verdicts
from d2lperf.claims import Claim
from d2lperf.frameworks import DOCUMENTS
from d2lperf.report.values import (
    FRAMEWORKS,
    TOO_WIDE,
    Row,
    number,
    too_few_words,
    too_wide,
)

CHECK_GROUPS = [  # the first screen's lines of the measurement check: (title, names)
    ("Identical work (A/A)", tuple(name for name, *_ in checks.AA_PAIRS)),
    ("First in its process", ("first_position_effect",)),
    ("Machine steadiness", ("machine_steadiness",)),
]
# Every verdict a row of verdicts.csv may give, worst first (d2lperf.verdicts words them):
# the site colours the same words (d2lperf site).
VERDICT_RANK = {verdicts.FAILS: 0, verdicts.UNSURE: 1, verdicts.HOLDS: 2, verdicts.NOT_HERE: 3,
                verdicts.NA: 3}
DECISIVE = (verdicts.HOLDS, verdicts.FAILS)
DOES_NOT_APPLY, NOT_MEASURED = verdicts.NOT_HERE, verdicts.NA
# Holm's correction over each framework's claims, every look of a staged section counted
# (d2lperf.verdicts.holm): the chance that any of one framework's decisive verdicts is
# chance's doing is at most this.
WRONG_BY_CHANCE = verdicts.HOLM_ALPHA


def judged_elsewhere(_measurements: Any) -> dict[str, Any]:
    """The check of a Claim the report makes only to word a verdict (an accuracy claim,
    the outputs claim, a claim it does not know): claims.judge and summarise judged it
    before, and verdicts.csv brings the verdict, so nothing here calls it."""
    raise NotImplementedError("the report words this claim; summarise judges it")


def wording() -> dict[str, Claim]:
    """Every claim the report words, by name: the chapter's Claims as d2lperf.claims
    declares them, and the accuracy and outputs claims (which it lists as tuples, judged
    their own way) made Claims of the forms "accuracy" and "outputs", so that the same
    fields (``short``, ``form``, ``figures``, ``document``) word every claim."""
    table = {c.name: c for c in claims.CLAIMS}
    for name, section, cases, prefer, short in claims.ACCURACY_CLAIMS:
        table[name] = Claim(name, section, claims.ACCURACY_TEXT, judged_elsewhere,
                            document=prefer, short=short, form="accuracy",
                            figures=("+".join(cases), ""))
    name, short = claims.OUTPUTS
    table[name] = Claim(name, "all", short, judged_elsewhere, short=short, form="outputs")
    return table


def is_claim(verdict: Row) -> bool:
    """Whether a row of verdicts.csv is one of the chapter's claims the report lists (the
    accuracy and outputs claims among them), not a check of the measurement: the one
    rule, so that the site lists what the report does."""
    return verdict.get("kind") != "check"


def unknown(verdict: Row) -> Claim:
    """A verdict's claim the report has no words for: its own text, no ratio form."""
    return Claim(verdict["name"], verdict["section"], verdict["claim"], judged_elsewhere,
                 form="")


def short_name(claim: Claim) -> str:
    """A claim's name on the first screen: its short words, else its text."""
    return claim.short or claim.text


def effect_words(form: str, value: float | None, low: float | None, high: float | None,
                 effect: str | None = None, processes: int | None = None) -> str:
    """A claim's ratio in words, its unit on every number: '4.1× faster [3.6–4.6×]'; 'too
    few processes to tell (2 ran)' where the interval is too wide to say anything."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value <= 0:
        return ""
    if form in ("speedup", "share", "overlap", "more") and too_wide(low, high):
        return too_few_words(processes)
    interval = (low is not None and high is not None and low > 0 and high > 0
                and not (math.isnan(low) or math.isnan(high)))
    if form == "speedup":
        if effect == "no meaningful difference":
            return f"no meaningful difference (×{number(value)})"
        if value <= 1:
            span = f" [{number(1 / high)}–{number(1 / low)}×]" if interval else ""
            return f"{number(1 / value)}× faster{span}"
        span = f" [{number(low)}–{number(high)}×]" if interval else ""
        return f"{number(value)}× slower{span}"
    span = f" [{100 * low:.0f}–{100 * high:.0f}%]" if interval else ""
    if form == "share":
        if value >= 2:  # a front end that waits: queueing takes longer than the wait
            span = f" [{number(low)}–{number(high)}×]" if interval else ""
            return f"queueing {number(value)}× the wait{span}"
        return f"queued in {100 * value:.0f}% of the wait{span}"
    if form == "overlap":
        return f"together {100 * value:.0f}% of the sum{span}"
    if form == "more":
        span = f" [{number(low)}–{number(high)}×]" if interval else ""
        return f"{number(value)}× the memory{span}"
    return ""


def document_ratio(claim: Claim, summary: list[Row]) -> tuple[float, str] | None:
    """The documents' own ratio for a claim, from the figures the claim names in its
    section (or the section whose figures it shares, ``figures_section``): the figure
    without an epoch first (a mean of epochs), then the first variant."""
    if not claim.figures[0]:
        return None
    figures: dict[str, tuple[float, str]] = {}
    section = claim.figures_section or claim.section
    for r in summary:
        if (r.get("document_value") is None or r["metric"] not in ("time", "memory")
                or r.get("section") != section):
            continue
        rank = (r.get("epoch") is not None, r.get("variant") or "")
        found = figures.get(r["case"])
        if found is None or rank < found[2]:
            figures[r["case"]] = (r["document_value"], r.get("variant") or "", rank)
    parts = [[figures.get(c) for c in side.split("+")]
             for side in claim.figures]
    if any(f is None for side in parts for f in side):
        return None
    numerator, denominator = (sum(f[0] for f in side) for side in parts)
    variants = {f[1] for side in parts for f in side}
    return numerator / denominator, variants.pop() if len(variants) == 1 else ""


def device_words(case: str) -> str:
    """``lenet_2_devices`` -> ``2 devices``."""
    return " ".join(case.split("_")[-2:])


def last_documented(claim: Claim, rows: list[Row]) -> Row | None:
    """Of one case's accuracy rows, the document's figure after its last epoch (the
    claim's own document's where it names one)."""
    documented = [r for r in rows if r.get("document_value") is not None]
    if claim.document and any(r.get("document") == claim.document for r in documented):
        documented = [r for r in documented if r.get("document") == claim.document]
    return max(documented, key=lambda r: r["epoch"]) if documented else None


def case_accuracy_words(case: str, rows: list[Row], last: Row, framework: str) -> str | None:
    """One case's accuracy here at the document's last epoch, or how far it ran."""
    mine = [r for r in rows if (r.get("framework") or DOCUMENTS) == framework
            and r.get("median") is not None]
    at = [r for r in mine if r["epoch"] == last["epoch"]]
    if at:
        return f"{at[0]['median']:.2f} ({device_words(case)})"
    if mine:
        return (f"{device_words(case)}: ran {int(max(r['epoch'] for r in mine))} of "
                f"{int(last['epoch'])} epochs")
    return None


def accuracy_words(claim: Claim, framework: str | None, summary: list[Row]) -> str:
    """An accuracy claim in words: each case's test accuracy after the document's last
    epoch, with its device count (``framework`` None: the document's own figures)."""
    parts, epoch = [], None
    for case in filter(None, claim.figures[0].split("+")):
        rows = [r for r in summary if r["case"] == case and r["metric"] == "accuracy"
                and r.get("epoch") is not None]
        last = last_documented(claim, rows)
        if last is None:
            continue
        epoch = int(last["epoch"])
        words = (f"{last['document_printed']} ({device_words(case)})" if framework is None
                 else case_accuracy_words(case, rows, last, framework))
        if words:
            parts.append(words)
    if not parts:
        return ""
    ran = {p.split(": ", 1)[-1] for p in parts if ": ran " in p}
    if len(ran) == 1 and len(ran) == len({p.split(": ", 1)[-1] for p in parts}):
        return ran.pop()  # every case ran as far: say it once
    if "ran " in parts[0]:
        return ", ".join(parts)
    return f"test accuracy {', '.join(parts)} after epoch {epoch}"


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


def claim_rows(verdicts: list[Row], frameworks: list[str], claims_table: dict[str, Claim],
               summary: list[Row], case_words: dict[str, str],
               runs: dict[tuple[str, str], Row]) -> list[Row]:
    """Each claim once, with a verdict per framework and the document's own ratio."""
    rows: dict[str, Row] = {}
    for v in verdicts:
        if not is_claim(v):
            continue
        claim = claims_table.get(v["name"]) or unknown(v)
        row = rows.setdefault(v["name"], {"name": v["name"], "claim": v["claim"],
                                          "short": short_name(claim), "section": v["section"],
                                          "rule": v.get("rule"), "by": {}, "document": "",
                                          "applies": "", "rules": {}})
        framework = v["framework"] or DOCUMENTS
        row["rules"][FRAMEWORKS.get(framework, framework)] = v.get("rule")
        run = runs.get((framework, v["section"]))
        effect = effect_words(claim.form, v.get("ratio"), v.get("ratio_low"),
                              v.get("ratio_high"), v.get("effect"), processes_ran(run))
        if claim.form == "accuracy":
            effect = accuracy_words(claim, framework, summary)
            row["document"] = accuracy_words(claim, None, summary)
        elif claim.form == "outputs":
            effect = str(v.get("evidence") or "")
        shown = v["verdict"]
        if not effect and v["verdict"] == NOT_MEASURED:
            effect = not_run_words(run)
            # a section that failed is no claim that does not apply: say what happened
            shown = "failed" if run and run.get("status") == "failed" else shown
        if v["verdict"] == DOES_NOT_APPLY:  # the reason, then what was measured
            effect = f"{v['evidence']}; measured: {effect or v.get('finding') or '–'}"
        line, more = first_screen_words(v["verdict"], claim.form, effect)
        row["by"][framework] = {"verdict": shown, "effect": effect, "line": line, "more": more,
                                "evidence": evidence_words(v, case_words),
                                "finding": evidence_words({"evidence": v.get("finding")},
                                                          case_words),
                                "decisive": v["verdict"] in DECISIVE
                                and v.get("ratio_low") is not None}
        found = document_ratio(claim, summary) if claim.form != "accuracy" else None
        if found is not None:
            words = effect_words(claim.form, found[0], None, None)
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


def processes_ran(run: Row | None) -> int | None:
    """How many fresh processes measured a section (its stages may run more or fewer than
    planned first)."""
    if not run:
        return None
    return len(run.get("processes") or []) or (run.get("parameters") or {}).get("processes")


def first_screen_words(verdict: str, form: str, effect: str) -> tuple[str, str]:
    """A claim cell's words split for the first screen: a short line under the verdict and
    the longer rest, folded under it, so that every verdict of every claim fits one screen.
    A claim that does not apply here folds its reason and what was measured anyway; the
    outputs claim shows its count and folds what it left uncompared."""
    if verdict == DOES_NOT_APPLY:
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
            "per_framework": WRONG_BY_CHANCE, "too_wide": TOO_WIDE}


def percent(value: float) -> str:
    """A check's relative change, signed, to a tenth of a percent when it is small."""
    return f"{100 * value:+.0f}%" if abs(value) >= 0.1 else f"{100 * value:+.1f}%"


def check_text(name: str, mine: list[Row], runs: list[Row]) -> str:
    """A check's figures in short, from its numbers (the evidence column says it long)."""
    if str(mine[0].get("identical_work")) == "True":  # a bool, or its CSV text
        apart = [f"{100 * abs(v['ratio'] - 1):.0f}%" for v in mine if v.get("ratio") is not None]
        return f"{' and '.join(apart)} apart" if apart else str(mine[0]["evidence"])
    v = mine[0]
    if name == "first_position_effect" and v.get("ratio") is not None:
        return (f"the first case of a process takes {percent(v['ratio'] - 1)} time "
                f"[{percent(v['ratio_low'] - 1)}, {percent(v['ratio_high'] - 1)}]")
    steady = [r["steadiness"] for r in runs if r.get("steadiness")]
    if name == "machine_steadiness" and steady:
        moved = max((s["probe_moved"] for s in steady), key=abs)
        steal = max((s.get("steal_share") or 0 for s in steady), default=0)
        return (f"CPU probe moved at most {percent(moved)} within a section, "
                f"{100 * steal:.1f}% of CPU time stolen")
    return str(v["evidence"])


def machine_state(runs: list[Row]) -> str | None:
    """The machine's steadiness as a state, not a verdict: "steady", or "busy in 2 of 8
    sections" (those whose probe or steal was flagged, or with a stage of processes measured
    while other programs kept the CPU busy); None where no section measured it."""
    measured = [r for r in runs if r.get("steadiness")]
    if not measured:
        return None
    busy = sum(1 for r in measured if steadiness.recorded_flags(r["steadiness"])
               or any(h.get("busy") for h in (r.get("stages") or {}).get("history") or []))
    return f"busy in {busy} of {len(measured)} sections" if busy else "steady"


def check_rows(rows: list[Row]) -> list[Row]:
    """The checks in full, the machine's steadiness worded as a state ("steady", "busy")."""
    states = {verdicts.HOLDS: "steady", verdicts.FAILS: "busy"}
    return [{**v, "state": states.get(v["verdict"]) if v["name"] == "machine_steadiness"
             else None} for v in rows if v.get("kind") == "check"]


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
            own = [r for k, r in runs.items() if k[0] == framework]
            state = machine_state(own) if names[0] == "machine_steadiness" else None
            cells.append({"framework": FRAMEWORKS.get(framework, framework),
                          "verdict": worst["verdict"], "state": state,
                          "text": check_text(names[0], mine, own)})
        lines.append({"title": title, "cells": cells})
    return lines
