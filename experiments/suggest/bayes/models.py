"""The Gaussian processes of Bayesian optimization, fitted to the runs.

Two models judge and search. The judge models the runs as measured: it recommends, decides
replicates and the end of a budget, and gives every figure a user reads. The search models the
runs through the output warp (`experiments.suggest.output_warping`) with the worst warped run as
its prior mean (`gaussian_process.fit`, `pessimistic`), or, on a log scale, the response's
logarithm; while there are fewer than three runs per model column, or the warp leaves the runs
as they are, the two are one model. Each limited response has a model of its own (`limits`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor

from experiments.blas import one_blas_thread
from experiments.errors import DomainError
from experiments.factors import Config, FactorSpace, Value
from experiments.suggest import gaussian_process
from experiments.suggest.bayes import reasons
from experiments.suggest.bayes.incumbent import RECOMMENDATION_RISK, Incumbent
from experiments.suggest.bayes.limits import Guard, limit_values
from experiments.suggest.fidelity import Fidelity
from experiments.suggest.gaussian_process import (
    Encoder,
    mean_and_sd,
    noise_variance,
    signal_variance,
    training_rows,
)
from experiments.suggest.output_warping import Warp
from experiments.suggest.problem import Problem
from experiments.suggest.values import Limit, Recommendation, Runs

_MIN_OBSERVATIONS = 2
# Noise is judged (replicates, the warp, exploration) only with this many runs per column.
RUNS_TO_JUDGE_NOISE_PER_FEATURE = 3


@dataclass(frozen=True)
class Models:
    """The Gaussian processes fitted to the runs (the response, maximized throughout, and one
    per limited response) and what the batch may not suggest."""

    space: FactorSpace
    encoder: Encoder
    x_fit: np.ndarray
    w_fit: np.ndarray  # the warped responses `search` learned from, at the rows `x_fit`
    model: GaussianProcessRegressor  # the judge: of the responses as measured
    # Of the warped responses (`output_warping`); None when not asked for (`fitted`).
    search: GaussianProcessRegressor | None
    guards: list[Guard]
    fidelity: Fidelity | None
    measured: frozenset[tuple[Value, ...]]  # every configuration run, at its own length
    learned: list[Config]  # the runs the models learned from (`training_rows`)
    judged: bool
    excluded: set[tuple[Value, ...]]
    incumbent: Incumbent
    deploy: Incumbent  # the recommendation: judged by its mean less one standard deviation

    @classmethod
    @one_blas_thread
    def fitted(cls, problem: Problem, runs: Runs, *, search: bool = True) -> Models | None:
        """The models of `problem` fitted to `runs`, with the search's model when `search`;
        None when the runs cannot be modelled (fewer than two, or all equal). Raises
        DomainError on runs that break the space or lack a limited response."""
        if len(runs) < _MIN_OBSERVATIONS or np.ptp(np.asarray(runs.values, dtype=float)) == 0:
            return None
        observed, y = checked_runs(problem.space, runs.configs, runs.values)
        sign = problem.sign
        target, searched = sign * y, None
        if search:
            searched = sign * np.log(y) if problem.scale == "log" and np.all(y > 0) else target
        return cls.of(
            problem.space,
            observed,
            target,
            runs.failed,
            problem.limits,
            runs.responses,
            problem.seed,
            searched,
        )

    @classmethod
    def of(
        cls,
        space: FactorSpace,
        observed: list[Config],
        target: np.ndarray,
        failed: Sequence[Mapping[str, object]],
        limits: Sequence[Limit],
        responses: Mapping[str, Sequence[float]] | None,
        seed: int,
        searched: np.ndarray | None = None,
    ) -> Models:
        """The models of the runs: the judge learns `target` (the response, maximized), the
        search `searched` through the warp (`target` itself, or the response's logarithm on a
        log scale; None: no search model)."""
        encoder = Encoder(space)
        x = encoder.of_configs(observed)
        broken = [space.check_config(c, in_region=False) for c in failed]
        s = target if searched is None else searched
        x_fit, t_fit, s_fit, keep = _training(encoder, x, broken, target, s)
        model = gaussian_process.fit(x_fit, t_fit, seed)
        judged = len(target) >= RUNS_TO_JUDGE_NOISE_PER_FEATURE * x.shape[1]
        search, w_fit = None, t_fit
        if searched is not None:
            logged = searched is not target
            search, w_fit = _search(model, (x_fit, t_fit, s_fit), s, logged, judged, seed)
        measured = keep[keep < len(target)]
        guards = [
            Guard.of(
                limit, x[measured], limit_values(limit, responses, len(target))[measured], seed
            )
            for limit in limits
        ]
        # Why: a model that blames most of the variation on noise learns more from a
        # replicate; but only with runs enough to tell noise from shape.
        repeats_allowed = judged and noise_variance(model) > signal_variance(model)
        excluded = set() if repeats_allowed else {space.key(c) for c in observed}
        excluded |= {space.key(c) for c in broken}
        fidelity = Fidelity.of(space, encoder)
        incumbent, deploy = _judgements(space, observed, target, model, x, guards, fidelity)
        return cls(
            space,
            encoder,
            x_fit,
            w_fit,
            model,
            search,
            guards,
            fidelity,
            frozenset(space.key(c) for c in observed),
            [observed[i] for i in measured],
            judged,
            excluded,
            incumbent,
            deploy,
        )

    @one_blas_thread
    def predict(
        self, configs: Sequence[Mapping[str, Value]], sign: float
    ) -> list[tuple[float, float]]:
        """The judge's mean (in the response's own sense) and standard deviation of the mean
        at `configs`."""
        mean, sd = mean_and_sd(self.model, self.encoder.of_configs(configs))
        return [(sign * float(m), float(s)) for m, s in zip(mean, sd, strict=True)]

    def searcher(self) -> GaussianProcessRegressor:
        """The search's model; ValueError when the models were fitted without it."""
        if self.search is None:
            raise ValueError("the models were fitted without the search's model")
        return self.search

    def recommendation(self, sign: float) -> Recommendation:
        """What to deploy now (`deploy`), saying at which length it was measured when the
        space has a fidelity."""
        at_full_length = self.space.key(self.deploy.config) in self.measured
        note = reasons.fidelity_note(self.fidelity, at_full_length)
        return self.deploy.recommendation(self.space, sign, note)


def _training(
    encoder: Encoder, x: np.ndarray, broken: list[Config], target: np.ndarray, searched: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rows the models learn from (features, judged and searched responses) and which of
    the runs, failed ones after the measured, they are (`training_rows`)."""
    x_fit, t_fit, s_fit = x, target, searched
    if broken:
        # A configuration whose trial failed counts as the worst result so far, so the
        # model steers away from where trials fail (too many connections, too many nodes)
        # instead of only never repeating that exact point.
        failed_x = encoder.of_configs(broken)
        x_fit = np.vstack([x, failed_x])
        t_fit = np.append(target, np.full(len(broken), target.min()))
        s_fit = np.append(searched, np.full(len(broken), searched.min()))
    keep = training_rows(x_fit, t_fit)
    return x_fit[keep], t_fit[keep], s_fit[keep], keep


def _search(
    model: GaussianProcessRegressor,
    rows: tuple[np.ndarray, np.ndarray, np.ndarray],
    searched: np.ndarray,
    logged: bool,
    judged: bool,
    seed: int,
) -> tuple[GaussianProcessRegressor, np.ndarray]:
    """The search's model and the responses it learned (the judge's own while the warp would
    leave them as they are and the scale is linear)."""
    x_fit, t_fit, s_fit = rows
    # Why only once noise can be judged: a few runs look skewed or not by chance, and a power
    # fitted to them tells of the sample more than of the response.
    warp = Warp.of(searched) if judged else None
    if warp is not None and not warp.identity:
        w_fit = warp.forward(s_fit)
        # Why the worst run as the prior mean: a long upper tail says most of the region is
        # poor, and with the runs' mean as the prior, expected improvement chose the faces.
        return gaussian_process.fit(x_fit, w_fit, seed, pessimistic=True), w_fit
    if logged:
        # Why the logarithm: a latency grows by factors (a scale the objective states, not a
        # rule for every positive response).
        return gaussian_process.fit(x_fit, s_fit, seed), s_fit
    return model, t_fit


def _judgements(
    space: FactorSpace,
    observed: list[Config],
    target: np.ndarray,
    model: GaussianProcessRegressor,
    x: np.ndarray,
    guards: list[Guard],
    fidelity: Fidelity | None,
) -> tuple[Incumbent, Incumbent]:
    """The incumbent (best mean) and the recommendation (best mean less one sd)."""
    # With a fidelity the configurations are judged as measured at its target length, so
    # runs of one configuration at every length inform one judgement; its count and mean
    # are of the full-length runs, when it has any.
    judged_at, x_judged, counted = observed, x, None
    if fidelity is not None:
        judged_at = [fidelity.at_target(c) for c in observed]
        x_judged = fidelity.targeted(x)
        counted = np.array([c == judged_at[i] for i, c in enumerate(observed)])
    incumbent = Incumbent.of(space, judged_at, target, model, x_judged, guards, counted)
    deploy = Incumbent.of(
        space, judged_at, target, model, x_judged, guards, counted, RECOMMENDATION_RISK
    )
    return incumbent, deploy


def unmodellable(space: FactorSpace, runs: Runs) -> DomainError:
    """Why the runs cannot be modelled (`Models.fitted` gave None)."""
    try:
        checked_runs(space, runs.configs, runs.values)
    except DomainError as error:
        return error
    return DomainError("configs", "the runs can be modelled")


def checked_runs(
    space: FactorSpace, configs: Sequence[Mapping[str, object]], values: Sequence[float]
) -> tuple[list[Config], np.ndarray]:
    """The runs' configurations and values, checked; DomainError when they cannot be modelled
    (fewer than two, or all equal)."""
    if len(configs) != len(values):
        raise DomainError("values", "one response value per configuration")
    if len(configs) < _MIN_OBSERVATIONS:
        raise DomainError("configs", f"at least {_MIN_OBSERVATIONS} runs are needed to model")
    observed = []
    for i, config in enumerate(configs):
        try:
            observed.append(space.check_config(config, in_region=False))
        except DomainError as error:
            raise DomainError(f"configs.{i}.{error.field}", error.rule) from None
    numbers = []
    for i, value in enumerate(values):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not math.isfinite(number):
            raise DomainError(f"values.{i}", "must be a finite number")
        numbers.append(number)
    y = np.array(numbers)
    if np.ptp(y) == 0:
        raise DomainError("values", "every run gave the same result: nothing to model")
    return observed, y
