"""Statistics of timing samples: samples in, every statistic a small property."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property

import numpy as np

NOISY_RELATIVE_IQR = 0.10  # a spread over 10% of the median is marked noisy
BOOTSTRAP_RESAMPLES = 2000


class Stats:
    """Summary statistics of one case's raw samples.

    Quartiles use linear interpolation between order statistics (the 'inclusive'
    method, numpy's default), so q1 and q3 of a single sample equal that sample.
    """

    def __init__(self, samples: Iterable[float]) -> None:
        values = [float(v) for v in samples]
        if not values:
            raise ValueError("Stats needs at least one sample")
        if any(math.isnan(v) for v in values):
            raise ValueError("Stats got a NaN sample")
        self.samples = sorted(values)

    @property
    def count(self) -> int:
        return len(self.samples)

    @property
    def min(self) -> float:
        return self.samples[0]

    @property
    def max(self) -> float:
        return self.samples[-1]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def stddev(self) -> float:
        return statistics.stdev(self.samples) if self.count > 1 else 0.0

    @cached_property
    def _quartiles(self) -> tuple[float, float]:
        if self.count == 1:
            return self.samples[0], self.samples[0]
        q1, _, q3 = statistics.quantiles(self.samples, n=4, method="inclusive")
        return q1, q3

    @property
    def q1(self) -> float:
        return self._quartiles[0]

    @property
    def q3(self) -> float:
        return self._quartiles[1]

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def relative_iqr(self) -> float:
        """IQR as a fraction of the median: the spread a reader compares across cases."""
        return self.iqr / self.median if self.median else math.inf

    @property
    def outliers(self) -> list[float]:
        """Samples beyond Tukey's fences (1.5 IQR outside the quartiles)."""
        low, high = self.q1 - 1.5 * self.iqr, self.q3 + 1.5 * self.iqr
        return [v for v in self.samples if v < low or v > high]

    @property
    def noisy(self) -> bool:
        return self.relative_iqr > NOISY_RELATIVE_IQR

    @cached_property
    def median_ci(self) -> tuple[float, float]:
        """Bootstrap 95% interval of the median (percentile method; a fixed seed makes
        the same samples give the same interval)."""
        if self.count == 1:
            return self.samples[0], self.samples[0]
        rng = random.Random(0)
        medians = sorted(
            statistics.median(rng.choices(self.samples, k=self.count))
            for _ in range(BOOTSTRAP_RESAMPLES)
        )
        low = medians[int(0.025 * BOOTSTRAP_RESAMPLES)]
        high = medians[int(0.975 * BOOTSTRAP_RESAMPLES) - 1]
        return low, high

    def as_dict(self) -> dict[str, float | int | bool]:
        names = ("count", "min", "q1", "median", "q3", "max", "iqr", "mean", "stddev")
        values: dict[str, float | int | bool] = {name: getattr(self, name) for name in names}
        values["ci_low"], values["ci_high"] = self.median_ci
        values["outliers"] = len(self.outliers)
        values["noisy"] = self.noisy
        return values


# --- Comparisons measured side by side: hierarchical bootstrap ----------------------------
# (docs/design.md, "Measured side by side")

Groups = Mapping[object, Sequence[float]]  # one case's samples, by the process they came from
CONFIDENCE = 0.95


def bootstrap_medians(cases: Sequence[Groups], *, resamples: int = BOOTSTRAP_RESAMPLES,
                      seed: int = 0) -> np.ndarray:
    """Medians of hierarchical bootstrap resamples: shape (resamples, len(cases)).

    Each resample draws processes with replacement, then samples with replacement
    within each drawn process, and takes the median of everything drawn (Kalibera
    & Jones's two-level bootstrap). Cases measured in the same processes (the same
    process keys) are resampled together, process by process, so that what their
    shared processes had in common stays paired; cases from different processes
    are resampled independently. Vectorised: no Python loop over resamples.
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


def ratio_interval(a: Groups, b: Groups, *, resamples: int = BOOTSTRAP_RESAMPLES,
                   seed: int = 0) -> tuple[float, float, float]:
    """Ratio of medians a / b, with its 95% hierarchical bootstrap interval."""
    medians = bootstrap_medians([a, b], resamples=resamples, seed=seed)
    return (pooled_median(a) / pooled_median(b), *interval(medians[:, 0] / medians[:, 1]))


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
