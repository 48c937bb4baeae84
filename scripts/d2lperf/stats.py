"""Comparisons measured side by side: the estimates, intervals and p-values the claims
are judged by (``d2lperf.claims``), with Student's t from ``scipy.special`` (the functions
``scipy.stats.t`` calls, without its second of imports in every section's manager).

Workflow environment only (scipy): the manager and the report's steps import it, never a
worker (the one-case statistics a worker prints are ``d2lperf.describe``'s)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from d2lperf import timing
from d2lperf.describe import BOOTSTRAP_RESAMPLES

# --- Comparisons measured side by side (docs/design.md, "Measured side by side") ---------
#
# A process is the unit of replication: each fresh process draws its own offsets (memory
# layout, which core, what else ran), a few percent per case, which its samples share.
# So the interval of a ratio comes from the spread between processes: a t-interval on
# the per-process log ratios of medians (samples within a process only settle each
# process's median). A two-level bootstrap over 4 processes cannot see that spread (4
# clusters give few distinct resamples) and gave intervals that excluded 1 for identical
# work; the coverage test (tests/test_stats.py) measures both on this machine's noise.
# With one process there is no between-process spread to measure: the interval is the
# within-process bootstrap, and says less than it seems.

Groups = Mapping[object, Sequence[float]]  # one case's samples, by the process they came from
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Estimate:
    """A mean over processes with its standard error and degrees of freedom; ``log``:
    of log ratios (its interval and edges are on the ratio's scale)."""

    mean: float
    se: float
    df: float
    log: bool = True

    def _scale(self, x: float) -> float:
        return math.log(x) if self.log else x

    def _back(self, x: float) -> float:
        return math.exp(x) if self.log else x

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
        quantile = special.stdtrit(self.df, 1 - (1 - confidence) / 2)
        half = quantile * self.se if self.se > 0 else 0.0
        return self._back(self.mean), self._back(self.mean - half), self._back(self.mean + half)

    def p_value(self, edge: float, above: bool) -> float:
        """One-sided p of "the truth lies above ``edge``" (``above``) or below it: how
        often chance alone would show this much if the truth sat on the edge."""
        distance = (self.mean - self._scale(edge)) * (1 if above else -1)
        if self.se == 0:
            return 0.0 if distance > 0 else 1.0
        return float(special.stdtr(self.df, -distance / self.se))

    def projected(self, now: int, then: int, shift: float = 0.0) -> Estimate:
        """This estimate from ``now`` processes as it would read from ``then`` (the same
        spread between processes, ``then - now`` more degrees of freedom), its mean
        moved by ``shift`` times the spread of where the mean of all ``then`` can still
        land given the ``now`` already measured: sd/sqrt(then) * sqrt(1 - now/then)
        = se * sqrt(now * (then - now)) / then (``stages``: could more decide it?)."""
        if not 0 < now <= then:
            raise ValueError(f"a projection needs 0 < now <= then, got {now}, {then}")
        moves = self.se * math.sqrt(now * (then - now)) / then
        return Estimate(self.mean + shift * moves, self.se * math.sqrt(now / then),
                        self.df + then - now, self.log)


def process_medians(case: Groups) -> dict[object, float]:
    return {k: float(np.median(np.asarray(v, dtype=float))) for k, v in case.items() if len(v)}


def t_estimate(values: Sequence[float], log: bool = False) -> Estimate:
    """The mean of per-process values (of their logs where ``log``), n - 1 degrees of
    freedom."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        raise ValueError("a t-interval needs two or more processes")
    if log:
        x = np.log(x)
    return Estimate(float(x.mean()), float(x.std(ddof=1)) / math.sqrt(len(x)), len(x) - 1, log)


def t_interval(values: Sequence[float], confidence: float = CONFIDENCE,
               ) -> tuple[float, float, float]:
    """Mean of per-process values with its t-interval (n - 1 degrees of freedom)."""
    return t_estimate(values).interval(confidence)


def crossover_estimate(a: Groups, b: Groups) -> Estimate | None:
    """The log ratio a / b of two copies of the same work that swap labels in every
    other process (``timing.aa_roles``: a is one copy in one period, the other in the
    other): a two-period crossover. Whatever tells the copies apart (which was built
    first, what shares its weights) is one offset with opposite signs in the two
    periods, balanced by the design: the estimate is the average of the two periods'
    mean log ratios, its spread pooled within the periods (the copy effect left out),
    n - 2 degrees of freedom. None unless both cases were measured in the same processes,
    both periods among them, three or more in all."""
    return _crossover(process_medians(a), process_medians(b))


def _crossover(ma: dict[object, float], mb: dict[object, float]) -> Estimate | None:
    if set(ma) != set(mb) or len(ma) < 3:
        return None
    periods = [np.array([math.log(ma[k] / mb[k]) for k in ma if timing.aa_period(int(k)) == p])
               for p in (0, 1)]
    if not all(len(x) for x in periods):
        return None
    within = sum(float(((x - x.mean()) ** 2).sum()) for x in periods) / (len(ma) - 2)
    se = math.sqrt(within * sum(1 / len(x) for x in periods)) / 2
    return Estimate(float(sum(x.mean() for x in periods) / 2), se, len(ma) - 2)


def log_ratio_estimate(a: Groups, b: Groups, swapped: bool = False) -> Estimate | None:
    """The log ratio a / b from per-process medians, or None where only one process
    measured it. Cases measured in the same processes are paired: one log ratio per
    process. Cases from different processes: the difference of their mean log medians
    (Welch); a side measured once counts as known. ``swapped``: two copies of the same
    work that swap labels by process (``timing.aa_period``), judged as a crossover
    (``crossover_estimate``) where the processes allow it."""
    ma, mb = process_medians(a), process_medians(b)
    crossed = _crossover(ma, mb) if swapped else None
    if crossed is not None:
        return crossed
    if set(ma) == set(mb) and len(ma) >= 2:
        return t_estimate([ma[k] / mb[k] for k in sorted(ma, key=str)], log=True)
    la, lb = (np.log(list(m.values())) for m in (ma, mb))
    if len(la) < 2 and len(lb) < 2:
        return None
    terms = [x.var(ddof=1) / len(x) if len(x) >= 2 else 0.0 for x in (la, lb)]
    mean, se = float(la.mean() - lb.mean()), math.sqrt(sum(terms))
    if se == 0:
        return Estimate(mean, 0.0, 1.0)
    df = se**4 / sum(t**2 / (len(x) - 1) for t, x in zip(terms, (la, lb)) if len(x) >= 2)
    return Estimate(mean, se, df)


def log_ratio_interval(a: Groups, b: Groups, confidence: float = CONFIDENCE,
                       swapped: bool = False) -> tuple[float, float, float] | None:
    """The ratio a / b with its interval between processes (``log_ratio_estimate``)."""
    found = log_ratio_estimate(a, b, swapped)
    return None if found is None else found.interval(confidence)


def replicate_p_value(replicates: np.ndarray, edge: float, above: bool) -> float:
    """``Estimate.p_value`` from bootstrap replicates: the share on the other side."""
    values = np.asarray(replicates, dtype=float)
    values = values[~np.isnan(values)]
    beyond = np.sum(values <= edge) if above else np.sum(values >= edge)
    return float((beyond + 1) / (len(values) + 1))


def bootstrap_medians(cases: Sequence[Groups], *, resamples: int = BOOTSTRAP_RESAMPLES,
                      seed: int = 0) -> np.ndarray:
    """Medians of hierarchical bootstrap resamples: shape (resamples, len(cases)).

    Each resample draws processes with replacement, then samples with replacement
    within each drawn process, and takes the median of everything drawn (Kalibera
    & Jones's two-level bootstrap). Cases measured in the same processes (the same
    process keys) are resampled together, process by process, so that what their
    shared processes had in common stays paired; cases from different processes
    are resampled independently. Vectorised: no Python loop over resamples. Used
    where a section ran in one process only (and by the coverage test, to compare).
    """
    rng = np.random.default_rng(seed)
    keys = [tuple(sorted(case, key=str)) for case in cases]
    paired = len(set(keys)) == 1
    shared = rng.integers(0, len(keys[0]), size=(resamples, len(keys[0]))) if paired else None
    medians = np.empty((resamples, len(cases)))
    for column, case in enumerate(cases):
        groups = [np.asarray(case[k], dtype=float) for k in keys[column]]
        if not groups or any(len(g) == 0 for g in groups):
            raise ValueError("every process needs at least one sample")
        sizes = np.array([len(g) for g in groups])
        table = np.full((len(groups), sizes.max()), np.nan)
        for row, group in enumerate(groups):
            table[row, :len(group)] = group
        chosen = shared if paired else rng.integers(0, len(groups),
                                                    size=(resamples, len(groups)))
        width = sizes.max()
        picks = np.floor(rng.random((resamples, len(groups), width))
                         * sizes[chosen][..., None]).astype(int)
        drawn = table[chosen[..., None], picks]
        drawn[np.arange(width) >= sizes[chosen][..., None]] = np.nan
        medians[:, column] = np.nanmedian(drawn.reshape(resamples, -1), axis=1)
    return medians


def pooled_median(case: Groups) -> float:
    return float(np.median(np.concatenate([np.asarray(v, dtype=float) for v in case.values()])))


def interval(values: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates."""
    tail = (1 - confidence) / 2 * 100
    low, high = np.nanpercentile(values, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap_ratio_replicates(a: Groups, b: Groups, *, resamples: int = BOOTSTRAP_RESAMPLES,
                               seed: int = 0) -> np.ndarray:
    medians = bootstrap_medians([a, b], resamples=resamples, seed=seed)
    return medians[:, 0] / medians[:, 1]


def bootstrap_ratio_interval(a: Groups, b: Groups, *, resamples: int = BOOTSTRAP_RESAMPLES,
                             seed: int = 0, confidence: float = CONFIDENCE,
                             ) -> tuple[float, float, float]:
    """Ratio of pooled medians a / b, with its two-level bootstrap interval."""
    replicates = bootstrap_ratio_replicates(a, b, resamples=resamples, seed=seed)
    return pooled_median(a) / pooled_median(b), *interval(replicates, confidence)


def ratio_interval(a: Groups, b: Groups, *, resamples: int = BOOTSTRAP_RESAMPLES,
                   seed: int = 0, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """Ratio a / b with its interval: between processes where two or more measured it
    (``log_ratio_interval``), else the within-process bootstrap of the one process."""
    found = log_ratio_interval(a, b, confidence)
    if found is not None:
        return found
    return bootstrap_ratio_interval(a, b, resamples=resamples, seed=seed,
                                    confidence=confidence)


def process_table(cases: Sequence[Groups]) -> np.ndarray | None:
    """The cases' medians in each process, shape (processes, cases), where every case
    was measured in the same two or more processes; None otherwise (one process cannot
    show the spread between processes)."""
    medians = [process_medians(c) for c in cases]
    keys = set(medians[0])
    if len(keys) < 2 or any(set(m) != keys for m in medians):
        return None
    return np.array([[m[k] for m in medians] for k in sorted(keys, key=str)])


FASTER, SLOWER, SAME, UNSURE = "faster", "slower", "no meaningful difference", "inconclusive"


def classify(low: float, high: float, band: float) -> str:
    """A ratio's interval against the practical band 1 +- band (criterion.rs's noise
    threshold): wholly below is faster, wholly above slower, wholly inside no
    meaningful difference, anything else inconclusive."""
    if not band > 0:
        raise ValueError(f"band must be positive, got {band}")
    if high < 1 - band:
        return FASTER
    if low > 1 + band:
        return SLOWER
    if 1 - band <= low and high <= 1 + band:
        return SAME
    return UNSURE
