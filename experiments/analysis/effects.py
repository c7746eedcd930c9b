"""How much each factor matters: its effect, its share of the sum of squares, its test, and
its profile (the prediction along it with the others at the optimum)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np
from statsmodels.regression.linear_model import RegressionResults

from experiments.analysis.results import FactorEffect, Optimum, Profile
from experiments.analysis.statistics import AnovaRow, residual_ss
from experiments.designs import factor_levels
from experiments.factors import Factor, FactorSpace, Value
from experiments.numbers import finite_or_none
from experiments.terms import ModelTerms, columns_of, factor_columns, main_columns

# Settings of a factor's profile when its range is not a short run of whole numbers.
PROFILE_POINTS = 21


def ranked_effects(
    space: FactorSpace,
    terms: ModelTerms,
    results: RegressionResults,
    table: Sequence[AnovaRow],
    best: Optimum,
    goal: str,
) -> list[FactorEffect]:
    """Every factor in the model, most important first (share of the sum of squares, then
    size of the effect)."""
    at_optimum = main_columns(space, [best.config])[0]
    total = next(row.sum_sq for row in table if row.kind == "total")
    effects = [
        _effect(space, terms, results, i, at_optimum, total, goal)
        for i, f in enumerate(space.factors)
        if columns_of(f)
    ]
    return sorted(effects, key=lambda e: (-(e.share_of_ss or 0.0), -abs(e.effect)))


def _centre_mains(space: FactorSpace) -> np.ndarray:
    """Main-effect columns at the centre: numeric factors at 0, categorical levels averaged."""
    return np.concatenate(
        [
            np.zeros(columns_of(f))
            if f.is_numeric
            else np.full(columns_of(f), 1.0 / (columns_of(f) + 1))
            for f in space.factors
        ]
    )


def _effect(
    space: FactorSpace,
    terms: ModelTerms,
    results: RegressionResults,
    index: int,
    at_optimum: np.ndarray,
    total: float,
    goal: str,
) -> FactorEffect:
    factor = space.factors[index]
    settings: list[Value]
    if factor.is_numeric:
        settings = [factor.check_value(end) for end in factor.bounds]
    else:
        settings = list(factor.levels or ())
    start = sum(columns_of(f) for f in space.factors[:index])

    def predicted(base: np.ndarray, along: Sequence[Value] = settings) -> np.ndarray:
        block = factor_columns(factor, along)
        rows = np.tile(base, (len(along), 1))
        rows[:, start : start + block.shape[1]] = block
        return np.asarray(terms.matrix(rows) @ results.params)

    centre = predicted(_centre_mains(space))
    low, high = max(
        itertools.combinations(range(len(settings)), 2),
        key=lambda pair: abs(centre[pair[1]] - centre[pair[0]]),
    )
    optimum = predicted(at_optimum)
    change = float(optimum[high] - optimum[low])
    involved = [j for j, factors in enumerate(terms.factors) if index in factors]
    # A factor whose every term model selection dropped has no test: its effect is zero.
    p_value = results.f_test(np.eye(len(terms.names))[involved]).pvalue if involved else None
    return FactorEffect(
        factor=factor.name,
        in_model=bool(involved),
        settings_run=terms.distinct[index],
        effect=float(centre[high] - centre[low]),
        change_at_optimum=change,
        share_of_ss=_share(results, involved, total),
        p_value=finite_or_none(p_value),
        direction="increases" if change > 0 else "decreases" if change < 0 else "none",
        low=settings[low],
        high=settings[high],
        profile=_profile(factor, lambda along: predicted(at_optimum, along), goal),
    )


def _profile(
    factor: Factor, predicted: Callable[[Sequence[Value]], np.ndarray], goal: str
) -> Profile:
    """The factor's predicted curve with the others at the optimum (see `Profile`)."""
    if not factor.is_numeric:
        settings = list(factor.levels or ())
    elif factor.kind == "integer" and factor.bounds[1] - factor.bounds[0] <= PROFILE_POINTS - 1:
        settings = list(range(int(factor.bounds[0]), int(factor.bounds[1]) + 1))
    else:
        settings = sorted({value for _, value in factor_levels(factor, PROFILE_POINTS)})
    values = [float(v) for v in predicted(settings)]
    pick = int(np.argmax(values) if goal == "maximize" else np.argmin(values))
    return Profile(settings=settings, predicted=values, best=settings[pick])


def _share(results: RegressionResults, involved: Sequence[int], total: float) -> float | None:
    """Percent of the total sum of squares that the model loses when the columns `involved`
    (every term containing a factor) are dropped: the sum of squares of the factor's joint
    F-test, the one its p-value comes from. An interaction counts for each of its factors, so
    the shares of factors that interact overlap and need not add up to 100. None when the
    model has no term of the factor or the runs do not vary."""
    if not involved or total <= 0:
        return None
    x = np.asarray(results.model.exog, dtype=float)
    y = np.asarray(results.model.endog, dtype=float)
    kept = [j for j in range(x.shape[1]) if j not in involved]
    without, _ = residual_ss(x[:, kept], y)
    return 100.0 * max(without - float(results.ssr), 0.0) / total
