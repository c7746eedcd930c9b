"""The lattice of candidate configurations that both the optimum search (`analysis.optimize`)
and Bayesian optimization (`suggest.bayes`) search: per factor its explicit levels, or a coded
grid plus the observed values, with every integer of an integer factor's range while the lattice
stays small enough to be searched point by point.

How much of it a caller scores whole is the caller's budget: an OLS prediction costs a few
multiplications a point (`MAX_LATTICE`), a Gaussian process's expected improvement far more
(`suggest.bayes.MAX_SCORED`); past its budget a caller searches the lattice another way.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

from experiments.designs import factor_levels
from experiments.errors import DomainError
from experiments.factors import Factor, FactorSpace, Value

# The fine lattice (every integer) is kept up to this many points, else the coarse grid; the
# optimum search predicts every point up to this many, else it searches coordinate-wise.
MAX_LATTICE = 200_000
# Levels per continuous factor (and per integer factor whose every integer is too many).
GRID_POINTS = 21


def candidate_values(
    space: FactorSpace, observed: Sequence[Mapping[str, Value]] = ()
) -> list[list[Value]]:
    """Candidate values per factor: explicit levels; or a coded grid plus the observed values in
    range, with every integer of an integer factor's range when the lattice stays small enough."""
    coarse: list[list[Value]] = []
    for factor in space.factors:
        if factor.levels is not None:
            coarse.append([factor.check_value(v) for v in factor.levels])
            continue
        values = {v for _, v in factor_levels(factor, GRID_POINTS)}
        values |= {c[factor.name] for c in observed if _in_region(factor, c[factor.name])}
        coarse.append(sorted(values))  # type: ignore[type-var]
    fine = [
        sorted(set(values) | set(range(int(f.bounds[0]), int(f.bounds[1]) + 1)))
        if f.kind == "integer" and f.levels is None
        else values
        for f, values in zip(space.factors, coarse, strict=True)
    ]
    return fine if lattice_size(fine) <= MAX_LATTICE else coarse


def lattice_size(values: Sequence[Sequence[Value]]) -> int:
    """Number of points of the lattice with these candidate values per factor."""
    return math.prod(len(v) for v in values)


def has_every_integer(space: FactorSpace, values: Sequence[Sequence[Value]]) -> bool:
    """Whether every integer factor without explicit levels has all its integers in the lattice
    (so its optimum on the lattice is its optimum, not a grid point near it)."""
    return all(
        len(v) == int(f.bounds[1]) - int(f.bounds[0]) + 1
        for f, v in zip(space.factors, values, strict=True)
        if f.kind == "integer" and f.levels is None
    )


def lattice_points(values: Sequence[Sequence[Value]]) -> list[list[Value]]:
    """Every point of the lattice, as rows of values in factor order."""
    return [list(point) for point in itertools.product(*values)]


def _in_region(factor: Factor, value: Value) -> bool:
    try:
        factor.check_in_region(value)
    except DomainError:
        return False
    return True
