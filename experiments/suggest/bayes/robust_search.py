"""Bayesian optimization's search with noise factors: expected improvement of the robust aim.

A candidate is a control configuration: the search scores a row of the lattice by crossing it
with every noise scenario (its own noise values replaced), reducing the model's means there by
the aim to mu_A = sum_z w_z mu_z (the aim's weights: equal for the mean, the worst level, the
two levels a quantile falls between) with sd_A = sum_z w_z sd_z (the standard deviation of
that sum when the levels' predictions are perfectly correlated, its upper bound), and taking
the closed-form expected improvement of N(mu_A, sd_A^2) over the best aim of the control
configurations run (plug-in, as `bayes` does without noise). A limit counts by its least
likely level. Only rows at the first scenario's noise values score: the others are the same
control configuration. The kriging believer believes a pick at every level, since the plan runs
it there (`experiments.suggest.noise`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.special
from sklearn.gaussian_process import GaussianProcessRegressor

from experiments.factors import Config
from experiments.numbers import format_value
from experiments.robust import RobustAim, crossed, noise_scenarios
from experiments.suggest.bayes.limits import Guard
from experiments.suggest.fidelity import Fidelity
from experiments.suggest.gaussian_process import Encoder, indistinguishable, mean_and_sd
from experiments.suggest.noise import control_of
from experiments.suggest.problem import Problem

__all__ = ["RobustSearch"]


@dataclass(frozen=True)
class RobustSearch:
    """The noise scenarios as feature columns, and the aim in the models' maximized sense."""

    problem: Problem
    encoder: Encoder
    columns: np.ndarray  # the feature columns of the noise factors
    levels: np.ndarray  # one row per scenario: its features at `columns`
    aim: RobustAim

    @classmethod
    def of(cls, problem: Problem, encoder: Encoder, example: Config) -> RobustSearch | None:
        """The search of `problem` (None without noise factors); `example` is any run."""
        if not problem.noisy:
            return None
        rows = encoder.of_configs(crossed([control_of(problem, example)], _scenarios(problem)))
        columns = np.flatnonzero(np.ptp(rows, axis=0) > 0)
        aim = problem.aim
        if problem.goal == "minimize" and aim.aim == "quantile":
            # The q quantile of a minimized response is the 1 - q quantile of its negation.
            aim = RobustAim("quantile", 1.0 - float(aim.quantile or 0.0))
        return cls(problem, encoder, columns, rows[:, columns], aim)

    @property
    def size(self) -> int:
        """Number of noise scenarios."""
        return len(self.levels)

    def crossed(self, x: np.ndarray) -> np.ndarray:
        """Each row of `x` at every scenario, row-major (row i * size + j: row i at j)."""
        rows = np.repeat(np.atleast_2d(x), self.size, axis=0)
        rows[:, self.columns] = np.tile(self.levels, (len(rows) // self.size, 1))
        return rows

    def at_every_level(self, config: Config) -> list[Config]:
        """The control configuration of `config` at every scenario."""
        return crossed([control_of(self.problem, config)], _scenarios(self.problem))

    def reduced(self, model: GaussianProcessRegressor, x: np.ndarray) -> tuple[np.ndarray, ...]:
        """The aim's mean and standard deviation at each row of `x` (module doc)."""
        mean, sd = mean_and_sd(model, self.crossed(x))
        mean, sd = mean.reshape(-1, self.size), sd.reshape(-1, self.size)
        weights = _weights(mean, self.aim)
        return (weights * mean).sum(axis=1), (weights * sd).sum(axis=1)

    def best(self, model: GaussianProcessRegressor, configs: Sequence[Config]) -> float:
        """The best aim of the model's means over the control configurations of `configs`."""
        return float(self.reduced(model, self.encoder.of_configs(list(configs)))[0].max())

    def scorer(
        self,
        model: GaussianProcessRegressor,
        best: float,
        guards: Sequence[Guard],
        fidelity: Fidelity | None,
    ) -> Callable[[np.ndarray], np.ndarray]:
        """Expected improvement of the aim over `best` (module doc), as `batch.scorer` weighs
        it by the limits and the fidelity."""

        def score(x: np.ndarray) -> np.ndarray:
            at = x if fidelity is None else fidelity.targeted(x)
            mean, sd = self.reduced(model, at)
            ei = _expected_improvement(mean - best, sd)
            for guard in guards:
                ei = ei * guard.weight(self.crossed(at)).reshape(-1, self.size).min(axis=1)
            if fidelity is not None:
                ei = ei * fidelity.weight(model, x) * ~indistinguishable(model, x)
            return ei * np.all(np.isclose(x[:, self.columns], self.levels[0]), axis=1)

        return score

    def reason(
        self, model: GaussianProcessRegressor, at: np.ndarray, ei: float, best: float
    ) -> str:
        """Why the control configuration at `at` is picked, in the aim's terms (`best`: the
        judge's best aim so far, maximized sense)."""
        goal, sign = self.problem.goal, self.problem.sign
        found, spread = self.reduced(model, at)
        mean, sd = sign * float(found[0]), float(spread[0])
        return (
            f"Expected improvement of {format_value(ei)} over the best control configuration so"
            f" far, judged by {self.problem.aim.text(goal)} (the model puts the best's at"
            f" {format_value(sign * best)}, this one's at {format_value(mean)}"
            f" ± {format_value(sd)})."
        )


def _scenarios(problem: Problem) -> list[Config]:
    return noise_scenarios(problem.space)


def _weights(values: np.ndarray, aim: RobustAim) -> np.ndarray:
    """Each row's weights that make the aim (maximized sense) of its values their weighted sum."""
    count, order = values.shape[1], np.argsort(values, axis=1, kind="stable")
    if aim.aim == "mean":
        return np.full(values.shape, 1.0 / count)
    position = 0.0 if aim.aim == "worst" else (count - 1) * float(aim.quantile or 0.0)
    below, share = int(position), position % 1.0
    weights, rows = np.zeros(values.shape), np.arange(len(values))
    weights[rows, order[:, below]] += 1.0 - share
    weights[rows, order[:, min(below + 1, count - 1)]] += share
    return weights


def _expected_improvement(gain: np.ndarray, sd: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, gain / sd, 0.0)
    density = np.exp(-(z**2) / 2.0) / np.sqrt(2.0 * np.pi)
    ei = np.where(sd > 0, gain * scipy.special.ndtr(z) + sd * density, np.maximum(gain, 0.0))
    return np.maximum(ei, 0.0)
