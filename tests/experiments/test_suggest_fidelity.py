"""Short trials as a cheap fidelity: the ladder, the cost, the correlation, closed loops on toy
clusters where a short run measures what a full one does and where it does not, and the
analysis's optimum at the full length."""

import numpy as np
import pytest

from experiments import analysis
from experiments.factors import FactorSpace
from experiments.suggest import Problem, Runs, suggest
from experiments.suggest.bayes import FINAL_SHARE
from experiments.suggest.fidelity import TRIAL_OVERHEAD_S, Fidelity
from experiments.suggest.gaussian_process import Encoder, fit, run_correlation
from tests.experiments.bayes_strategy import bayes, recommend

RUNTIME = {"name": "runtime_s", "kind": "integer", "low": 10, "high": 120, "fidelity": True}
SPACE = FactorSpace.from_dicts(
    [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "threads", "kind": "integer", "low": 1, "high": 64, "scale": "log2"},
        RUNTIME,
    ]
)
START = [
    {"nodes": n, "threads": t, "runtime_s": r}
    for n, t, r in [
        (1, 1, 120),
        (9, 1, 10),
        (1, 64, 10),
        (9, 64, 120),
        (5, 8, 40),
        (3, 32, 80),
        (7, 4, 20),
        (2, 16, 120),
    ]
]
OPTIMUM = {"nodes": 6, "threads": 23}


def bowl(config: dict) -> float:
    """Throughput peaking at exactly 6 nodes and 23 threads, whatever the runtime."""
    return 1000.0 - 10.0 * (config["nodes"] - 6) ** 2 - 0.5 * (config["threads"] - 23) ** 2


def stall(config: dict) -> float:
    """The bowl with a stall after 60 s at 30 % of the rate: a full 120 s run measures 0.65 of
    what any run of 60 s or less does (as the published cluster did after 120 s)."""
    t = config["runtime_s"]
    return bowl(config) * (min(t, 60) + 0.3 * max(t - 60, 0)) / t


def fidelity_of(*factors: dict) -> Fidelity:
    space = FactorSpace.from_dicts(factors)
    found = Fidelity.of(space, Encoder(space))
    assert found is not None
    return found


def closed_loop(response, steps: int) -> tuple[list[dict], list[float]]:
    configs, values = list(START), [response(c) for c in START]
    for _ in range(steps):
        (s,) = bayes(SPACE, configs, values, seed=0)
        configs.append(s.config)
        values.append(response(s.config))
    return configs, values


def seconds(configs: list[dict]) -> float:
    return sum(c["runtime_s"] + TRIAL_OVERHEAD_S for c in configs)


def test_the_ladder_doubles_from_the_low_end_to_the_target():
    assert fidelity_of(RUNTIME).ladder() == [10, 20, 40, 80, 120]
    assert fidelity_of(RUNTIME | {"low": 15}).ladder() == [15, 30, 60, 120]
    continuous = fidelity_of(RUNTIME | {"kind": "continuous", "low": 5.0, "high": 60.0})
    assert continuous.ladder() == [5.0, 10.0, 20.0, 40.0, 60.0]
    levels = {"name": "runtime_s", "kind": "integer", "levels": [60, 10, 30], "fidelity": True}
    assert fidelity_of(levels).ladder() == [10, 30, 60] and fidelity_of(levels).target == 60


def test_a_trial_costs_its_length_and_the_overhead_on_any_scale():
    coded = np.array([-1.0, 0.0, 1.0])
    linear = fidelity_of(RUNTIME | {"low": 20, "high": 100}).cost(coded)
    assert linear == pytest.approx(np.array([20.0, 60.0, 100.0]) + TRIAL_OVERHEAD_S)
    log2 = fidelity_of(RUNTIME | {"low": 10, "high": 160, "scale": "log2"}).cost(coded)
    assert log2 == pytest.approx(np.array([10.0, 40.0, 160.0]) + TRIAL_OVERHEAD_S)


def test_the_run_correlation_is_scikit_learns_posterior_covariance_with_the_noise_added():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (25, 3))
    y = np.sin(3 * x[:, 0]) + x[:, 2] + rng.normal(0, 0.2, 25)
    model = fit(x, y, seed=0)
    a = rng.uniform(-1, 1, (6, 3))
    b = a.copy()
    b[:, 2] = 1.0
    _, cov = model.predict(np.vstack([a, b]), return_cov=True)
    noise = model.kernel_.k2.noise_level * model._y_train_std**2
    # scikit-learn's covariance holds the white kernel on its diagonal: the noise of a run.
    var_a, var_b = np.diag(cov)[:6], np.diag(cov)[6:] - noise
    expected = np.clip(np.diag(cov[:6, 6:]) / np.sqrt(var_a * var_b), 0.0, 1.0)
    assert run_correlation(model, a, b) == pytest.approx(expected, abs=1e-6)
    assert (run_correlation(model, b, b) < 1.0).all()  # the noise of a run costs it some


def test_where_the_length_changes_nothing_short_runs_find_the_optimum_for_a_fraction_of_the_cost():
    configs, values = closed_loop(bowl, 20)
    new = configs[len(START) :]
    assert all(c["runtime_s"] in (10, 20, 40, 80, 120) for c in new)  # on the ladder
    assert sum(c["runtime_s"] == 10 for c in new) >= 10
    found = recommend(SPACE, configs, values)
    assert found.config["runtime_s"] == 120 and bowl(found.config) >= 0.995 * bowl(OPTIMUM)
    assert seconds(new) < 0.5 * 20 * (120 + TRIAL_OVERHEAD_S)


def test_where_short_runs_overstate_full_runs_decide_what_is_deployed():
    configs, values = closed_loop(stall, 20)
    found = recommend(SPACE, configs, values)
    best = stall(OPTIMUM | {"runtime_s": 120})
    assert found.config["runtime_s"] == 120 and stall(found.config) >= 0.98 * best
    # Judged at the full length, not at the short runs' 54 % more.
    assert found.predicted == pytest.approx(stall(found.config), rel=0.02)


def test_a_recommendation_measured_only_in_short_runs_is_measured_at_the_full_length_first():
    configs = [*START, OPTIMUM | {"runtime_s": 10}]
    values = [bowl(c) for c in configs]
    first, second = bayes(SPACE, configs, values, count=2, seed=0)
    leader = {k: v for k, v in first.config.items() if k != "runtime_s"}
    assert first.point_type == "full_length" and first.config["runtime_s"] == 120
    assert first.config not in configs and any(
        c | {"runtime_s": 0} == leader | {"runtime_s": 0} for c in configs
    )
    where = f"nodes={leader['nodes']}, threads={leader['threads']}, runtime_s=120"
    assert first.reason.startswith(f"Measure {where} at the full length")
    assert second.point_type == "bayes" and second.config != first.config
    # Once measured at full length, it is not promoted again.
    configs.append(first.config)
    values.append(bowl(first.config))
    assert all(
        s.point_type != "full_length" or s.config != first.config
        for s in bayes(SPACE, configs, values, count=2, seed=0)
    )


def test_a_short_suggestion_says_what_it_saves_and_what_it_is_worth():
    configs, values = closed_loop(bowl, 3)
    (s,) = bayes(SPACE, configs, values, seed=0)
    assert s.config["runtime_s"] < 120
    assert f"It runs at runtime_s {s.config['runtime_s']} (the full measurement is at 120)" in (
        s.reason
    )
    assert "of a full trial's time" in s.reason


def test_auto_takes_bayesian_optimization_at_once_and_says_why():
    plan = suggest("auto", Problem(SPACE), Runs(), budget=200)
    assert plan.stage == "initial" and "runtime_s is the trials' length" in plan.explanation
    # The space-filling start runs short, but for its last point.
    lengths = [s.config["runtime_s"] for s in plan.suggestions]
    assert lengths == [10] * (len(lengths) - 1) + [120] and len(lengths) == 6
    configs, values = closed_loop(bowl, 1)
    later = suggest("auto", Problem(SPACE), Runs(configs=configs, values=values, point_types=[]))
    assert "runtime_s is the trials' length" in later.explanation


def test_the_analysis_optimum_holds_the_fidelity_at_its_full_length():
    # Short runs measure more (a burst at the start), so the fitted model's best runtime is the
    # shortest; the optimum is still the configuration as a 120 s run measures it.
    configs = [
        {"nodes": n, "threads": t, "runtime_s": r}
        for n in (2, 6, 9)
        for t in (4, 23, 64)
        for r in (10, 120)
    ]
    values = [bowl(c) * (1.0 + 2.0 / c["runtime_s"]) for c in configs]
    model = analysis.fit(SPACE, configs, values, model="quadratic")
    assert model.optimum.config["runtime_s"] == 120
    assert "runtime_s" not in model.optimum.on_edge


def test_at_the_end_of_a_budget_contenders_are_measured_at_the_full_length():
    # A noisy closed loop of 24 trials told how many remain: in the last fifth the runs chosen
    # for the final recommendation are full-length ones, and what is deployed is judged there.
    rng = np.random.default_rng(0)
    configs, values = list(START), [stall(c) + rng.normal(0, 40) for c in START]
    final = []
    for left in range(24, 0, -1):
        (s,) = bayes(SPACE, configs, values, seed=0, budget_left=left)
        if "budget is nearly spent" in s.reason:
            assert left <= FINAL_SHARE * (len(configs) + left)
            final.append(s)
        configs.append(s.config)
        values.append(stall(s.config) + rng.normal(0, 40))
    assert final and all(s.config["runtime_s"] == 120 for s in final)
    assert all("per second of trial" in s.reason for s in final)
    found = recommend(SPACE, configs, values)
    assert found.config["runtime_s"] == 120
    assert stall(found.config) >= 0.97 * stall(OPTIMUM | {"runtime_s": 120})
    assert stall(found.config) >= 0.97 * stall(OPTIMUM | {"runtime_s": 120})


def test_a_budget_of_trial_time_ends_in_its_last_fifth_of_time_not_of_trials():
    # A loop of 10 full trials' time: short trials are cheap, so it runs many more trials than
    # that, and counted in trials its last fifth would come late or never; told the share of its
    # time left, the end of the budget starts in the last fifth of the time.
    rng = np.random.default_rng(0)
    configs, values = list(START), [stall(c) + rng.normal(0, 40) for c in START]
    budget_s = 10 * (120 + TRIAL_OVERHEAD_S)
    spent, shares, picks = 0.0, [], 0
    while spent < budget_s:
        time_left = 1.0 - spent / budget_s
        (s,) = bayes(SPACE, configs, values, seed=0, budget_left=100, time_left=time_left)
        if "budget is nearly spent" in s.reason:
            shares.append(time_left)
            assert s.config["runtime_s"] == 120 and "per second of trial" in s.reason
        configs.append(s.config)
        values.append(stall(s.config) + rng.normal(0, 40))
        spent += s.config["runtime_s"] + TRIAL_OVERHEAD_S
        picks += 1
    assert picks > 10 and shares and max(shares) <= FINAL_SHARE
