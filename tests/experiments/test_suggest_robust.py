"""Noise factors in the strategies: suggestions are control configurations run at every noise
level, and the recommendation is a control configuration judged by the robust aim
(`experiments.suggest.noise`, `experiments.suggest.bayes.robust_deploy`).

The toy space has one control factor (threads, 4 or 16) and a categorical noise factor
(workload, read or write), each of the four configurations measured three times, 5 apart:

    threads  read  write  mean  worst  0.25 quantile
    4        1000   600    800   600    700
    16       1400   400    900   400    650

so threads=16 is best on average and threads=4 in the worst case (and by the 0.25 quantile:
np.quantile interpolates a quarter of the way from the lower level to the higher)."""

from __future__ import annotations

import pytest

from experiments.constraints import parse_constraints
from experiments.factors import FactorSpace
from experiments.robust import RobustAim
from experiments.suggest import (
    Limit,
    Plan,
    Problem,
    Recommendation,
    Runs,
    Suggestion,
    next_batch,
    recommendation,
    suggest,
)
from experiments.suggest.auto import Auto
from experiments.suggest.base import recommended
from experiments.suggest.bayes import Models
from experiments.suggest.bayes.robust_search import RobustSearch
from experiments.suggest.noise import crossed_plan

SPACE = FactorSpace.from_dicts(
    [
        {"name": "threads", "kind": "integer", "levels": [4, 16]},
        {"name": "workload", "kind": "categorical", "levels": ["read", "write"], "noise": True},
    ]
)
TPS = {(4, "read"): 1000.0, (4, "write"): 600.0, (16, "read"): 1400.0, (16, "write"): 400.0}
# A wider space for the search: threads over a range, the same noise factor.
WIDE = FactorSpace.from_dicts(
    [
        {"name": "threads", "kind": "integer", "low": 1, "high": 64, "scale": "log2"},
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "workload", "kind": "categorical", "levels": ["read", "write"], "noise": True},
    ]
)


WORKLOADS = ("read", "write")


def toy_runs(table: dict = TPS) -> Runs:
    configs, values = [], []
    for (threads, workload), tps in table.items():
        for error in (-5.0, 0.0, 5.0):
            configs.append({"threads": threads, "workload": workload})
            values.append(tps + error)
    return Runs(configs=configs, values=values)


def wide_tps(config: dict) -> float:
    """Read-heavy work likes many threads, write-heavy work few."""
    t, n = config["threads"], config["nodes"]
    top = 32 if config["workload"] == "read" else 8
    return 1000.0 - 0.5 * (t - top) ** 2 - 5.0 * (n - 5) ** 2


def wide_runs(configs: list[dict]) -> Runs:
    return Runs(configs=configs, values=[wide_tps(c) for c in configs])


@pytest.mark.parametrize(
    ("aim", "threads", "value"),
    [
        (None, 16, 900.0),
        (RobustAim("mean"), 16, 900.0),
        (RobustAim("worst"), 4, 600.0),
        (RobustAim("quantile", 0.25), 4, 700.0),
    ],
)
def test_the_mean_and_the_worst_aim_recommend_differently(aim, threads, value):
    found = recommended_of(Problem(SPACE, robust=aim), toy_runs())
    assert found.config == {"threads": threads}  # control factors only
    assert found.observed == pytest.approx(value)  # the aim of the measured means
    assert found.predicted == pytest.approx(value, abs=5.0)  # of the model's means
    assert found.runs == 6 and found.predicted_by == "gaussian process"
    text = (aim or RobustAim()).text("maximize")
    assert text in found.reason and "workload" in found.reason
    low, high = (600, 1000) if threads == 4 else (400, 1400)
    assert f"range from {low}" in found.reason and f"to {high}" in found.reason


def recommended_of(problem: Problem, runs: Runs) -> Recommendation:
    found = recommendation(problem, runs)
    assert found is not None
    return found


def test_a_minimized_response_takes_the_highest_level_as_the_worst():
    # A latency: threads=4 100 / 300 (mean 200, worst 300), threads=16 20 / 340 (180, 340).
    latency = {(4, "read"): 100.0, (4, "write"): 300.0, (16, "read"): 20.0, (16, "write"): 340.0}
    for aim, threads in ((RobustAim("mean"), 16), (RobustAim("worst"), 4)):
        found = recommended_of(Problem(SPACE, goal="minimize", robust=aim), toy_runs(latency))
        assert found.config == {"threads": threads}, aim
        assert found.observed == pytest.approx(180.0 if threads == 16 else 300.0)


def test_a_limit_broken_at_one_noise_level_rules_a_control_configuration_out():
    # latency_p95_ms: fine for threads=16 when reading, 80 ms when writing; the limit is 50.
    runs = toy_runs()
    p95 = [
        {(4, "read"): 20.0, (4, "write"): 30.0, (16, "read"): 25.0, (16, "write"): 80.0}[
            (c["threads"], c["workload"])
        ]
        + 0.1 * i
        for i, c in enumerate(runs.configs)
    ]
    limited = Runs(configs=runs.configs, values=runs.values, responses={"latency_p95_ms": p95})
    problem = Problem(SPACE, limits=(Limit("latency_p95_ms", max=50.0),))
    found = recommended_of(problem, limited)
    assert found.config == {"threads": 4}  # best on average is 16
    assert "every limit at every noise level" in found.reason


def test_without_a_model_the_first_run_gives_its_control_configuration():
    runs = Runs(configs=[{"threads": 4, "workload": "write"}], values=[600.0])
    found = recommended(Problem(SPACE), runs, None)
    assert found is not None and found.config == {"threads": 4} and found.runs == 1


def plan_of(*configs: dict, point_type: str = "bayes") -> Plan:
    picks = [Suggestion(c, "bayes", point_type, "picked.", 1.0, 0.5, 0.2, "gp") for c in configs]
    return Plan("bayes", "bayes", "Picked.", picks)


def test_each_pick_is_run_at_every_noise_level_once():
    plan = plan_of(
        {"threads": 4, "workload": "read"},
        {"threads": 4, "workload": "write"},  # the same control configuration: counted once
        {"threads": 16, "workload": "write"},
    )
    measured = [{"threads": 16, "workload": "read"}]  # 16 at read is done: only write is left
    found = crossed_plan(Problem(SPACE), plan, measured)
    assert [s.config for s in found.suggestions] == [
        {"threads": 4, "workload": "read"},
        {"threads": 4, "workload": "write"},
        {"threads": 16, "workload": "write"},
    ]
    first, second, third = found.suggestions
    # The pick's own level keeps its prediction and expected improvement; the rest are predicted
    # by the models later.
    assert (first.predicted, first.expected_improvement) == (1.0, 0.2)
    assert (second.predicted, second.expected_improvement) == (None, None)
    assert third.expected_improvement == 0.2  # the third pick at its own level
    assert "2 noise levels" in second.reason and "workload=write" in second.reason
    assert "every one of the 2 noise levels (workload)" in found.explanation


def test_a_pick_that_measures_again_is_measured_again_at_every_level():
    plan = plan_of(
        {"threads": 4, "workload": "read"},
        {"threads": 4, "workload": "read"},
        point_type="replicate",
    )
    measured = [{"threads": 4, "workload": "read"}, {"threads": 4, "workload": "write"}]
    found = crossed_plan(Problem(SPACE), plan, measured)
    assert [s.config["workload"] for s in found.suggestions] == ["read", "write"] * 2


def test_a_level_that_breaks_a_constraint_is_left_out():
    space = FactorSpace.from_dicts(
        [
            {"name": "threads", "kind": "integer", "low": 1, "high": 64},
            {"name": "table_size", "kind": "integer", "low": 10, "high": 100, "noise": True},
        ]
    )
    problem = Problem(space, constraints=parse_constraints(["threads <= table_size"], space))
    found = crossed_plan(problem, plan_of({"threads": 50, "table_size": 100}), [])
    # A numeric noise factor without levels is run at its low and high ends; 50 > 10 is cut.
    assert [s.config for s in found.suggestions] == [{"threads": 50, "table_size": 100}]


def test_without_noise_factors_the_plan_is_left_as_it_is():
    space = FactorSpace.from_dicts([{"name": "threads", "kind": "integer", "low": 1, "high": 9}])
    plan = plan_of({"threads": 3})
    assert crossed_plan(Problem(space), plan, []) is plan
    assert not Problem(space).noisy and Problem(SPACE).noisy


def every_level(suggestions: list[Suggestion], runs: Runs) -> None:
    """Each control configuration suggested is, with the runs, at both workload levels."""
    seen: dict[tuple, set[str]] = {}
    for c in [*runs.configs, *(s.config for s in suggestions)]:
        seen.setdefault((c["threads"], c["nodes"]), set()).add(c["workload"])
    for s in suggestions:
        assert seen[(s.config["threads"], s.config["nodes"])] == {"read", "write"}, s.config


@pytest.mark.parametrize("strategy", ["bayes", "auto"])
def test_bayes_and_auto_start_and_go_on_at_every_noise_level(strategy):
    problem = Problem(WIDE, seed=2)
    start = suggest(strategy, problem, Runs(), count=2)
    assert start.suggestions and start.stage == "initial"
    every_level(start.suggestions, Runs())
    runs = wide_runs([s.config for s in start.suggestions])
    plan = suggest(strategy, problem, runs, count=2)
    assert plan.stage == "bayes", plan.explanation
    controls = {(s.config["threads"], s.config["nodes"]) for s in plan.suggestions}
    assert 1 <= len(controls) <= 2  # the count counts control configurations
    every_level(plan.suggestions, runs)
    assert all(s.predicted is not None for s in plan.suggestions)
    if strategy == "auto":
        assert "workload is a noise factor" in start.explanation
    assert plan.recommendation is not None and "workload" not in plan.recommendation.config


def test_auto_takes_bayesian_optimization_at_once_with_a_numeric_noise_factor():
    space = FactorSpace.from_dicts(
        [
            {"name": "threads", "kind": "integer", "low": 1, "high": 64, "scale": "log2"},
            {"name": "table_size", "kind": "integer", "low": 10, "high": 100, "noise": True},
        ]
    )
    plan = Auto(Problem(space)).fit(Runs()).suggest(1)
    assert plan.stage == "initial" and "table_size is a noise factor" in plan.explanation
    assert {s.config["table_size"] for s in plan.suggestions} == {10, 100}


def test_the_loop_spends_its_budget_in_whole_control_configurations():
    problem = Problem(WIDE, seed=1)
    start = next_batch("bayes", problem, Runs(), batch_size=2, budget_left=5)
    # The space-filling start comes whole but is cut to whole control configurations: 2 of 2
    # runs each fit in 5 trials.
    assert len(start.suggestions) == 4
    every_level(start.suggestions, Runs())
    runs = wide_runs([s.config for s in start.suggestions])
    plan = next_batch("bayes", problem, runs, batch_size=4, budget_left=3)
    assert len(plan.suggestions) == 2  # one control configuration at both levels
    stopped = next_batch("bayes", problem, runs, batch_size=4, budget_left=1)
    assert stopped.suggestions == []
    assert stopped.stop_reason == (
        "the 1 trial(s) left cannot measure a control configuration at every one of the 2 noise"
        " levels"
    )
    assert stopped.recommendation is not None and "workload" not in stopped.recommendation.config


def test_replicate_repeats_the_best_control_configuration_by_the_aim_at_every_level():
    worst = suggest("replicate", Problem(SPACE, robust=RobustAim("worst")), toy_runs(), count=1)
    assert [s.config for s in worst.suggestions] == [
        {"threads": 4, "workload": "read"},
        {"threads": 4, "workload": "write"},
    ]
    mean = suggest("replicate", Problem(SPACE), toy_runs(), count=2)
    assert [s.config["threads"] for s in mean.suggestions] == [16] * 4
    assert all(s.point_type == "replicate" for s in mean.suggestions)


def test_the_start_takes_two_control_configurations_per_control_factor_at_every_level():
    plan = suggest("bayes", Problem(WIDE, seed=2), Runs(), count=1)
    controls = {(s.config["threads"], s.config["nodes"]) for s in plan.suggestions}
    assert len(controls) == 4 and len(plan.suggestions) == 8  # 2 x 2 control factors, 2 levels
    assert plan.explanation.startswith(
        "Start of Bayesian optimization: 4 space-filling control configurations"
    )


def test_with_a_fidelity_the_recommendation_is_judged_and_counted_at_the_full_length():
    space = FactorSpace.from_dicts(
        [
            *SPACE.to_dicts()[:1],
            {"name": "runtime_s", "kind": "continuous", "low": 30, "high": 180, "fidelity": True},
            *SPACE.to_dicts()[1:],
        ]
    )
    full = toy_runs()
    # One short run of every cell besides the twelve full-length ones.
    short = [c | {"runtime_s": 30.0} for c in full.configs[::3]]
    configs = [c | {"runtime_s": 180.0} for c in full.configs] + short
    values = [*full.values, *(TPS[(c["threads"], c["workload"])] + 50.0 for c in short)]
    found = recommended_of(Problem(space, robust=RobustAim("worst")), Runs(configs, values))
    assert found.config == {"threads": 4, "runtime_s": 180.0}
    assert found.runs == 6  # its full-length runs only
    assert found.observed == pytest.approx(600.0)
    assert "The runs counted are those at runtime_s 180" in found.reason


def test_the_search_scores_a_control_configuration_by_the_aim_at_every_level():
    runs = toy_runs()
    problem = Problem(SPACE, robust=RobustAim("worst"))
    models = Models.fitted(problem, runs)
    assert models is not None
    search = RobustSearch.of(problem, models.encoder, runs.configs[0])
    assert search is not None and search.size == 2
    x = models.encoder.of_configs([{"threads": 16, "workload": "read"}])
    mean, sd = search.reduced(models.model, x)
    # The worst of the model's means at read and write: the write level, about 400.
    at_levels = models.predict([{"threads": 16, "workload": w} for w in ("read", "write")], 1.0)
    assert mean[0] == pytest.approx(min(m for m, _ in at_levels))
    assert sd[0] == pytest.approx(at_levels[1][1])
    # The same control configuration at the other level is the same candidate: it scores none.
    score = search.scorer(models.model, 0.0, [], None)
    other = models.encoder.of_configs([{"threads": 16, "workload": "write"}])
    assert score(x)[0] > 0.0 and score(other)[0] == 0.0
    # A minimized response's 0.1 quantile is the 0.9 quantile of the models' maximized sense.
    low = RobustSearch.of(
        Problem(SPACE, goal="minimize", robust=RobustAim("quantile", 0.1)),
        models.encoder,
        runs.configs[0],
    )
    assert low is not None and low.aim == RobustAim("quantile", 0.9)


def two_workloads(config: dict) -> float:
    """Reading peaks at 48 threads on 7 nodes, writing at 10 threads on 3, far lower."""
    t, n = config["threads"], config["nodes"]
    if config["workload"] == "read":
        return 1400.0 - 0.8 * (t - 48) ** 2 - 5.0 * (n - 7) ** 2
    return 800.0 - 3.0 * (t - 10) ** 2 - 8.0 * (n - 3) ** 2


def test_a_loop_with_the_worst_aim_finds_the_best_worst_case():
    def worst(t: int, n: int) -> float:
        return min(two_workloads({"threads": t, "nodes": n, "workload": w}) for w in WORKLOADS)

    # By enumeration: 611.2 at threads=17, nodes=5.
    best = max(worst(t, n) for t in range(1, 65) for n in range(1, 10))
    problem, runs, reasons = Problem(WIDE, seed=0, robust=RobustAim("worst")), Runs(), []
    while True:
        plan = next_batch("bayes", problem, runs, batch_size=2, budget_left=40 - len(runs))
        if plan.stop_reason is not None:
            break
        reasons += [s.reason for s in plan.suggestions if s.point_type == "bayes"]
        configs = [*runs.configs, *(s.config for s in plan.suggestions)]
        runs = Runs(configs=configs, values=[two_workloads(c) for c in configs])
    assert len(runs) == 40 and plan.recommendation is not None
    found = plan.recommendation.config
    assert worst(found["threads"], found["nodes"]) >= 0.97 * best, (found, best)
    # The picks of highest expected improvement say it is of the aim (near the budget's end
    # the knowledge gradient may lead a batch with a reason of its own).
    gains = [r for r in reasons if r.startswith("Expected improvement of")]
    assert gains and all(
        "over the best control configuration so far, judged by the worst noise level" in r
        for r in gains
    )


def test_runs_none_of_which_is_at_a_noise_level_recommend_the_first_runs_controls():
    space = FactorSpace.from_dicts(
        [
            {"name": "threads", "kind": "integer", "low": 1, "high": 64},
            {"name": "table_size", "kind": "integer", "low": 10, "high": 100, "noise": True},
        ]
    )
    # Its levels are 10 and 100; every run was at 55.
    runs = Runs(configs=[{"threads": t, "table_size": 55} for t in (2, 8, 32)], values=[1, 3, 2])
    found = recommended_of(Problem(space), runs)
    assert found.config == {"threads": 2} and found.predicted_by is None
    assert found.reason == (
        "Deploy threads=2: it measured 1, and no run is at a noise level yet, where control"
        " configurations are judged. A noise factor is not chosen: the answer holds its control"
        " factors only."
    )
