"""The region where a fitted model may be trusted: the box, cut to the data when data is sparse.

A designed experiment fills its box (every corner is a run, or inside the hull of the runs), so
the whole box is the region. Observations taken elsewhere often do not: the published Galera
study never ran one node with many connections, and a quadratic surface extrapolated there
promises throughput nobody measured. There the region is the convex hull of the observed points
in coded units (numeric factors only; categorical levels are not a geometry), for up to
MAX_HULL_DIMENSIONS numeric factors.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
from scipy.spatial import Delaunay, QhullError

from experiments.factors import Config, FactorSpace

MAX_HULL_DIMENSIONS = 4
# Points this close outside the hull (coded units) still count as inside: rounding to integers.
_TOLERANCE = 1e-9


class DataRegion:
    """Membership test for coded points of the numeric factors."""

    def __init__(self, space: FactorSpace, observed: Sequence[Config]) -> None:
        self.numeric = [i for i, f in enumerate(space.factors) if f.is_numeric]
        factors = [space.factors[i] for i in self.numeric]
        rows = [[f.encode(c[f.name]) for f in factors] for c in observed]
        points = np.unique(np.array(rows, dtype=float).reshape(len(rows), len(factors)), axis=0)
        self._hull = self._hull_if_sparse(points)

    def _hull_if_sparse(self, points: np.ndarray) -> Delaunay | None:
        # Qhull needs two dimensions: with one numeric factor the box is the region. Beyond
        # MAX_HULL_DIMENSIONS its triangulation costs seconds; there the box is the region too.
        dimensions = points.shape[1]
        if not 2 <= dimensions <= MAX_HULL_DIMENSIONS or points.shape[0] <= dimensions:
            return None
        try:
            hull = Delaunay(points)
        except QhullError:  # the points lie in a lower-dimensional subspace: keep the box
            return None
        corners = np.array(list(itertools.product([-1.0, 1.0], repeat=points.shape[1])))
        if bool(np.all(hull.find_simplex(corners, tol=_TOLERANCE) >= 0)):
            return None
        return hull

    @property
    def cut_to_data(self) -> bool:
        """Whether the region is the data's hull rather than the whole box."""
        return self._hull is not None

    def contains(self, coded: np.ndarray) -> np.ndarray:
        """Boolean mask over rows of coded values (one column per factor of the space)."""
        if self._hull is None:
            return np.ones(len(coded), dtype=bool)
        inside: np.ndarray = self._hull.find_simplex(coded[:, self.numeric], tol=_TOLERANCE) >= 0
        return inside
