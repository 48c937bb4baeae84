"""The chapter's claims, and the checks of the measurement itself, with stated rules.

Every "A is faster than B" claim is decided on the ratio of the two cases' medians, with
a 95% interval from the spread between processes (``stats.ratio_interval``), against a
practical band of 1 +- ``band`` (docs/design.md, "Measured side by side"): the claimed
side is faster when the whole interval lies below the band, slower when above, "no
meaningful difference" when inside, inconclusive otherwise. Overlap claims are decided
the same way on "together / (a + b)" and on the hidden share. A decisive verdict then has
to pass Holm's correction over the framework's claims judged on an interval (``holm``):
with about ten claims at 95% each, one in five runs would otherwise carry a verdict that
chance alone decided.

A section measured in stages (``d2lperf.stages``) looked at its data up to three times
and stopped at the first look that decided: its intervals here are at the confidence
each look had (the run record's ``stages.confidence_per_look``, 98.3% for three looks)
and its p-values count once per planned look, so a section that stopped undecided at
98.3% does not read decisive at 95% on the same pooled data. The stages decide through
``decide``, the very function the report judges by, so "decided" there means what this
report shows.

A claim says where it applies (``Where``: frameworks, device kinds, and what the
framework must do there, such as queue work), checked against the fields of the run
record (``execution``), never against message text. Where it does not apply the
verdict is "does not apply", the reason in words, and the measurement is kept
beside it as a finding. Every rule is also applied to the documents' own figures
(``documents_verdict``): a rule the documents fail would judge them wrong about their
own claim.

Verdicts: "holds", "does not hold", "inconclusive", "does not apply" (the claim is not
about what runs here, and why) or "not measured" (the section did not run here, and why);
the documents' verdict may also be "mixed" (their alternate runs disagree).
Checks (``kind == "check"``) are not the chapter's: an A/A pair (identical work under
two labels), the first-position effect and the machine's steadiness, which say how far
the claims can be trusted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, NamedTuple, TypedDict

import numpy as np

from d2lperf import sections, stats
from d2lperf.applicability import EVERYWHERE, Where, where_words
from d2lperf.checks import aa_checks, first_position_check, steadiness_check
from d2lperf.frameworks import DOCUMENTS
from d2lperf.measurements import (
    MIN_SAMPLES,
    Measurements,
    Ratio,
    alternates,
    document_figures,
    tail_of,
)
from d2lperf.records import RunRecord
from d2lperf.sections import SECTIONS, SpeedClaim
from d2lperf.verdicts import (  # noqa: F401  (the verdicts' words, read by the report here)
    FAILS,
    HOLDS,
    HOLM_ALPHA,
    MIXED,
    NA,
    NOT_HERE,
    STAGED,
    UNSURE,
    Verdict,
    holm,
    to_decide,
)

if TYPE_CHECKING:  # pandas is imported where a frame is made: a section's process has none
    import pandas as pd

OVERLAP_NEEDED = 0.5  # share of the shorter job hidden behind the longer one
# Absolute test accuracy: how far one training run lands from another by chance alone. The
# documents' LeNet (1 device, batch 256, lr 0.2, 4 epochs) trained with 5 seeds per framework
# (bench/accuracy_spread.py, 2026-12-06, docs/measurements.md) landed within 0.052 (MXNet),
# 0.036 (PyTorch) and 0.082 (JAX) of each other, around medians of 0.748-0.754; so one run
# is judged against the document's figure within the widest of those, not a narrower guess.
ACCURACY_MARGIN = 0.08
DEFAULT_BAND = 0.05


class Found(TypedDict, total=False):
    """What a claim's rule found: the fields of its ``Verdict``."""

    verdict: str
    evidence: str
    p_value: float
    effect: str
    ratio: float
    ratio_low: float
    ratio_high: float
    finding: str


def result(verdict: str, evidence: str, ratio: Ratio | None = None,
            p_value: float = float("nan")) -> Found:
    found: Found = {"verdict": verdict, "evidence": evidence, "p_value": p_value}
    if ratio is not None:
        found.update(effect=ratio.effect, ratio=ratio.value, ratio_low=ratio.low,
                     ratio_high=ratio.high)
    return found


def speed_claim(m: Measurements, section: str, fast: str, slow: str, label: str,
                 metric: str = "time", epochs: bool = False) -> Found:
    ratio = m.ratio(section, fast, slow, metric, epochs)
    if ratio is None:
        return result(NA, m.missing(section, fast, slow) or "the cases were not measured")
    verdict = {stats.FASTER: HOLDS, stats.SLOWER: FAILS, stats.SAME: FAILS}.get(
        ratio.effect, UNSURE)
    speedup = 1 / ratio.value if ratio.value else float("nan")
    return result(verdict, f"{ratio.text(label)}: {speedup:.2f}× ({ratio.effect})", ratio,
                   ratio.p_value(m.edges))


def speed_rule(m: Measurements) -> str:
    return (f"ratio of medians with an interval ({STAGED}) from the spread between processes "
            f"(a t-interval on the per-process log ratios); holds when the whole interval lies "
            f"below 1 − {m.band:g}, does not hold when it lies above 1 + {m.band:g} or wholly "
            f"inside the band (no meaningful difference), otherwise (or with fewer than "
            f"{MIN_SAMPLES} samples a side) inconclusive; a decisive verdict must also pass "
            f"Holm's correction over the framework's claims (one-sided {HOLM_ALPHA:g}, each "
            f"p counted once per look of its section)")








def _together(x: np.ndarray) -> np.ndarray:
    return x[..., 2] / (x[..., 0] + x[..., 1])


def _share(x: np.ndarray) -> np.ndarray:
    return (x[..., 0] + x[..., 1] - x[..., 2]) / np.minimum(x[..., 0], x[..., 1])


def overlap(m: Measurements, section: str, a: str, b: str, both: str):
    """together / (a + b) and the hidden share (a + b - together) / shorter, each with
    its interval: from the spread between processes of the per-process figures (log
    scale for the ratio), or, with one process, from a bootstrap of its samples."""
    groups = [m.groups(section, c) for c in (a, b, both)]
    if any(g is None for g in groups):
        return None
    point = np.array([stats.pooled_median(g) for g in groups])
    figures = stats.process_table(groups)
    confidence, looks = m.confidence(section), m.looks(section)
    if m.exact:
        ratio, hidden = (float(_together(point)),) * 3, (float(_share(point)),) * 3
        tails = (None, None)
    elif figures is not None:
        together = m.project(stats.t_estimate(_together(figures), log=True))
        share = m.project(stats.t_estimate(_share(figures)))
        ratio, hidden = together.interval(confidence), share.interval(confidence)
        tails = (together.p_value, share.p_value)
    else:
        medians = stats.bootstrap_medians(groups)
        ratio = (float(_together(point)), *stats.interval(_together(medians), confidence))
        hidden = (float(_share(point)), *stats.interval(_share(medians), confidence))
        tails = (tail_of(None, _together(medians)), tail_of(None, _share(medians)))
    effect = stats.classify(ratio[1], ratio[2], m.band) if m.decidable(*groups) \
        else stats.UNSURE
    return (Ratio(*ratio, effect, tails[0], looks),
            Ratio(*hidden, stats.UNSURE, tails[1], looks))


def overlap_text(ratio: Ratio, hidden: Ratio) -> str:
    return (f"{ratio.text('together/(a+b)')} ({ratio.effect}); hidden share of the shorter "
            f"{hidden.value:.0%} [{hidden.low:.0%}–{hidden.high:.0%}]")


def overlap_claim(m: Measurements, section: str, a: str, b: str, both: str):
    found = overlap(m, section, a, b, both)
    if found is None:
        return result(NA, m.missing(section) or "not measured")
    ratio, hidden = found
    verdict = (HOLDS if hidden.low >= OVERLAP_NEEDED else FAILS if hidden.high < OVERLAP_NEEDED
               else UNSURE)
    side = {HOLDS: stats.SLOWER, FAILS: stats.FASTER}.get(verdict, stats.UNSURE)
    return result(verdict, overlap_text(ratio, hidden), ratio,
                   hidden.p_value((OVERLAP_NEEDED, OVERLAP_NEEDED), side))










def _document_rows(reference: pd.DataFrame, section: str, case: str,
                   prefer: str | None) -> pd.DataFrame:
    """The documents' accuracy figures of a case, from ``prefer`` where it printed any."""
    rows = reference[(reference["section"] == section) & (reference["case"] == case)
                     & (reference["metric"] == "accuracy")].dropna(subset=["epoch"])
    if prefer and (rows["document"] == prefer).any():
        rows = rows[rows["document"] == prefer]
    return rows


def _accuracy_claim(m: Measurements, section: str, reference: pd.DataFrame,
                    cases: list[str], *, reaches: bool,
                    prefer: str | None = None) -> Found:
    """``reaches``: holds when the accuracy is at least the document's less the margin
    (a twin, whose training differs); otherwise within the margin either way."""
    if m.missing(section):
        return result(NA, m.missing(section))
    notes, verdicts = [], []
    for case in cases:
        documents = _document_rows(reference, section, case, prefer)
        if documents.empty:
            continue
        row = documents.loc[documents["epoch"].idxmax()]
        epoch, printed = int(row["epoch"]), float(row["printed"])
        measured = m.get(section, case, "accuracy", epoch)
        if measured is None:
            last = m.last_epoch(section, case, "accuracy")
            ran = f"ran {int(last['epoch'])}" if last is not None else "no accuracy"
            notes.append(f"{case}: the document's figure is after epoch {epoch}, this run {ran}")
            continue
        gap = measured["median"] - printed
        ok = gap >= -ACCURACY_MARGIN if reaches else abs(gap) <= ACCURACY_MARGIN
        verdicts.append(HOLDS if ok else FAILS)
        notes.append(f"{case}: {measured['median']:.2f} after epoch {epoch} vs "
                     f"{row['document']} {row['printed']} ({gap:+.2f})")
    if not verdicts:
        return result(NA, "; ".join(notes) or "no accuracy measured")
    return result(HOLDS if all(v == HOLDS for v in verdicts) else FAILS, "; ".join(notes))


OVERLAP_RULE = (f"holds when the interval ({STAGED}) of the hidden share of the shorter job "
                f"((a + b − together) / shorter, per process) lies wholly above "
                f"{OVERLAP_NEEDED:.0%}, does not hold when wholly below, otherwise inconclusive")


@dataclass(frozen=True)
class Claim:
    """One of the chapter's claims: what it says, how it is judged, where it applies, and
    how the report words it (``short`` on the first screen; ``form``: how its ratio reads,
    one of FORMS; ``figures``: the cases whose documents' figures give the documents' own
    ratio, numerator and denominator, ``a+b`` for a sum)."""

    name: str
    section: str
    text: str  # the claim, framework-neutral
    check: Callable[[Measurements], Found]
    rule: str | None = None  # None: the speed rule
    where: Where = field(default=EVERYWHERE)
    document: str | None = None  # whose figures, where several documents printed them
    document_note: str = ""  # why the documents' own figures do not all pass, if they do not
    short: str = ""
    form: str = "speedup"
    figures: tuple[str, str] = ("", "")
    figures_section: str = ""  # where the documents printed those figures, if elsewhere


# How a claim's ratio reads in the report: a speed-up, a share of the wait, a share of the
# sum (overlap), a multiple (memory), accuracies, outputs.
FORMS = ("speedup", "share", "overlap", "more", "accuracy", "outputs")


def declared(section: str, spec: SpeedClaim) -> Claim:
    """A claim the table of sections declares with its section: one case faster than
    another, by the speed rule."""
    label = spec.label or f"{spec.faster}/{spec.slower}"
    return Claim(spec.name, section, spec.text,
                 lambda m: speed_claim(m, section, spec.faster, spec.slower, label),
                 short=spec.short, figures=(spec.faster, spec.slower),
                 figures_section=spec.document_section)


class Accuracy(NamedTuple):
    """A claim that training reaches the documents' test accuracy after their epochs: its
    name, section and cases, the document whose figures to prefer (None: any) and the
    first screen's words."""

    name: str
    section: str
    cases: tuple[str, ...]
    prefer: str | None
    short: str


def section_claims() -> tuple[list[Claim], list[Accuracy]]:
    """The claims with rules of their own that the sections keep in their folders
    (``scripts/sections/<section>/claims.py``: ``CLAIMS``, ``ACCURACY``), in the report's
    order. A section's claims are judged here, in the workflow's interpreter, so they live
    apart from its declaration, which the workers read."""
    written: list[Claim] = []
    accuracy: list[Accuracy] = []
    for name in SECTIONS:
        path = sections.SCRIPTS / name / "claims.py"
        if path.is_file():
            module = sections.load_module(path, f"{name}_claims")
            written += getattr(module, "CLAIMS", [])
            accuracy += getattr(module, "ACCURACY", [])
    return written, accuracy


ACCURACY_TEXT = "training reaches the documents' test accuracy after their epochs"
OUTPUTS = ("outputs_reproduced", "printed outputs reproduced")  # summarise judges it


# --- the same rules on the documents' own figures ---------------------------------------

def documents_verdict(claim: Claim, reference: pd.DataFrame,
                      band: float) -> tuple[str, str, str]:
    """The claim's rule on the documents' own figures: the verdict ("mixed" where their
    alternate runs disagree), its evidence, and the verdict of each alternate run where
    the documents printed several (Linux and Windows 10)."""
    prefer = claim.document
    if claim.figures_section:  # the documents printed the same cases under another section
        reference = reference.assign(section=reference["section"].replace(
            claim.figures_section, claim.section))
    mine = reference[reference["section"] == claim.section]
    variants = [v for v in alternates(reference) if (mine["variant"] == v).any()] or [None]
    found = []
    for variant in variants:
        result = claim.check(document_figures(reference, band, variant, prefer))
        found.append((variant, result["verdict"], result["evidence"]))
    if len({(v, text) for _, v, text in found}) == 1:  # the variants are another section's
        found = [(None, *found[0][1:])]
    verdicts = {v for _, v, _ in found}
    verdict = verdicts.pop() if len(verdicts) == 1 else MIXED
    evidence = "; ".join(f"{v + ': ' if v else ''}{verdict_} ({text})"
                         for v, verdict_, text in found)
    by_variant = "; ".join(f"{v}: {verdict_}" for v, verdict_, _ in found if v)
    if verdict != HOLDS and claim.document_note:
        evidence += f"; {claim.document_note}"
    return verdict, evidence, by_variant


def judge(summary: pd.DataFrame, runs: dict[str, RunRecord], reference: pd.DataFrame,
          samples: pd.DataFrame, *, band: float = DEFAULT_BAND,
          framework: str) -> list[Verdict]:
    """Every claim and check for one framework's results."""
    if "framework" in samples:
        samples = samples[samples["framework"] == framework]
    if "framework" in summary:
        summary = summary[summary["framework"].fillna(framework) == framework]
    m = Measurements(samples, summary, runs, band)
    decided = decide(m, framework)
    checks = [v for v in decided if v.kind == "check"]
    judged = [v for v in decided if v.kind != "check"]
    by_name = {claim.name: claim for claim in CLAIMS}
    for verdict in judged:
        verdict.document_verdict, verdict.document_evidence, verdict.document_by_variant = \
            documents_verdict(by_name[verdict.name], reference, band)
    verdicts = checks + [first_position_check(samples, band), steadiness_check(runs)] + judged
    reaches = framework != DOCUMENTS  # a twin trains its own way: it should reach theirs
    rule = (f"holds when every measured accuracy is at least the document's figure for the "
            f"same epoch less {ACCURACY_MARGIN}" if reaches else
            f"holds when every measured accuracy is within ±{ACCURACY_MARGIN} of the "
            "document's figure for the same epoch")
    for name, section, cases, prefer, _ in ACCURACY_CLAIMS:
        verdicts.append(Verdict(
            ACCURACY_TEXT, name, section, rule=rule, applies=where_words(EVERYWHERE),
            document_verdict=NA, document_evidence="the documents' figures are the reference",
            **_accuracy_claim(m, section, reference, cases, reaches=reaches,
                              prefer=prefer)))
    for verdict in verdicts:
        verdict.framework = framework
    return verdicts


def decide(m: Measurements, framework: str, section: str | None = None,
           unseen: int = 0) -> list[Verdict]:
    """The A/A checks and the chapter's claims (of ``section``, or of every section)
    judged on ``m``, each only where it applies, with Holm's correction over the claims.

    One function for the report and for the stages' stopping rule (``d2lperf.stages``
    calls it on the rows pooled so far), so that a section the stages called decided
    reads decided in the report, by the same interval, rule and correction. ``unseen``:
    claims of other sections that the report's correction will count too but whose
    p-values are not known yet (``holm``)."""
    checks = aa_checks(m, section)
    judged = []
    for claim in CLAIMS:
        if section not in (None, claim.section) or not has_section(framework, claim.section):
            continue
        found = claim.check(m)
        why_not = claim.where.why_not(framework, m.runs.get(claim.section))
        if why_not is not None:
            found.update(verdict=NOT_HERE, evidence=why_not, finding=found["evidence"])
        judged.append(Verdict(claim.text, claim.name, claim.section,
                              rule=claim.rule or speed_rule(m),
                              applies=where_words(claim.where), framework=framework, **found))
    holm(judged, unseen)
    return checks + judged


def has_section(framework: str, section: str) -> bool:
    """Whether ``framework`` has the section a claim is about: a framework without its
    script (a section of today's APIs not yet written for it) has no verdict on it,
    rather than one saying it did not run."""
    entry = SECTIONS.get(section)
    return entry is None or entry.has(framework)


def applying_claims(framework: str, run: RunRecord) -> list[str]:
    """The claims judged on an interval that apply to ``framework`` where ``run`` ran
    (its device kind and what the framework does there; a section it has): every section
    of a run runs on the same device kind, so one section's record stands for the others'."""
    return [c.name for c in CLAIMS if c.where.why_not(framework, run) is None
            and has_section(framework, c.section)]


def as_frame(verdicts: list[Verdict]) -> pd.DataFrame:
    import pandas as pd
    return pd.DataFrame([asdict(v) for v in verdicts])


# Every claim, in the documents' order of sections: those with rules of their own, which the
# sections keep in their folders (loaded last: they are written with this module's words),
# and the speed claims their declarations hold.
WRITTEN, ACCURACY_CLAIMS = section_claims()
CLAIMS: list[Claim] = sorted(
    WRITTEN + [declared(s.name, spec) for s in SECTIONS.values() for spec in s.claims],
    key=lambda claim: list(SECTIONS).index(claim.section))
