"""The `auto` strategy's staged path, and the closed-loop step `next_batch`, on responses whose
shape is known: each stage is reached from the runs an expert would have at that point."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from experiments.constraints import parse_constraints
from experiments.factors import FactorSpace
from experiments.suggest import STRATEGIES, Limit, Problem, Runs, next_batch, suggest
from experiments.suggest.auto import CONFIRMATION_RUNS
from experiments.suggest.initial import initial_runs

SPACE = FactorSpace.from_dicts(
    [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "threads", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
        {"name": "buffer_gb", "kind": "continuous", "low": 1.0, "high": 9.0},
    ]
)


def bowl(config: dict) -> float:
    """A smooth maximum inside the region: 5 nodes, 16 threads, 5 GB."""
    t = np.log2(config["threads"])
    return float(
        1500.0
        - 20.0 * (config["nodes"] - 5) ** 2
        - 60.0 * (t - 4.0) ** 2
        - 10.0 * (config["buffer_gb"] - 5.0) ** 2
    )


def plane(config: dict) -> float:
    """No curvature at all: more of everything is better."""
    return float(100.0 + 10.0 * config["nodes"] + 5.0 * np.log2(config["threads"]))


def noisy(response, seed: int = 0, sd: float = 2.0):
    rng = np.random.default_rng(seed)
    return lambda config: response(config) + float(rng.normal(0.0, sd))


def run(plan, measure, runs: Runs) -> Runs:
    """The runs after measuring every suggestion of the plan."""
    configs = [*runs.configs, *(s.config for s in plan.suggestions)]
    values = [*runs.values, *(measure(s.config) for s in plan.suggestions)]
    types = [*runs.types, *(s.point_type for s in plan.suggestions)]
    return Runs(configs=configs, values=values, point_types=types)


def staged(measure, *, steps: int, space: FactorSpace = SPACE, **options) -> tuple[list, Runs]:
    """Follow `auto` for `steps` plans; returns the plans and the runs."""
    runs, plans = Runs(), []
    for _ in range(steps):
        plan = suggest("auto", Problem(space, **options), runs)
        plans.append(plan)
        if plan.stop_reason:
            break
        runs = run(plan, measure, runs)
    return plans, runs


def assert_valid(space: FactorSpace, plan, constraints=()) -> None:
    for s in plan.suggestions:
        assert space.check_config(s.config) == s.config
        assert all(c.satisfied(s.config) for c in constraints)
        assert s.reason


def test_from_nothing_auto_screens_with_a_factorial_and_three_centre_points():
    plan = suggest("auto", Problem(SPACE), Runs())
    assert plan.stage == "screening" and "curve" in plan.explanation
    assert Counter(s.point_type for s in plan.suggestions) == {"factorial": 8, "centre": 3}
    assert {s.strategy for s in plan.suggestions} == {"auto"}
    assert_valid(SPACE, plan)


def test_five_factors_are_screened_by_a_resolution_v_half_fraction():
    space = FactorSpace.from_dicts(
        [{"name": f"x{i}", "kind": "continuous", "low": 0.0, "high": 1.0} for i in range(5)]
    )
    plan = suggest("auto", Problem(space), Runs())
    assert Counter(s.point_type for s in plan.suggestions) == {"factorial": 16, "centre": 3}


@pytest.mark.parametrize("budget", [12, 1000])
def test_any_budget_starts_bayesian_optimization(budget):
    # A closed loop is after the optimum, which the staged path's runs delay at any budget.
    plan = suggest("auto", Problem(SPACE), Runs(), budget=budget)
    assert plan.stage == "initial" and f"budget of {budget} trials" in plan.explanation
    assert len(plan.suggestions) == initial_runs(SPACE)
    assert {s.point_type for s in plan.suggestions} == {"space_filling"}
    assert_valid(SPACE, plan)


def test_curvature_leads_to_a_face_centred_composite_design():
    plans, _ = staged(noisy(bowl), steps=2)
    composite = plans[1]
    assert composite.stage == "augment" and "curvature test p = " in composite.explanation
    points = Counter(s.point_type for s in composite.suggestions)
    assert points == {"axial": 6, "centre": 1}  # 4 centre runs in all with the screening's 3
    coded = np.array([SPACE.encode(s.config) for s in composite.suggestions])
    axial = coded[[s.point_type == "axial" for s in composite.suggestions]]
    # Face-centred (nodes and threads are whole numbers): one factor at +-1, the others at 0.
    assert sorted(np.abs(axial).sum(axis=1).round(6)) == [1.0] * 6
    assert all(s.predicted is not None and s.uncertainty is not None for s in composite.suggestions)


def test_the_quadratic_optimum_is_confirmed_and_the_loop_stops():
    plans, runs = staged(noisy(bowl, seed=3), steps=5)
    stages = [p.stage for p in plans]
    assert stages == ["screening", "augment", "confirmation", "confirmed"]
    confirmation = plans[2]
    assert len(confirmation.suggestions) == CONFIRMATION_RUNS
    (config,) = {tuple(s.config.items()) for s in confirmation.suggestions}
    best = dict(config)
    assert best["nodes"] == 5 and best["threads"] in (15, 16, 17)
    assert abs(best["buffer_gb"] - 5.0) < 0.5
    first = confirmation.suggestions[0]
    assert first.predicted_by == "quadratic model" and first.uncertainty > 0
    assert "maximum" in confirmation.explanation
    assert plans[-1].stop_reason and "inside the 95 % prediction interval" in plans[-1].stop_reason
    assert len(runs) == 11 + 7 + CONFIRMATION_RUNS


def test_a_confirmation_outside_the_prediction_interval_hands_over_to_bayes():
    measure = noisy(bowl, seed=3)
    plans, runs = staged(measure, steps=3)
    assert plans[-1].stage == "confirmation"
    values = list(runs.values)
    for i, kind in enumerate(runs.types):
        if kind == "confirmation":
            values[i] -= 300.0  # the optimum disappoints
    runs = Runs(configs=runs.configs, values=values, point_types=runs.types)
    plan = suggest("auto", Problem(SPACE), runs)
    assert plan.stage == "bayes" and "outside the 95 % prediction interval" in plan.explanation
    assert plan.expected_improvement is not None
    runs = run(plan, measure, runs)
    later = suggest("auto", Problem(SPACE), runs)
    assert later.stage == "bayes" and later.explanation.startswith("Bayesian optimization goes on")
    assert "prediction interval" in later.explanation


def test_no_curvature_climbs_the_path_of_steepest_ascent_then_hands_over():
    space = FactorSpace.from_dicts(
        [
            {"name": "nodes", "kind": "integer", "low": 1, "high": 20},
            {"name": "threads", "kind": "integer", "low": 4, "high": 256, "scale": "log2"},
        ]
    )
    # A factorial in the lower part of the region, as a first experiment would be.
    configs = [{"nodes": n, "threads": t} for n in (2, 6) for t in (4, 16)]
    configs += [{"nodes": 4, "threads": 8}] * 3
    measure = noisy(plane, sd=0.5)
    runs = Runs(
        configs=configs,
        values=[measure(c) for c in configs],
        point_types=["factorial"] * 4 + ["centre"] * 3,
    )
    plan = suggest("auto", Problem(space), runs)
    assert plan.stage == "steepest_ascent" and "no curvature" in plan.explanation
    assert {s.point_type for s in plan.suggestions} == {"path"}
    nodes = [s.config["nodes"] for s in plan.suggestions]
    assert nodes == sorted(nodes) and nodes[0] > 4  # uphill, away from the centre
    runs = run(plan, measure, runs)
    after = suggest("auto", Problem(space), runs)
    assert after.stage == "bayes" and "path of steepest ascent" in after.explanation


def test_an_exploration_run_keeps_bayesian_optimization_going_after_the_staged_path():
    _, runs = staged(noisy(bowl), steps=1)
    explored = {"nodes": 2, "threads": 45, "buffer_gb": 7.5}
    runs = Runs(
        configs=[*runs.configs, explored],
        values=[*runs.values, bowl(explored)],
        point_types=[*runs.types, "exploration"],
    )
    plan = suggest("auto", Problem(SPACE), runs)
    # Read as a run of the staged path, it would have the quadratic model judged on it.
    assert plan.stage == "bayes" and plan.explanation.startswith("Bayesian optimization goes on.")
    assert "space-filling design" not in plan.explanation


def test_lack_of_fit_of_the_quadratic_model_hands_over_to_bayes():
    def twisted(config: dict) -> float:
        # Cubic cross terms (a²b, ab²) that no second-order surface follows.
        a, b, _ = SPACE.encode(config)
        return 1000.0 - 100.0 * a**2 - 100.0 * b**2 + 200.0 * a * a * b - 200.0 * a * b * b

    plans, _ = staged(noisy(twisted, sd=1.0), steps=3)
    assert [p.stage for p in plans] == ["screening", "augment", "bayes"]
    assert "lack of fit" in plans[-1].explanation


def test_categorical_factors_and_cutting_constraints_go_straight_to_bayes():
    mixed = FactorSpace.from_dicts(
        [
            {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
            {
                "name": "workload",
                "kind": "categorical",
                "levels": ["oltp_read_write", "oltp_read_only"],
            },
        ]
    )
    plan = suggest("auto", Problem(mixed), Runs())
    assert plan.stage == "initial" and "workload is categorical" in plan.explanation
    constraints = parse_constraints(["nodes * threads <= 200"], SPACE)
    plan = suggest("auto", Problem(SPACE, constraints=constraints), Runs())
    assert plan.stage == "initial" and "nodes * threads <= 200" not in plan.explanation
    assert "remove" in plan.explanation
    assert_valid(SPACE, plan, constraints)


@pytest.mark.parametrize("strategy", [s for s in STRATEGIES if s != "augment"])
def test_every_strategy_stays_inside_the_region_with_integers_and_constraints(strategy):
    constraints = parse_constraints(["nodes * threads <= 300"], SPACE)
    configs = [
        {"nodes": n, "threads": t, "buffer_gb": b}
        for n, t, b in [(1, 4, 1.0), (9, 4, 9.0), (1, 32, 9.0), (9, 32, 1.0), (5, 16, 5.0)]
    ]
    values = [bowl(c) for c in configs]
    runs = Runs(configs=configs, values=values, point_types=["observed"] * 5)
    plan = suggest(strategy, Problem(SPACE, constraints=constraints, seed=2), runs, count=3)
    assert plan.suggestions
    assert_valid(SPACE, plan, constraints)
    for s in plan.suggestions:
        assert isinstance(s.config["nodes"], int) and isinstance(s.config["threads"], int)


def test_bayes_respects_a_limit_on_another_response():
    def latency(config: dict) -> float:
        return 2.0 * config["threads"] + config["nodes"]

    configs = [
        {"nodes": n, "threads": t, "buffer_gb": b}
        for n, t, b in [(1, 4, 1.0), (9, 4, 9.0), (1, 64, 9.0), (9, 64, 1.0), (5, 16, 5.0),
                        (3, 8, 3.0), (7, 32, 7.0), (5, 48, 2.0)]
    ]  # fmt: skip
    runs = Runs(
        configs=configs,
        values=[bowl(c) + 20.0 * np.log2(c["threads"]) ** 2 for c in configs],  # wants threads
        point_types=["observed"] * len(configs),
        responses={"latency_ms": [latency(c) for c in configs]},
    )
    limit = Limit(response="latency_ms", max=40.0)
    plan = suggest("bayes", Problem(SPACE, limits=[limit]), runs, count=3)
    for s in plan.suggestions:
        assert latency(s.config) <= 45.0, s
        assert "latency_ms predicted" in s.reason


def test_next_batch_stops_on_budget_and_on_small_expected_improvement():
    done = next_batch("bayes", Problem(SPACE), Runs(), budget_left=0)
    assert done.stop_reason == "the budget of trials is used up" and not done.suggestions
    start = next_batch("bayes", Problem(SPACE), Runs(), budget_left=2)
    assert len(start.suggestions) == 2  # the space-filling start, cut to the budget
    configs = [s.config for s in suggest("bayes", Problem(SPACE), Runs()).suggestions]
    runs = Runs(configs=configs, values=[bowl(c) for c in configs])
    stopped = next_batch("bayes", Problem(SPACE), runs, stop_below=1e9)
    assert stopped.stop_reason and "below the threshold" in stopped.stop_reason
    going = next_batch("bayes", Problem(SPACE), runs, stop_below=0.0, batch_size=3)
    assert len(going.suggestions) == 3 and going.stop_reason is None


def test_failed_configurations_are_never_suggested_again():
    configs = [s.config for s in suggest("bayes", Problem(SPACE, seed=1), Runs()).suggestions]
    runs = Runs(configs=configs[1:], values=[bowl(c) for c in configs[1:]], failed=[configs[0]])
    for seed in range(3):
        plan = suggest("bayes", Problem(SPACE, seed=seed), runs, count=5)
        assert configs[0] not in [s.config for s in plan.suggestions]
