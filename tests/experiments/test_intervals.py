"""Steady-state statistics of per-interval series (`experiments.intervals`): MSER-5 truncation,
batch means and sysbench's histogram percentiles, on hand-computed series."""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments.intervals import (
    SteadyStateError,
    batch_means,
    histogram_percentile,
    merge_histograms,
    mser_truncation,
    steady_state,
)


def warm_up_tps(seed: int) -> list[float]:
    """10 intervals of warm-up at 100 tps, then 50 steady ones at 1000 tps (2 % noise)."""
    rng = np.random.default_rng(seed)
    return [*(100 + 10 * rng.standard_normal(10)), *(1000 + 20 * rng.standard_normal(50))]


def test_histogram_percentile_follows_sysbench_rounding():
    # 20 events: the 95th percentile is the 19th (floor(19 + 0.5)) smallest.
    histogram = [(1.0, 18), (2.0, 1), (3.0, 1)]
    assert histogram_percentile(histogram) == 2.0
    assert histogram_percentile(histogram, 100) == 3.0
    with pytest.raises(ValueError):
        histogram_percentile([])


def test_merge_histograms_adds_bucket_by_bucket():
    assert merge_histograms([[(1.0, 2), (2.0, 1)], [(2.0, 3), (0.5, 1)]]) == (
        (0.5, 1),
        (1.0, 2),
        (2.0, 4),
    )


def test_mser_statistic_on_a_hand_computed_series():
    # Batch means 0, 10, 10, 10, 10, 10: MSER(0) = (8.33^2 + 5 * 1.67^2) / 36 = 2.31 > MSER(1) = 0.
    values = [0.0] * 5 + [10.0] * 25
    assert mser_truncation(values) == 5


def test_batch_means_on_a_hand_computed_series():
    # 16 values, batches of 4: means 2.5, 6.5, 10.5, 14.5; sd 5.164; se = 5.164 / 2.
    mean, se, batches = batch_means([float(v) for v in range(1, 17)])
    assert (mean, batches) == (8.5, 4)
    assert se == pytest.approx(math.sqrt(80 / 3) / 2)


def test_batch_means_se_is_wider_than_the_naive_se_on_autocorrelated_data():
    rng = np.random.default_rng(11)
    values = np.zeros(400)
    for t in range(1, 400):
        values[t] = 0.9 * values[t - 1] + rng.standard_normal()
    _, se, _ = batch_means(list(1000 + values))
    naive = values.std(ddof=1) / math.sqrt(len(values))
    assert se > 2 * naive


def test_mser_always_drops_the_whole_warm_up_and_mostly_no_more():
    dropped = [mser_truncation(warm_up_tps(seed)) for seed in range(200)]
    assert min(dropped) == 10
    # On 12 batches MSER sometimes cuts deeper (a known trait on short runs), never past half.
    assert max(dropped) <= 30
    assert dropped.count(10) > len(dropped) / 2


def test_steady_state_of_plain_series_drops_the_warm_up():
    tps = warm_up_tps(seed=1)
    state = steady_state(tps, [5.0] * len(tps))
    assert (state.intervals_dropped, state.intervals_used) == (10, 50)
    assert state.p95_mean == 5.0 and state.p95_se == 0.0


def test_steady_state_of_a_short_series_is_an_error():
    with pytest.raises(SteadyStateError, match="at least 5"):
        steady_state([100.0] * 4, [5.0] * 4)
