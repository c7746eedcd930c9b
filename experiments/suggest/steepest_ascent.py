"""Climb the path of steepest ascent (descent to minimize) of the first-order model of the runs
(Box & Wilson 1951; Montgomery, DAE, section 11.2) from the centre of the runs.

The path is the analysis's (`experiments.analysis.steepest.Line`): steepest in coded units of
the ranges, from the centre of the runs. Categorical factors are held at the level of the best
observed run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import statsmodels.api as sm
from statsmodels.regression.linear_model import RegressionResults

from experiments.analysis.steepest import Line
from experiments.constraints import Constraint
from experiments.errors import DomainError
from experiments.factors import Config, FactorSpace
from experiments.goals import check_goal
from experiments.suggest.observed import TOLERANCE, broken_constraint, checked_data, natural, same
from experiments.suggest.values import Suggestion


def steepest_ascent(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    *,
    goal: str = "maximize",
    step: float = 0.5,
    count: int = 5,
    constraints: Sequence[Constraint] = (),
) -> list[Suggestion]:
    """Points along the path of steepest ascent (descent to minimize) of the first-order model.

    x_k = centre + k * step * direction in coded units (the direction the unit gradient, the
    centre the middle of the observed runs), decoded with integer rounding and explicit levels
    snapped. The path stops where it leaves the ranges or breaks a constraint; points that round
    to the same or an observed configuration are skipped. `predicted` and `uncertainty` are the
    linear model's prediction and the standard error of that mean (None without residual df).
    """
    check_goal(goal)
    if not (math.isfinite(step) and step > 0):
        raise DomainError("step", "must be a positive number of coded units")
    if count < 1:
        raise DomainError("count", "must be at least 1")
    runs, y = checked_data(space, configs, values)
    model = _FirstOrder.fit(space, runs, y)
    sign = 1.0 if goal == "maximize" else -1.0
    path = _Path.of(space, runs, model, sign * model.gradient, step)
    best = runs[_best_index(y, goal)]
    for f in space.factors:
        if not f.is_numeric or f.name not in path.moving_names:
            # Factors that do not move stay where the best run had them.
            path.start[f.name] = best[f.name]
    name = "ascent" if goal == "maximize" else "descent"
    found, stop = path.walk(count, constraints)
    if not found:
        raise DomainError(
            "strategy",
            f"the path of steepest {name} ends before its first new point: {stop or 'none'}."
            " The best region is at the edge of the ranges; augment the runs to a central"
            " composite design or widen the ranges",
        )
    slopes = ", ".join(
        f"{_signed(g)} per coded unit of {space.factors[j].name}"
        for j, g in zip(model.moving, model.gradient, strict=True)
    )
    reason = (
        f"the first-order model fitted to {len(runs)} runs changes the response by {slopes}"
        " (a coded unit is half the factor's range), so the path of steepest"
        f" {name} moves {step:g} coded units per step in that direction from the centre of the"
        " runs. The prediction extrapolates a straight-line model: measure each step and stop"
        " climbing when the response stops improving."
    )
    return _path_suggestions(model, found, f"steepest {name}", reason, stop)


@dataclass(frozen=True)
class _FirstOrder:
    """The first-order model of the runs: numeric factors that vary, coded, and categorical
    factors as dummies against their first observed level (so their effect does not bias the
    gradient)."""

    space: FactorSpace
    moving: list[int]
    dummies: list[tuple[str, str]]
    fitted: RegressionResults
    gradient: np.ndarray

    @classmethod
    def fit(cls, space: FactorSpace, runs: list[Config], y: np.ndarray) -> _FirstOrder:
        coded = np.array([space.encode(c) for c in runs])
        moving = [
            j
            for j, f in enumerate(space.factors)
            if f.is_numeric and np.ptp(coded[:, j]) > TOLERANCE
        ]
        if not moving:
            raise DomainError(
                "strategy", "steepest ascent needs at least one numeric factor varied"
            )
        dummies = [
            (f.name, level)
            for f in space.factors
            if not f.is_numeric
            for level in sorted({str(c[f.name]) for c in runs})[1:]
        ]
        x = _model_rows(space, moving, dummies, runs)
        if np.linalg.matrix_rank(x) < x.shape[1]:
            raise DomainError(
                "strategy",
                "the runs cannot separate the factors' effects (too few or aliased runs) to fit"
                " the first-order model for steepest ascent",
            )
        fitted = sm.OLS(y, x).fit()
        gradient = np.asarray(fitted.params[1 : 1 + len(moving)], dtype=float)
        norm = float(np.linalg.norm(gradient))
        # Relative to the response's size: OLS on constant data leaves rounding noise, not a
        # slope.
        if norm <= 1e-9 * max(float(np.abs(y).max()), 1.0):
            raise DomainError(
                "strategy", "the first-order model is flat: there is no path to climb"
            )
        return cls(space, moving, dummies, fitted, gradient)

    def rows(self, points: Sequence[Config]) -> np.ndarray:
        """Model matrix rows of `points`."""
        return _model_rows(self.space, self.moving, self.dummies, points)


def _model_rows(
    space: FactorSpace,
    moving: list[int],
    dummies: list[tuple[str, str]],
    points: Sequence[Config],
) -> np.ndarray:
    numeric = np.array([[space.encode(p)[j] for j in moving] for p in points])
    flags = np.array([[float(p[name] == level) for name, level in dummies] for p in points])
    return np.column_stack([np.ones(len(points)), numeric, flags.reshape(len(points), -1)])


@dataclass
class _Path:
    """The path along `line` in coded steps of `step`, other factors at `start`."""

    space: FactorSpace
    runs: list[Config]
    line: Line
    step: float
    start: Config

    @classmethod
    def of(
        cls,
        space: FactorSpace,
        runs: list[Config],
        model: _FirstOrder,
        gradient: np.ndarray,
        step: float,
    ) -> _Path:
        line = Line.of(space, runs, model.moving, gradient)
        return cls(space, runs, line, step, natural(space, line.origin))

    @property
    def moving_names(self) -> set[str]:
        """The factors the path moves."""
        return {self.space.factors[j].name for j in self.line.moving}

    def walk(
        self, count: int, constraints: Sequence[Constraint]
    ) -> tuple[list[tuple[int, Config]], str]:
        """Up to `count` new points (step number, configuration), and why the path stopped
        ("" when it did not)."""
        found: list[tuple[int, Config]] = []
        for k in range(1, 10 * count + 1):
            point = self.line.at(k * self.step)
            outside = self.line.outside(self.space, point)
            if outside:
                return found, f"the next step would leave the range of {', '.join(outside)}"
            config = dict(self.start)
            decoded = natural(self.space, np.clip(point, -1.0, 1.0))
            config.update({name: decoded[name] for name in self.moving_names})
            broken = broken_constraint(constraints, config)
            if broken:
                return found, f"the next step would break '{broken}'"
            seen = [c for _, c in found] + list(self.runs)
            if any(same(self.space, config, c) for c in seen):
                continue  # rounding put it on a point already suggested or measured
            found.append((k, config))
            if len(found) == count:
                break
        return found, ""


def _path_suggestions(
    model: _FirstOrder,
    found: list[tuple[int, Config]],
    path: str,
    reason: str,
    stop: str,
) -> list[Suggestion]:
    """The path's points with the first-order model's predictions and standard errors."""
    prediction = model.fitted.get_prediction(model.rows([c for _, c in found]))
    means = np.asarray(prediction.predicted_mean, dtype=float)
    errors = np.asarray(prediction.se_mean, dtype=float) if model.fitted.df_resid > 0 else None
    suggestions = []
    for i, (k, config) in enumerate(found):
        text = f"Step {k} of the path of {path}: {reason[0].lower()}{reason[1:]}"
        if i == len(found) - 1 and stop:
            text += f" The path ends here: {stop}."
        uncertainty = None
        if errors is not None and math.isfinite(errors[i]):
            uncertainty = float(errors[i])
        suggestions.append(
            Suggestion(
                config=config,
                strategy="steepest_ascent",
                point_type="path",
                reason=text,
                predicted=float(means[i]),
                uncertainty=uncertainty,
                predicted_by="first-order model",
            )
        )
    return suggestions


def _best_index(y: np.ndarray, goal: str) -> int:
    return int(np.argmax(y) if goal == "maximize" else np.argmin(y))


def _signed(number: float) -> str:
    return f"+{number:.4g}" if number >= 0 else f"{number:.4g}"
