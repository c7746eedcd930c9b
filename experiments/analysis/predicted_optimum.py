"""The predicted optimum of a fitted model: the best configuration by the goal (or the most
desirable one) inside the region, with its intervals, the limits it meets and the edges a
follow-up could widen."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from statsmodels.regression.linear_model import RegressionResults

from experiments.analysis.model import CONFIDENCE, FittedModel
from experiments.analysis.optimize import (
    DesirabilityGoal,
    Predictor,
    ResponseBound,
    best_configuration,
    most_desirable,
)
from experiments.analysis.region import DataRegion
from experiments.analysis.results import Optimum, ResponseGoal, ResponseLimit
from experiments.constraints import Constraint
from experiments.factors import Config, Factor, FactorSpace, Value
from experiments.lattice import candidate_values
from experiments.numbers import finite_or_none
from experiments.terms import ModelTerms, main_columns


def predicted_optimum(
    fitted: FittedModel,
    goal: str,
    constraints: Sequence[Constraint],
    limits: Sequence[ResponseLimit],
    desirability: Sequence[ResponseGoal],
) -> Optimum:
    space, terms, results, observed = fitted.space, fitted.terms, fitted.results, fitted.observed
    region = DataRegion(space, observed)
    bounds = _bounds(fitted, limits)
    starts = _best_observed(observed, results, goal)
    candidates = candidate_values(space, observed)
    inside = region.contains
    length = space.fidelity
    if length is not None:
        # The trials' length is how a configuration was measured, not part of it: the optimum
        # is the configuration as a full-length run measures it (coded +1; the search's
        # neighbour moves would leave a single candidate value).
        full, column = length.decode(1.0), space.names.index(length.name)
        candidates[column] = [full]
        starts = [c | {length.name: full} for c in starts]

        def inside(coded: np.ndarray) -> np.ndarray:
            return region.contains(coded) & np.isclose(coded[:, column], 1.0)

    common: dict[str, Any] = {
        "bounds": bounds,
        "constraints": constraints,
        "starts": starts,
        "region": inside,
    }
    if desirability:
        goals = _desirability_goals(fitted, desirability)
        search = most_desirable(space, candidates, goals, **common)
    else:
        search = best_configuration(
            space, candidates, _predictor(terms, results), goal=goal, **common
        )
    config = search.config
    mains = main_columns(space, [config])
    frame = results.get_prediction(terms.matrix(mains)).summary_frame(alpha=1.0 - CONFIDENCE)
    return Optimum(
        config=config,
        predicted=float(frame["mean"].iloc[0]),
        ci_low=finite_or_none(frame["mean_ci_lower"].iloc[0]),
        ci_high=finite_or_none(frame["mean_ci_upper"].iloc[0]),
        pi_low=finite_or_none(frame["obs_ci_lower"].iloc[0]),
        pi_high=finite_or_none(frame["obs_ci_upper"].iloc[0]),
        on_edge=widenable_edges(space, observed, config, terms),
        search=search.search,
        region="the hull of the observed runs" if region.cut_to_data else "the factor ranges",
        neighbours_checked=search.neighbours_checked,
        limits_met={b.text: search.predictions[b.response] for b in bounds},
        desirability=({"overall": search.score, **search.desirabilities} if desirability else None),
    )


def _bounds(fitted: FittedModel, limits: Sequence[ResponseLimit]) -> list[ResponseBound]:
    """Each limit on another response as bounds on its prediction by the same terms."""
    return [
        ResponseBound(
            response=limit.response,
            predict=_predictor(fitted.terms, fitted.same_terms(limit.values)),
            operator=operator,
            limit=value,
        )
        for limit in limits
        for operator, value in (("<=", limit.max), (">=", limit.min))
        if value is not None
    ]


def _desirability_goals(
    fitted: FittedModel, desirability: Sequence[ResponseGoal]
) -> list[DesirabilityGoal]:
    """Each response goal with its prediction by the same terms."""
    return [
        DesirabilityGoal(
            response=g.response,
            predict=_predictor(fitted.terms, fitted.same_terms(g.values)),
            goal=g.goal,
            low=g.low,
            high=g.high,
            target=g.target,
            weight=g.weight,
            importance=g.importance,
        )
        for g in desirability
    ]


def _best_observed(
    observed: list[Config], results: RegressionResults, goal: str, count: int = 5
) -> list[Config]:
    """The runs with the best fitted values: where a coordinate search should start."""
    fitted = np.asarray(results.fittedvalues, dtype=float)
    order = np.argsort(-fitted if goal == "maximize" else fitted)
    return [observed[i] for i in order[:count]]


def _predictor(terms: ModelTerms, results: RegressionResults) -> Predictor:
    params = np.asarray(results.params)
    return lambda mains: terms.matrix(mains) @ params


def widenable_edges(
    space: FactorSpace, observed: Sequence[Config], config: Mapping[str, Value], terms: ModelTerms
) -> dict[str, str]:
    """The numeric factors `config` sets at an end of their range ("low" or "high") where a
    follow-up could widen the range: not a factor the runs held at one setting or the model
    left out (its setting in `config` is arbitrary), not the fidelity (held at its full
    length), not a count at 0 or 1 (no fewer nodes than one), not a non-negative quantity at 0,
    not a share at 1."""
    edges = {}
    modelled = terms.modelled_factors
    for i, factor in enumerate(space.factors):
        if (
            not factor.is_numeric
            or factor.fidelity
            or i not in modelled
            or len({c[factor.name] for c in observed}) < 2
        ):
            continue
        low, high = factor.bounds
        value = float(config[factor.name])
        if value == low and not _at_floor(factor, low):
            edges[factor.name] = "low"
        elif value == high and not (factor.kind == "continuous" and low >= 0 and high == 1):
            edges[factor.name] = "high"
    return edges


def _at_floor(factor: Factor, low: float) -> bool:
    """Whether nothing lies below `low`: a count at 0 or 1, a non-negative quantity at 0."""
    if factor.kind == "integer":
        return low in (0, 1)
    return low == 0
