"""The one search for the best point of a lattice of candidate values per factor
(`experiments.lattice`), serving both the optimum of a fitted model (`analysis.optimize`,
scoring OLS predictions) and Bayesian optimization (`suggest.bayes`, scoring expected
improvement).

A caller scores points given as rows of per-factor candidate indices (higher is better, -inf
where a point is infeasible or excluded) and says how many points it can afford to score. The
search scores the whole lattice when it is within that budget, else improves one factor at a
time from the caller's starts (exact for a linear model only). It then checks the best point
against its neighbours on the factors given by a range (+-1 on an integer factor, a shrinking
coded step on a continuous one; every combination of up to `_JOINT_NEIGHBOURS` integer factors,
continuous factors one at a time) and moves to a better neighbour until none is better; a
neighbour off the lattice (a coarse grid) is added to it. With `polish`, the continuous
factors are then refined jointly by Nelder-Mead (bounded to the ranges): it needs no
gradient and tolerates kinks, as an overall desirability has, and follows a curved ridge
that one-factor-at-a-time steps stall on.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.optimize

from experiments.errors import DomainError
from experiments.factors import Config, Factor, FactorSpace, Value
from experiments.terms import factor_columns

# Lattice points scored at once, to bound memory.
_CHUNK = 20_000
# Up to this many integer factors every +-1 combination is a neighbour, beyond it one at a time.
_JOINT_NEIGHBOURS = 6
_MAX_MOVES = 10_000
# Passes over the factors from one start of the coordinate-wise search. A score need not give
# the same point the same value in every batch (rounding differs with a batch's shape), so
# near-ties can trade places forever: one race of Hartmann-6 with a pessimistic prior mean spent
# over 20 minutes here. A search that converges takes a handful of passes.
_MAX_PASSES = 50
# The finest step, in coded units, on a continuous factor (a 400th of its range).
_FINEST = 0.005
# Nelder-Mead's first simplex reaches this far (coded units) from the point it polishes, and
# it stops when the simplex is this small; restarts from its own result escape a collapse.
_SIMPLEX = 0.1
_POLISHED = 1e-5
_POLISH_RESTARTS = 2

# Rows of per-factor candidate indices -> one score per row (higher is better, -inf infeasible).
Score = Callable[[np.ndarray], np.ndarray]


class Lattice:
    """Candidate values per factor, with what scorers gather by index: the natural values, the
    coded values and the main-effect columns. Values are only ever appended, so an index stays
    valid while the search adds integer neighbours."""

    def __init__(self, space: FactorSpace, candidates: Sequence[Sequence[Value]]) -> None:
        if len(candidates) != len(space.factors):
            raise DomainError("candidates", f"one list of values per factor ({len(space)})")
        self.space = space
        self.values: list[list[Value]] = []
        for factor, values in zip(space.factors, candidates, strict=True):
            if not values:
                raise DomainError(f"candidates.{factor.name}", "needs at least one value")
            self.values.append(list(dict.fromkeys(factor.check_value(v) for v in values)))
        arrays = [self._arrays(f) for f in range(len(space.factors))]
        self._natural = [natural for natural, _, _ in arrays]
        self._coded = [coded for _, coded, _ in arrays]
        self._columns = [columns for _, _, columns in arrays]
        self._positions = [{v: i for i, v in enumerate(values)} for values in self.values]

    @property
    def sizes(self) -> list[int]:
        """Candidate values per factor."""
        return [len(values) for values in self.values]

    @property
    def size(self) -> int:
        """Number of points of the lattice."""
        return math.prod(self.sizes)

    def natural(self, index: np.ndarray) -> np.ndarray:
        """Natural values (an object array, one column per factor) of the indexed points."""
        return np.column_stack([values[index[:, f]] for f, values in enumerate(self._natural)])

    def coded(self, index: np.ndarray) -> np.ndarray:
        """Coded values (one column per factor) of the indexed points."""
        return np.column_stack([values[index[:, f]] for f, values in enumerate(self._coded)])

    def mains(self, index: np.ndarray) -> np.ndarray:
        """Main-effect columns (as `experiments.terms.main_columns`) of the indexed points."""
        return np.hstack([block[index[:, f]] for f, block in enumerate(self._columns)])

    def config(self, index: Sequence[int]) -> Config:
        """The natural configuration of one point."""
        return {
            factor.name: self.values[f][i]
            for f, (factor, i) in enumerate(zip(self.space.factors, index, strict=True))
        }

    def index_of(self, config: Mapping[str, Value]) -> list[int] | None:
        """The point of a configuration, or None when a value is not a candidate."""
        index = [
            positions.get(config.get(name))  # type: ignore[arg-type]
            for name, positions in zip(self.space.names, self._positions, strict=True)
        ]
        return None if any(i is None for i in index) else index  # type: ignore[return-value]

    def nearest(self, coded: np.ndarray) -> np.ndarray:
        """The points nearest coded positions (one row each), factor by factor."""
        coded = np.atleast_2d(coded)
        return np.column_stack(
            [
                np.abs(values[None, :] - coded[:, [f]]).argmin(axis=1)
                for f, values in enumerate(self._coded)
            ]
        )

    def add(self, f: int, value: Value) -> int:
        """The index of `value` among factor `f`'s candidates, appended if new."""
        position = self._positions[f].get(value)
        if position is not None:
            return position
        factor = self.space.factors[f]
        self.values[f].append(value)
        self._positions[f][value] = position = len(self.values[f]) - 1
        natural = np.empty(1, dtype=object)
        natural[0] = value
        self._natural[f] = np.concatenate([self._natural[f], natural])
        self._coded[f] = np.append(self._coded[f], factor.encode(value))
        self._columns[f] = np.vstack([self._columns[f], factor_columns(factor, [value])])
        return position

    def _arrays(self, f: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        factor, values = self.space.factors[f], self.values[f]
        natural = np.empty(len(values), dtype=object)
        natural[:] = values
        coded = np.array([factor.encode(v) for v in values], dtype=float)
        return natural, coded, factor_columns(factor, values)


@dataclass(frozen=True)
class Found:
    """The best point a search found, as indices into the lattice's candidates.

    `search` is "lattice" when every point was scored, "coordinate" when the lattice was over
    budget; `searched` and `feasible` count the distinct points scored and those with a finite
    score, the neighbour check left out; `moves` counts the steps to better integer neighbours;
    `polished` says whether Nelder-Mead improved the continuous factors.
    """

    index: list[int]
    score: float
    search: str
    searched: int
    feasible: int
    moves: int
    neighbours_checked: bool
    polished: bool = False


def search(
    lattice: Lattice,
    score: Score,
    *,
    budget: int,
    starts: Sequence[Sequence[int]] = (),
    polish: bool = False,
) -> Found:
    """The best point of the lattice by `score`: the whole lattice when it has at most `budget`
    points, else coordinate-wise from the first point and each of `starts`; then checked
    against its integer neighbours, and with `polish` refined on its continuous factors."""
    counter = _Counter(score)
    if lattice.size <= budget:
        best, kind = _whole(lattice, counter), "lattice"
    else:
        first = [0] * len(lattice.sizes)
        best, kind = _coordinate(lattice, counter, [first, *starts]), "coordinate"
    searched = len(counter.seen) if kind == "coordinate" else lattice.size
    moves, checked = _neighbours(lattice, score, best)
    polished = polish and _polish(lattice, score, best)
    return Found(
        index=best,
        score=float(score(np.array([best]))[0]),
        search=kind,
        searched=searched,
        feasible=counter.feasible,
        moves=moves,
        neighbours_checked=checked,
        polished=polished,
    )


class _Counter:
    """Scores points, counting each distinct point and whether it was feasible once."""

    def __init__(self, score: Score) -> None:
        self.score = score
        self.seen: set[tuple[int, ...]] = set()
        self.feasible = 0

    def __call__(self, index: np.ndarray, *, distinct: bool = False) -> np.ndarray:
        scores = self.score(index)
        if not distinct:
            self.feasible += int(np.isfinite(scores).sum())
            return scores
        # Plain tuples of Python ints, made in one call: a generator per row took a fifth of a
        # suggestion whose lattice lines were long (800 runs' values on each, on Hartmann-6).
        finite = np.isfinite(scores).tolist()
        for key, ok in zip(map(tuple, index.tolist()), finite, strict=True):
            if key not in self.seen:
                self.seen.add(key)
                self.feasible += ok
        return scores


def _whole(lattice: Lattice, counter: _Counter) -> list[int]:
    sizes, total = lattice.sizes, lattice.size
    best_score, best = -math.inf, 0
    for start in range(0, total, _CHUNK):
        flat = np.arange(start, min(start + _CHUNK, total))
        scores = counter(np.column_stack(np.unravel_index(flat, sizes)))
        if scores.max() > best_score:
            best_score, best = float(scores.max()), int(flat[scores.argmax()])
    return [int(i) for i in np.unravel_index(best, sizes)]


def _coordinate(lattice: Lattice, counter: _Counter, starts: list[list[int]]) -> list[int]:
    """Best of the local optima reached by improving one factor at a time from each start."""
    best_score, best = -math.inf, list(starts[0])
    for start in starts:
        index = list(start)
        for _ in range(_MAX_PASSES):
            improved = False
            for f, size in enumerate(lattice.sizes):
                rows = np.tile(index, (size, 1))
                rows[:, f] = np.arange(size)
                scores = counter(rows, distinct=True)
                if scores.max() > scores[index[f]]:
                    index[f], improved = int(scores.argmax()), True
            if not improved:
                break
        current = float(counter(np.array([index]), distinct=True)[0])
        if current > best_score:
            best_score, best = current, index
    return best


def _neighbours(lattice: Lattice, score: Score, best: list[int]) -> tuple[int, bool]:
    """Move `best` (in place) to a better neighbour until none is better; returns the moves made
    and whether there was an integer factor to check.

    A pattern search over the factors given by a range (`_signs` says which moves are tried):
    on a grid the first steps are half its spacing, halved whenever no step improves, so a long
    way to the optimum takes a few dozen moves; it ends when no +-1 neighbour on an integer
    factor and no step of `_FINEST` coded units on a continuous factor is better.
    """
    space = lattice.space
    ranged = [i for i, f in enumerate(space.factors) if f.is_numeric and f.levels is None]
    if not ranged:
        return 0, False
    signs = _signs([space.factors[f].kind == "integer" for f in ranged])
    steps = [_first_step(lattice, f) for f in ranged]
    current = float(score(np.array([best]))[0])
    moves = 0
    while moves < _MAX_MOVES:
        deltas = [[s * d for s, d in zip(sign, steps, strict=True)] for sign in signs]
        neighbours = _moved(lattice, best, ranged, deltas)
        scores = score(np.array(neighbours)) if neighbours else np.array([-np.inf])
        top = int(scores.argmax())
        if scores[top] > current + 1e-12 * max(1.0, abs(current)):
            best[:], current, moves = neighbours[top], float(scores[top]), moves + 1
            continue
        finer = [_finer(space.factors[f], step) for f, step in zip(ranged, steps, strict=True)]
        if finer == steps:
            break
        steps = finer
    has_integer = any(space.factors[f].kind == "integer" for f in ranged)
    return moves, has_integer


def _polish(lattice: Lattice, score: Score, best: list[int]) -> bool:
    """Refine `best` (in place) on its continuous factors by bounded Nelder-Mead on their
    coded values, the other factors held; whether that found a better point."""
    factors = lattice.space.factors
    free = [
        f for f, factor in enumerate(factors) if factor.kind == "continuous" and not factor.levels
    ]
    if not free:
        return False

    def point(coded: np.ndarray) -> list[int]:
        moved = list(best)
        for f, c in zip(free, np.clip(coded, -1.0, 1.0), strict=True):
            low, high = factors[f].bounds
            value = min(max(factors[f].unrounded(float(c)), low), high)
            moved[f] = lattice.add(f, value)
        return moved

    def loss(coded: np.ndarray) -> float:
        value = float(score(np.array([point(coded)]))[0])
        return -value if np.isfinite(value) else math.inf

    start = np.array([factors[f].encode(lattice.values[f][best[f]]) for f in free])
    current = loss(start)
    improved = False
    for _ in range(_POLISH_RESTARTS):
        simplex = [start] + [
            np.clip(start + _SIMPLEX * np.eye(len(free))[i] * (1 if start[i] < 0 else -1), -1, 1)
            for i in range(len(free))
        ]
        found = scipy.optimize.minimize(
            loss,
            start,
            method="Nelder-Mead",
            bounds=[(-1.0, 1.0)] * len(free),
            options={"initial_simplex": np.array(simplex), "xatol": _POLISHED, "fatol": 0.0},
        )
        if not found.fun < current - 1e-12 * max(1.0, abs(current)):
            break
        start, current, improved = np.asarray(found.x), float(found.fun), True
    if improved:
        best[:] = point(start)
    return improved


def _signs(integer: list[bool]) -> list[tuple[int, ...]]:
    """The directions of the moves: every +-1 combination of up to `_JOINT_NEIGHBOURS` integer
    factors (a ridge between grid points needs a diagonal move), else one at a time; continuous
    factors one at a time (a joint move in many continuous factors costs too many scores)."""
    joint = [i for i, is_integer in enumerate(integer) if is_integer]
    if len(joint) > _JOINT_NEIGHBOURS:
        joint = []
    signs = set()
    for combination in itertools.product((-1, 0, 1), repeat=len(joint)):
        sign = [0] * len(integer)
        for i, value in zip(joint, combination, strict=True):
            sign[i] = value
        signs.add(tuple(sign))
    for i in range(len(integer)):
        for value in (-1, 1):
            signs.add(tuple(value if j == i else 0 for j in range(len(integer))))
    signs.discard(tuple([0] * len(integer)))
    return sorted(signs)


def _first_step(lattice: Lattice, f: int) -> float:
    """Half the widest gap between neighbouring candidates: natural units (at least 1) on an
    integer factor, coded units on a continuous one."""
    factor = lattice.space.factors[f]
    if factor.kind == "integer":
        ordered = sorted(int(v) for v in lattice.values[f])  # type: ignore[call-overload]
        gaps = [b - a for a, b in itertools.pairwise(ordered)]
        return max(1, max(gaps, default=1) // 2)
    coded = sorted(factor.encode(v) for v in lattice.values[f])
    return max([(b - a) / 2.0 for a, b in itertools.pairwise(coded)], default=_FINEST)


def _finer(factor: Factor, step: float) -> float:
    if factor.kind == "integer":
        return max(1, int(step) // 2)
    return step / 2.0 if step / 2.0 >= _FINEST else step


def _moved(
    lattice: Lattice, best: list[int], ranged: list[int], deltas: list[list[float]]
) -> list[list[int]]:
    """The points `best` moved by each of `deltas` (natural units on an integer factor, coded
    on a continuous one), inside the ranges."""
    space, out = lattice.space, []
    for delta in deltas:
        moved = list(best)
        for f, step in zip(ranged, delta, strict=True):
            value = _step(space.factors[f], lattice.values[f][best[f]], step)
            if value is None:
                break
            moved[f] = lattice.add(f, value)
        else:
            out.append(moved)
    return out


def _step(factor: Factor, value: Value, step: float) -> Value | None:
    """`value` moved by `step`, or None outside the range."""
    if step == 0:
        return value
    low, high = factor.bounds
    if factor.kind == "integer":
        moved = int(value) + int(step)  # type: ignore[call-overload]
        return moved if low <= moved <= high else None
    coded = factor.encode(value) + step
    if not -1.0 <= coded <= 1.0:
        return None
    # Why the clip: 2 ** log2(x) can land a rounding error outside the range near its ends.
    return float(min(max(float(factor.decode(coded)), low), high))
