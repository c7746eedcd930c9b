"""Augment a two-level factorial (anywhere inside the ranges) into a central composite design:
the axial points and the centre runs it lacks.

Coded units are the factor ranges' (-1..+1 after the factor's scale), as everywhere in the
engine. Categorical factors are refused: axial points have no meaning for a category.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from experiments.constraints import Constraint
from experiments.errors import DomainError
from experiments.factors import Config, Factor, FactorSpace
from experiments.numbers import describe_config
from experiments.suggest.observed import (
    TOLERANCE,
    broken_constraint,
    checked_runs,
    natural,
    same,
    with_unit,
)
from experiments.suggest.values import Suggestion


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
    runs = checked_runs(space, configs)
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
        if not any(same(space, runs[i], config) for _, _, config in axial):
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
    broken = broken_constraint(constraints, split.centre)
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
        if hi - lo < TOLERANCE:
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
            config = natural(space, np.clip(point, -1.0, 1.0))
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
        if any(same(space, run, config) for run in runs):
            continue
        broken = broken_constraint(constraints, config)
        side = "low" if sign < 0 else "high"
        if broken:
            left_out.append(f"the {side} axial point of {factor.name} breaks '{broken}'")
            continue
        text = (
            f"Axial point: {factor.name} at {with_unit(factor, config[factor.name])} (the {side}"
            f" side) with the other factors at the centre of the factorial. {design}"
        )
        chosen.append((text, "axial", config))
    return chosen, left_out


def _centre_reason(space: FactorSpace, split: _Split) -> str:
    text = (
        f"Centre point ({describe_config(split.centre)}): repeated runs at the centre measure"
        " the run-to-run noise and, with the axial points, the curvature of the response."
    )
    if not np.allclose(space.encode(split.centre), split.middle, atol=TOLERANCE):
        text += " Whole-number factors and fixed levels are at the nearest runnable value."
    if split.centres:
        text += f" {len(split.centres)} centre run(s) are already in the data."
    return text


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
    outside = [f.name for f, r in zip(space.factors, reach, strict=True) if r > 1.0 + TOLERANCE]
    if outside:
        return 1.0, (
            f"The rotatable distance (alpha {rotatable:.3g}) would put {', '.join(outside)}"
            " outside its range, so the axial points sit on the faces of the factorial"
            " (alpha 1)."
        )
    return rotatable, ""


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
    centre = natural(space, middle)
    corners, centres, others = [], [], []
    for i, row in enumerate(coded):
        at_ends = (np.abs(row - low) < TOLERANCE) | (np.abs(row - high) < TOLERANCE)
        if at_ends.all():
            corners.append(i)
        elif same(space, runs[i], centre):
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
    runs = checked_runs(space, configs)
    if not all(f.is_numeric for f in space.factors):
        return None
    split = _split(space, runs)
    if split.others or not split.corners or np.any(split.high - split.low < TOLERANCE):
        return None
    corner_rows = split.coded[split.corners]
    if any(len(set(np.round(corner_rows[:, j], 6))) < 2 for j in range(len(space))):
        return None
    return split.corners, split.centres
