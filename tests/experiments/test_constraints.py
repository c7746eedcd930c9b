"""Linear constraints on factors: safe parsing, the rule named on refusal, and evaluation."""

import itertools
import keyword

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from experiments.constraints import (
    MAX_CONSTRAINTS,
    Constraint,
    parse_constraints,
    satisfied_rows,
)
from experiments.errors import DomainError
from experiments.factors import FactorSpace

SPACE = FactorSpace.from_dicts(
    [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "clients", "kind": "integer", "low": 1, "high": 8},
        {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
        {"name": "runtime", "low": 30.0, "high": 300.0},
        {"name": "engine", "kind": "categorical", "levels": ["innodb", "myrocks"]},
    ]
)
NUMERIC = ["nodes", "clients", "threads_per_client", "runtime"]
PAIR = ("clients", "threads_per_client")


def one(text: str) -> Constraint:
    return parse_constraints([text], SPACE)[0]


def config(**values: float | str) -> dict:
    base = {"nodes": 3, "clients": 4, "threads_per_client": 16, "runtime": 60.0}
    return {**base, "engine": "innodb", **values}


@pytest.mark.parametrize(
    ("text", "terms", "constant", "strict"),
    [
        # Everything moves to the left of `<= 0`; `>=` is stored negated.
        (
            "clients * threads_per_client <= 256",
            [(("clients", "threads_per_client"), 1.0)],
            -256,
            0,
        ),
        ("nodes >= clients / 4", [(("clients",), 0.25), (("nodes",), -1.0)], 0, 0),
        ("2*nodes - clients <= 10", [(("clients",), -1.0), (("nodes",), 2.0)], -10, 0),
        ("-(nodes - 1) * 3 > -24", [(("nodes",), 3.0)], -27, 1),
        ("runtime < 2 * (nodes + 100)", [(("nodes",), -2.0), (("runtime",), 1.0)], -200, 1),
        (
            "threads_per_client * clients * 0.5 + 1 <= 129",
            [(("clients", "threads_per_client"), 0.5)],
            -128,
            0,
        ),
    ],
)
def test_parses_linear_forms_in_factors_and_the_product_of_two(text, terms, constant, strict):
    parsed = one(text)
    assert parsed.text == text
    assert list(parsed.terms) == terms
    assert parsed.constant == constant
    assert parsed.strict is bool(strict)


def test_the_well_known_pair_is_checked_on_the_product():
    pair = one("clients * threads_per_client <= 256")
    assert pair.satisfied(config(clients=4, threads_per_client=64))
    assert not pair.satisfied(config(clients=5, threads_per_client=64))
    assert pair.factors == ("clients", "threads_per_client")


def test_boundary_is_allowed_by_non_strict_and_refused_by_strict():
    assert one("nodes <= 3").satisfied(config(nodes=3))
    assert not one("nodes < 3").satisfied(config(nodes=3))
    # A log2 decode can land a hair past an integer boundary; it still counts as on it.
    assert one("runtime <= 60").satisfied(config(runtime=60.0 + 1e-12))
    assert not one("runtime <= 60").satisfied(config(runtime=60.001))


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("x <= 1", "unknown factor 'x'"),
        ("__import__('os').system('true') <= 1", "only +, -, * and / by a number are allowed"),
        ("nodes ** 2 <= 9", "only +, -, * and / by a number are allowed"),
        ("nodes / clients <= 2", "only +, -, * and / by a number are allowed"),
        ("abs(nodes) <= 2", "only +, -, * and / by a number are allowed"),
        ("nodes.real <= 2", "unknown factor 'nodes.real'"),
        ("nodes <= True", "only +, -, * and / by a number are allowed"),
        ("nodes <= 'a'", "only +, -, * and / by a number are allowed"),
        ("nodes * clients * threads_per_client <= 512", "a product of more than two factors"),
        ("nodes", "needs exactly one of <=, >=, <, >"),
        ("nodes == 3", "needs exactly one of <=, >=, <, >"),
        ("1 <= nodes <= 3", "needs exactly one of <=, >=, <, >"),
        ("nodes <= 3 and clients <= 2", "needs exactly one of <=, >=, <, >"),
        ("engine <= 1", "categorical factor 'engine' cannot appear in a constraint"),
        ("nodes / 0 <= 1", "division by zero"),
        ("nodes - nodes <= 1", "must involve at least one factor"),
        ("nodes <= 1e999", "numbers must be finite"),
        ("nodes <=", "is not a valid expression"),
        ("nodes <= 3\x00", "is not a valid expression"),
        ("", "must be a non-empty text"),
        ("nodes <= " + "1" * 200, "at most 200 characters"),
    ],
)
def test_refusals_name_the_constraint_and_the_rule(text, rule):
    with pytest.raises(DomainError) as caught:
        parse_constraints(["nodes <= 9", text], SPACE)
    assert caught.value.field == "constraints.1"
    assert rule in caught.value.rule


def test_deep_nesting_within_the_length_limit_parses_without_recursion_trouble():
    assert one("-" * 180 + "nodes <= 1").terms == ((("nodes",), 1.0),)
    assert one("(" * 90 + "nodes" + ")" * 90 + " <= 1").terms == ((("nodes",), 1.0),)


def test_a_non_text_and_too_many_constraints_are_refused():
    with pytest.raises(DomainError) as caught:
        parse_constraints([3], SPACE)  # type: ignore[list-item]
    assert caught.value.field == "constraints.0"
    with pytest.raises(DomainError) as caught:
        parse_constraints(["nodes <= 9"] * (MAX_CONSTRAINTS + 1), SPACE)
    assert (caught.value.field, caught.value.rule) == ("constraints", "at most 20 constraints")
    with pytest.raises(DomainError):
        parse_constraints("nodes <= 9", SPACE)  # type: ignore[arg-type]


def test_satisfied_rows_agrees_with_satisfied_on_configs_and_on_arrays():
    constraints = parse_constraints(
        ["clients * threads_per_client <= 128", "nodes >= clients / 4", "runtime < 200"], SPACE
    )
    configs = [
        config(nodes=n, clients=c, threads_per_client=t, runtime=r)
        for n, c, t, r in itertools.product([1, 2, 9], [1, 5, 8], [4, 16, 64], [30.0, 200.0])
    ]
    expected = [all(c.satisfied(cfg) for c in constraints) for cfg in configs]
    assert satisfied_rows(constraints, SPACE, configs).tolist() == expected
    # Arrays hold natural values in factor order; the categorical column is ignored.
    array = np.array([[cfg[name] for name in NUMERIC] + [np.nan] for cfg in configs])
    assert satisfied_rows(constraints, SPACE, array).tolist() == expected
    assert 0 < sum(expected) < len(expected)
    assert satisfied_rows((), SPACE, configs).all()


# Property tests: random linear constraints (with an optional product term) and random configs.
coefficients = st.integers(min_value=-50, max_value=50)
values = st.fixed_dictionaries(
    {
        "nodes": st.integers(1, 9),
        "clients": st.integers(1, 8),
        "threads_per_client": st.integers(4, 64),
        "runtime": st.floats(30.0, 300.0, allow_nan=False),
    }
)
operators = st.sampled_from(["<=", "<", ">=", ">"])


def render(linear: list[int], product: int, bound: int, operator: str) -> str:
    parts = [f"{c} * {name}" for c, name in zip(linear, NUMERIC, strict=True) if c]
    if product:
        parts.append(f"{product} * clients * threads_per_client")
    return " + ".join(parts or ["0 * nodes", "1 * runtime"]) + f" {operator} {bound}"


def direct(linear: list[int], product: int, cfg: dict) -> float:
    left = sum(c * cfg[name] for c, name in zip(linear, NUMERIC, strict=True))
    return left + product * cfg["clients"] * cfg["threads_per_client"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(coefficients, min_size=4, max_size=4),
    coefficients,
    st.integers(-5000, 5000),
    operators,
    values,
)
def test_satisfied_agrees_with_direct_arithmetic(linear, product, bound, operator, cfg):
    assume(any(linear) or product)
    left = direct(linear, product, cfg)
    # Right on the boundary the tolerance decides; everywhere else plain arithmetic must.
    assume(abs(left - bound) > 1e-6)
    expected = {
        "<=": left <= bound,
        "<": left < bound,
        ">=": left >= bound,
        ">": left > bound,
    }[operator]
    parsed = parse_constraints([render(linear, product, bound, operator)], SPACE)
    assert parsed[0].satisfied({**cfg, "engine": "innodb"}) is expected
    assert satisfied_rows(parsed, SPACE, [cfg]).tolist() == [expected]


@settings(max_examples=100, deadline=None)
@given(st.lists(coefficients, min_size=4, max_size=4), coefficients, st.integers(-999, 999))
def test_text_round_trips_to_the_same_constraint(linear, product, bound):
    assume(any(linear) or product)
    parsed = one(render(linear, product, bound, "<="))
    assert one(parsed.text) == parsed
    recovered = dict(parsed.terms)
    for c, name in zip(linear, NUMERIC, strict=True):
        assert recovered.get((name,), 0.0) == c
    assert recovered.get(("clients", "threads_per_client"), 0.0) == product
    assert parsed.constant == -bound


@settings(max_examples=100, deadline=None)
@given(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True))
def test_names_outside_the_space_are_refused(name):
    assume(name not in SPACE.names and name not in {"True", "False", "None"})
    assume(not keyword.iskeyword(name))
    with pytest.raises(DomainError) as caught:
        parse_constraints([f"{name} + nodes <= 3"], SPACE)
    assert caught.value.rule.startswith(f"unknown factor '{name}'")


def test_a_provider_option_is_named_with_its_dots():
    space = FactorSpace.from_dicts(
        [
            {"name": "gcs.fc_limit", "kind": "integer", "low": 16, "high": 512},
            {"name": "wsrep_slave_threads", "kind": "integer", "low": 1, "high": 16},
        ]
    )
    (rule,) = parse_constraints(["gcs.fc_limit >= 16 * wsrep_slave_threads"], space)
    assert rule.factors == ("gcs.fc_limit", "wsrep_slave_threads")
    with pytest.raises(DomainError) as caught:
        parse_constraints(["gcs.fc_limt <= 100"], space)
    assert caught.value.rule.startswith("unknown factor 'gcs.fc_limt'")
