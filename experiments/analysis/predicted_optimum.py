"""The predicted optimum of a fitted model: the best configuration by the goal (or the most
desirable one) inside the region, with its intervals, the limits it meets and the edges a
follow-up could widen."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from statsmodels.regression.linear_model import RegressionResults

from experiments.analysis.model import CONFIDENCE, FittedModel
from experiments.analysis.optimize import (
    DesirabilityGoal,
    Predictor,
    Region,
    ResponseBound,
    best_configuration,
    most_desirable,
)
from experiments.analysis.region import DataRegion
from experiments.analysis.results import Optimum, ResponseGoal, ResponseLimit
from experiments.analysis.robust_optimum import Crossing, robust_report
from experiments.constraints import Constraint
from experiments.errors import DomainError
from experiments.factors import Config, Factor, FactorSpace, Value
from experiments.lattice import candidate_values
from experiments.numbers import finite_or_none
from experiments.robust import RobustAim, aggregate, noise_factors
from experiments.terms import ModelTerms, main_columns


def predicted_optimum(
    fitted: FittedModel,
    goal: str,
    constraints: Sequence[Constraint],
    limits: Sequence[ResponseLimit],
    desirability: Sequence[ResponseGoal],
    robust: RobustAim | None = None,
) -> Optimum:
    """The best predicted configuration in the region. With noise factors it is the best
    configuration of the control factors by the aim `robust` (None: the mean over the noise
    levels), see `experiments.analysis.robust_optimum`."""
    region = DataRegion(fitted.space, fitted.observed)
    where = "the hull of the observed runs" if region.cut_to_data else "the factor ranges"
    if noise_factors(fitted.space):
        crossing = Crossing(fitted.space)
        return _robust_optimum(
            fitted,
            crossing,
            _setup(fitted, goal, region, crossing),
            (goal, robust or RobustAim()),
            (constraints, limits, desirability),
            where=where,
        )
    space, terms, results, observed = fitted.space, fitted.terms, fitted.results, fitted.observed
    setup = _setup(fitted, goal, region, None)
    bounds = _bounds(fitted, limits)
    common = setup.common(bounds, constraints)
    if desirability:
        goals = _desirability_goals(fitted, desirability)
        search = most_desirable(space, setup.candidates, goals, **common)
    else:
        search = best_configuration(
            space, setup.candidates, _predictor(terms, results), goal=goal, **common
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
        region=where,
        neighbours_checked=search.neighbours_checked,
        limits_met={b.text: search.predictions[b.response] for b in bounds},
        desirability=({"overall": search.score, **search.desirabilities} if desirability else None),
    )


@dataclass(frozen=True)
class _Setup:
    """What the search runs over: the factors chosen, their candidate values, where the
    coordinate-wise search starts and the region (a mask over coded rows of those factors)."""

    space: FactorSpace
    candidates: list[list[Value]]
    starts: list[Config]
    region: Region

    def common(
        self, bounds: Sequence[ResponseBound], constraints: Sequence[Constraint]
    ) -> dict[str, Any]:
        """The search's keyword arguments."""
        return {
            "bounds": bounds,
            "constraints": constraints,
            "starts": self.starts,
            "region": self.region,
        }


def _setup(fitted: FittedModel, goal: str, region: DataRegion, crossing: Crossing | None) -> _Setup:
    """The search over every factor, or over the control factors of `crossing`."""
    space, observed = fitted.space, fitted.observed
    candidates = candidate_values(space, observed)
    starts = _best_observed(observed, fitted.results, goal)
    inside: Region = region.contains
    if crossing is not None:
        space, candidates = crossing.control, crossing.candidates(candidates)
        inside = crossing.region(region.contains)
        starts = list({space.key(c): c for c in map(crossing.control_config, starts)}.values())
    length = space.fidelity
    if length is not None:
        # The trials' length is how a configuration was measured, not part of it: the optimum
        # is the configuration as a full-length run measures it (coded +1; the search's
        # neighbour moves would leave a single candidate value).
        full, column = length.decode(1.0), space.names.index(length.name)
        candidates[column] = [full]
        starts = [c | {length.name: full} for c in starts]
        within = inside

        def inside(coded: np.ndarray) -> np.ndarray:
            return within(coded) & np.isclose(coded[:, column], 1.0)

    return _Setup(space=space, candidates=candidates, starts=starts, region=inside)


def _robust_optimum(
    fitted: FittedModel,
    crossing: Crossing,
    setup: _Setup,
    aims: tuple[str, RobustAim],
    objective: tuple[Sequence[Constraint], Sequence[ResponseLimit], Sequence[ResponseGoal]],
    *,
    where: str,
) -> Optimum:
    """The best control configuration by the aim across the noise levels (see
    `experiments.analysis.robust_optimum` for the rules on limits and desirability)."""
    (goal, aim), (constraints, limits, desirability) = aims, objective
    bounds = [
        replace(b, predict=crossing.bounded(b.predict, b.operator)) for b in _bounds(fitted, limits)
    ]
    common = setup.common(bounds, crossing.constraints(constraints))
    scores, desirabilities = None, None
    if desirability:
        goals = _desirability_goals(fitted, desirability)
        search = best_configuration(
            setup.space,
            setup.candidates,
            crossing.desirable(goals, aim),
            response="overall desirability",
            **common,
        )
        scores, desirabilities = _robust_desirability(crossing, goals, aim, search.config)
    else:
        predict = crossing.reduced(_predictor(fitted.terms, fitted.results), aim, goal)
        search = best_configuration(setup.space, setup.candidates, predict, goal=goal, **common)
    report, standing = robust_report(fitted, crossing, search.config, aim, goal, scores)
    return Optimum(
        config=search.config,
        predicted=standing.predicted,
        ci_low=standing.ci_low,
        ci_high=standing.ci_high,
        pi_low=standing.pi_low,
        pi_high=standing.pi_high,
        on_edge=widenable_edges(
            fitted.space, fitted.observed, search.config | report.held, fitted.terms
        ),
        search=search.search,
        region=where,
        neighbours_checked=search.neighbours_checked,
        limits_met={b.text: search.predictions[b.response] for b in bounds},
        desirability=desirabilities,
        robust=report,
    )


def _robust_desirability(
    crossing: Crossing, goals: Sequence[DesirabilityGoal], aim: RobustAim, config: Config
) -> tuple[np.ndarray, dict[str, float]]:
    """The overall desirability of each scenario at the control optimum, and the overall and
    per-response desirabilities there, each the aim of its values across the scenarios;
    refused when the aim leaves the overall desirability at 0."""
    mains = main_columns(crossing.control, [config])
    scores = crossing.overall(goals, mains)[0]
    overall = float(aggregate(scores[None, :], aim, "maximize")[0])
    if overall <= 0.0:
        raise DomainError(
            "objective.desirability",
            "no configuration in the region is predicted to bring every response inside its "
            "acceptable range ("
            + ", ".join(f"{g.response} {g.low:g} to {g.high:g}" for g in goals)
            + f") by {aim.text('maximize')}: the overall desirability is 0 everywhere",
        )
    each = {
        g.response: float(
            aggregate(np.asarray(g.of(crossing.table(g.predict, mains))), aim, "maximize")[0]
        )
        for g in goals
    }
    return scores, {"overall": overall, **each}


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
    length), not a noise factor (varied, never chosen), not a count at 0 or 1 (no fewer nodes
    than one), not a non-negative quantity at 0, not a share at 1."""
    edges = {}
    modelled = terms.modelled_factors
    for i, factor in enumerate(space.factors):
        if (
            not factor.is_numeric
            or factor.fidelity
            or factor.noise
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
