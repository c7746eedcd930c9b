"""Maximin Latin hypercube designs: space filling runs for fitting a surrogate model.

Each numeric factor's range is cut into `runs` equal strata (in coded units, so after a log2
scale) and every stratum holds exactly one run, at a random position inside it. Among such
designs the planner wants one whose closest two runs are as far apart as possible (maximin): it
keeps the best of several random Latin hypercubes and then improves it by swapping values
within a column, which keeps the Latin property, whenever that moves the closest pair apart.

pyDOE2's `lhs(criterion="maximin")` only keeps the best of a few random designs, and the
successor package used on Python 3.12 has no seed argument, so the same seed would not give the
same design everywhere; hence numpy's seeded generator here.

Categorical factors take no part in the distances: their levels are dealt out evenly (each level
equally often, as far as the run count allows) in a seeded random order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from scipy.spatial.distance import pdist, squareform

from experiments.designs.base import DesignFamily, FamilyRuns
from experiments.errors import DomainError
from experiments.factors import FactorSpace

if TYPE_CHECKING:
    from experiments.constraints import Constraint
    from experiments.designs.request import DesignRequest

# Runs per factor when the request gives none: the usual size of a computer experiment for a
# surrogate (Loeppky, Sacks & Welch 2009).
RUNS_PER_FACTOR = 10
# Random starts, then column swaps tried on the best start.
STARTS = 10
SWAPS = 400


def random_lhs(runs: int, dims: int, rng: np.random.Generator) -> np.ndarray:
    """A random Latin hypercube in [0, 1): one run per stratum of every column."""
    strata = rng.permuted(np.tile(np.arange(runs), (dims, 1)), axis=1).T
    return (strata + rng.random((runs, dims))) / runs


def maximin_lhs(runs: int, dims: int, rng: np.random.Generator) -> np.ndarray:
    """A Latin hypercube in [0, 1) with a large minimum distance between runs."""
    starts = [random_lhs(runs, dims, rng) for _ in range(STARTS)]
    best = max(starts, key=lambda u: pdist(u).min())
    return _swap_apart(best, rng)


def balanced_levels(count: int, runs: int, rng: np.random.Generator) -> np.ndarray:
    """Level indices for `runs` runs, each level equally often (counts differ by at most 1)."""
    return rng.permutation(np.resize(rng.permutation(count), runs))


def _swap_apart(unit: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Greedy maximin: swap one coordinate of the closest pair with another run's, keep gains.

    Works on squared distances and only recomputes the two rows a swap touches.
    """
    runs, dims = unit.shape
    unit = unit.copy()
    dist = squareform(pdist(unit, "sqeuclidean"))
    np.fill_diagonal(dist, np.inf)
    closest = dist.min()
    for _ in range(SWAPS):
        pair = np.unravel_index(np.argmin(dist), dist.shape)
        a, b, c = int(pair[rng.integers(2)]), int(rng.integers(runs)), int(rng.integers(dims))
        if a == b:
            continue
        old = dist[[a, b]].copy()
        unit[[a, b], c] = unit[[b, a], c]
        _set_rows(dist, unit, (a, b))
        if dist.min() > closest:
            closest = dist.min()
        else:
            unit[[a, b], c] = unit[[b, a], c]
            _set_rows(dist, unit, (a, b), old)
    return unit


def _set_rows(
    dist: np.ndarray,
    unit: np.ndarray,
    rows: tuple[int, int],
    values: np.ndarray | None = None,
) -> None:
    """Write the squared distances of `rows` (recomputed unless given) into both triangles."""
    if values is None:
        values = ((unit[None, :, :] - unit[list(rows), None, :]) ** 2).sum(axis=2)
        values[0, rows[0]] = values[1, rows[1]] = np.inf
    for row, row_values in zip(rows, values, strict=True):
        dist[row, :] = row_values
        dist[:, row] = row_values


class LatinHypercube(DesignFamily):
    """The `latin_hypercube` family (module doc)."""

    kind = "latin_hypercube"

    def check(self, space: FactorSpace, request: DesignRequest) -> None:
        """Raise DomainError for a factor space or options no Latin hypercube fits."""
        if not any(f.is_numeric for f in space.factors):
            raise DomainError(
                "design.kind",
                "a Latin hypercube needs at least one numeric factor; all factors are categorical"
                " (use a full factorial)",
            )
        if request.blocks != 1:
            raise DomainError(
                "design.blocks", f"a Latin hypercube runs in 1 block; {request.blocks} asked"
            )

    def size(self, space: FactorSpace, request: DesignRequest) -> int:
        """`request.runs`, or 10 runs per factor."""
        self.check(space, request)
        return request.runs or RUNS_PER_FACTOR * len(space)

    def build(
        self, space: FactorSpace, request: DesignRequest, constraints: Sequence[Constraint]
    ) -> FamilyRuns:
        """The runs of a maximin Latin hypercube, seeded by `request.seed`."""
        runs = self.size(space, request)
        rng = np.random.default_rng(request.seed)
        numeric = [i for i, f in enumerate(space.factors) if f.is_numeric]
        unit = maximin_lhs(runs, len(numeric), rng)
        coded = np.zeros((runs, len(space)))
        coded[:, numeric] = 2.0 * unit - 1.0
        for i, factor in enumerate(space.factors):
            if not factor.is_numeric:
                levels = np.array([factor.encode(level) for level in factor.levels or ()])
                coded[:, i] = levels[balanced_levels(len(levels), runs, rng)]
        return FamilyRuns(
            coded=coded,
            point_types=("space_filling",) * runs,
            blocks=(1,) * runs,
            report={
                "criterion": "maximin",
                "min_distance": float(pdist(coded[:, numeric]).min()),
                "runs": runs,
            },
        )
