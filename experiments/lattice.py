"""The lattice of candidate configurations that both the optimum search (`analysis.optimize`)
and Bayesian optimization (`suggest.bayes`) search with `experiments.lattice_search`: per factor
its explicit levels, or a coded grid plus the observed values, with every integer of an integer
factor's range while the lattice stays small enough to be searched point by point.

How much of it a caller scores whole is the caller's budget: an OLS prediction costs a few
multiplications a point (`MAX_LATTICE`), a Gaussian process's expected improvement far more
(`suggest.bayes.MAX_SCORED`); past its budget the search goes coordinate-wise.
"""

from __future__ import annotations

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


def _in_region(factor: Factor, value: Value) -> bool:
    try:
        factor.check_in_region(value)
    except DomainError:
        return False
    return True
