"""Slices of a fitted response surface: predictions over one or two factors with the others held
fixed (at the optimum, usually), for contour, surface, main-effect and interaction plots."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from experiments.analysis import ResponseLimit
from experiments.analysis.model import FittedModel
from experiments.analysis.region import DataRegion
from experiments.constraints import Constraint, satisfied_rows
from experiments.errors import DomainError
from experiments.factors import Config, Factor, FactorSpace, Value
from experiments.numbers import finite_or_none

MIN_POINTS = 2
MAX_POINTS = 200


@dataclass(frozen=True)
class SlicePoint:
    """A run projected onto the slice's plane: its settings of the slice's factors, its value."""

    x: Value
    y: Value | None
    value: float


@dataclass(frozen=True)
class Slice:
    """Predicted means over `x_values` (and `y_values`, one row per y value) with 95 %
    confidence intervals, the other factors held at `held`. `feasible` is False where a factor
    constraint or a limit on another response (predicted by the same terms) is broken;
    `inside` is False where the point lies outside the data (the convex hull of the runs, see
    `DataRegion`): a prediction there is an extrapolation. `runs` are every observed run,
    projected onto the plane. `continuous` says whether an integer factor's settings run
    between its whole numbers (the fitted surface drawn smooth; a run happens on the lattice
    only)."""

    x: str
    y: str | None
    x_values: list[Value]
    y_values: list[Value]
    predicted: list[list[float]]
    ci_low: list[list[float | None]]
    ci_high: list[list[float | None]]
    feasible: list[list[bool]]
    held: Config
    runs: list[SlicePoint]
    inside: list[list[bool]]
    continuous: bool = False

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)


def grid_values(factor: Factor, points: int, *, continuous: bool = False) -> list[Value]:
    """About `points` settings across the factor's region, evenly spaced on its scale: every
    level of a categorical factor or of a factor given by levels, every whole number of an
    integer range that has at most `points` of them; with `continuous`, an integer range as
    evenly spaced real numbers (the model is a smooth function of them)."""
    if factor.levels is not None and factor.kind != "continuous":
        levels = list(factor.levels)
        return sorted(levels, key=float) if factor.is_numeric else levels
    low, high = factor.bounds
    if factor.kind == "integer" and not continuous:
        if high - low + 1 <= points:
            return list(range(int(low), int(high) + 1))
        values = [factor.decode(float(c)) for c in np.linspace(-1.0, 1.0, points)]
        return list(dict.fromkeys(values))
    low, high = factor.bounds
    return [min(max(factor.unrounded(float(c)), low), high) for c in np.linspace(-1, 1, points)]


def held_settings(space: FactorSpace, pairs: Sequence[str]) -> Config:
    """Factor settings written as `name:value` texts (a query string's), each typed by its
    factor and inside its region: the values a slice holds other factors at instead of the
    optimum. Errors name the field `held.<name>` (or `held` for a text that is no pair)."""
    settings: Config = {}
    for pair in pairs:
        name, colon, text = pair.partition(":")
        if not colon or not name:
            raise DomainError("held", f"'{pair}' must be written name:value")
        if name not in space.names:
            raise DomainError(f"held.{name}", f"is not a factor of the experiment ({space.names})")
        if name in settings:
            raise DomainError(f"held.{name}", "is given twice")
        factor = space[name]
        try:
            value = factor.check_value(_typed(factor, text))
            factor.check_in_region(value)
        except DomainError as error:
            raise DomainError(f"held.{name}", error.rule) from None
        settings[name] = value
    return settings


def _typed(factor: Factor, text: str) -> object:
    """The value a text names: a level whose text it is, else a number for a numeric factor
    (a query string carries only text, so `3` must become the number 3 here)."""
    for level in factor.levels or ():
        if str(level) == text:
            return level
    if not factor.is_numeric:
        return text
    try:
        return float(text)
    except ValueError:
        return text  # check_value refuses it, naming the rule


def response_slice(
    fitted: FittedModel,
    *,
    x: str,
    y: str | None = None,
    held: Mapping[str, Value],
    points: int = 40,
    y_points: int | None = None,
    constraints: Sequence[Constraint] = (),
    limits: Sequence[ResponseLimit] = (),
    continuous: bool = False,
) -> Slice:
    """Predict the response over `x` (and `y`, at `y_points` settings, `points` by default) with
    every other factor at its `held` value; with `continuous`, integer factors between their
    whole numbers too."""
    space = fitted.space
    _check_axes(space, x, y, points, y_points)
    base = space.check_config(held, in_region=False)
    x_values = grid_values(space[x], points, continuous=continuous)
    y_values = (
        grid_values(space[y], y_points or points, continuous=continuous) if y is not None else []
    )
    rows: list[Value | None] = list(y_values) if y is not None else [None]
    configs = [
        {**base, x: xv} | ({y: yv} if y is not None else {}) for yv in rows for xv in x_values
    ]
    prediction = fitted.predict(configs)
    shape = (len(rows), len(x_values))

    def grid(values: np.ndarray) -> list[list[float | None]]:
        return [[finite_or_none(v) for v in row] for row in values.reshape(shape)]

    return Slice(
        x=x,
        y=y,
        x_values=x_values,
        y_values=y_values,
        predicted=prediction.mean.reshape(shape).tolist(),
        ci_low=grid(prediction.ci_low),
        ci_high=grid(prediction.ci_high),
        feasible=_feasible(fitted, configs, constraints, limits).reshape(shape).tolist(),
        held={name: base[name] for name in space.names if name not in (x, y)},
        runs=_projected_runs(fitted, x, y),
        inside=_inside(fitted, configs).reshape(shape).tolist(),
        continuous=continuous,
    )


def _check_axes(
    space: FactorSpace, x: str, y: str | None, points: int, y_points: int | None
) -> None:
    """The slice's axes name two different factors, each with an allowed number of points."""
    for field, name in (("x", x), ("y", y)):
        if name is not None and name not in space.names:
            raise DomainError(field, f"must name a factor of the experiment ({space.names})")
    if y == x:
        raise DomainError("y", "must be another factor than x")
    for field, count in (("points", points), ("y_points", y_points or points)):
        if not MIN_POINTS <= count <= MAX_POINTS:
            raise DomainError(field, f"must be between {MIN_POINTS} and {MAX_POINTS}")


def _feasible(
    fitted: FittedModel,
    configs: list[Config],
    constraints: Sequence[Constraint],
    limits: Sequence[ResponseLimit],
) -> np.ndarray:
    """Where the factor constraints hold and every limited response, predicted by the same
    terms, stays within its limit."""
    feasible = satisfied_rows(constraints, fitted.space, configs)
    matrix = fitted.matrix(configs)
    for limit in limits:
        predicted = matrix @ np.asarray(fitted.same_terms(limit.values).params)
        if limit.min is not None:
            feasible &= predicted >= limit.min
        if limit.max is not None:
            feasible &= predicted <= limit.max
    return feasible


def _inside(fitted: FittedModel, configs: list[Config]) -> np.ndarray:
    """Where the configurations lie inside the data (the runs' convex hull, coded)."""
    space = fitted.space
    coded = np.array([[f.encode(c[f.name]) for f in space.factors] for c in configs])
    return DataRegion(space, fitted.observed).contains(coded)


def _projected_runs(fitted: FittedModel, x: str, y: str | None) -> list[SlicePoint]:
    """Every observed run projected onto the slice's plane."""
    return [
        SlicePoint(x=config[x], y=config[y] if y is not None else None, value=float(value))
        for config, value in zip(fitted.observed, fitted.y, strict=True)
    ]
