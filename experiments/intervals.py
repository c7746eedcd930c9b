"""Statistics of a benchmark's per-interval series: the steady state of a run.

sysbench reports tps and p95 latency every interval; the first intervals are a warm-up and
consecutive reports are autocorrelated. MSER-5 truncation finds the warm-up, non-overlapping
batch means give honest standard errors of what is left, and sysbench's fixed-bucket latency
histograms give percentiles by sysbench's own rounding rule.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

PERCENTILE = 95
MSER_BATCH = 5


class SteadyStateError(ValueError):
    """A series too short, or too empty, for a steady-state estimate."""


def histogram_percentile(
    histogram: Sequence[tuple[float, int]], percentile: float = PERCENTILE
) -> float:
    """The percentile of a sysbench histogram, by sysbench's own rule (sb_histogram_get_pct_*).

    The value of the first bucket whose cumulative count reaches floor(N p / 100 + 0.5).
    """
    if not 0 < percentile <= 100:
        raise ValueError(f"percentile: {percentile} is not in (0, 100]")
    buckets = sorted(histogram)
    cumulative = list(itertools.accumulate(count for _, count in buckets))
    if not cumulative or cumulative[-1] == 0:
        raise ValueError("histogram: no events")
    target = math.floor(cumulative[-1] * percentile / 100 + 0.5)
    return buckets[bisect.bisect_left(cumulative, target)][0]


def merge_histograms(
    histograms: Sequence[Sequence[tuple[float, int]]],
) -> tuple[tuple[float, int], ...]:
    """Bucket-wise sum of histograms (sysbench's buckets are fixed, so values line up)."""
    counts: dict[float, int] = {}
    for histogram in histograms:
        for value, count in histogram:
            counts[value] = counts.get(value, 0) + count
    return tuple(sorted(counts.items()))


@dataclass(frozen=True)
class SteadyState:
    """Steady-state means of the interval tps and p95 latency, with batch-means standard errors."""

    tps_mean: float
    tps_se: float
    p95_mean: float
    p95_se: float
    intervals_used: int
    intervals_dropped: int
    rule: str


def _mser_limit(batches: int) -> int:
    """The largest number of batches MSER may drop: half of them, leaving at least two."""
    return max(0, min(batches // 2, batches - 2))


def mser_truncation(values: Sequence[float], batch: int = MSER_BATCH) -> int:
    """MSER-b truncation point, in observations (White 1997; White, Cobb & Spratt 2000).

    The series is cut into k batches of `batch` (an incomplete last batch is left out of the
    choice), with batch means Z_1..Z_k; the rule keeps the d minimising
    MSER(d) = sum_{j>d} (Z_j - mean(Z_{d+1..k}))^2 / (k - d)^2 and drops d batches. As is usual
    (Franklin & White 2008), d is searched only in the first half, leaving at least two batches,
    because MSER(d) degenerates to 0 as k - d approaches 1. Ties go to the smaller d.
    """
    x = np.asarray(values, dtype=float)
    k = len(x) // batch
    if _mser_limit(k) == 0:
        return 0
    # Shift by the first value: a constant series is then exactly zero, free of rounding.
    z = (x[: k * batch] - x[0]).reshape(k, batch).mean(axis=1)
    best_d, best = 0, math.inf
    for d in range(_mser_limit(k) + 1):
        tail = z[d:]
        statistic = float(((tail - tail.mean()) ** 2).sum()) / (k - d) ** 2
        if statistic < best:
            best_d, best = d, statistic
    return best_d * batch


def batch_means(values: Sequence[float]) -> tuple[float, float, int]:
    """Mean, standard error by non-overlapping batch means, and the number of batches.

    Interval reports are autocorrelated, so their plain standard deviation / sqrt(n) would be too
    small. The series is cut into b = floor(n / m) batches of m = floor(sqrt(n)) consecutive
    values (the square-root rule; the first n - b m values are left out of the batches) and the
    standard error is sd(batch means) / sqrt(b).
    """
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n < 4:
        raise ValueError(f"values: need at least 4 for two batches, got {n}")
    size = math.isqrt(n)
    count = n // size
    shifted = x - x[0]
    means = shifted[n - count * size :].reshape(count, size).mean(axis=1)
    se = float(means.std(ddof=1)) / math.sqrt(count)
    return float(x[0] + shifted.mean()), se, count


def steady_state(tps: Sequence[float], p95: Sequence[float]) -> SteadyState:
    """Drop the warm-up by MSER-5 on the tps series, then batch-means statistics of the rest.

    `tps` and `p95` are the per-interval series of one run. The truncation found on tps (the
    objective) applies to the p95 series too. Intervals with no transaction have no latency
    (sysbench prints 0.00) and are left out of the p95 statistics.
    """
    if len(tps) < MSER_BATCH:
        raise SteadyStateError(
            f"steady state needs at least {MSER_BATCH} interval reports, got {len(tps)}"
        )
    dropped = mser_truncation(tps)
    kept = list(zip(tps[dropped:], p95[dropped:], strict=True))
    tps_mean, tps_se, tps_batches = batch_means([rate for rate, _ in kept])
    latencies = [latency for rate, latency in kept if rate > 0]
    if len(latencies) < 4:
        raise SteadyStateError(
            f"steady state: only {len(latencies)} of {len(kept)} kept intervals had transactions"
        )
    p95_mean, p95_se, _ = batch_means(latencies)
    rule = (
        f"MSER-{MSER_BATCH} (White 1997) on interval tps, truncation searched in the first half: "
        f"dropped {dropped} of {len(tps)} intervals; standard errors by {tps_batches} "
        f"non-overlapping batch means of {math.isqrt(len(kept))} intervals"
    )
    limit = _mser_limit(len(tps) // MSER_BATCH)
    if limit and dropped == limit * MSER_BATCH:
        # A minimum at the search limit is the usual sign of a run too short to settle.
        rule += "; truncation at the search limit, the run may be too short for steady state"
    return SteadyState(
        tps_mean=tps_mean,
        tps_se=tps_se,
        p95_mean=p95_mean,
        p95_se=p95_se,
        intervals_used=len(kept),
        intervals_dropped=dropped,
        rule=rule,
    )
