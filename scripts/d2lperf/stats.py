"""Statistics of timing samples: samples in, every statistic a small property."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from functools import cached_property


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

    def as_dict(self) -> dict[str, float | int]:
        names = ("count", "min", "q1", "median", "q3", "max", "iqr", "mean", "stddev")
        return {name: getattr(self, name) for name in names}
