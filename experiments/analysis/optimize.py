"""The best predicted configuration: one response, constraints on others, or desirability.

Every response is predicted by its own fitted model, given here as a `Predictor`: a function of
main-effect columns (one row per point, as `experiments.terms.main_columns` builds them) that
returns one prediction per row, e.g. ``lambda mains: terms.matrix(mains) @ results.params``.

The search predicts every point of a lattice of candidate values per factor when the lattice is
small enough, else improves one factor at a time from several starts (exact for a linear model
only). A point is feasible when it meets the factor constraints and every bound on another
response (``latency_p95_ms <= 50``). The best point is then moved to a better neighbour until
none is better (+-1 on an integer factor, a shrinking coded step on a continuous one, within
range and constraints). The search is `experiments.lattice_search`, shared with the
suggestions.

Desirability follows Derringer & Suich (1980), "Simultaneous optimization of several response
variables", Journal of Quality Technology 12(4), 214-219: each response is mapped to [0, 1] and
the overall desirability is their (importance-weighted) geometric mean.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from experiments.constraints import Constraint, satisfied_rows
from experiments.desirability_settings import DESIRABILITY_GOALS, check_desirability, finite
from experiments.errors import DomainError
from experiments.factors import Config, FactorSpace, Value
from experiments.goals import GOALS, check_goal
from experiments.lattice import MAX_LATTICE
from experiments.lattice_search import Found, Lattice, search

__all__ = [
    "DESIRABILITY_GOALS",
    "GOALS",
    "DesirabilityGoal",
    "OptimumSearch",
    "Predictor",
    "ResponseBound",
    "best_configuration",
    "desirability",
    "measured_desirability",
    "most_desirable",
    "overall_desirability",
]

BOUND_OPERATORS: tuple[str, ...] = ("<=", ">=")

# Main-effect columns (one row per point) -> one prediction per row.
Predictor = Callable[[np.ndarray], np.ndarray]
# Which rows of coded values (one column per factor) may hold the optimum.
Region = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class ResponseBound:
    """A bound on another response's prediction: ``response operator limit``."""

    response: str
    predict: Predictor = field(repr=False, compare=False)
    operator: str
    limit: float

    def __post_init__(self) -> None:
        if self.operator not in BOUND_OPERATORS:
            raise DomainError(
                "objective.constraints", f"{self.response}: operator must be <= or >="
            )
        if not finite(self.limit):
            raise DomainError("objective.constraints", f"{self.response}: limit must be finite")

    @property
    def text(self) -> str:
        """The bound as the user reads it, e.g. ``latency_p95_ms <= 50``."""
        return f"{self.response} {self.operator} {self.limit:g}"

    def met(self, predicted: np.ndarray) -> np.ndarray:
        """Which predictions meet the bound."""
        return predicted <= self.limit if self.operator == "<=" else predicted >= self.limit


@dataclass(frozen=True)
class DesirabilityGoal:
    """One response's Derringer-Suich desirability: its goal, range, exponents and importance.

    `weight` is the exponent (s) of a maximize or minimize goal and of the low side of a target
    goal; `weight_high` the exponent of the target's high side (default `weight`). `importance`
    weights the response in the overall geometric mean.
    """

    response: str
    predict: Predictor = field(repr=False, compare=False)
    goal: str
    low: float
    high: float
    target: float | None = None
    weight: float = 1.0
    weight_high: float | None = None
    importance: float = 1.0

    def __post_init__(self) -> None:
        check_desirability(
            self.goal, self.low, self.high, self.target, self.weight, self.weight_high
        )
        if not (finite(self.importance) and self.importance > 0):
            raise DomainError("objective.desirability", "importance must be above 0")

    def of(self, predicted: float | np.ndarray) -> float | np.ndarray:
        """The desirability of predicted values of this response."""
        return desirability(
            predicted, self.goal, self.low, self.high, self.target, self.weight, self.weight_high
        )


@dataclass(frozen=True)
class OptimumSearch:
    """The best feasible configuration found and how it was found.

    `score` is the predicted objective (in response units) or the overall desirability;
    `predictions` holds every response's prediction there and `desirabilities` each response's
    desirability (empty for a single-response search). `searched` counts the lattice points
    predicted (distinct ones, in a coordinate search) and `feasible_candidates` those meeting
    every constraint. `neighbours_checked` says whether the integer neighbours of the best
    point were checked (there is an integer factor without explicit levels), and
    `neighbour_moves` how many moves to a better neighbour followed.
    """

    config: Config
    score: float
    predictions: dict[str, float]
    desirabilities: dict[str, float]
    feasible_candidates: int
    searched: int
    search: str
    neighbours_checked: bool
    neighbour_moves: int

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)


def desirability(
    value: float | np.ndarray,
    goal: str,
    low: float,
    high: float,
    target: float | None = None,
    weight: float = 1.0,
    weight_high: float | None = None,
) -> float | np.ndarray:
    """Derringer-Suich desirability in [0, 1] of one response value (or an array of them).

    maximize: 0 below `low`, ``((y - low) / (high - low)) ** weight`` between, 1 above `high`.
    minimize: 1 below `low`, ``((high - y) / (high - low)) ** weight`` between, 0 above `high`.
    target: ``((y - low) / (target - low)) ** weight`` from `low` to `target`,
    ``((high - y) / (high - target)) ** weight_high`` from `target` to `high`, 0 outside.
    """
    check_desirability(goal, low, high, target, weight, weight_high)
    y = np.asarray(value, dtype=float)
    if goal == "maximize":
        d = np.clip((y - low) / (high - low), 0.0, 1.0) ** weight
    elif goal == "minimize":
        d = np.clip((high - y) / (high - low), 0.0, 1.0) ** weight
    else:
        assert target is not None
        upper = weight if weight_high is None else weight_high
        below = np.clip((y - low) / (target - low), 0.0, 1.0) ** weight if target > low else 1.0
        above = np.clip((high - y) / (high - target), 0.0, 1.0) ** upper if high > target else 1.0
        d = np.where(y <= target, below, above)
        d = np.where((y < low) | (y > high), 0.0, d)
    return float(d) if np.ndim(d) == 0 else d


def overall_desirability(
    values: Sequence[float] | np.ndarray, importances: Sequence[float] | None = None
) -> float | np.ndarray:
    """Weighted geometric mean of desirabilities: ``prod(d_i ** r_i) ** (1 / sum(r_i))``.

    `values` is one desirability per response, or a 2-D array with one row per point and one
    column per response; the result is 0 as soon as one desirability is 0.
    """
    d = np.asarray(values, dtype=float)
    count = d.shape[-1]
    r = np.ones(count) if importances is None else np.asarray(importances, dtype=float)
    if r.shape != (count,) or not np.all(np.isfinite(r) & (r > 0)):
        raise DomainError("objective.desirability", "one importance above 0 per response")
    if not np.all((d >= 0) & (d <= 1)):
        raise DomainError("objective.desirability", "desirabilities lie between 0 and 1")
    with np.errstate(divide="ignore"):
        logs = np.log(d)
    total = np.exp((logs * r).sum(axis=-1) / r.sum())
    total = np.where((d == 0).any(axis=-1), 0.0, total)
    return float(total) if np.ndim(total) == 0 else total


def measured_desirability(
    goals: Sequence[Mapping[str, object]], responses: Mapping[str, float]
) -> float:
    """The overall desirability of one run's measured responses, for objectives that combine
    responses; `goals` are the objective's desirability entries (response, goal, low, high,
    target, weight, importance)."""
    each = [
        desirability(
            float(responses[str(g["response"])]),
            str(g.get("goal", "maximize")),
            float(g["low"]),  # type: ignore[arg-type]
            float(g["high"]),  # type: ignore[arg-type]
            g.get("target"),  # type: ignore[arg-type]
            float(g.get("weight") or 1.0),  # type: ignore[arg-type]
        )
        for g in goals
    ]
    importances = [float(g.get("importance") or 1.0) for g in goals]  # type: ignore[arg-type]
    return float(overall_desirability(each, importances))


def best_configuration(
    space: FactorSpace,
    candidates: Sequence[Sequence[Value]],
    predict: Predictor,
    *,
    goal: str = "maximize",
    response: str = "response",
    bounds: Sequence[ResponseBound] = (),
    constraints: Sequence[Constraint] = (),
    starts: Sequence[Mapping[str, Value]] = (),
    region: Region | None = None,
) -> OptimumSearch:
    """The candidate configuration with the best prediction of `response` by `goal`, among
    those meeting the factor `constraints`, the `region` (a mask over coded rows, e.g. the
    data's hull) and every bound on another response.

    `starts` (e.g. the observed configurations) seed the coordinate-wise search of a lattice
    too large to predict whole. Raises DomainError when no candidate is feasible.
    """
    check_goal(goal)
    sign = 1.0 if goal == "maximize" else -1.0

    def objective(mains: np.ndarray) -> np.ndarray:
        return sign * _predicted(predict, mains)

    problem = _Problem(space, candidates, objective, bounds, constraints, region)
    found, mains = problem.solve(starts)
    predictions = {response: float(_predicted(predict, mains)[0])}
    predictions |= {b.response: float(_predicted(b.predict, mains)[0]) for b in bounds}
    return OptimumSearch(
        score=predictions[response],
        predictions=predictions,
        desirabilities={},
        **_how(problem, found),
    )


def most_desirable(
    space: FactorSpace,
    candidates: Sequence[Sequence[Value]],
    goals: Sequence[DesirabilityGoal],
    *,
    bounds: Sequence[ResponseBound] = (),
    constraints: Sequence[Constraint] = (),
    starts: Sequence[Mapping[str, Value]] = (),
    region: Region | None = None,
) -> OptimumSearch:
    """The candidate configuration of highest overall desirability (Derringer & Suich), among
    those meeting the factor `constraints` and every bound on another response.

    Raises DomainError when no candidate is feasible or every feasible one has desirability 0
    (some response outside its acceptable range everywhere).
    """
    if not goals:
        raise DomainError("objective.desirability", "at least one response goal is needed")
    names = [g.response for g in goals]
    if len(set(names)) != len(names):
        raise DomainError("objective.desirability", "each response has at most one goal")
    importances = [g.importance for g in goals]

    def objective(mains: np.ndarray) -> np.ndarray:
        d = np.column_stack([g.of(_predicted(g.predict, mains)) for g in goals])
        return np.asarray(overall_desirability(d, importances))

    problem = _Problem(space, candidates, objective, bounds, constraints, region)
    found, mains = problem.solve(starts)
    predictions = {g.response: float(_predicted(g.predict, mains)[0]) for g in goals}
    predictions |= {b.response: float(_predicted(b.predict, mains)[0]) for b in bounds}
    score = float(objective(mains)[0])
    if score <= 0.0:
        raise DomainError(
            "objective.desirability",
            "no configuration in the region is predicted to bring every response inside its "
            "acceptable range ("
            + ", ".join(f"{g.response} {g.low:g} to {g.high:g}" for g in goals)
            + "): the overall desirability is 0 everywhere",
        )
    return OptimumSearch(
        score=score,
        predictions=predictions,
        desirabilities={g.response: float(g.of(predictions[g.response])) for g in goals},
        **_how(problem, found),
    )


class _Problem:
    """Scores lattice points for the shared search (higher is better, -inf when infeasible),
    noting what a refusal needs to say: whether any point met the factor constraints, and the
    best prediction of each bounded response among those that did."""

    def __init__(
        self,
        space: FactorSpace,
        candidates: Sequence[Sequence[Value]],
        objective: Callable[[np.ndarray], np.ndarray],
        bounds: Sequence[ResponseBound],
        constraints: Sequence[Constraint],
        region: Region | None = None,
    ) -> None:
        self.space = space
        self.region = region
        self.lattice = Lattice(space, candidates)
        self.objective = objective
        self.bounds = list(bounds)
        self.constraints = list(constraints)
        self.allowed = 0  # evaluations meeting the factor constraints (words the failure)
        self.closest = [math.nan] * len(self.bounds)

    def solve(self, starts: Sequence[Mapping[str, Value]]) -> tuple[Found, np.ndarray]:
        """The best point found and its main-effect columns; raises DomainError when it is
        infeasible (nothing in the region meets every constraint)."""
        seeds = [i for i in (self.lattice.index_of(s) for s in starts) if i is not None]
        found = search(self.lattice, self.score, budget=MAX_LATTICE, starts=seeds, polish=True)
        if not np.isfinite(found.score):
            self._refuse(found.search)
        return found, self.lattice.mains(np.array([found.index]))

    def score(self, index: np.ndarray) -> np.ndarray:
        """Scores of lattice points given as rows of per-factor candidate indices."""
        rows = self.lattice.natural(index)
        allowed = (
            satisfied_rows(self.constraints, self.space, rows)
            if self.constraints
            else np.ones(len(rows), dtype=bool)
        )
        if self.region is not None:
            allowed &= self.region(self.lattice.coded(index))
        mains = self.lattice.mains(index)
        feasible = allowed.copy()
        for b, bound in enumerate(self.bounds):
            predicted = _predicted(bound.predict, mains)
            if allowed.any():
                pick = np.min if bound.operator == "<=" else np.max
                best = float(pick(predicted[allowed]))
                if not math.isnan(self.closest[b]):
                    best = float(pick([self.closest[b], best]))
                self.closest[b] = best
            feasible &= bound.met(predicted)
        self.allowed += int(allowed.sum())
        if not feasible.any():
            return np.full(len(rows), -np.inf)
        return np.where(feasible, self.objective(mains), -np.inf)

    def _refuse(self, search: str) -> None:
        if self.allowed == 0:
            raise DomainError(
                "constraints", "no configuration of the region meets every constraint"
            )
        where = (
            "no configuration in the region is"
            if search == "lattice"
            else "the coordinate-wise search found no configuration"
        )
        missed = [
            f"{bound.text} (the {'lowest' if bound.operator == '<=' else 'highest'} "
            f"predicted is {closest:.4g})"
            for bound, closest in zip(self.bounds, self.closest, strict=True)
            if math.isnan(closest) or not bound.met(np.array([closest]))[0]
        ]
        if missed:
            raise DomainError(
                "objective.constraints", f"{where} predicted to meet {'; '.join(missed)}"
            )
        raise DomainError(
            "objective.constraints",
            f"{where} predicted to meet {' and '.join(b.text for b in self.bounds)} together",
        )


def _how(problem: _Problem, found: Found) -> dict[str, Any]:
    """The fields of an OptimumSearch that say where the optimum is and how it was found."""
    return {
        "config": problem.lattice.config(found.index),
        "feasible_candidates": found.feasible,
        "searched": found.searched,
        "search": found.search,
        "neighbours_checked": found.neighbours_checked,
        "neighbour_moves": found.moves,
    }


def _predicted(predict: Predictor, mains: np.ndarray) -> np.ndarray:
    values = np.asarray(predict(mains), dtype=float).reshape(-1)
    if values.shape != (len(mains),):
        raise DomainError("objective", "a predictor must return one prediction per point")
    return values
