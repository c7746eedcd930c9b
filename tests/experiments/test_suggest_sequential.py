"""Sequential steps: augmenting a factorial into a CCD (checked against the planner's CCD), the
path of steepest ascent (Montgomery DAE Example 11.1 / Montgomery & Runger Example 14-11), and
replicating the incumbent."""

import itertools
from collections import Counter

import numpy as np
import pytest

from experiments.constraints import parse_constraints
from experiments.designs import plan
from experiments.designs.request import DesignRequest
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.suggest.augment import augment
from experiments.suggest.replicate import replicate_incumbent
from experiments.suggest.steepest_ascent import steepest_ascent


def space_of(*factors: dict) -> FactorSpace:
    return FactorSpace.from_dicts(factors)


def corners(space: FactorSpace, levels: dict[str, tuple]) -> list[dict]:
    names = space.names
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*levels.values())]


def key(space: FactorSpace, config: dict) -> tuple:
    return tuple(round(float(config[n]), 6) for n in space.names)


def assert_valid(space: FactorSpace, suggestions, constraints=()) -> None:
    for s in suggestions:
        assert space.check_config(s.config) == s.config
        assert all(c.satisfied(s.config) for c in constraints)
        assert s.reason.endswith(".") and len(s.reason) > 40


# --- augment -------------------------------------------------------------------------------


def test_augment_integer_factorial_matches_the_planners_face_centred_ccd():
    space = space_of(
        {"name": "threads", "kind": "integer", "low": 1, "high": 64, "scale": "log2"},
        {"name": "buffer_mb", "low": 128, "high": 4096},
        {"name": "flush", "kind": "integer", "low": 0, "high": 2},
    )
    request = DesignRequest(kind="ccd", ccd_type="face_centred", centre_points=4, randomize=False)
    design = plan(space, request)
    factorial = [p.config for p in design.points if p.point_type == "factorial"]
    assert len(factorial) == 8

    suggestions = augment(space, factorial)

    assert Counter(s.point_type for s in suggestions) == {"axial": 6, "centre": 4}
    assert {s.strategy for s in suggestions} == {"augment"}
    together = Counter(key(space, c) for c in factorial + [s.config for s in suggestions])
    assert together == Counter(key(space, p.config) for p in design.points)
    assert_valid(space, suggestions)
    assert "face" in suggestions[0].reason and "threads is a whole-number factor" in (
        suggestions[0].reason
    )


def test_augment_sub_region_factorial_is_the_rotatable_ccd_in_its_own_coded_units():
    space = space_of(*({"name": f"x{i}", "low": 0, "high": 100} for i in range(3)))
    region = space_of(*({"name": f"x{i}", "low": 40, "high": 60} for i in range(3)))
    design = plan(region, DesignRequest(kind="ccd", centre_points=2, randomize=False))
    factorial = [p.config for p in design.points if p.point_type == "factorial"]

    suggestions = augment(space, factorial, centre_points=2)

    together = Counter(key(space, c) for c in factorial + [s.config for s in suggestions])
    assert together == Counter(key(space, p.config) for p in design.points)
    axial = [s for s in suggestions if s.point_type == "axial"]
    assert len(axial) == 6
    assert sorted({round(s.config["x0"], 3) for s in axial}) == [
        round(50 - 10 * 8**0.25, 3),
        50.0,
        round(50 + 10 * 8**0.25, 3),
    ]
    assert "rotatable" in axial[0].reason
    assert_valid(space, suggestions)


def test_augment_full_range_continuous_factorial_falls_back_to_alpha_one_and_says_so():
    space = space_of({"name": "a", "low": 0, "high": 10}, {"name": "b", "low": 5, "high": 9})
    factorial = corners(space, {"a": (0, 10), "b": (5, 9)})
    suggestions = augment(space, factorial, centre_points=1)
    axial = [s for s in suggestions if s.point_type == "axial"]
    assert {key(space, s.config) for s in axial} == {(0, 7), (10, 7), (5, 5), (5, 9)}
    assert "rotatable distance (alpha 1.41) would put a, b outside its range" in axial[0].reason
    assert [s.config for s in suggestions if s.point_type == "centre"] == [{"a": 5.0, "b": 7.0}]
    assert_valid(space, suggestions)


def test_augment_counts_observed_centre_and_axial_runs_and_skips_constraint_breakers():
    space = space_of({"name": "a", "low": 0, "high": 10}, {"name": "b", "low": 0, "high": 10})
    runs = corners(space, {"a": (0, 10), "b": (0, 10)})
    runs += [{"a": 5, "b": 5}] * 3 + [{"a": 0, "b": 5}]  # 3 centre runs, one axial already run
    constraints = parse_constraints(["a + 2 * b < 25"], space)

    suggestions = augment(space, runs, centre_points=4, constraints=constraints)

    configs = [key(space, s.config) for s in suggestions]
    assert sorted(configs) == [(5, 0), (5, 5), (10, 5)]  # (5, 10) breaks a + 2 * b < 25
    assert all(
        "Left out: the high axial point of b breaks 'a + 2 * b < 25'" in s.reason
        for s in suggestions
    )
    assert "3 centre run(s) are already in the data" in suggestions[-1].reason
    assert_valid(space, suggestions, constraints)


def test_augment_refuses_categorical_factors_and_runs_that_are_not_a_factorial():
    mixed = space_of(
        {"name": "a", "low": 0, "high": 1},
        {"name": "engine", "kind": "categorical", "levels": ["x", "y"]},
    )
    with pytest.raises(DomainError, match="'engine' is categorical") as caught:
        augment(mixed, corners(mixed, {"a": (0, 1), "engine": ("x", "y")}))
    assert caught.value.field == "strategy"

    space = space_of({"name": "a", "low": 0, "high": 10}, {"name": "b", "low": 0, "high": 10})
    three_level = [*corners(space, {"a": (0, 10), "b": (0, 10)}), {"a": 2, "b": 0}]
    with pytest.raises(DomainError, match=r"run 5 .* is neither a factorial point"):
        augment(space, three_level)
    with pytest.raises(DomainError, match="'b' is not varied"):
        augment(space, [{"a": 0, "b": 3}, {"a": 10, "b": 3}])
    with pytest.raises(DomainError, match="both its low and its high level"):
        augment(space, [{"a": 0, "b": 0}, {"a": 10, "b": 0}, {"a": 5, "b": 5}, {"a": 5, "b": 10}])


# --- steepest ascent -----------------------------------------------------------------------

# Montgomery, DAE 8th ed., Example 11.1 (Table 11.1): time 35 +- 5 min, temperature 155 +- 5 F,
# a 2^2 factorial with five centre points; yhat = 40.44 + 0.775 x1 + 0.325 x2 (design units).
# The published path moves 1 coded unit (5 min) in x1 and 0.42 (about 2 F) in x2 per step:
# 40 min / 157 F, 45 / 159, 50 / 161, 55 / 163, 60 / 165, 65 / 167 (Montgomery & Runger, Ex.
# 14-11, Figure 14-46).
MONTGOMERY_RUNS = [(30, 150, 39.3), (30, 160, 40.0), (40, 150, 40.9), (40, 160, 41.5)] + [
    (35, 155, y) for y in (40.3, 40.5, 40.7, 40.2, 40.6)
]


def test_steepest_ascent_reproduces_montgomery_example_11_1():
    # Ranges 12 design half-ranges wide in both factors, so coded directions agree with the book.
    space = space_of(
        {"name": "time", "low": 5, "high": 125, "unit": "min"},
        {"name": "temp", "low": 95, "high": 215, "unit": "F"},
    )
    configs = [{"time": t, "temp": T} for t, T, _ in MONTGOMERY_RUNS]
    values = [y for _, _, y in MONTGOMERY_RUNS]
    d1 = 0.775 / np.hypot(0.775, 0.325)
    # One design unit in x1 (5 min) is 1/12 of a coded unit of the range.
    suggestions = steepest_ascent(space, configs, values, step=(1 / 12) / d1, count=6)

    assert len(suggestions) == 6
    for k, s in enumerate(suggestions, start=1):
        x1, x2 = (s.config["time"] - 35) / 5, (s.config["temp"] - 155) / 5
        assert x1 == pytest.approx(k)  # published Delta x1 = 1.00
        assert x2 == pytest.approx(0.42 * k, abs=0.01 * k)  # published Delta x2 = 0.42
        assert s.config["temp"] == pytest.approx(155 + 2 * k, abs=0.1 * k)  # published 157..167
        assert s.predicted == pytest.approx(40.44 + 0.775 * x1 + 0.325 * x2, abs=0.01)
        assert s.uncertainty is not None and 0 < s.uncertainty < 1
        assert s.point_type == "path" and s.strategy == "steepest_ascent"
    assert "+0.775" not in suggestions[0].reason  # gradient is in range units: 12 x the book's
    assert "+9.3 per coded unit of time" in suggestions[0].reason
    assert all(s.uncertainty < t.uncertainty for s, t in itertools.pairwise(suggestions))


def plane(space: FactorSpace, gradient: dict[str, float], configs: list[dict]) -> list[float]:
    return [100 + sum(g * space[n].encode(c[n]) for n, g in gradient.items()) for c in configs]


def test_steepest_descent_moves_along_the_exact_gradient_of_a_plane_and_stops_at_the_edge():
    space = space_of({"name": "a", "low": -10, "high": 10}, {"name": "b", "low": -10, "high": 10})
    runs = corners(space, {"a": (-1, 1), "b": (-1, 1)})
    values = plane(space, {"a": 3.0, "b": -4.0}, runs)

    suggestions = steepest_ascent(space, runs, values, goal="minimize", step=0.25, count=10)

    # Descent direction (-3, 4) / 5; |b| reaches 1 at k = 5 steps of 0.25.
    points = np.array([[s.config["a"], s.config["b"]] for s in suggestions]) / 10
    expected = np.array([[-0.6, 0.8]]) * 0.25 * np.arange(1, 6)[:, None]
    np.testing.assert_allclose(points, expected, atol=1e-12)
    assert "would leave the range of b" in suggestions[-1].reason
    assert "steepest descent" in suggestions[0].reason
    assert suggestions[0].predicted == pytest.approx(100 - 5 * 0.25, abs=1e-9)
    assert suggestions[0].uncertainty == pytest.approx(0.0, abs=1e-6)


def test_steepest_ascent_rounds_integers_dedups_stops_at_a_constraint_and_holds_categories():
    space = space_of(
        {"name": "threads", "kind": "integer", "low": 1, "high": 256, "scale": "log2"},
        {"name": "pool", "low": 0, "high": 100},
        {"name": "engine", "kind": "categorical", "levels": ["a", "b"]},
    )
    runs = [
        {"threads": t, "pool": p, "engine": e}
        for t, p, e in itertools.product((8, 16), (40, 50), ("a", "b"))
    ]
    values = [
        plane(space, {"threads": 5.0, "pool": 1.0}, [r])[0] + (7 if r["engine"] == "b" else 0)
        for r in runs
    ]
    constraints = parse_constraints(["threads <= 128"], space)

    suggestions = steepest_ascent(space, runs, values, step=0.05, count=20, constraints=constraints)

    assert_valid(space, suggestions, constraints)
    threads = [s.config["threads"] for s in suggestions]
    assert all(isinstance(t, int) for t in threads)
    assert len(
        set(map(tuple, ([s.config["threads"], s.config["pool"]] for s in suggestions)))
    ) == len(suggestions)
    assert threads == sorted(threads) and threads[-1] <= 128
    assert {s.config["engine"] for s in suggestions} == {"b"}
    assert "would break 'threads <= 128'" in suggestions[-1].reason


def test_steepest_ascent_refuses_bad_input_and_a_path_that_cannot_start():
    space = space_of({"name": "a", "low": 0, "high": 10}, {"name": "b", "low": 0, "high": 10})
    runs = corners(space, {"a": (0, 10), "b": (0, 10)})
    with pytest.raises(DomainError, match="ends before its first new point: the next step would"):
        steepest_ascent(space, runs, [1, 2, 3, 4], step=1.5)
    with pytest.raises(DomainError, match="flat"):
        steepest_ascent(space, runs, [1, 1, 1, 1])
    with pytest.raises(DomainError) as caught:
        steepest_ascent(space, runs, [1, 2, 3])
    assert caught.value.field == "values"
    with pytest.raises(DomainError) as caught:
        steepest_ascent(space, runs, [1, 2, 3, 4], goal="best")
    assert caught.value.field == "goal"
    with pytest.raises(DomainError, match="cannot separate"):
        steepest_ascent(space, [{"a": 1, "b": 1}, {"a": 2, "b": 2}], [1, 2])


# --- replicate -----------------------------------------------------------------------------


def test_replicate_incumbent_repeats_the_best_mean_configuration():
    space = space_of({"name": "a", "kind": "integer", "low": 0, "high": 10})
    runs = [{"a": 1}, {"a": 2}, {"a": 2}, {"a": 3}]
    values = [10.0, 12.0, 14.0, 12.5]

    best = replicate_incumbent(space, runs, values, goal="maximize", count=3)
    assert [s.config for s in best] == [{"a": 2}] * 3
    assert best[0].point_type == "replicate" and best[0].predicted == 13.0
    assert best[0].uncertainty == pytest.approx(1.0)  # sd sqrt(2) over sqrt(2) runs
    assert "runner-up averaged 12.5" in best[0].reason

    lowest = replicate_incumbent(space, runs, values, goal="minimize", count=1)
    assert lowest[0].config == {"a": 1} and lowest[0].uncertainty is None
    assert_valid(space, best + lowest)
