"""Plackett-Burman designs, checked against Plackett & Burman (1946) and Hadamard orthogonality.

Sources: Plackett & Burman (1946), Biometrika 33, 305-325 (generating vectors, the 28-run
blocks); NIST/SEMATECH e-Handbook of Statistical Methods, section 5.3.3.5 (the 12-run table);
Paley (1933) for the quadratic-residue construction the cyclic vectors of prime N - 1 follow.
"""

import time

import numpy as np
import pytest

from experiments.designs import plackett_burman as pb
from experiments.designs.request import DesignRequest
from experiments.errors import DomainError
from experiments.factors import FactorSpace

FAMILY = pb.PlackettBurman()


def numeric(k: int) -> FactorSpace:
    return FactorSpace.from_dicts([{"name": f"x{i}", "low": 0, "high": 1} for i in range(k)])


def request(**options) -> DesignRequest:
    return DesignRequest(kind="plackett_burman", randomize=False, **options)


def plan(k: int, **options):
    return FAMILY.build(numeric(k), request(**options), [])


def test_sizes_are_every_multiple_of_four_up_to_48():
    assert pb.sizes() == list(range(4, 49, 4))


@pytest.mark.parametrize("runs", pb.sizes())
def test_every_design_is_orthogonal(runs):
    design = pb.design(runs)
    assert design.shape == (runs, runs - 1)
    model = np.column_stack([np.ones(runs), design])
    # X'X = N I: balanced columns, each pair orthogonal (a Hadamard matrix).
    np.testing.assert_array_equal(model.T @ model, runs * np.eye(runs))


def test_twelve_runs_are_the_published_table():
    design = pb.design(12)
    plus = [1, -1, 1, -1, -1, -1, 1, 1, 1, -1, 1]
    # NIST e-Handbook 5.3.3.5, runs 1 and 2 and the last run.
    assert design[0].tolist() == plus
    assert design[1].tolist() == [1, 1, -1, 1, -1, -1, -1, 1, 1, 1, -1]
    assert design[11].tolist() == [-1] * 11


@pytest.mark.parametrize("runs", [4, 8, 12, 20, 24, 44, 48])
def test_cyclic_designs_of_prime_n_minus_1_follow_the_quadratic_residues(runs):
    # Plackett & Burman's vectors for these N are Paley's: + at 0 and at the squares mod N - 1.
    p = runs - 1
    squares = {i * i % p for i in range(1, p)}
    vector = [1 if i == 0 or i in squares else -1 for i in range(p)]
    design = pb.design(runs)
    assert design[:p, 0].tolist() == vector
    for j in range(1, p):
        np.testing.assert_array_equal(design[:p, j], np.roll(design[:p, 0], j))


@pytest.mark.parametrize(
    ("k", "runs"), [(1, 4), (3, 4), (4, 8), (7, 8), (8, 12), (11, 12), (19, 20), (27, 28), (30, 32)]
)
def test_default_runs_are_the_smallest_multiple_of_four_above_k(k, runs):
    family = plan(k)
    assert family.coded.shape == (runs, k)
    assert FAMILY.size(numeric(k), request()) == runs
    assert family.report["runs"] == runs
    assert family.report["columns_unused"] == runs - 1 - k
    assert family.point_types == ("factorial",) * runs
    assert family.blocks == (1,) * runs


def test_twenty_four_to_twenty_seven_factors_take_28_runs():
    # pyDOE2's pbdesign fails an assertion here.
    for k in range(24, 28):
        coded = plan(k).coded
        assert coded.shape == (28, k)
        np.testing.assert_array_equal(coded.T @ coded, 28 * np.eye(k))


def test_more_runs_can_be_asked_for():
    family = plan(5, runs=20)
    assert family.coded.shape == (20, 5)
    assert family.report["columns_unused"] == 14


def test_report_states_how_main_effects_alias_two_factor_interactions():
    report = plan(11).report
    assert report["max_main_2fi_correlation"] == pytest.approx(1 / 3, abs=1e-4)
    assert "partially aliased" in report["note"]
    assert "fully aliased" in plan(7).report["note"]
    assert plan(2).report["max_main_2fi_correlation"] == 0


def test_two_level_categorical_factors_are_coded_minus_one_and_plus_one():
    space = FactorSpace.from_dicts(
        [
            {"name": "threads", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
            {"name": "engine", "kind": "categorical", "levels": ["innodb", "myrocks"]},
        ]
    )
    coded = FAMILY.build(space, request(), []).coded
    assert set(np.unique(coded)) == {-1.0, 1.0}


@pytest.mark.parametrize(
    ("k", "options", "field", "words"),
    [
        (5, {"runs": 30}, "design.runs", "multiple of 4"),
        (8, {"runs": 8}, "design.runs", "at least 12 runs"),
        (5, {"runs": 52}, "design.runs", "up to 48 runs"),
        (5, {"blocks": 2}, "design.blocks", "one block"),
    ],
)
def test_impossible_requests_name_the_rule(k, options, field, words):
    for call in (FAMILY.check, FAMILY.size):
        with pytest.raises(DomainError) as raised:
            call(numeric(k), request(**options))
        assert raised.value.field == field
        assert words in raised.value.rule


def test_factors_with_other_than_two_levels_are_refused():
    space = FactorSpace.from_dicts(
        [{"name": "a", "low": 0, "high": 1}, {"name": "nodes", "levels": [1, 3, 5, 9]}]
    )
    with pytest.raises(DomainError) as raised:
        FAMILY.check(space, request())
    assert raised.value.field == "factors.1.levels"
    assert "'nodes' has 4 levels" in raised.value.rule


def test_thirty_factors_plan_well_under_100_ms():
    for k in (10, 30):
        start = time.perf_counter()
        FAMILY.check(numeric(k), request())
        plan(k)
        assert time.perf_counter() - start < 0.1
