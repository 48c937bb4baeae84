"""Descriptive statistics of one case's raw samples: the median a worker prints, and the
quartiles, spread and bootstrap interval of the median the summary tables hold.

Standard library only: the frameworks' environments import it (a worker prints its
figures), and it judges nothing (the comparisons are ``d2lperf.stats``'s)."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterable
from functools import cached_property

NOISY_RELATIVE_IQR = 0.10  # a spread over 10% of the median is marked noisy
BOOTSTRAP_RESAMPLES = 2000  # also the comparisons' (d2lperf.stats)


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
