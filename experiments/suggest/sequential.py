"""Sequential response-surface steps: augment a factorial, climb the first-order path, replicate.

Coded units are the factor ranges' (-1..+1 after the factor's scale), as everywhere in the
engine. `augment` turns a two-level factorial (anywhere inside the ranges) into a central
composite design; `steepest_ascent` walks the path of steepest ascent of the first-order model
(Box & Wilson 1951; Montgomery, DAE, section 11.2) from the centre of the runs; and
`replicate_incumbent` repeats the best configuration when noise makes it uncertain. The path is
steepest in coded units of the ranges; a textbook codes by the design region instead, which
gives the same direction whenever the runs span the same fraction of every factor's range.

Categorical factors: `augment` refuses them (axial points have no meaning for a category);
`steepest_ascent` holds them at the level of the best observed run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import statsmodels.api as sm
from statsmodels.regression.linear_model import RegressionResults

from experiments.constraints import Constraint
from experiments.errors import DomainError
from experiments.factors import Config, Factor, FactorSpace, Value
from experiments.goals import check_goal
from experiments.numbers import describe_config, format_value
from experiments.suggest.base import Suggestion

# Two coded positions closer than this are the same point (float noise through log2 scales).
_TOLERANCE = 1e-6


def augment(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    *,
    centre_points: int = 4,
    constraints: Sequence[Constraint] = (),
) -> list[Suggestion]:
    """Axial and centre points that complete a two-level factorial into a central composite.

    The factorial's levels are each factor's lowest and highest observed value (they need not be
    the range's ends). Alpha is face-centred (1) when a factor is integer or has explicit levels,
    else rotatable (F^(1/4), F the distinct factorial points) unless that leaves a range, then 1.
    `centre_points` is the total the design should have: observed centre runs count towards it.
    Points already observed and points that break a constraint are left out.
    """
    if centre_points < 0:
        raise DomainError("centre_points", "must be 0 or more")
    runs = _checked_runs(space, configs)
    categorical = [f.name for f in space.factors if not f.is_numeric]
    if categorical:
        raise DomainError(
            "strategy",
            f"augment needs numeric factors; '{categorical[0]}' is categorical (axial points"
            " have no meaning for a category): augment the runs of each level separately",
        )
    split = _split(space, runs)
    corners = _factorial_corners(space, split)
    alpha, alpha_note = _alpha(space, len(corners), split.middle, split.half)
    axial = _axial_points(space, runs, split, alpha)
    for i in split.others:
        if not any(_same(space, runs[i], config) for _, _, config in axial):
            raise DomainError(
                "strategy",
                f"augment needs a two-level factorial (with centre points), but run {i + 1}"
                f" ({describe_config(runs[i])}) is neither a factorial point (every factor at its"
                " low or high level), a centre point, nor an axial point of the augmentation",
            )
    kind = "face-centred" if alpha == 1.0 else "rotatable"
    design = (
        f"Together with the {len(corners)} factorial points and the centre points it makes a"
        f" {kind} central composite design (alpha {alpha:.3g}), which can estimate the"
        " curvature (squared terms) that a two-level factorial cannot."
    )
    if alpha_note:
        design += f" {alpha_note}"
    chosen, left_out = _new_axial_points(space, runs, axial, constraints, design)
    wanted = max(centre_points - len(split.centres), 0)
    broken = _broken(constraints, split.centre)
    if wanted and broken:
        left_out.append(f"the centre point breaks '{broken}'")
    elif wanted:
        chosen += [(_centre_reason(space, split), "centre", split.centre)] * wanted
    note = f" Left out: {'; '.join(left_out)}." if left_out else ""
    return [
        Suggestion(config=dict(config), strategy="augment", point_type=point, reason=text + note)
        for text, point, config in chosen
    ]


def _factorial_corners(space: FactorSpace, split: _Split) -> set[tuple[float, ...]]:
    """The distinct factorial points (coded); DomainError unless every factor is at two levels."""
    for factor, lo, hi in zip(space.factors, split.low, split.high, strict=True):
        if hi - lo < _TOLERANCE:
            raise DomainError(
                "strategy",
                f"augment needs a two-level factorial, but '{factor.name}' is not varied in the"
                " runs",
            )
    corners = {tuple(np.round(split.coded[i], 6)) for i in split.corners}
    corner_array = np.array(sorted(corners))
    for j, factor in enumerate(space.factors):
        if len(corners) == 0 or len(set(corner_array[:, j])) < 2:
            raise DomainError(
                "strategy",
                f"augment needs a two-level factorial, but the factorial runs do not put"
                f" '{factor.name}' at both its low and its high level",
            )
    return corners


def _axial_points(
    space: FactorSpace, runs: list[Config], split: _Split, alpha: float
) -> list[tuple[Factor, int, Config]]:
    """(factor, side, configuration) of every axial point, at `alpha` coded half-ranges."""
    axial: list[tuple[Factor, int, Config]] = []
    for j, factor in enumerate(space.factors):
        for sign in (-1, 1):
            point = split.middle.copy()
            point[j] = split.middle[j] + sign * alpha * split.half[j]
            config = _natural(space, np.clip(point, -1.0, 1.0))
            if alpha == 1.0:
                # On the faces: exactly the observed factorial level, free of decoding noise.
                coded = split.coded[:, j]
                end = np.argmax(coded) if sign > 0 else np.argmin(coded)
                config[factor.name] = runs[int(end)][factor.name]
            axial.append((factor, sign, config))
    return axial


def _new_axial_points(
    space: FactorSpace,
    runs: list[Config],
    axial: list[tuple[Factor, int, Config]],
    constraints: Sequence[Constraint],
    design: str,
) -> tuple[list[tuple[str, str, Config]], list[str]]:
    """The axial points not run yet that meet the constraints, each with its reason, and
    what was left out for a constraint."""
    left_out: list[str] = []
    chosen: list[tuple[str, str, Config]] = []
    for factor, sign, config in axial:
        if any(_same(space, run, config) for run in runs):
            continue
        broken = _broken(constraints, config)
        side = "low" if sign < 0 else "high"
        if broken:
            left_out.append(f"the {side} axial point of {factor.name} breaks '{broken}'")
            continue
        text = (
            f"Axial point: {factor.name} at {_value(factor, config[factor.name])} (the {side}"
            f" side) with the other factors at the centre of the factorial. {design}"
        )
        chosen.append((text, "axial", config))
    return chosen, left_out


def _centre_reason(space: FactorSpace, split: _Split) -> str:
    text = (
        f"Centre point ({describe_config(split.centre)}): repeated runs at the centre measure"
        " the run-to-run noise and, with the axial points, the curvature of the response."
    )
    if not np.allclose(space.encode(split.centre), split.middle, atol=_TOLERANCE):
        text += " Whole-number factors and fixed levels are at the nearest runnable value."
    if split.centres:
        text += f" {len(split.centres)} centre run(s) are already in the data."
    return text


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
    runs, y = _checked_data(space, configs, values)
    model = _FirstOrder.fit(space, runs, y)
    sign = 1.0 if goal == "maximize" else -1.0
    path = _Path.of(space, runs, model, sign * model.gradient / model.norm, step)
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
    norm: float

    @classmethod
    def fit(cls, space: FactorSpace, runs: list[Config], y: np.ndarray) -> _FirstOrder:
        coded = np.array([space.encode(c) for c in runs])
        moving = [
            j
            for j, f in enumerate(space.factors)
            if f.is_numeric and np.ptp(coded[:, j]) > _TOLERANCE
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
        return cls(space, moving, dummies, fitted, gradient, norm)

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
    """The path from the middle of the runs along `direction`, in coded steps of `step`."""

    space: FactorSpace
    runs: list[Config]
    moving: list[int]
    middle: np.ndarray
    direction: np.ndarray
    step: float
    start: Config

    @classmethod
    def of(
        cls,
        space: FactorSpace,
        runs: list[Config],
        model: _FirstOrder,
        direction: np.ndarray,
        step: float,
    ) -> _Path:
        coded = np.array([space.encode(c) for c in runs])
        middle = (coded.min(axis=0) + coded.max(axis=0)) / 2.0
        start = _natural(space, middle)
        return cls(space, runs, model.moving, middle, direction, step, start)

    @property
    def moving_names(self) -> set[str]:
        """The factors the path moves."""
        return {self.space.factors[j].name for j in self.moving}

    def walk(
        self, count: int, constraints: Sequence[Constraint]
    ) -> tuple[list[tuple[int, Config]], str]:
        """Up to `count` new points (step number, configuration), and why the path stopped
        ("" when it did not)."""
        found: list[tuple[int, Config]] = []
        for k in range(1, 10 * count + 1):
            point = self.middle.copy()
            point[self.moving] = self.middle[self.moving] + k * self.step * self.direction
            outside = [
                self.space.factors[j].name for j in self.moving if abs(point[j]) > 1.0 + _TOLERANCE
            ]
            if outside:
                return found, f"the next step would leave the range of {', '.join(outside)}"
            config = dict(self.start)
            decoded = _natural(self.space, np.clip(point, -1.0, 1.0))
            config.update({name: decoded[name] for name in self.moving_names})
            broken = _broken(constraints, config)
            if broken:
                return found, f"the next step would break '{broken}'"
            seen = [c for _, c in found] + list(self.runs)
            if any(_same(self.space, config, c) for c in seen):
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


def replicate_incumbent(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    *,
    goal: str,
    count: int = 2,
) -> list[Suggestion]:
    """`count` replicates of the best observed configuration (best mean over its runs)."""
    check_goal(goal)
    if count < 1:
        raise DomainError("count", "must be at least 1")
    runs, y = _checked_data(space, configs, values)
    groups: list[tuple[Config, list[float]]] = []
    for config, value in zip(runs, y, strict=True):
        for seen, measured in groups:
            if _same(space, seen, config):
                measured.append(float(value))
                break
        else:
            groups.append((config, [float(value)]))
    means = np.array([np.mean(measured) for _, measured in groups])
    order = np.argsort(-means if goal == "maximize" else means, kind="stable")
    config, measured = groups[int(order[0])]
    uncertainty = None
    if len(measured) > 1:
        uncertainty = float(np.std(measured, ddof=1) / math.sqrt(len(measured)))
    text = (
        f"Repeat the best configuration so far ({describe_config(config)}): it averaged"
        f" {means[order[0]]:.4g} over {len(measured)} run(s)."
    )
    if len(groups) > 1:
        text += f" The runner-up averaged {means[order[1]]:.4g}."
    text += (
        " Replicates show whether it is truly the best or a lucky measurement, since run-to-run"
        " noise can be as large as the differences between configurations."
    )
    return [
        Suggestion(
            config=dict(config),
            strategy="replicate",
            point_type="replicate",
            reason=text,
            predicted=float(means[order[0]]),
            uncertainty=uncertainty,
            predicted_by="mean of its runs",
        )
        for _ in range(count)
    ]


@dataclass(frozen=True)
class _Split:
    """Runs sorted into a two-level factorial's corners, its centre and the rest; the levels
    are each factor's lowest and highest coded value in the runs."""

    coded: np.ndarray
    low: np.ndarray
    high: np.ndarray
    middle: np.ndarray
    half: np.ndarray
    centre: Config
    corners: list[int]
    centres: list[int]
    others: list[int]


def _split(space: FactorSpace, runs: Sequence[Config]) -> _Split:
    coded = np.array([space.encode(c) for c in runs])
    low, high = coded.min(axis=0), coded.max(axis=0)
    middle, half = (low + high) / 2.0, (high - low) / 2.0
    centre = _natural(space, middle)
    corners, centres, others = [], [], []
    for i, row in enumerate(coded):
        at_ends = (np.abs(row - low) < _TOLERANCE) | (np.abs(row - high) < _TOLERANCE)
        if at_ends.all():
            corners.append(i)
        elif _same(space, runs[i], centre):
            centres.append(i)
        else:
            others.append(i)
    return _Split(coded, low, high, middle, half, centre, corners, centres, others)


def two_level_split(
    space: FactorSpace, configs: Sequence[Mapping[str, object]]
) -> tuple[list[int], list[int]] | None:
    """Indices of the factorial and the centre runs when the runs are exactly a two-level
    factorial in every numeric factor (with or without centre points, whole numbers rounded
    as the planner rounds them); None otherwise."""
    runs = _checked_runs(space, configs)
    if not all(f.is_numeric for f in space.factors):
        return None
    split = _split(space, runs)
    if split.others or not split.corners or np.any(split.high - split.low < _TOLERANCE):
        return None
    corner_rows = split.coded[split.corners]
    if any(len(set(np.round(corner_rows[:, j], 6))) < 2 for j in range(len(space))):
        return None
    return split.corners, split.centres


def _checked_runs(space: FactorSpace, configs: Sequence[Mapping[str, object]]) -> list[Config]:
    if not configs:
        raise DomainError("configs", "at least one observed run is needed")
    checked = []
    for i, config in enumerate(configs):
        try:
            checked.append(space.check_config(config, in_region=False))
        except DomainError as error:
            raise DomainError(f"configs.{i}.{error.field}", error.rule) from None
    return checked


def _checked_data(
    space: FactorSpace, configs: Sequence[Mapping[str, object]], values: Sequence[float]
) -> tuple[list[Config], np.ndarray]:
    runs = _checked_runs(space, configs)
    if len(values) != len(runs):
        raise DomainError("values", f"needs one value per run: {len(runs)} runs, {len(values)}")
    try:
        y = np.array([float(v) for v in values])
    except (TypeError, ValueError):
        raise DomainError("values", "must be numbers") from None
    if not np.all(np.isfinite(y)):
        raise DomainError("values", "must be finite numbers")
    return runs, y


def _best_index(y: np.ndarray, goal: str) -> int:
    return int(np.argmax(y) if goal == "maximize" else np.argmin(y))


def _alpha(
    space: FactorSpace, corners: int, middle: np.ndarray, half: np.ndarray
) -> tuple[float, str]:
    """The axial distance in factorial half-ranges, and a sentence when it is not rotatable."""
    for factor in space.factors:
        if factor.kind == "integer" or factor.levels is not None:
            why = "is a whole-number factor" if factor.levels is None else "has fixed levels"
            return 1.0, (
                f"The axial points sit on the faces of the factorial (alpha 1) because"
                f" {factor.name} {why}: points beyond the factorial levels would be rounded or"
                " not runnable."
            )
    rotatable = corners**0.25
    reach = np.abs(middle) + rotatable * half
    outside = [f.name for f, r in zip(space.factors, reach, strict=True) if r > 1.0 + _TOLERANCE]
    if outside:
        return 1.0, (
            f"The rotatable distance (alpha {rotatable:.3g}) would put {', '.join(outside)}"
            " outside its range, so the axial points sit on the faces of the factorial"
            " (alpha 1)."
        )
    return rotatable, ""


def _natural(space: FactorSpace, coded: np.ndarray) -> Config:
    """Natural values of a coded point: integers rounded, explicit levels snapped to nearest."""
    config: Config = {}
    for factor, c in zip(space.factors, coded, strict=True):
        if factor.is_numeric and factor.levels is not None:
            nearest = min(factor.levels, key=lambda v, f=factor: abs(f.encode(v) - float(c)))
            config[factor.name] = factor.check_value(nearest)
        else:
            config[factor.name] = factor.decode(float(c))
    return config


def _same(space: FactorSpace, a: Mapping[str, Value], b: Mapping[str, Value]) -> bool:
    return all(
        abs(f.encode(a[f.name]) - f.encode(b[f.name])) < _TOLERANCE
        if f.is_numeric
        else a[f.name] == b[f.name]
        for f in space.factors
    )


def _broken(constraints: Sequence[Constraint], config: Mapping[str, Value]) -> str:
    """The text of the first constraint the configuration breaks, or ''."""
    return next((c.text for c in constraints if not c.satisfied(config)), "")


def _value(factor: Factor, value: Value) -> str:
    return f"{format_value(value)} {factor.unit}".strip()


def _signed(number: float) -> str:
    return f"+{number:.4g}" if number >= 0 else f"{number:.4g}"
