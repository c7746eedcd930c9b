"""D-optimal designs: the runs from a candidate set that maximize |X'X| for a model.

The design to use when integer levels, categories or constraints cut the box. Candidates are
the lattice of every factor's levels when it is small enough, otherwise a seeded quasi-random
(Halton) sample snapped to the factors' levels plus the coarse lattice of their ends and
centres; candidates that break a constraint are removed before the search, so no infeasible run
is ever proposed. The search is the modified Fedorov exchange (Cook & Nachtsheim 1980): each
run in turn is swapped for the candidate that raises the determinant most, the determinant
ratio and the inverse updated in rank-one steps (matrix determinant lemma, Sherman-Morrison),
from several seeded starts; the best determinant wins. Runs may repeat a candidate: replicated
points are often what D-optimality picks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from scipy.stats import qmc

from experiments.blas import one_blas_thread
from experiments.constraints import satisfied_rows
from experiments.designs.base import DesignFamily, FamilyRuns
from experiments.designs.quality import coded_columns, d_efficiency, dependent_columns
from experiments.errors import DomainError
from experiments.factors import Factor, FactorSpace, Value
from experiments.terms import ModelTerms

if TYPE_CHECKING:
    from experiments.constraints import Constraint
    from experiments.designs.request import DesignRequest

# Candidate points when `request.candidates` is not given: the lattice is used whole up to this
# size, and beyond it this many points are sampled. 2000 keeps a 10-factor quadratic search well
# under a second while holding every corner of 10 two-level factors.
DEFAULT_CANDIDATES = 2000
# Runs beyond the model's parameters when `request.runs` is not given (as AlgDesign and JMP do):
# a few degrees of freedom for error and lack of fit.
EXTRA_RUNS = 5
# Levels tried for a continuous factor's lattice, finest first; the quadratic model needs three.
CONTINUOUS_LEVELS = {"quadratic": (5, 3), "linear": (5, 3, 2), "interaction": (5, 3, 2)}
# The search's work is counted, not timed, so a seed always gives the same design. One run
# step (trying every candidate in place of one run) costs candidates x terms multiply-adds
# plus numpy call overhead worth about STEP_OVERHEAD of them; a start takes a few passes over
# the runs (TYPICAL_PASSES). SEARCH_BUDGET (some 30 ms here) buys as many starts as fit,
# between MIN_STARTS and MAX_STARTS; a design too big for one full search gets fewer passes
# instead, so no request keeps the planner busy for long.
SEARCH_BUDGET = 8e7
STEP_OVERHEAD = 10_000
TYPICAL_PASSES = 8
MIN_STARTS = 1
MAX_STARTS = 100
MAX_PASSES = 30
# An exchange must raise the determinant by this factor: smaller gains are rounding noise and
# would let two equivalent runs swap forever.
MIN_GAIN = 1e-9
# The starting design is grown greedily on X'X + RIDGE I, which keeps it invertible while the
# first runs cannot yet span the model.
RIDGE = 1e-6
# A start whose X'X is this ill-conditioned cannot estimate the model: it is skipped.
SINGULAR_CONDITION = 1e12
ALGORITHM = "modified_fedorov"


def _level_counts(space: FactorSpace) -> list[int]:
    """Distinct values each factor can take (a continuous one: the three a square needs)."""
    return [_level_count(f, 3) for f in space.factors]


def _level_count(factor: Factor, continuous: int) -> int:
    """Length of `_lattice_levels(factor, continuous)`, without listing a wide integer range."""
    if factor.levels is not None:
        return len(factor.levels)
    if factor.kind == "integer":
        low, high = factor.bounds
        return int(high - low) + 1
    return continuous


def _parameters(space: FactorSpace, model: str, distinct: Sequence[int]) -> int:
    return len(ModelTerms(space, model, distinct).names)


def _check_runs(space: FactorSpace, request: DesignRequest, parameters: int) -> None:
    if request.runs is not None and request.runs < parameters:
        raise DomainError(
            "design.runs",
            f"a D-optimal design for the {request.model_order} model of {len(space)} factors "
            f"needs at least {parameters} runs (one per model term); {request.runs} asked",
        )


def _check_estimable(candidates: np.ndarray, names: Sequence[str], model: str) -> None:
    """Refuse a feasible region too small or too thin for the model."""
    if len(candidates) < len(names):
        raise DomainError(
            "constraints",
            f"only {len(candidates)} candidate points satisfy the constraints; the {model} "
            f"model has {len(names)} terms and needs as many distinct points",
        )
    dependent = dependent_columns(candidates)
    if dependent:
        raise DomainError(
            "constraints",
            "the points that satisfy the constraints cannot separate "
            f"{', '.join(names[j] for j in dependent)} from the other terms of the {model} "
            "model: relax the constraints or choose a smaller model",
        )


def _candidates(
    space: FactorSpace, request: DesignRequest
) -> tuple[list[list[Value]], np.ndarray, str]:
    """Candidate points as per-factor level lists and one row of level indices per point.

    Returns the lattice when some choice of continuous levels (finest first) keeps it within
    the budget, else a sample; the third item names which ("lattice" or "sampled").
    """
    budget = request.candidates or DEFAULT_CANDIDATES
    counts = CONTINUOUS_LEVELS[request.model_order]
    for count in counts:
        if math.prod(_level_count(f, count) for f in space.factors) <= budget:
            levels = [_lattice_levels(f, count) for f in space.factors]
            return levels, _lattice(levels), "lattice"
    coarse = [_coarse_levels(f, request.model_order) for f in space.factors]
    rng = np.random.default_rng(request.seed)
    if math.prod(len(lv) for lv in coarse) <= budget // 2:
        values = [
            [lv[i] for i in column] for lv, column in zip(coarse, _lattice(coarse).T, strict=True)
        ]
    else:
        values = _sample(space, budget // 2, rng, coarse)
    fill = _sample(space, budget - len(values[0]), rng)
    levels, index = _factorize(space, [a + b for a, b in zip(values, fill, strict=True)])
    unique = np.unique(index, axis=0)
    return levels, unique[np.lexsort(unique.T)], "sampled"


def _lattice_levels(factor: Factor, continuous: int) -> list[Value]:
    """Every level of a factor: explicit levels, every whole number, or `continuous` levels."""
    if factor.levels is not None:
        return [factor.check_value(v) for v in factor.levels]
    if factor.kind == "integer":
        low, high = factor.bounds
        return list(range(int(low), int(high) + 1))
    return [factor.decode(c) for c in np.linspace(-1.0, 1.0, continuous)]


def _coarse_levels(factor: Factor, model: str) -> list[Value]:
    """The ends of a numeric factor (and its centre for the quadratic model), every category."""
    if not factor.is_numeric:
        return list(factor.levels or ())
    low, high = factor.bounds
    ends = [factor.check_value(low), factor.check_value(high)]
    if model != "quadratic":
        return ends
    if factor.levels is None:
        centre = factor.decode(0.0)
    else:
        centre = factor.check_value(min(factor.levels, key=lambda v: abs(factor.encode(v))))
    return sorted({*ends, centre}, key=float)


def _lattice(levels: Sequence[Sequence[Value]]) -> np.ndarray:
    """Level indices of every combination, first factor changing fastest."""
    grids = np.meshgrid(*(np.arange(len(lv)) for lv in levels), indexing="ij")
    return np.column_stack([g.ravel(order="F") for g in grids])


def _sample(
    space: FactorSpace,
    count: int,
    rng: np.random.Generator,
    coarse: Sequence[Sequence[Value]] | None = None,
) -> list[list[Value]]:
    """`count` Halton points as values per factor: one of its `coarse` levels when given, else
    anywhere in its region (`_sample_factor`)."""
    points = qmc.Halton(d=len(space), scramble=True, seed=rng).random(count)
    if coarse is not None:
        return [_pick(levels, u) for levels, u in zip(coarse, points.T, strict=True)]
    return [_sample_factor(f, u) for f, u in zip(space.factors, points.T, strict=True)]


def _sample_factor(factor: Factor, u: np.ndarray) -> list[Value]:
    """Values of one factor for coordinates in [0, 1), spread evenly in coded units.

    Points between the lattice levels can be picked, e.g. near a constraint: a continuous
    factor takes any value, an integer one any whole number, others one of their levels.
    """
    if not factor.is_numeric:
        return _pick(factor.levels or (), u)
    coded = 2.0 * u - 1.0
    if factor.levels is None and (factor.kind == "continuous" or _level_count(factor, 0) > len(u)):
        return [factor.decode(float(c)) for c in coded]
    # Explicit levels, or a range with fewer whole numbers than points: snapping to the nearest
    # level in coded units costs one encode per level instead of one decode per point.
    levels = sorted(_lattice_levels(factor, 0), key=factor.encode)
    positions = np.array([factor.encode(v) for v in levels])
    return [levels[i] for i in np.searchsorted((positions[1:] + positions[:-1]) / 2.0, coded)]


def _pick(levels: Sequence[Value], u: np.ndarray) -> list[Value]:
    """One of `levels` per coordinate in [0, 1), each level equally likely."""
    return [levels[i] for i in np.minimum((u * len(levels)).astype(int), len(levels) - 1)]


def _factorize(
    space: FactorSpace, values: Sequence[Sequence[Value]]
) -> tuple[list[list[Value]], np.ndarray]:
    """Per-factor values -> per-factor level lists (categories in factor order) and indices."""
    levels: list[list[Value]] = []
    columns = []
    for factor, column in zip(space.factors, values, strict=True):
        seen = set(column)
        if factor.is_numeric:
            distinct = sorted(seen, key=float)
        else:
            distinct = [v for v in factor.levels or () if v in seen]
        position = {v: i for i, v in enumerate(distinct)}
        levels.append(distinct)
        columns.append([position[v] for v in column])
    return levels, np.array(columns, dtype=int).T


def _numeric(factor: Factor, levels: Sequence[Value]) -> np.ndarray:
    """Natural values of numeric levels for the constraint check (categories: 0, unused)."""
    if not factor.is_numeric:
        return np.zeros(len(levels))
    return np.array([float(v) for v in levels])


@one_blas_thread
def _search(
    candidates: np.ndarray, runs: int, starts: int, passes: int, rng: np.random.Generator
) -> tuple[np.ndarray, float]:
    """Best (rows, log |X'X|) over `starts` exchange searches, rows sorted."""
    results = [_exchange(candidates, _start(candidates, runs, rng), passes) for _ in range(starts)]
    rows, log_det = max(results, key=lambda result: result[1])
    return np.sort(rows), log_det


def _start(candidates: np.ndarray, runs: int, rng: np.random.Generator) -> np.ndarray:
    """A random handful of candidates completed greedily by the largest prediction variance.

    Growing on X'X + RIDGE I, a direction the design does not span yet has a huge variance, so
    the greedy steps make the start invertible as soon as it has as many runs as terms.
    """
    p = candidates.shape[1]
    rows = list(rng.integers(0, len(candidates), size=rng.integers(0, p // 2 + 1)))
    x = candidates[rows]
    inverse = np.linalg.inv(x.T @ x + RIDGE * np.eye(p))
    variance = np.sum((candidates @ inverse) * candidates, axis=1)
    while len(rows) < runs:
        best = int(np.argmax(variance))
        inverse, variance = _rank_one(candidates, inverse, variance, candidates[best], 1.0)
        rows.append(best)
    return np.array(rows, dtype=int)


def _exchange(candidates: np.ndarray, rows: np.ndarray, passes: int) -> tuple[np.ndarray, float]:
    """Modified Fedorov exchange from a start: (rows, log |X'X|), -inf if it is singular.

    Swapping run x for candidate y multiplies |X'X| by (1 + d(y)) (1 - d(x)) + d(x, y)^2, with
    d(a, b) = a' (X'X)^-1 b: the gain of every candidate comes from one matrix-vector product.
    """
    rows = rows.copy()
    start = candidates[rows].T @ candidates[rows]
    if np.linalg.cond(start) > SINGULAR_CONDITION:
        return rows, -math.inf
    for _ in range(passes):
        # Fresh inverse each pass, so rounding from the rank-one steps cannot pile up.
        x = candidates[rows]
        inverse = np.linalg.inv(x.T @ x)
        variance = np.sum((candidates @ inverse) * candidates, axis=1)
        improved = False
        for i, out in enumerate(rows):
            leaving = candidates[out]
            cross = candidates @ (inverse @ leaving)
            gain = (1.0 + variance) * (1.0 - variance[out]) + cross**2
            best = int(np.argmax(gain))
            if gain[best] <= 1.0 + MIN_GAIN:
                continue
            inverse, variance = _rank_one(candidates, inverse, variance, candidates[best], 1.0)
            inverse, variance = _rank_one(candidates, inverse, variance, leaving, -1.0)
            rows[i] = best
            improved = True
        if not improved:
            break
    return rows, float(np.linalg.slogdet(candidates[rows].T @ candidates[rows])[1])


def _rank_one(
    candidates: np.ndarray, inverse: np.ndarray, variance: np.ndarray, x: np.ndarray, sign: float
) -> tuple[np.ndarray, np.ndarray]:
    """Inverse and prediction variances after adding (sign +1) or removing (-1) the run x."""
    u = inverse @ x
    denominator = 1.0 + sign * float(x @ u)
    projected = candidates @ u
    return (
        inverse - sign * np.outer(u, u) / denominator,
        variance - sign * projected**2 / denominator,
    )


class DOptimal(DesignFamily):
    """The `d_optimal` family (module doc)."""

    kind = "d_optimal"

    def check(self, space: FactorSpace, request: DesignRequest) -> None:
        """Refuse blocks and a run count below the number of model terms."""
        if request.blocks > 1:
            raise DomainError(
                "design.blocks", "a D-optimal design is not blocked: ask for 1 block (the default)"
            )
        _check_runs(space, request, _parameters(space, request.model_order, _level_counts(space)))

    def size(self, space: FactorSpace, request: DesignRequest) -> int:
        """`request.runs`, or the model's parameters plus EXTRA_RUNS."""
        return (
            request.runs
            or _parameters(space, request.model_order, _level_counts(space)) + EXTRA_RUNS
        )

    def build(
        self, space: FactorSpace, request: DesignRequest, constraints: Sequence[Constraint]
    ) -> FamilyRuns:
        """Search the feasible candidates for the runs that maximize |X'X|."""
        self.check(space, request)
        model = request.model_order
        runs = self.size(space, request)
        levels, index, candidate_set = _candidates(space, request)
        natural = np.column_stack(
            [_numeric(f, lv)[i] for f, lv, i in zip(space.factors, levels, index.T, strict=True)]
        )
        feasible = satisfied_rows(constraints, space, natural)
        index = index[feasible]
        if not len(index):
            raise DomainError("constraints", "no candidate point satisfies every constraint")
        distinct = [len(np.unique(column)) for column in index.T]
        # Constraints can only remove levels, hence terms: `check` already saw the most runs needed.
        terms = ModelTerms(space, model, distinct)
        mains = np.hstack(
            [
                coded_columns(f, lv)[i]
                for f, lv, i in zip(space.factors, levels, index.T, strict=True)
            ]
        )
        candidates = terms.matrix(mains)
        _check_estimable(candidates, terms.names, model)
        step = candidates.size + STEP_OVERHEAD
        starts = int(
            np.clip(SEARCH_BUDGET // (TYPICAL_PASSES * runs * step), MIN_STARTS, MAX_STARTS)
        )
        passes = int(np.clip(SEARCH_BUDGET // (starts * runs * step), 1, MAX_PASSES))
        rows, log_det = _search(
            candidates, runs, starts, passes, np.random.default_rng(request.seed)
        )
        chosen = index[rows]
        coded = np.column_stack(
            [
                [f.encode(lv[i]) for i in column]
                for f, lv, column in zip(space.factors, levels, chosen.T, strict=True)
            ]
        )
        return FamilyRuns(
            coded=coded,
            point_types=("optimal",) * runs,
            blocks=(1,) * runs,
            report={
                "candidates": len(index),
                "candidates_removed": int(np.count_nonzero(~feasible)),
                "candidate_set": candidate_set,
                "log_det": log_det,
                "d_efficiency": d_efficiency(candidates[rows]),
                "algorithm": ALGORITHM,
                "starts": starts,
                "runs_default": request.runs is None,
            },
        )
