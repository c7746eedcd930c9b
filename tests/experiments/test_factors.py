"""Factors and coding: validation rules, and round trips between natural and coded units."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from experiments.errors import DomainError
from experiments.factors import Factor, FactorSpace

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@st.composite
def numeric_ranges(draw: st.DrawFn, *, log2: bool) -> tuple[float, float]:
    low = draw(st.floats(min_value=1e-3, max_value=1e5) if log2 else finite)
    span = draw(st.floats(min_value=1e-3, max_value=1e5))
    return low, low + span


@given(numeric_ranges(log2=False), st.floats(min_value=-1, max_value=1))
def test_continuous_linear_coding_round_trips(bounds: tuple[float, float], coded: float):
    factor = Factor("x", "continuous", low=bounds[0], high=bounds[1])
    natural = factor.decode(coded)
    assert bounds[0] - 1e-6 * abs(bounds[0]) <= natural <= bounds[1] + 1e-6 * abs(bounds[1])
    assert factor.encode(natural) == pytest.approx(coded, abs=1e-6)


@given(numeric_ranges(log2=True), st.floats(min_value=-1, max_value=1))
def test_log2_coding_round_trips_and_is_even_in_the_logarithm(
    bounds: tuple[float, float], coded: float
):
    factor = Factor("threads", "continuous", low=bounds[0], high=bounds[1], scale="log2")
    natural = float(factor.decode(coded))
    assert factor.encode(natural) == pytest.approx(coded, abs=1e-6)
    # The centre is the geometric mean of the ends.
    assert float(factor.decode(0.0)) == pytest.approx(math.sqrt(bounds[0] * bounds[1]), rel=1e-9)


@given(st.integers(-1000, 1000), st.integers(1, 1000), st.data())
def test_integer_values_round_trip_exactly(low: int, span: int, data: st.DataObject):
    factor = Factor("nodes", "integer", low=low, high=low + span)
    value = data.draw(st.integers(low, low + span))
    assert factor.decode(factor.encode(value)) == value
    assert isinstance(factor.decode(data.draw(st.floats(-1, 1))), int)


@given(st.integers(1, 100), st.integers(1, 100))
def test_the_ends_decode_to_the_exact_bounds(low: int, span: int):
    factor = Factor("threads", "integer", low=low, high=low + span, scale="log2")
    assert factor.decode(-1.0) == low and factor.decode(1.0) == low + span


@given(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=10, unique=True))
def test_categorical_levels_round_trip(levels: list[str]):
    factor = Factor("engine", "categorical", levels=tuple(levels))
    for level in levels:
        assert factor.decode(factor.encode(level)) == level


def test_integer_rounding_is_half_up():
    assert Factor("n", "integer", low=1, high=4).decode(0.0) == 3  # 2.5 -> 3, not 2
    assert Factor("n", "integer", low=2, high=5).decode(0.0) == 4  # 3.5 -> 4


@pytest.mark.parametrize(
    ("raw", "field", "words"),
    [
        ({"name": "1st", "kind": "integer", "low": 1, "high": 2}, "factors.0.name", "starting"),
        ({"name": "gcs.", "kind": "integer", "low": 1, "high": 2}, "factors.0.name", "dots"),
        ({"name": "a" * 65, "kind": "integer", "low": 1, "high": 2}, "factors.0.name", "64"),
        ({"name": "x", "kind": "ordinal", "low": 1, "high": 2}, "factors.0.kind", "one of"),
        ({"name": "x", "low": 2, "high": 2}, "factors.0.high", "greater than low"),
        ({"name": "x", "low": 1}, "factors.0.low", "low and high"),
        ({"name": "x", "kind": "categorical"}, "factors.0.levels", "categorical"),
        ({"name": "x", "kind": "categorical", "levels": ["a", 1]}, "factors.0.levels", "strings"),
        ({"name": "x", "levels": [1, 2], "low": 1, "high": 2}, "factors.0.levels", "not both"),
        ({"name": "x", "levels": [0, 4], "scale": "log2"}, "factors.0.levels", "above 0"),
        ({"name": "x", "low": 1, "high": 2, "scale": "ln"}, "factors.0.scale", "one of"),
        ({"name": "x", "low": float("nan"), "high": 2}, "factors.0.low", "finite"),
        (
            {"name": "x", "kind": "categorical", "levels": ["a"], "fidelity": True},
            "factors.0.fidelity",
            "numeric factor above 0",
        ),
        ({"name": "x", "low": 0, "high": 2, "fidelity": True}, "factors.0.fidelity", "above 0"),
    ],
)
def test_bad_factors_name_the_field_and_rule(raw: dict, field: str, words: str):
    with pytest.raises(DomainError) as error:
        FactorSpace.from_dicts([raw])
    assert error.value.field == field and words in error.value.rule


def test_one_factor_at_most_is_the_fidelity_and_it_survives_the_round_trip():
    runtime = {"name": "runtime_s", "kind": "integer", "low": 10, "high": 120, "fidelity": True}
    space = FactorSpace.from_dicts([{"name": "nodes", "low": 1, "high": 9}, runtime])
    assert space.fidelity is space["runtime_s"] and space["nodes"].fidelity is False
    assert FactorSpace.from_dicts(space.to_dicts()) == space
    assert FactorSpace.from_dicts([{"name": "nodes", "low": 1, "high": 9}]).fidelity is None
    with pytest.raises(DomainError) as error:
        FactorSpace.from_dicts([runtime, runtime | {"name": "warmup_s"}])
    assert error.value.field == "factors.1.fidelity" and "only one" in error.value.rule


def test_a_config_is_checked_against_every_factor():
    space = FactorSpace.from_dicts(
        [
            {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
            {"name": "engine", "kind": "categorical", "levels": ["innodb", "myrocks"]},
        ]
    )
    assert space.check_config({"nodes": 3.0, "engine": "innodb"}) == {
        "nodes": 3,
        "engine": "innodb",
    }
    for bad, field in [
        ({"nodes": 3}, "engine"),
        ({"nodes": 10, "engine": "innodb"}, "nodes"),
        ({"nodes": 3, "engine": "aria"}, "engine"),
        ({"nodes": True, "engine": "innodb"}, "nodes"),
        ({"nodes": 3, "engine": "innodb", "x": 1}, "x"),
    ]:
        with pytest.raises(DomainError) as error:
            space.check_config(bad)
        assert error.value.field == field
