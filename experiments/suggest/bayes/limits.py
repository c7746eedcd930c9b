"""Limits on other responses (``latency_p95_ms <= 50``): each limited response has a Gaussian
process of its own, and a candidate's expected improvement is multiplied by the probability
that every limit is met (Gardner et al. 2014, "Bayesian optimization with inequality
constraints"), cut to a tiny share where a predicted mean breaks a limit."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm
from sklearn.gaussian_process import GaussianProcessRegressor

from experiments.errors import DomainError
from experiments.suggest import gaussian_process
from experiments.suggest.gaussian_process import mean_and_sd
from experiments.suggest.values import Limit

# The share of its score a candidate keeps when its predicted means break a limit.
BREAKS_LIMIT = 1e-6


@dataclass(frozen=True)
class Guard:
    """A limit on another response and the Gaussian process that predicts that response."""

    limit: Limit
    model: GaussianProcessRegressor
    logged: bool  # the model learned the response's logarithm

    @classmethod
    def of(cls, limit: Limit, x: np.ndarray, values: np.ndarray, seed: int) -> Guard:
        """The limit's model of `values` at the rows `x`: of their logarithm when every value
        and every bound is positive."""
        # Why the logarithm: a latency grows by factors, from 10 ms to seconds where queues
        # build, and a model of its raw values spends itself on the seconds.
        bounds = [b for b in (limit.min, limit.max) if b is not None]
        logged = bool(np.all(values > 0) and all(b > 0 for b in bounds))
        learned = np.log(values) if logged else values
        return cls(limit, gaussian_process.fit(x, learned, seed, signal_prior=False), logged)

    def probability(self, x: np.ndarray) -> np.ndarray:
        """Probability that the response meets the limit at each row of features."""
        return _chance(self._distances(x))

    def slack(self, x: np.ndarray) -> np.ndarray:
        """Standard deviations of its mean by which the predicted response meets the limit at
        each row of features (negative where it breaks it)."""
        return _slack(self._distances(x))

    def weight(self, x: np.ndarray) -> np.ndarray:
        """The probability of meeting the limit at each row of features, cut to a tiny share
        where the predicted response breaks it (the scorer): one prediction for both."""
        distances = self._distances(x)
        return _chance(distances) * np.where(_slack(distances) >= 0.0, 1.0, BREAKS_LIMIT)

    def predicted(self, x: np.ndarray) -> np.ndarray:
        """The response predicted at each row of features (the median, when logged)."""
        mean, _ = mean_and_sd(self.model, x)
        return np.exp(mean) if self.logged else mean

    def _distances(self, x: np.ndarray) -> np.ndarray:
        """For each bound (rows) and row of features (columns), how many standard deviations of
        its mean the predicted response lies inside the bound, on the model's scale."""
        mean, sd = mean_and_sd(self.model, x)
        sd = np.maximum(sd, 1e-12)
        scale = math.log if self.logged else float
        inside = []
        if self.limit.max is not None:
            inside.append((scale(self.limit.max) - mean) / sd)
        if self.limit.min is not None:
            inside.append((mean - scale(self.limit.min)) / sd)
        return np.array(inside).reshape(-1, len(mean))


def limit_values(
    limit: Limit, responses: Mapping[str, Sequence[float]] | None, runs: int
) -> np.ndarray:
    """The runs' values of the limited response, checked."""
    values = (responses or {}).get(limit.response)
    if values is None or len(values) != runs:
        raise DomainError(
            f"responses.{limit.response}", "a limited response needs one value per run"
        )
    numbers = np.array([float(v) for v in values])
    if not np.all(np.isfinite(numbers)):
        raise DomainError(f"responses.{limit.response}", "must be finite numbers")
    return numbers


def _chance(distances: np.ndarray) -> np.ndarray:
    return np.prod(norm.cdf(distances), axis=0)


def _slack(distances: np.ndarray) -> np.ndarray:
    return np.min(distances, axis=0, initial=np.inf)
