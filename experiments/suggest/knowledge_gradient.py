"""What one more run is worth to the recommendation: the knowledge gradient over the contenders.

The recommendation is the contender (a configuration run) of best posterior mean less `risk`
standard deviations of that mean. One more run, whose outcome is y, moves every contender's
mean by `b * Z` with Z standard normal, where b is the covariance of that mean with y over y's
standard deviation, and shrinks each one's variance by b² (Gaussian conditioning); so after
the run the recommendation is the contender whose line `mean - risk * sd_after + b * Z` is
highest at the Z that came out. The gain of the run is the expected *mean* (the best estimate of
the true value) of that contender then, less the mean of the recommendation now: Frazier,
Powell and Dayanik's knowledge gradient (2009, "The knowledge-gradient policy for correlated
normal beliefs") for a recommendation that also counts its own uncertainty. With `risk` 0 it is
their knowledge gradient exactly.

The expectation over Z is exact: the recommendation after the run follows the upper envelope
of the lines (sorted by slope, as in Frazier et al.'s algorithm), and on each piece of it the
expected mean is a sum of normal probabilities and densities. (With `risk` the recommended
mean jumps where the envelope changes line, so a grid over Z would be off by the jump.)
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm

__all__ = ["recommendation_gain"]


def recommendation_gain(
    mean: np.ndarray,
    variance: np.ndarray,
    with_run: np.ndarray,
    run_variance: float,
    risk: float = 0.0,
) -> float:
    """The expected gain in the true value of the recommendation from one more run.

    `mean` and `variance` are the posterior mean and variance of every contender's mean
    response (maximized); `with_run` the covariance of each with the run's outcome, whose own
    variance (noise included) is `run_variance`; the recommendation is the contender of best
    mean less `risk` standard deviations. Zero when the run can teach nothing.
    """
    mean, variance, with_run = (np.asarray(a, dtype=float) for a in (mean, variance, with_run))
    now = float(mean[np.argmax(mean - risk * np.sqrt(np.maximum(variance, 0.0)))])
    if run_variance <= 0.0:
        return 0.0
    slope = with_run / math.sqrt(run_variance)
    judged = mean - risk * np.sqrt(np.maximum(variance - slope**2, 0.0))
    lines, starts = _upper_envelope(judged, slope)
    ends = np.append(starts[1:], np.inf)
    chosen_mean, chosen_slope = mean[lines], slope[lines]
    expected = np.sum(chosen_mean * (norm.cdf(ends) - norm.cdf(starts))) + np.sum(
        chosen_slope * (norm.pdf(starts) - norm.pdf(ends))
    )
    return max(float(expected) - now, 0.0)


def _upper_envelope(intercept: np.ndarray, slope: np.ndarray) -> tuple[list[int], np.ndarray]:
    """The lines `intercept + slope * z` that are highest somewhere, from z = -inf up, and the
    z at which each becomes the highest (-inf for the first)."""
    lines: list[int] = []
    starts: list[float] = []
    for i in np.lexsort((intercept, slope)):
        if lines and slope[lines[-1]] == slope[i]:
            lines.pop()  # parallel and lower (sorted by intercept within a slope)
            starts.pop()
        crossing = -math.inf
        while lines:
            j = lines[-1]
            crossing = (intercept[j] - intercept[i]) / (slope[i] - slope[j])
            if crossing > starts[-1]:
                break
            lines.pop()
            starts.pop()
            crossing = -math.inf
        lines.append(int(i))
        starts.append(crossing)
    return lines, np.array(starts)
