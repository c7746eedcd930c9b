"""The candidates of Bayesian optimization: the lattice of `experiments.lattice` (every integer
of an integer factor while it stays small, else a coarse grid, plus the observed values),
searched by `experiments.lattice_search`, as the optimum of a fitted model is: whole when it
has at most `MAX_SCORED` points, else coordinate-wise from the best of a seeded scrambled Sobol
set snapped to it and from the best configurations run. Integer factors are searched on their
own values, never rounded after the fact."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Container, Sequence

import numpy as np
from scipy.stats import qmc

from experiments.constraints import Constraint, satisfied_rows
from experiments.errors import DomainError
from experiments.factors import Config, FactorSpace, Value
from experiments.lattice import candidate_values
from experiments.lattice_search import Lattice, search
from experiments.suggest.fidelity import Fidelity
from experiments.suggest.gaussian_process import Encoder

# The lattice is scored whole up to this many points (expected improvement is costly), else
# searched coordinate-wise from the best quasi-random starts.
MAX_SCORED = 20_000
_STARTS = 10
# The space-filling sequence whose next unrun point an exploration pick is.
_SEQUENCE = 256


class Pool:
    """The candidate lattice, searched for the point of highest expected improvement: whole
    when it has at most MAX_SCORED points, else coordinate-wise from the best of `size`
    quasi-random points snapped to it."""

    def __init__(
        self,
        space: FactorSpace,
        encoder: Encoder,
        constraints: Sequence[Constraint],
        observed: Sequence[Config],
        seed: int,
        size: int,
        fidelity: Fidelity | None,
    ) -> None:
        self.space = space
        self.encoder = encoder
        self.constraints = list(constraints)
        values = candidate_values(space, observed)
        # The fidelity keeps to its ladder: the search's +-1 neighbours would leave it.
        self.ladder: tuple[int, int] | None = None
        if fidelity is not None:
            f = space.names.index(fidelity.factor.name)
            values[f] = fidelity.ladder()
            self.ladder = (f, len(values[f]))
        self.lattice = Lattice(space, values)
        self.seed = seed
        if self.lattice.size <= MAX_SCORED:
            # The whole lattice is scored: no starts, only a check for an allowed point.
            self.starts = np.empty((0, len(space)), dtype=int)
            flat = np.arange(self.lattice.size)
            checked = np.column_stack(np.unravel_index(flat, self.lattice.sizes))
        else:
            self.starts = np.unique(_sobol(self.lattice, size, seed), axis=0)
            checked = self.starts
        if not self._allowed(self.lattice.natural(checked)).any():
            raise DomainError(
                "constraints", "no configuration of the region meets every constraint"
            )

    def _config(self, key: tuple[Value, ...]) -> Config:
        return dict(zip(self.space.names, key, strict=True))

    def _allowed(self, rows: np.ndarray) -> np.ndarray:
        if not self.constraints:
            return np.ones(len(rows), dtype=bool)
        return satisfied_rows(self.constraints, self.space, rows)

    def _eligible(self, index: np.ndarray) -> np.ndarray:
        """Which lattice points meet the constraints and keep to the fidelity's ladder."""
        keep = self._allowed(self.lattice.natural(index))
        if self.ladder is not None:
            f, rungs = self.ladder
            keep &= index[:, f] < rungs  # the lattice appends values off the ladder
        return keep

    def best(
        self,
        score: Callable[[np.ndarray], np.ndarray],
        excluded: set[tuple[Value, ...]],
        around: Sequence[Config] = (),
    ) -> tuple[list[Value], float] | None:
        """The allowed, not excluded point of highest score, or None when none is left."""

        excluded_index = [i for i in map(self.lattice.index_of, map(self._config, excluded)) if i]

        def scored(index: np.ndarray) -> np.ndarray:
            keep = self._eligible(index) & ~_rows_in(index, excluded_index)
            scores = np.full(len(index), -np.inf)
            if keep.any():
                scores[keep] = score(self.encoder.gathered(self.lattice.values, index[keep]))
            return scores

        starts: list[list[int]] = []
        if len(self.starts):
            ranked = np.argsort(-scored(self.starts), kind="stable")[:_STARTS]
            starts = [[int(i) for i in self.starts[r]] for r in ranked]
            starts += [i for i in map(self.lattice.index_of, around) if i is not None]
        found = search(self.lattice, scored, budget=MAX_SCORED, starts=starts)
        if not np.isfinite(found.score):
            return None
        return list(self.lattice.config(found.index).values()), found.score

    def unrun(self, run: Container[tuple[Value, ...]]) -> list[Value] | None:
        """The first allowed point of a scrambled Sobol sequence whose key is not in `run`."""
        points = _sobol(self.lattice, _SEQUENCE, self.seed + 1)
        for index in points[self._eligible(points)]:
            config = self.lattice.config(index)
            if self.space.key(config) not in run:
                return list(config.values())
        return None


def _rows_in(index: np.ndarray, rows: list[list[int]]) -> np.ndarray:
    """Which rows of `index` are among `rows`."""
    if not rows:
        return np.zeros(len(index), dtype=bool)
    # Each row as one opaque value, so membership is a sorted search, not a comparison of
    # every candidate with every run (which took half of a suggestion after 800 runs).
    known = np.array(rows, dtype=index.dtype)
    return np.isin(_as_one_value(index), _as_one_value(known))


def _as_one_value(rows: np.ndarray) -> np.ndarray:
    whole = np.ascontiguousarray(rows)
    return whole.view(np.dtype((np.void, whole.dtype.itemsize * whole.shape[1]))).ravel()


def _sobol(lattice: Lattice, size: int, seed: int) -> np.ndarray:
    """Scrambled Sobol points of the coded region, each snapped to its nearest lattice point."""
    sampler = qmc.Sobol(d=len(lattice.sizes), scramble=True, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a count not a power of two is fine here
        unit = sampler.random(size)
    return lattice.nearest(2.0 * unit - 1.0)
