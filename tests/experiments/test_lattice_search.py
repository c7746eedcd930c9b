"""The one lattice search: whole within the budget, coordinate-wise beyond it, and the integer
neighbour check that walks a coarse grid's best point to the integer optimum."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.lattice_search import Lattice, search

WIDE = FactorSpace.from_dicts(
    [
        {"name": "a", "kind": "integer", "low": 1, "high": 100_000},
        {"name": "b", "kind": "integer", "low": 1, "high": 100_000},
    ]
)


def bowl(lattice: Lattice, at: tuple[int, int]):
    def score(index: np.ndarray) -> np.ndarray:
        rows = lattice.natural(index).astype(float)
        return -((rows[:, 0] - at[0]) ** 2) - 3 * (rows[:, 1] - at[1]) ** 2

    return score


def test_a_far_integer_optimum_off_a_coarse_grid_is_reached_in_few_moves():
    lattice = Lattice(WIDE, [[1, 50_000, 100_000], [1, 50_000, 100_000]])
    found = search(lattice, bowl(lattice, (12_345, 87_001)), budget=100)
    assert lattice.config(found.index) == {"a": 12_345, "b": 87_001}
    assert found.search == "lattice" and found.searched == 9
    assert found.neighbours_checked and 0 < found.moves < 200
    assert found.score == 0.0


def test_over_budget_the_search_is_coordinate_wise_and_counts_distinct_points():
    grid = [list(range(1, 100_001, 5_000)), list(range(1, 100_001, 5_000))]
    lattice = Lattice(WIDE, grid)
    found = search(lattice, bowl(lattice, (40_001, 60_001)), budget=10)
    assert found.search == "coordinate"
    assert lattice.config(found.index) == {"a": 40_001, "b": 60_001}
    assert found.searched < 20 * 20 and found.feasible == found.searched


@pytest.mark.timeout(60)
def test_the_coordinate_search_ends_when_scores_of_a_point_differ_from_batch_to_batch():
    # Near-ties scored in different batches can trade places by their last bits; here each
    # batch puts its best one step further along, so a factor always "improves": the search
    # must still end.
    grid = [list(range(1, 100_001, 5_000)), list(range(1, 100_001, 5_000))]
    lattice = Lattice(WIDE, grid)
    calls = itertools.count()

    def shifting(index: np.ndarray) -> np.ndarray:
        return (np.arange(len(index)) == next(calls) % len(index)).astype(float)

    found = search(lattice, shifting, budget=10)
    assert found.search == "coordinate"
    assert all(1 <= v <= 100_000 for v in lattice.config(found.index).values())


def test_infeasible_points_are_never_chosen_and_not_counted_feasible():
    space = FactorSpace.from_dicts(
        [{"name": n, "kind": "integer", "low": 0, "high": 6} for n in ("x", "y")]
    )
    lattice = Lattice(space, [list(range(7)), list(range(7))])

    def score(index: np.ndarray) -> np.ndarray:
        x, y = index[:, 0].astype(float), index[:, 1].astype(float)
        return np.where(x + y <= 5, x * y, -np.inf)

    found = search(lattice, score, budget=1_000)
    brute = max(
        (p for p in itertools.product(range(7), repeat=2) if sum(p) <= 5),
        key=lambda p: p[0] * p[1],
    )
    assert found.score == brute[0] * brute[1]
    assert found.feasible == sum(1 for p in itertools.product(range(7), repeat=2) if sum(p) <= 5)


def test_a_continuous_factor_is_refined_below_the_grid_a_categorical_one_is_not():
    space = FactorSpace.from_dicts(
        [
            {"name": "w", "kind": "continuous", "low": 0, "high": 1},
            {"name": "engine", "kind": "categorical", "levels": ["innodb", "myrocks"]},
        ]
    )
    lattice = Lattice(space, [[0.0, 0.5, 1.0], ["innodb", "myrocks"]])

    def score(index: np.ndarray) -> np.ndarray:
        rows = lattice.natural(index)
        w = rows[:, 0].astype(float)
        return -((w - 0.3141) ** 2) + (rows[:, 1] == "myrocks")

    found = search(lattice, score, budget=100)
    config = lattice.config(found.index)
    assert config["engine"] == "myrocks"
    # The finest step is 0.005 coded units, 0.0025 of this range.
    assert config["w"] == pytest.approx(0.3141, abs=0.0025)
    assert not found.neighbours_checked and found.moves > 0


def test_a_lattice_needs_values_for_every_factor():
    with pytest.raises(DomainError, match="one list of values per factor"):
        Lattice(WIDE, [[1]])
    with pytest.raises(DomainError) as error:
        Lattice(WIDE, [[1], []])
    assert error.value.field == "candidates.b"


def test_nearest_and_index_of_find_the_lattice_point():
    lattice = Lattice(WIDE, [[1, 50_000, 100_000], [1, 100_000]])
    assert lattice.nearest(np.array([-0.98, 0.9])).tolist() == [[0, 1]]
    assert lattice.nearest(np.array([[-0.98, 0.9], [0.9, -0.98]])).tolist() == [[0, 1], [2, 0]]
    assert lattice.index_of({"a": 50_000, "b": 1}) == [1, 0]
    assert lattice.index_of({"a": 7, "b": 1}) is None
