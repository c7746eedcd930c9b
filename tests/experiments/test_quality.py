"""The design quality report: estimable terms, aliases, degrees of freedom, D-efficiency, VIF."""

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from experiments.designs.quality import assess, coded_columns, dependent_columns
from experiments.errors import DomainError
from experiments.factors import FactorSpace


def space(names: str) -> FactorSpace:
    return FactorSpace.from_dicts([{"name": n, "low": -1, "high": 1} for n in names])


def configs(names: str, rows) -> list[dict]:
    return [dict(zip(names, map(float, row), strict=True)) for row in rows]


def quadratic_matrix(rows: np.ndarray) -> np.ndarray:
    """Intercept, mains, two-factor interactions, squares: built here from the definition."""
    k = rows.shape[1]
    return np.column_stack(
        [np.ones(len(rows))]
        + [rows[:, i] for i in range(k)]
        + [rows[:, i] * rows[:, j] for i, j in itertools.combinations(range(k), 2)]
        + [rows[:, i] ** 2 for i in range(k)]
    )


def vif_by_regression(x: np.ndarray) -> list[float]:
    """1 / (1 - R²) of each non-intercept column regressed on all the others."""
    result = []
    for j in range(1, x.shape[1]):
        others = np.delete(x, j, axis=1)
        fitted = others @ np.linalg.lstsq(others, x[:, j], rcond=None)[0]
        residual = np.sum((x[:, j] - fitted) ** 2)
        total = np.sum((x[:, j] - x[:, j].mean()) ** 2)
        result.append(total / residual)
    return result


def test_full_two_level_factorial_is_orthogonal_for_the_interaction_model():
    rows = list(itertools.product([-1, 1], repeat=3))
    quality = assess(space("abc"), configs("abc", rows), "interaction")
    assert quality.runs == 8
    assert quality.parameters == 7
    assert quality.residual_df == 1
    assert quality.terms == ("Intercept", "a", "b", "c", "a:b", "a:c", "b:c")
    assert quality.estimable == quality.terms
    assert quality.not_estimable == ()
    assert quality.d_efficiency == pytest.approx(100.0)
    assert quality.max_vif == pytest.approx(1.0)
    assert set(quality.vif) == set(quality.terms[1:])


def test_half_fraction_reports_the_aliased_two_factor_interactions():
    # Montgomery, Design and Analysis of Experiments (8th ed.), Problem 8.1: the 2^(4-1) with
    # I = ABCD (D = ABC); Design-Expert fits A, B, C, D, AB, AC, AD and lists BC, BD and CD as
    # aliased (BC = AD, BD = AC, CD = AB).
    rows = [(a, b, c, a * b * c) for c, b, a in itertools.product([-1, 1], repeat=3)]
    quality = assess(space("ABCD"), configs("ABCD", rows), "interaction")
    assert quality.estimable == ("Intercept", "A", "B", "C", "D", "A:B", "A:C", "A:D")
    assert quality.not_estimable == ("B:C", "B:D", "C:D")
    assert quality.aliased_with == {"B:C": ("A:D",), "B:D": ("A:C",), "C:D": ("A:B",)}
    assert quality.residual_df == 0
    assert quality.d_efficiency is None
    assert quality.max_vif is None
    # The main-effect model of the same fraction is orthogonal.
    linear = assess(space("ABCD"), configs("ABCD", rows), "linear")
    assert (linear.d_efficiency, linear.max_vif, linear.residual_df) == (
        pytest.approx(100.0),
        pytest.approx(1.0),
        3,
    )


def test_d_efficiency_matches_algdesign_for_its_14_run_quadratic_design():
    # R AlgDesign, optFederov(~quad(A,B,C), gen.factorial(3, 3, center=TRUE), nTrials=14)
    # (r-help, 2011-11-24, "AlgDesign - $D $A $Ge $Dea"): rows 1, 3, ..., 27 of the 3^3
    # candidate list (A fastest) with D = det(X'X / n)^(1/p) = 0.4630447.
    rows = [((r - 1) % 3 - 1, (r - 1) // 3 % 3 - 1, (r - 1) // 9 - 1) for r in range(1, 28, 2)]
    quality = assess(space("ABC"), configs("ABC", rows), "quadratic")
    assert quality.runs == 14
    assert quality.parameters == 10
    assert quality.d_efficiency == pytest.approx(46.30447, abs=5e-5)


@pytest.mark.parametrize(
    ("k", "centres"),
    [(2, 5), (3, 6), (4, 7)],
)
def test_rotatable_ccd_matches_the_definitions_computed_independently(k, centres):
    alpha = (2**k) ** 0.25
    cube = list(itertools.product([-1.0, 1.0], repeat=k))
    axial = [tuple(s * alpha * (i == j) for j in range(k)) for i in range(k) for s in (-1, 1)]
    rows = np.array(cube + axial + [(0.0,) * k] * centres)
    names = "abcdef"[:k]
    # Coded as Design-Expert codes a CCD: the factorial points at -1 and +1 of the factor's
    # range, the axial points beyond it at -alpha and +alpha.
    quality = assess(space(names), configs(names, rows), "quadratic")
    x = quadratic_matrix(rows)
    p, n = x.shape[1], x.shape[0]
    expected = 100.0 * np.linalg.det(x.T @ x) ** (1.0 / p) / n
    assert quality.d_efficiency == pytest.approx(expected, rel=1e-9)
    assert_allclose(list(quality.vif.values()), vif_by_regression(x), rtol=1e-9)
    # Main effects and interactions of a CCD are orthogonal to everything; squares are not.
    assert all(v == pytest.approx(1.0) for t, v in quality.vif.items() if "^2" not in t)
    assert quality.max_vif > 1.0


def test_three_level_factorial_with_the_quadratic_model():
    # |X'X| of the 3^2 factorial for the full quadratic model is 36 * 6 * 6 * 4 = 5184
    # (intercept/squares block det 36, then x1, x2 and x1x2 with sums of squares 6, 6, 4).
    rows = list(itertools.product([-1, 0, 1], repeat=2))
    quality = assess(space("ab"), configs("ab", rows), "quadratic")
    assert quality.parameters == 6
    assert quality.residual_df == 3
    assert quality.d_efficiency == pytest.approx(100.0 * 5184 ** (1 / 6) / 9)
    assert quality.max_vif == pytest.approx(1.0)


def test_fewer_runs_than_parameters_names_the_missing_terms():
    rows = [(-1, -1), (1, -1), (-1, 1), (1, 1), (0, 0)]
    quality = assess(space("ab"), configs("ab", rows), "quadratic")
    assert quality.parameters == 6
    assert quality.residual_df == 0
    # Squares of a factor at -1, 0, +1 with four corners: a^2 and b^2 are the same column.
    assert quality.not_estimable == ("b^2",)
    assert quality.aliased_with == {"b^2": ("a^2",)}
    assert quality.d_efficiency is None
    tiny = assess(space("ab"), configs("ab", rows[:3]), "interaction")
    assert tiny.residual_df == 0
    assert tiny.not_estimable == ("a:b",)


def test_categorical_factors_use_effect_coding_so_an_orthogonal_design_scores_100():
    mixed = FactorSpace.from_dicts(
        [
            {"name": "threads", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
            {"name": "engine", "kind": "categorical", "levels": ["innodb", "myrocks"]},
            {"name": "nodes", "kind": "integer", "levels": [1, 3, 5]},
        ]
    )
    rows = [
        {"threads": t, "engine": e, "nodes": n}
        for t, e, n in itertools.product([4, 64], ["innodb", "myrocks"], [1, 5])
    ]
    quality = assess(mixed, rows, "interaction")
    assert quality.terms == (
        "Intercept",
        "threads",
        "engine[myrocks]",
        "nodes",
        "threads:engine[myrocks]",
        "threads:nodes",
        "engine[myrocks]:nodes",
    )
    assert quality.d_efficiency == pytest.approx(100.0)
    assert quality.max_vif == pytest.approx(1.0)


def test_effect_coding_columns():
    engine = FactorSpace.from_dicts(
        [{"name": "engine", "kind": "categorical", "levels": ["a", "b", "c"]}]
    ).factors[0]
    assert coded_columns(engine, ["a", "b", "c", "b"]).tolist() == [
        [-1, -1],
        [1, 0],
        [0, 1],
        [1, 0],
    ]


def test_unknown_model_is_refused_and_the_report_is_json():
    rows = configs("ab", itertools.product([-1, 1], repeat=2))
    with pytest.raises(DomainError) as caught:
        assess(space("ab"), rows, "cubic")
    assert caught.value.field == "design.model"
    text = json.dumps(assess(space("ab"), rows, "interaction").as_dict())
    assert json.loads(text)["terms"] == ["Intercept", "a", "b", "a:b"]


@settings(max_examples=50, deadline=None)
@given(st.data())
def test_dependence_agrees_with_the_rank(data):
    runs = data.draw(st.integers(1, 12))
    columns = data.draw(st.integers(1, 8))
    x = np.array(
        data.draw(
            st.lists(
                st.lists(st.sampled_from([-1.0, 0.0, 1.0]), min_size=columns, max_size=columns),
                min_size=runs,
                max_size=runs,
            )
        )
    )
    dependent = dependent_columns(x)
    kept = [j for j in range(columns) if j not in dependent]
    assert len(kept) == np.linalg.matrix_rank(x)
    # Each dependent column is exactly the combination of the earlier terms it is aliased with.
    for j, aliases in dependent.items():
        assert all(i < j for i in aliases)
        if aliases:
            basis = x[:, list(aliases)]
            coefficients = np.linalg.lstsq(basis, x[:, j], rcond=None)[0]
            assert_allclose(basis @ coefficients, x[:, j], atol=1e-9)
        else:
            assert not x[:, j].any()
