"""Short trials as a cheap fidelity: what a run of a shorter length is worth to the search.

When the factor space has a `fidelity` factor (the trial's length, runtime_s), the Gaussian
process models it as any other factor, so it learns how far a short run's result lies from a
full one's. The measurement that counts is at the factor's high end, the *target*: the
incumbent, the recommendation and the limits are judged there. A candidate (a configuration at
some length) scores the expected improvement of its configuration at the target, times the
posterior correlation between a run at its length (noise and all) and that configuration's mean
at the target, times the cost of a full trial over its own: the augmented expected improvement
of Huang et al. (2006). Where the model finds that the length does not change the result, short
runs win by their price; where it does (the published stall of a Galera cluster after 120 s),
or where short runs have already taught what they can, the correlation falls and full runs win.

A trial costs its length plus `TRIAL_OVERHEAD_S`, what a trial took beyond its runtime on the
lab (benchmarks/runtime_fidelity.py). Candidate lengths are a ladder from the low end doubling
to the high end: 37 s and 38 s teach the same, and a short ladder keeps the search small.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor

from experiments.factors import Config, Factor, FactorSpace, Value
from experiments.numbers import format_value
from experiments.suggest.gaussian_process import Encoder, run_correlation

__all__ = ["TRIAL_OVERHEAD_S", "Fidelity"]

# What a trial takes beyond its runtime at the same node count: 2.7 s on the lab target
# (starting sysbench, its warm-up, reading the nodes' status: benchmarks/runtime_fidelity.py)
# and 0.4 s of the service (benchmarks/lab_trials.py). A resize costs more, which this leaves out.
TRIAL_OVERHEAD_S = 3.0


@dataclass(frozen=True)
class Fidelity:
    """The space's fidelity factor and where it lies among the model's features."""

    factor: Factor
    column: int  # its feature column (one: it is numeric)

    @classmethod
    def of(cls, space: FactorSpace, encoder: Encoder) -> Fidelity | None:
        """The fidelity of `space`, or None when it has none."""
        factor = space.fidelity
        if factor is None:
            return None
        return cls(factor, encoder.column_of(space.names.index(factor.name)))

    @property
    def target(self) -> Value:
        """The length whose measurement counts: the high end."""
        return self.factor.decode(1.0)

    def ladder(self) -> list[Value]:
        """The candidate lengths: the low end doubling up to the high end."""
        if self.factor.levels is not None:
            return sorted(self.factor.check_value(v) for v in self.factor.levels)  # type: ignore[type-var]
        low, high = self.factor.bounds
        steps = math.floor(math.log2(high / low))
        lengths = {self.factor.check_value(self._rounded(low * 2.0**k)) for k in range(steps + 1)}
        return sorted(lengths | {self.target})  # type: ignore[type-var]

    def _rounded(self, value: float) -> float:
        return float(round(value)) if self.factor.kind == "integer" else value

    def at_target(self, config: Mapping[str, Value]) -> Config:
        """The configuration measured at the target length."""
        return dict(config) | {self.factor.name: self.target}

    def targeted(self, x: np.ndarray) -> np.ndarray:
        """Feature rows with the fidelity column at the target."""
        at = np.array(x, dtype=float, copy=True)
        at[:, self.column] = 1.0
        return at

    def cost(self, coded: np.ndarray) -> np.ndarray:
        """Seconds a trial takes at each coded length."""
        # Candidates hold a few distinct lengths (the ladder): decode each once.
        lengths, where = np.unique(np.asarray(coded, dtype=float), return_inverse=True)
        natural = np.array([self.factor.unrounded(float(c)) for c in lengths])
        return natural[where.ravel()] + TRIAL_OVERHEAD_S

    def weight(self, model: GaussianProcessRegressor, x: np.ndarray) -> np.ndarray:
        """What a run at each row's length is worth against a full one, per second: its
        posterior correlation with the configuration's mean at the target, times the cost of a
        full run over its own."""
        return self.correlation(model, x) * self.cost(np.ones(1)) / self.cost(x[:, self.column])

    def correlation(self, model: GaussianProcessRegressor, x: np.ndarray) -> np.ndarray:
        """The posterior correlation between a run at each row and the mean of its
        configuration at the target (`gaussian_process.run_correlation`)."""
        return run_correlation(model, x, self.targeted(x))

    def sentence(self, model: GaussianProcessRegressor, point: np.ndarray) -> str:
        """Why a suggestion runs at its length, for the reason shown to the user."""
        name, length = self.factor.name, point[0, self.column]
        if length >= 1.0:
            return ""
        share = float(self.cost(np.array([length]))[0] / self.cost(np.ones(1))[0])
        value = self.factor.decode(float(length))
        correlation = float(self.correlation(model, point)[0])
        return (
            f" It runs at {name} {format_value(value)} (the full measurement is at"
            f" {format_value(self.target)}): {share:.0%} of a full trial's time, for a result"
            f" the model correlates {correlation:.2f} with the configuration's full-length mean."
        )
