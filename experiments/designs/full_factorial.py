"""General (mixed-level) full factorial: every combination of every factor's levels."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from experiments.designs import _pydoe, fractional_factorial
from experiments.designs.base import DesignFamily, FamilyRuns
from experiments.errors import DomainError
from experiments.factors import Factor, FactorSpace, Value

if TYPE_CHECKING:
    from experiments.constraints import Constraint
    from experiments.designs.request import DesignRequest


def factor_levels(factor: Factor, count: int) -> list[tuple[float, Value]]:
    """(coded, natural) levels of one factor.

    A factor with explicit levels (every categorical one) uses them all; a low/high factor gets
    `count` (at least 2) levels evenly spaced in coded units, i.e. after its scale.
    """
    if factor.levels is not None:
        return [(factor.encode(v), factor.check_value(v)) for v in factor.levels]
    coded = np.linspace(-1.0, 1.0, count).tolist()
    return [(c, factor.decode(c)) for c in coded]


def _level_counts(space: FactorSpace, request: DesignRequest) -> list[int]:
    return [len(f.levels) if f.levels is not None else request.levels for f in space.factors]


class FullFactorial(DesignFamily):
    """The `full_factorial` family (module doc)."""

    kind = "full_factorial"

    def check(self, space: FactorSpace, request: DesignRequest) -> None:
        """Blocks need every factor at two levels (they are confounded with interactions)."""
        if request.blocks > 1 and any(n != 2 for n in _level_counts(space, request)):
            raise DomainError(
                "design.blocks",
                "a blocked full factorial needs every factor at two levels (blocks are confounded "
                "with the highest-order interactions); use blocks 1 or two-level factors",
            )

    def size(self, space: FactorSpace, request: DesignRequest) -> int:
        """Number of factorial points, without building them."""
        return math.prod(_level_counts(space, request))

    def build(
        self, space: FactorSpace, request: DesignRequest, constraints: Sequence[Constraint]
    ) -> FamilyRuns:
        """Every combination of levels in standard order (first factor changing fastest)."""
        if request.blocks > 1:
            # A blocked 2^k is the fractional-factorial machinery with no fraction: reuse it.
            full = dataclasses.replace(
                request, kind="fractional_factorial", runs=2 ** len(space), resolution=None
            )
            return fractional_factorial.build(space, full, constraints)
        level_sets = [factor_levels(f, request.levels) for f in space.factors]
        table = _pydoe.fullfact([len(levels) for levels in level_sets])
        coded = np.array(
            [[levels[i][0] for levels, i in zip(level_sets, row, strict=True)] for row in table],
            dtype=float,
        ).reshape(len(table), len(space))
        return FamilyRuns(
            coded=coded,
            point_types=("factorial",) * len(coded),
            blocks=(1,) * len(coded),
            report={
                "levels": {
                    f.name: len(levels) for f, levels in zip(space.factors, level_sets, strict=True)
                }
            },
        )
