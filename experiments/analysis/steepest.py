"""The path of steepest ascent (descent to minimize) of a first-order model (Box & Wilson 1951;
Myers, Montgomery & Anderson-Cook, Response Surface Methodology, section 5.2; Montgomery, Design
and Analysis of Experiments, section 11.2), as R's rsm `steepest` reports it, and the straight
line in coded units that the steepest-ascent suggestion walks too.

Coded units are those of the factor ranges (-1..+1 after the factor's scale); a textbook codes
by the design region instead, which gives the same direction whenever the runs span the same
fraction of every factor's range. The path starts at the centre of the runs (the middle of their
coded extent) and moves along the unit gradient of the numeric main effects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from experiments.analysis.model import FittedModel
from experiments.factors import Config, Factor, FactorSpace, Value
from experiments.terms import BLOCK

__all__ = ["DISTANCES", "Line", "PathStep", "SteepestPath", "steepest_path"]

# rsm's steepest(dist = seq(0, 5, by = 0.5)): distances along the path in coded units.
DISTANCES: tuple[float, ...] = tuple(0.5 * k for k in range(11))
# Coded values this far past +-1 are rounding, not a step out of the range (the suggestions'
# tolerance for the same coded value).
TOLERANCE = 1e-6


@dataclass(frozen=True)
class Line:
    """A straight path in coded units: `origin` (a coded point, one value per factor) plus a
    distance times `direction` (a unit vector) over the factors `moving` (indices)."""

    origin: np.ndarray
    moving: list[int]
    direction: np.ndarray

    @classmethod
    def of(
        cls, space: FactorSpace, runs: Sequence[Config], moving: list[int], gradient: np.ndarray
    ) -> Line:
        """The path from the centre of the runs along `gradient` (the slopes of the factors
        `moving`, coded units, not all 0) made a unit vector."""
        coded = np.array([space.encode(c) for c in runs])
        origin = (coded.min(axis=0) + coded.max(axis=0)) / 2.0
        return cls(origin, moving, gradient / np.linalg.norm(gradient))

    def at(self, distance: float) -> np.ndarray:
        """The coded point `distance` coded units along the path."""
        point = self.origin.copy()
        point[self.moving] = self.origin[self.moving] + distance * self.direction
        return point

    def outside(self, space: FactorSpace, point: np.ndarray) -> list[str]:
        """The moving factors that `point` puts outside their range."""
        return [space.factors[j].name for j in self.moving if abs(point[j]) > 1.0 + TOLERANCE]


@dataclass(frozen=True)
class PathStep:
    """One point of the path: `distance` along it in coded units, the coded and natural settings
    of the factors it moves (natural ones unrounded, as rsm gives them) and the model's
    prediction there (for the average block)."""

    distance: float
    coded: dict[str, float]
    natural: dict[str, float]
    predicted: float


@dataclass(frozen=True)
class SteepestPath:
    """The path of steepest ascent ("ascent") or descent ("descent") of a first-order model.

    `direction` is the unit vector along which the path moves (coded units, one component per
    numeric factor of the model), `natural_direction` the change of each factor per coded unit
    moved, on the factor's scale (natural units; doublings for a log2-scaled factor). `steps`
    are at distances 0, 0.5, 1, ... coded units from the centre of the runs (rsm's default, up to
    5) while they stay inside the factor ranges; `stop` says why the path ends early ("" when it
    does not). The other factors are held at `held` (the predicted optimum's settings). The
    predictions extrapolate a straight line: measure along the path and stop where the response
    stops improving.
    """

    goal: str
    direction: dict[str, float]
    natural_direction: dict[str, float]
    held: dict[str, Value]
    steps: list[PathStep]
    stop: str

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)


def steepest_path(fitted: FittedModel, goal: str, held: Config) -> SteepestPath | None:
    """The path of steepest ascent (goal "maximize") or descent ("minimize") of a first-order
    model; None when the model has an interaction or a square (its surface is analysed
    canonically) or no numeric main effect with a slope."""
    space, terms = fitted.space, fitted.terms
    if any(len(f) > 1 or "^" in name for name, f in zip(terms.names, terms.factors, strict=True)):
        return None
    columns = {
        next(iter(f)): j
        for j, f in enumerate(terms.factors)
        if f
        and BLOCK not in f
        and space.factors[next(iter(f))].is_numeric
        # A noise factor is never chosen: the path holds it where `held` puts it.
        and not space.factors[next(iter(f))].noise
    }
    moving = sorted(columns)
    gradient = np.array([fitted.results.params[columns[i]] for i in moving], dtype=float)
    if not moving or not np.any(gradient):
        return None
    sign = 1.0 if goal == "maximize" else -1.0
    line = Line.of(space, fitted.observed, moving, sign * gradient)
    names = [space.factors[i].name for i in moving]
    points, stop = [], ""
    for distance in DISTANCES:
        point = line.at(distance)
        outside = line.outside(space, point)
        if outside:
            stop = f"the next step would leave the range of {', '.join(outside)}"
            break
        points.append((distance, point))
    configs = [
        {**held, **{space.factors[i].name: space.factors[i].unrounded(p[i]) for i in moving}}
        for _, p in points
    ]
    predicted = fitted.predict(configs).mean
    return SteepestPath(
        goal="ascent" if goal == "maximize" else "descent",
        direction=dict(zip(names, map(float, line.direction), strict=True)),
        natural_direction={
            name: float(d) * _half_range(space.factors[i])
            for name, i, d in zip(names, moving, line.direction, strict=True)
        },
        held={name: value for name, value in held.items() if name not in names},
        steps=[
            PathStep(
                distance=distance,
                coded={name: float(point[i]) for name, i in zip(names, moving, strict=True)},
                natural={name: float(config[name]) for name in names},
                predicted=float(mean),
            )
            for (distance, point), config, mean in zip(points, configs, predicted, strict=True)
        ],
        stop=stop,
    )


def _half_range(factor: Factor) -> float:
    """Half the factor's range on its scale: natural units per coded unit (log2 units for a
    log2-scaled factor)."""
    low, high = factor.bounds
    if factor.scale == "log2":
        return (np.log2(high) - np.log2(low)) / 2.0
    return (high - low) / 2.0
