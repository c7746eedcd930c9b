"""General (mixed-level) full factorial: every combination of every factor's levels."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from experiments.designs import _pydoe
from experiments.factors import Config, Factor, FactorSpace, Value

if TYPE_CHECKING:
    from experiments.designs import DesignRequest


def factor_levels(factor: Factor, count: int) -> list[tuple[float, Value]]:
    """(coded, natural) levels of one factor.

    A factor with explicit levels (every categorical one) uses them all; a low/high factor gets
    `count` (at least 2) levels evenly spaced in coded units, i.e. after its scale. The ends are
    the exact bounds: decoding -1 and +1 can miss them by a rounding error, which would put the
    point just outside the region.
    """
    if factor.levels is not None:
        return [(factor.encode(v), factor.check_value(v)) for v in factor.levels]
    coded = np.linspace(-1.0, 1.0, count).tolist()
    natural = [factor.decode(c) for c in coded]
    low, high = factor.bounds
    natural[0], natural[-1] = factor.check_value(low), factor.check_value(high)
    return list(zip(coded, natural, strict=True))


def size(space: FactorSpace, request: DesignRequest) -> int:
    """Number of factorial points, without building them."""
    return math.prod(
        len(f.levels) if f.levels is not None else request.levels for f in space.factors
    )


def points(space: FactorSpace, request: DesignRequest) -> list[tuple[dict[str, float], Config]]:
    """The factorial points in standard order (first factor changing fastest): coded, natural."""
    level_sets = [factor_levels(f, request.levels) for f in space.factors]
    table = _pydoe.fullfact([len(levels) for levels in level_sets])
    runs = []
    for row in table:
        chosen = [levels[i] for levels, i in zip(level_sets, row, strict=True)]
        runs.append(
            (
                {f.name: c for f, (c, _) in zip(space.factors, chosen, strict=True)},
                {f.name: v for f, (_, v) in zip(space.factors, chosen, strict=True)},
            )
        )
    return runs
