"""Slices of a fitted response surface: exact on exact data, honest grids, masks and errors."""

from __future__ import annotations

import itertools
import math

import pytest

from experiments.analysis import ResponseLimit
from experiments.analysis.model import fit_model
from experiments.analysis.slices import grid_values, held_settings, response_slice
from experiments.constraints import parse_constraints
from experiments.errors import DomainError
from experiments.factors import Factor, FactorSpace

SPACE = FactorSpace.from_dicts(
    [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 5},
        {"name": "threads", "kind": "integer", "low": 1, "high": 64, "scale": "log2"},
        {"name": "mix", "kind": "categorical", "levels": ["rw", "ro"]},
    ]
)
CONFIGS = [
    {"nodes": n, "threads": t, "mix": m}
    for n, t, m in itertools.product((1, 3, 5), (1, 8, 64), ("rw", "ro"))
]


def truth(nodes: int, threads: int, mix: str) -> float:
    # Quadratic in nodes and in log2(threads): the quadratic model on coded factors holds it.
    t = math.log2(threads)
    return 100 + 50 * nodes - 4 * nodes**2 + 30 * t - 2 * t**2 + (25 if mix == "ro" else 0)


VALUES = [truth(**c) for c in CONFIGS]


def test_grids_follow_the_factor_types_and_scales():
    assert grid_values(SPACE["nodes"], 40) == [1, 2, 3, 4, 5]
    assert grid_values(SPACE["mix"], 40) == ["rw", "ro"]
    threads = grid_values(SPACE["threads"], 7)
    assert threads == [1, 2, 4, 8, 16, 32, 64]  # evenly spaced on the log2 scale
    levels = Factor(name="slaves", kind="integer", levels=(16, 1, 4))
    assert grid_values(levels, 40) == [1, 4, 16]
    wide = Factor(name="io", kind="integer", low=100, high=10000)
    assert len(grid_values(wide, 30)) == 30 and grid_values(wide, 30)[0] == 100
    continuous = Factor(name="ratio", kind="continuous", low=0.0, high=1.0)
    assert grid_values(continuous, 5) == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_a_slice_of_an_exact_quadratic_reproduces_it_everywhere():
    fitted = fit_model(SPACE, CONFIGS, VALUES, "quadratic")
    held = {"nodes": 3, "threads": 8, "mix": "ro"}
    cut = response_slice(fitted, x="nodes", y="threads", held=held, points=7)
    assert cut.held == {"mix": "ro"}
    for j, threads in enumerate(cut.y_values):
        for i, nodes in enumerate(cut.x_values):
            assert cut.predicted[j][i] == pytest.approx(truth(nodes, threads, "ro"), abs=1e-8)
    line = response_slice(fitted, x="mix", held=held)
    assert line.y is None and line.y_values == []
    assert line.predicted[0] == pytest.approx([truth(3, 8, "rw"), truth(3, 8, "ro")])
    assert len(line.runs) == len(CONFIGS)


def test_confidence_bands_contain_the_prediction_and_widen_away_from_the_runs():
    noisy = [v + (1.5 if i % 3 == 0 else -0.8) for i, v in enumerate(VALUES)]
    fitted = fit_model(SPACE, CONFIGS, noisy, "quadratic")
    cut = response_slice(fitted, x="nodes", held={"nodes": 3, "threads": 8, "mix": "ro"})
    low, mean, high = cut.ci_low[0], cut.predicted[0], cut.ci_high[0]
    assert all(lo < m < hi for lo, m, hi in zip(low, mean, high, strict=True))
    width = [hi - lo for lo, hi in zip(low, high, strict=True)]
    assert width[0] > width[2] < width[-1]  # narrowest in the middle of the runs


def test_feasibility_marks_factor_constraints_and_limits_on_other_responses():
    fitted = fit_model(SPACE, CONFIGS, VALUES, "quadratic")
    latency = [2.0 * c["nodes"] * math.log2(c["threads"]) for c in CONFIGS]
    cut = response_slice(
        fitted,
        x="nodes",
        y="threads",
        held={"nodes": 1, "threads": 1, "mix": "rw"},
        points=7,
        constraints=parse_constraints(["nodes * threads <= 128"], SPACE),
        limits=[ResponseLimit(response="latency", values=latency, max=29.5)],
    )
    assert not all(map(all, cut.feasible)) and any(map(any, cut.feasible))
    for j, threads in enumerate(cut.y_values):
        for i, nodes in enumerate(cut.x_values):
            # Latency is bilinear in nodes and log2(threads): the quadratic terms hold it exactly.
            expected = nodes * threads <= 128 and 2.0 * nodes * math.log2(threads) <= 29.5
            assert cut.feasible[j][i] == expected, (nodes, threads)


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"x": "cores"}, "x"),
        ({"x": "nodes", "y": "nodes"}, "y"),
        ({"x": "nodes", "y": "cores"}, "y"),
        ({"x": "nodes", "points": 1}, "points"),
        ({"x": "nodes", "y": "threads", "y_points": 500}, "y_points"),
        ({"x": "nodes", "held": {"nodes": 1}}, "threads"),
    ],
)
def test_bad_slices_name_the_field(arguments, field):
    fitted = fit_model(SPACE, CONFIGS, VALUES, "linear")
    arguments = {"held": {"nodes": 1, "threads": 1, "mix": "rw"}} | arguments
    with pytest.raises(DomainError) as error:
        response_slice(fitted, **arguments)
    assert error.value.field == field


def test_held_settings_are_typed_by_their_factors_from_query_text():
    levels = FactorSpace.from_dicts(
        [
            {"name": "slaves", "kind": "integer", "levels": [1, 4, 16]},
            {"name": "share", "kind": "continuous", "low": 0, "high": 1},
        ]
    )
    assert held_settings(SPACE, ["nodes:4", "mix:ro", "threads:16.0"]) == {
        "nodes": 4,
        "mix": "ro",
        "threads": 16,
    }
    assert held_settings(levels, ["slaves:4", "share:0.25"]) == {"slaves": 4, "share": 0.25}
    assert held_settings(SPACE, []) == {}


@pytest.mark.parametrize(
    ("pairs", "field", "rule"),
    [
        (["nodes"], "held", "name:value"),
        (["cores:2"], "held.cores", "not a factor"),
        (["nodes:2", "nodes:3"], "held.nodes", "twice"),
        (["nodes:2.5"], "held.nodes", "whole number"),
        (["nodes:9"], "held.nodes", "between 1 and 5"),
        (["nodes:many"], "held.nodes", "finite number"),
        (["nodes:nan"], "held.nodes", "finite number"),
        (["mix:wo"], "held.mix", "one of"),
    ],
)
def test_bad_held_settings_name_the_factor_and_the_rule(pairs, field, rule):
    with pytest.raises(DomainError) as error:
        held_settings(SPACE, pairs)
    assert error.value.field == field and rule in error.value.rule
