"""Bayesian optimization's entry points: the next batch and the recommendation from one fit of
the models, and the models' predictions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from experiments.blas import one_blas_thread
from experiments.constraints import Constraint
from experiments.errors import DomainError
from experiments.factors import FactorSpace, Value
from experiments.goals import check_goal, check_scale
from experiments.suggest import gaussian_process
from experiments.suggest.bayes.batch import LEADERS, batch
from experiments.suggest.bayes.candidates import Pool
from experiments.suggest.bayes.models import Models, checked_runs
from experiments.suggest.bayes.rules import FINAL_SHARE
from experiments.suggest.gaussian_process import Encoder, mean_and_sd, training_rows
from experiments.suggest.values import Limit, Recommendation, Suggestion


@one_blas_thread
def bayes_batch(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    *,
    goal: str = "maximize",
    scale: str = "linear",
    count: int = 1,
    constraints: Sequence[Constraint] = (),
    limits: Sequence[Limit] = (),
    responses: Mapping[str, Sequence[float]] | None = None,
    failed: Sequence[Mapping[str, object]] = (),
    point_types: Sequence[str] = (),
    seed: int = 0,
    candidates: int = 4096,
    budget_left: int | None = None,
    time_left: float | None = None,
) -> tuple[list[Suggestion], Recommendation]:
    """Up to `count` configurations of highest expected improvement, chosen as one batch, and,
    from the same models, the configuration to deploy now (`recommend`). `budget_left` is the
    trials the caller can still afford, `time_left` the share of a budget of trial time not
    yet spent. Raises DomainError on bad input, or when no configuration meets the constraints
    or every allowed one has been run."""
    observed, y = checked_runs(space, configs, values)
    check_goal(goal)
    check_scale(scale)
    _check_at_least("count", count, 1)
    _check_at_least("candidates", candidates, 16)
    if budget_left is not None:
        _check_at_least("budget_left", budget_left, 1)
    if time_left is not None and not 0.0 < time_left <= 1.0:
        raise DomainError("time_left", "must be the share of the time budget left, above 0 up to 1")
    sign = 1.0 if goal == "maximize" else -1.0
    searched = sign * np.log(y) if scale == "log" and np.all(y > 0) else None
    models = Models.of(space, observed, sign * y, failed, limits, responses, seed, searched)
    # The lattice takes the values of the runs the models learned from (and of the leaders),
    # not of every run: beyond the training cap its lines grew with every run.
    on_lattice = [*models.learned, *models.incumbent.ranked[:LEADERS]]
    pool = Pool(space, models.encoder, constraints, on_lattice, seed, candidates, models.fidelity)
    final = (
        budget_left is not None
        and budget_left <= FINAL_SHARE * (len(observed) + len(failed) + budget_left)
    ) or (time_left is not None and time_left <= FINAL_SHARE)
    suggestions = batch(models, pool, sign, count, list(point_types), final)
    if not suggestions:
        raise DomainError(
            "configs",
            "every configuration allowed by the factors and constraints has been run already",
        )
    return suggestions, models.recommendation(sign)


@one_blas_thread
def recommend(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    *,
    goal: str = "maximize",
    limits: Sequence[Limit] = (),
    responses: Mapping[str, Sequence[float]] | None = None,
    failed: Sequence[Mapping[str, object]] = (),
    seed: int = 0,
) -> Recommendation:
    """The configuration to deploy: of those run, the one of best Gaussian-process mean less
    one standard deviation (among those predicted to meet every limit with one standard
    deviation to spare, when any is). Raises DomainError when the runs cannot be modelled
    (fewer than two, or all equal)."""
    observed, y = checked_runs(space, configs, values)
    sign = 1.0 if check_goal(goal) == "maximize" else -1.0
    models = Models.of(space, observed, sign * y, failed, limits, responses, seed)
    return models.recommendation(sign)


@one_blas_thread
def predict(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    points: Sequence[Mapping[str, Value]],
    *,
    seed: int = 0,
) -> list[tuple[float, float]] | None:
    """The Gaussian process's mean and standard deviation of the mean at `points`, fitted to
    the runs; None when the runs cannot be modelled (fewer than two, or all equal)."""
    try:
        observed, y = checked_runs(space, configs, values)
    except DomainError:
        return None
    encoder = Encoder(space)
    x = encoder.of_configs(observed)
    keep = training_rows(x, y)
    model = gaussian_process.fit(x[keep], y[keep], seed)
    mean, sd = mean_and_sd(model, encoder.of_configs(points))
    return [(float(m), float(s)) for m, s in zip(mean, sd, strict=True)]


def _check_at_least(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise DomainError(name, f"must be a whole number of at least {low}")
