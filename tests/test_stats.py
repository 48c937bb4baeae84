import math

import numpy as np
import pytest

from d2lperf.stats import (
    FASTER,
    SAME,
    SLOWER,
    UNSURE,
    Stats,
    bootstrap_medians,
    classify,
    ratio_interval,
)


def test_odd_count_hand_computed():
    s = Stats([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.count, s.min, s.max, s.median) == (5, 1.0, 5.0, 3.0)
    # inclusive quartiles of 1..5: positions 1 and 3 of 0..4
    assert (s.q1, s.q3, s.iqr) == (2.0, 4.0, 2.0)
    assert s.mean == 3.0
    assert s.stddev == pytest.approx(math.sqrt(2.5))


def test_even_count_interpolates():
    s = Stats([1.0, 2.0, 3.0, 4.0])
    assert s.median == 2.5
    assert s.q1 == pytest.approx(1.75)
    assert s.q3 == pytest.approx(3.25)


def test_ties():
    s = Stats([2.0, 2.0, 2.0, 7.0])
    assert s.median == 2.0
    assert s.q1 == 2.0
    assert s.iqr == pytest.approx(1.25)


def test_single_sample():
    s = Stats([0.25])
    assert (s.min, s.q1, s.median, s.q3, s.max) == (0.25,) * 5
    assert s.iqr == 0.0 and s.stddev == 0.0 and s.outliers == []


def test_outliers_by_tukey_fences():
    s = Stats([1.0, 1.1, 1.2, 1.3, 1.4, 9.0])
    assert s.outliers == [9.0]
    assert Stats([1.0, 1.1, 1.2]).outliers == []


def test_relative_iqr():
    assert Stats([1.0, 2.0, 3.0, 4.0, 5.0]).relative_iqr == pytest.approx(2 / 3)


def test_rejects_empty_and_nan():
    with pytest.raises(ValueError, match="at least one"):
        Stats([])
    with pytest.raises(ValueError, match="NaN"):
        Stats([1.0, float("nan")])


def test_as_dict_names_every_statistic():
    assert set(Stats([1, 2]).as_dict()) == {
        "count", "min", "q1", "median", "q3", "max", "iqr", "mean", "stddev",
        "ci_low", "ci_high", "outliers", "noisy"}


def test_bootstrap_interval_brackets_the_median_and_is_repeatable():
    samples = [1.00, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97]
    low, high = Stats(samples).median_ci
    assert 0.97 <= low <= 1.0 <= high <= 1.03
    assert Stats(list(reversed(samples))).median_ci == (low, high)


def test_bootstrap_interval_of_identical_samples_and_a_single_one():
    assert Stats([2.0, 2.0, 2.0]).median_ci == (2.0, 2.0)
    assert Stats([5.0]).median_ci == (5.0, 5.0)


def test_noisy_over_ten_percent_relative_iqr():
    assert not Stats([1.0, 1.01, 1.02, 1.03]).noisy
    assert Stats([1.0, 1.2, 1.4, 1.6]).noisy


# --- ratios of medians with a hierarchical bootstrap interval, and the band ---

def test_ratio_interval_hand_computed_two_processes():
    # a: process 0 always 1, process 1 always 3; b always 1. Resampled process pairs
    # 00, 01, 10, 11 (1/4 each) give pooled medians 1, 2, 2, 3: the interval is 1..3.
    ratio, low, high = ratio_interval({0: [1, 1], 1: [3, 3]}, {0: [1, 1], 1: [1, 1]})
    assert (ratio, low, high) == (2.0, 1.0, 3.0)


def test_ratio_interval_with_one_process_is_a_plain_bootstrap():
    a = {0: [2.0, 2.0, 2.0, 2.0]}
    b = {0: [1.0, 1.0, 1.0, 1.0]}
    assert ratio_interval(a, b) == (2.0, 2.0, 2.0)
    ratio, low, high = ratio_interval({0: [1.0, 1.1, 0.9, 1.0, 1.05]}, {0: [2.0] * 5})
    assert ratio == 0.5 and 0.45 <= low <= 0.5 <= high <= 0.55


def test_ratio_interval_is_repeatable_and_wider_when_processes_disagree():
    steady = {p: [1.0, 1.01, 0.99] for p in range(4)}
    moving = {p: [v * (1 + 0.2 * p) for v in (1.0, 1.01, 0.99)] for p in range(4)}
    base = {p: [1.0, 1.0, 1.0] for p in range(4)}
    assert ratio_interval(steady, base) == ratio_interval(steady, base)
    _, low1, high1 = ratio_interval(steady, base)
    _, low2, high2 = ratio_interval(moving, base)
    assert high2 - low2 > 5 * (high1 - low1)


def test_bootstrap_medians_shape_and_unequal_process_sizes():
    medians = bootstrap_medians([{0: [1.0], 1: [2.0, 2.0, 2.0]}, {0: [1.0], 1: [1.0]}],
                                resamples=500)
    assert medians.shape == (500, 2)
    assert set(np.unique(medians[:, 0])) <= {1.0, 1.5, 2.0}


@pytest.mark.parametrize("low, high, expected", [
    (0.40, 0.50, FASTER),        # wholly below the band
    (1.10, 1.30, SLOWER),        # wholly above
    (0.97, 1.04, SAME),          # wholly inside
    (0.90, 1.02, UNSURE),        # straddles the lower edge
    (0.99, 1.20, UNSURE),        # straddles the upper edge
    (0.80, 1.20, UNSURE),        # covers the whole band
])
def test_classify_each_branch(low, high, expected):
    assert classify(low, high, 0.05) == expected


def test_classify_rejects_a_non_positive_band():
    with pytest.raises(ValueError):
        classify(0.9, 1.1, 0)
