"""The planner: design requests, run tables, and a design's size before it is built.

Each design family is a module with `size(space, request)` and `points(space, request)`; this
package adds what every family shares: replicates, centre points, run order and rounding flags.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Protocol

import numpy as np

from experiments.designs import full_factorial
from experiments.designs.full_factorial import factor_levels
from experiments.errors import DomainError
from experiments.factors import Config, Factor, FactorSpace, Value

__all__ = [
    "KINDS",
    "Design",
    "DesignPoint",
    "DesignRequest",
    "design_size",
    "factor_levels",
    "plan",
]


class _Family(Protocol):
    def size(self, space: FactorSpace, request: DesignRequest) -> int: ...

    def points(
        self, space: FactorSpace, request: DesignRequest
    ) -> list[tuple[dict[str, float], Config]]: ...


_FAMILIES: dict[str, _Family] = {"full_factorial": full_factorial}
KINDS: tuple[str, ...] = tuple(_FAMILIES)

# Inclusive bounds of the whole-number options.
_LIMITS: dict[str, tuple[int, int]] = {
    "levels": (2, 9),
    "centre_points": (0, 100),
    "replicates": (1, 20),
    "seed": (0, 2**32 - 1),
}
# A point counts as moved by rounding when its coded position shifts by more than float noise.
_CODED_TOLERANCE = 1e-9


@dataclass(frozen=True)
class DesignRequest:
    """What to plan: the design family and its options, validated on construction."""

    kind: str = "full_factorial"
    levels: int = 2
    centre_points: int = 0
    replicates: int = 1
    randomize: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or self.kind not in _FAMILIES:
            raise DomainError("design.kind", f"must be one of {', '.join(KINDS)}")
        for name, (low, high) in _LIMITS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise DomainError(f"design.{name}", f"must be a whole number from {low} to {high}")
        if not isinstance(self.randomize, bool):
            raise DomainError("design.randomize", "must be true or false")

    @classmethod
    def from_dict(cls, raw: Mapping[str, object]) -> DesignRequest:
        """Build from a plain dict (JSON); missing options take their defaults."""
        if not isinstance(raw, Mapping):
            raise DomainError("design", "must be an object of design options")
        options = [f.name for f in fields(cls)]
        unknown = sorted(str(key) for key in raw if key not in options)
        if unknown:
            raise DomainError(
                f"design.{unknown[0]}", f"is not a design option; options are {', '.join(options)}"
            )
        return cls(**raw)  # type: ignore[arg-type]


@dataclass(frozen=True)
class DesignPoint:
    """One run of the table.

    `coded` is the point's planned position; `config` the natural values that are actually run.
    They disagree, and `rounded` is set, when an integer factor is rounded or a factor with
    explicit levels takes the level nearest its centre. `std_order` and `run_order` are 1-based;
    `replicate` numbers the repeats of a factorial point, and the centre runs of one setting.
    """

    std_order: int
    run_order: int
    replicate: int
    block: int
    point_type: str
    coded: dict[str, float]
    config: dict[str, Value]
    rounded: bool


@dataclass(frozen=True)
class Design:
    """A planned design: its points in run order, and notes for the person who asked for it."""

    kind: str
    points: tuple[DesignPoint, ...]
    notes: tuple[str, ...]


def design_size(space: FactorSpace, request: DesignRequest) -> int:
    """Number of runs `plan` would produce, computed without building the design."""
    _check_centre_points(space, request)
    categorical = math.prod(len(f.levels or ()) for f in space.factors if not f.is_numeric)
    return (
        _FAMILIES[request.kind].size(space, request) * request.replicates
        + request.centre_points * categorical
    )


def plan(space: FactorSpace, request: DesignRequest) -> Design:
    """Plan the design: the family's points times replicates, plus centre points, in run order.

    Centre points sit at the centre of every numeric factor. Categorical factors have no centre,
    so the centre points are repeated at every combination of categorical levels; a space with
    only categorical factors cannot have centre points.
    """
    _check_centre_points(space, request)
    factorial = _FAMILIES[request.kind].points(space, request)
    runs = [
        (replicate, "factorial", coded, config)
        for replicate in range(1, request.replicates + 1)
        for coded, config in factorial
    ]
    centres = _centre_runs(space, request)
    runs += [
        (replicate, "centre", coded, config)
        for replicate in range(1, request.centre_points + 1)
        for coded, config in centres
    ]
    run_orders = _run_orders(len(runs), request)
    points = sorted(
        (
            DesignPoint(
                std_order=i + 1,
                run_order=run_orders[i],
                replicate=replicate,
                block=1,
                point_type=point_type,
                coded=dict(coded),
                config=dict(config),
                rounded=_moved(space, coded, config),
            )
            for i, (replicate, point_type, coded, config) in enumerate(runs)
        ),
        key=lambda point: point.run_order,
    )
    return Design(kind=request.kind, points=tuple(points), notes=_notes(space, request, points))


def _check_centre_points(space: FactorSpace, request: DesignRequest) -> None:
    if request.centre_points and not any(f.is_numeric for f in space.factors):
        raise DomainError("design.centre_points", "centre points need at least one numeric factor")


def _centre_runs(
    space: FactorSpace, request: DesignRequest
) -> list[tuple[dict[str, float], Config]]:
    choices = [
        [_centre(f)] if f.is_numeric else factor_levels(f, request.levels) for f in space.factors
    ]
    return [
        (
            {f.name: c for f, (c, _) in zip(space.factors, combo, strict=True)},
            {f.name: v for f, (_, v) in zip(space.factors, combo, strict=True)},
        )
        for combo in itertools.product(*choices)
    ]


def _centre(factor: Factor) -> tuple[float, Value]:
    if factor.levels is not None:
        nearest = min(factor.levels, key=lambda v: abs(factor.encode(v)))
        return 0.0, factor.check_value(nearest)
    return 0.0, factor.decode(0.0)


def _moved(space: FactorSpace, coded: Mapping[str, float], config: Mapping[str, Value]) -> bool:
    return any(
        abs(f.encode(config[f.name]) - coded[f.name]) > _CODED_TOLERANCE
        for f in space.factors
        if f.is_numeric
    )


def _run_orders(count: int, request: DesignRequest) -> list[int]:
    """Run order (1-based) of each run in standard order."""
    if not request.randomize:
        return list(range(1, count + 1))
    sequence = np.random.default_rng(request.seed).permutation(count)
    orders = np.empty(count, dtype=int)
    orders[sequence] = np.arange(1, count + 1)
    return orders.tolist()


def _notes(
    space: FactorSpace, request: DesignRequest, points: list[DesignPoint]
) -> tuple[str, ...]:
    notes = []
    moved = sum(point.rounded for point in points)
    if moved:
        notes.append(
            f"{moved} of {len(points)} runs are not at their coded position: integer rounding or"
            " the nearest explicit level moved them (see `rounded`)"
        )
    categorical = [f.name for f in space.factors if not f.is_numeric]
    if request.centre_points and categorical:
        notes.append(
            "centre points are repeated at every combination of the levels of "
            + ", ".join(categorical)
        )
    hard = [f.name for f in space.factors if f.hard_to_change]
    if hard and request.randomize:
        notes.append(
            "run order is fully randomized; hard-to-change factors are not grouped yet: "
            + ", ".join(hard)
        )
    if not request.randomize:
        notes.append("run order is the standard order, not randomized")
    return tuple(notes)
