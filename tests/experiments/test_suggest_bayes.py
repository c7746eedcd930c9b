"""Bayesian optimization: closed loops on toy responses with a known optimum, validity of every
suggestion (ranges, integers, levels, constraints), batches, categories and speed."""

import itertools
import math
import re

import numpy as np
import pytest

from experiments.constraints import parse_constraints
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.suggest import Limit, Problem, Runs, next_batch
from experiments.suggest.bayes import MAX_CHALLENGE_RUNS
from experiments.suggest.bayes.models import Models, checked_runs
from experiments.suggest.gaussian_process import (
    Encoder,
    fit,
    indistinguishable,
    mean_and_sd,
    noise_variance,
    refit,
    signal_variance,
    training_rows,
)
from experiments.suggest.output_warping import Warp
from tests.experiments.bayes_strategy import bayes, bayes_batch, predict, recommend
from tests.timing import assert_within
from tests.toy_responses import saturating_latency


def space(*factors: dict) -> FactorSpace:
    return FactorSpace.from_dicts(factors)


NODES_THREADS = space(
    {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
    {"name": "threads", "kind": "integer", "low": 1, "high": 64, "scale": "log2"},
)
CORNERS = [
    {"nodes": 1, "threads": 1},
    {"nodes": 9, "threads": 1},
    {"nodes": 1, "threads": 64},
    {"nodes": 9, "threads": 64},
    {"nodes": 5, "threads": 8},
]


def bowl(config: dict) -> float:
    """Throughput peaking at exactly 6 nodes and 23 threads."""
    return 1000.0 - 10.0 * (config["nodes"] - 6) ** 2 - 0.5 * (config["threads"] - 23) ** 2


def run_loop(sp, start, response, steps, **options):
    configs, values = list(start), [response(c) for c in start]
    for _ in range(steps):
        (suggestion,) = bayes(sp, configs, values, **options)
        configs.append(suggestion.config)
        values.append(response(suggestion.config))
    return configs, values


def test_closed_loop_finds_the_exact_integer_optimum():
    configs, values = run_loop(NODES_THREADS, CORNERS, bowl, 20, seed=0)
    assert {"nodes": 6, "threads": 23} in configs
    assert max(values) == 1000.0


def test_minimize_finds_the_exact_integer_minimum():
    latency = lambda c: -bowl(c) + 2000.0  # noqa: E731 - lowest, 1000, at 6 nodes x 23 threads
    configs, values = run_loop(NODES_THREADS, CORNERS, latency, 20, goal="minimize", seed=0)
    assert {"nodes": 6, "threads": 23} in configs
    assert min(values) == 1000.0


def saturating(config: dict) -> float:
    return saturating_latency(config["nodes"], config["threads"])


def test_a_latency_that_grows_by_factors_is_searched_on_its_logarithm():
    # On the raw latency the search spends its uncertainty on the seconds: 15 steps never run
    # the best, and the loop recommends 4 nodes and 8 threads (27.2 ms).
    configs, values = run_loop(
        NODES_THREADS, CORNERS, saturating, 10, goal="minimize", scale="log", seed=0
    )
    assert {"nodes": 1, "threads": 10} in configs
    found = recommend(NODES_THREADS, configs, values, goal="minimize", seed=0)
    assert found.config == {"nodes": 1, "threads": 10}


def test_a_log_scale_is_left_out_while_a_run_is_not_positive():
    values = [0.0, *(saturating(c) for c in CORNERS[1:])]
    logged = bayes(NODES_THREADS, CORNERS, values, goal="minimize", scale="log", seed=0)
    assert logged == bayes(NODES_THREADS, CORNERS, values, goal="minimize", seed=0)


def test_suggestion_fields_and_reason():
    values = [bowl(c) for c in CORNERS]
    (s,) = bayes(NODES_THREADS, CORNERS, values)
    assert s.strategy == "bayes" and s.point_type == "bayes"
    assert s.predicted is not None and s.uncertainty is not None and s.uncertainty >= 0
    assert s.expected_improvement is not None and s.expected_improvement > 0
    assert s.reason.startswith("Expected improvement of ")
    assert "the model puts its mean at 87" in s.reason and "nodes=" in s.reason
    assert s.reason.endswith(".")


def test_batch_of_three_gives_distinct_unrun_points():
    values = [bowl(c) for c in CORNERS]
    batch = bayes(NODES_THREADS, CORNERS, values, count=3)
    assert len(batch) == 3
    keys = {tuple(s.config.values()) for s in batch}
    assert len(keys) == 3
    assert not keys & {tuple(c.values()) for c in CORNERS}
    assert "earlier suggestions of this batch" in batch[1].reason
    assert "earlier suggestions" not in batch[0].reason


def test_suggestions_are_valid_and_meet_constraints_on_a_mixed_space():
    sp = space(
        {"name": "nodes", "kind": "integer", "low": 3, "high": 9},
        {"name": "threads", "kind": "integer", "low": 1, "high": 128, "scale": "log2"},
        {"name": "buffer_gb", "kind": "continuous", "low": 0.5, "high": 8.0, "scale": "log2"},
        {"name": "slaves", "kind": "integer", "levels": [1, 2, 4, 8, 16]},
    )
    constraints = parse_constraints(["nodes * threads <= 200", "slaves <= threads"], sp)
    rng = np.random.default_rng(1)
    configs = [
        {"nodes": 3, "threads": 4, "buffer_gb": 0.5, "slaves": 1},
        {"nodes": 9, "threads": 16, "buffer_gb": 8.0, "slaves": 8},
        {"nodes": 5, "threads": 32, "buffer_gb": 2.0, "slaves": 16},
        {"nodes": 7, "threads": 8, "buffer_gb": 4.0, "slaves": 2},
        {"nodes": 4, "threads": 2, "buffer_gb": 1.0, "slaves": 1},
    ]
    values = [
        100 * c["nodes"] + 50 * np.log2(c["threads"]) + c["buffer_gb"] + rng.normal()
        for c in configs
    ]
    batch = bayes(sp, configs, values, count=4, constraints=constraints, seed=3)
    assert len(batch) == 4
    for s in batch:
        assert sp.check_config(s.config) == s.config
        assert isinstance(s.config["nodes"], int) and isinstance(s.config["threads"], int)
        assert s.config["slaves"] in (1, 2, 4, 8, 16)
        assert all(c.satisfied(s.config) for c in constraints)


def test_large_space_uses_snapped_quasi_random_candidates():
    # 1..100000 on every integer factor: far too many lattice points, so Sobol + refinement.
    sp = space(
        *({"name": f"x{i}", "kind": "integer", "low": 1, "high": 100_000} for i in range(3)),
        {"name": "engine", "kind": "categorical", "levels": ["innodb", "myrocks"]},
    )
    constraints = parse_constraints(["x0 + x1 <= 120000"], sp)
    rng = np.random.default_rng(0)
    configs = [
        {"x0": int(a), "x1": int(b), "x2": int(c), "engine": e}
        for a, b, c, e in zip(
            rng.integers(1, 60_000, 8),
            rng.integers(1, 60_000, 8),
            rng.integers(1, 100_000, 8),
            itertools.cycle(["innodb", "myrocks"]),
            strict=False,
        )
    ]
    values = [-((c["x0"] - 40_000) ** 2) / 1e8 - (c["x2"] - 70_000) ** 2 / 1e8 for c in configs]
    batch = bayes(sp, configs, values, count=2, constraints=constraints, candidates=512)
    for s in batch:
        assert sp.check_config(s.config) == s.config
        assert all(type(s.config[f"x{i}"]) is int for i in range(3))
        assert constraints[0].satisfied(s.config)


def test_categorical_factor_is_modelled_and_its_best_level_found():
    sp = space(
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "engine", "kind": "categorical", "levels": ["innodb", "myrocks", "aria"]},
    )
    bonus = {"innodb": 0.0, "myrocks": 80.0, "aria": -50.0}
    response = lambda c: 500.0 - 10.0 * (c["nodes"] - 4) ** 2 + bonus[c["engine"]]  # noqa: E731
    start = [
        {"nodes": 1, "engine": "innodb"},
        {"nodes": 9, "engine": "myrocks"},
        {"nodes": 5, "engine": "aria"},
        {"nodes": 2, "engine": "aria"},
        {"nodes": 7, "engine": "innodb"},
    ]
    configs, values = run_loop(sp, start, response, 10, seed=0)
    assert {"nodes": 4, "engine": "myrocks"} in configs
    assert max(values) == 580.0


def test_every_configuration_run_already_is_refused():
    sp = space(
        {"name": "nodes", "kind": "integer", "low": 1, "high": 3},
        {"name": "threads", "kind": "integer", "levels": [4, 16]},
    )
    configs = [{"nodes": n, "threads": t} for n in (1, 2, 3) for t in (4, 16)]
    values = [100.0 * c["nodes"] - (c["nodes"] - 2) ** 2 * 30 + c["threads"] for c in configs]
    with pytest.raises(DomainError) as error:
        bayes(sp, configs, values)
    assert error.value.field == "configs"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"goal": "biggest"}, "goal"),
        ({"count": 0}, "count"),
        ({"candidates": 3}, "candidates"),
        ({"budget_left": 0}, "budget_left"),
        ({"budget_left": 2.5}, "budget_left"),
        ({"time_left": 0.0}, "time_left"),
        ({"time_left": 1.5}, "time_left"),
        ({"scale": "log2"}, "scale"),
    ],
)
def test_bad_options_are_refused(options, field):
    with pytest.raises(DomainError) as error:
        bayes(NODES_THREADS, CORNERS, [bowl(c) for c in CORNERS], **options)
    assert error.value.field == field


def test_bad_runs_are_refused():
    values = [bowl(c) for c in CORNERS]
    with pytest.raises(DomainError, match="one value per run"):
        bayes(NODES_THREADS, CORNERS, values[:-1])
    with pytest.raises(DomainError) as error:
        bayes(NODES_THREADS, [*CORNERS[:-1], {"nodes": 2.5, "threads": 4}], values)
    assert error.value.field == "configs.4.nodes"
    with pytest.raises(DomainError) as error:
        bayes(NODES_THREADS, CORNERS, [*values[:-1], float("nan")])
    assert error.value.field == "values.4"
    with pytest.raises(DomainError, match="same result"):
        checked_runs(NODES_THREADS, CORNERS, [1.0] * 5)
    impossible = parse_constraints(["nodes + threads >= 100"], NODES_THREADS)
    with pytest.raises(DomainError) as error:
        bayes(NODES_THREADS, CORNERS, values, constraints=impossible)
    assert error.value.field == "constraints"


def test_same_seed_same_suggestions():
    values = [bowl(c) for c in CORNERS]
    first = bayes(NODES_THREADS, CORNERS, values, count=2, seed=7)
    assert bayes(NODES_THREADS, CORNERS, values, count=2, seed=7) == first


def test_one_suggestion_from_60_runs_of_5_factors_within_a_second():
    sp = space(
        {"name": "nodes", "kind": "integer", "low": 3, "high": 15},
        {"name": "threads", "kind": "integer", "low": 1, "high": 512, "scale": "log2"},
        {"name": "buffer_gb", "kind": "continuous", "low": 0.5, "high": 64.0, "scale": "log2"},
        {"name": "applier_threads", "kind": "integer", "low": 1, "high": 32},
        {"name": "flush", "kind": "categorical", "levels": ["0", "1", "2"]},
    )
    rng = np.random.default_rng(5)
    configs = [
        {
            "nodes": int(rng.integers(3, 16)),
            "threads": int(rng.integers(1, 513)),
            "buffer_gb": float(rng.uniform(0.5, 64.0)),
            "applier_threads": int(rng.integers(1, 33)),
            "flush": str(rng.choice(["0", "1", "2"])),
        }
        for _ in range(60)
    ]
    values = [
        1000
        - 5 * (c["nodes"] - 7) ** 2
        - 20 * (np.log2(c["threads"]) - 6) ** 2
        + 10 * np.log2(c["buffer_gb"])
        + 2 * c["applier_threads"]
        + (30 if c["flush"] == "2" else 0)
        + rng.normal(0, 5)
        for c in configs
    ]
    # 1 s on an idle machine is the goal, which benchmarks/optimizer.py judges.
    (s,) = assert_within(2.0, 1, lambda: bayes(sp, configs, values, seed=0))
    assert sp.check_config(s.config) == s.config


def random_configs(rng: np.random.Generator) -> list[dict]:
    """30 configurations of NODES_THREADS drawn uniformly from its integers."""
    return [
        {"nodes": int(n), "threads": int(t)}
        for n, t in zip(rng.integers(1, 10, 30), rng.integers(1, 65, 30), strict=True)
    ]


def noisy_bowl_runs(seed: int, noise: float) -> tuple[list[dict], list[float]]:
    rng = np.random.default_rng(seed)
    configs = random_configs(rng)
    return configs, [bowl(c) + rng.normal(0, noise) for c in configs]


def noisy_plateau(noise: float) -> tuple[list[dict], list[float]]:
    """30 runs of a response that barely changes near its top, measured with `noise`."""
    rng = np.random.default_rng(3)
    configs = random_configs(rng)
    values = [1000 - 2 * (c["nodes"] - 5) ** 2 + rng.normal(0, noise) for c in configs]
    return configs, values


def test_noise_that_makes_the_best_uncertain_gets_a_replicate_of_it_first():
    configs, values = noisy_plateau(noise=15.0)
    first, second = bayes(NODES_THREADS, configs, values, count=2, seed=0)
    assert first.point_type == "replicate" and second.point_type == "bayes"
    assert first.config in configs and second.config not in configs
    assert "chance of being truly better" in first.reason
    assert first.predicted is not None and first.uncertainty > 0
    # Not again within five runs of the last replicate: learning where the optimum is comes first.
    (later,) = bayes(NODES_THREADS, configs, values, point_types=["bayes"] * 29 + ["replicate"])
    assert later.point_type == "bayes"


def test_without_noise_the_best_is_never_replicated():
    configs, values = noisy_plateau(noise=0.0)
    suggestions = bayes(NODES_THREADS, configs, values, count=3, seed=0)
    assert all(s.point_type == "bayes" and s.config not in configs for s in suggestions)


def test_the_recommendation_beats_the_luckiest_run_under_noise():
    # Thirty random runs of the bowl with noise larger than its differences near the top: over
    # twenty seeds, deploying the recommendation loses much less than deploying the best run.
    recommended, luckiest = [], []
    for seed in range(20):
        configs, values = noisy_bowl_runs(seed, noise=150.0)
        found = recommend(NODES_THREADS, configs, values, seed=seed)
        assert found.config in configs and found.predicted_by == "gaussian process"
        measured = [v for c, v in zip(configs, values, strict=True) if c == found.config]
        assert found.runs == len(measured) and found.observed == pytest.approx(np.mean(measured))
        recommended.append(1000.0 - bowl(found.config))
        luckiest.append(1000.0 - bowl(configs[int(np.argmax(values))]))
    print(f"mean loss: recommendation {np.mean(recommended):.1f}, best run {np.mean(luckiest):.1f}")
    assert np.mean(recommended) < 0.8 * np.mean(luckiest)
    # Minimizing: the same runs mirrored give the same answer.
    low = recommend(NODES_THREADS, configs, [-v for v in values], goal="minimize", seed=19)
    assert low.config == found.config and low.predicted == pytest.approx(-found.predicted)
    assert found.reason.startswith("Deploy nodes=")


def pure_noise(runs: int, seed: int = 3) -> tuple[list[dict], list[float]]:
    """`runs` random runs of a response that does not change at all, measured with noise."""
    rng = np.random.default_rng(seed)
    configs = random_configs(rng)[:runs]
    return configs, [1000.0 + rng.normal(0, 15.0) for _ in configs]


# A replicate just run: neither the replicate nor the challenge rule may lead the next batch.
AFTER_A_REPLICATE = ["bayes"] * 29 + ["replicate"]


def test_runs_that_look_like_noise_alone_get_a_space_filling_pick_first():
    configs, values = pure_noise(30)
    first, second = bayes(
        NODES_THREADS, configs, values, count=2, point_types=AFTER_A_REPLICATE, seed=0
    )
    assert first.point_type == "exploration" and second.point_type == "bayes"
    assert first.config not in configs and second.config not in configs
    assert first.config != second.config
    assert NODES_THREADS.check_config(first.config) == first.config
    share = int(re.search(r"puts (\d+)% of the runs' variance in the noise", first.reason)[1])
    assert share > 33
    assert first.predicted is not None and first.uncertainty > 0
    # The next ask goes on along the sequence: another unrun point, not the same one again.
    configs.append(first.config)
    values.append(1000.0)
    (later,) = bayes(
        NODES_THREADS, configs, values, point_types=[*AFTER_A_REPLICATE, "exploration"]
    )
    assert later.point_type == "exploration" and later.config not in configs


def test_a_shape_plain_above_the_noise_is_searched_by_expected_improvement():
    configs, values = noisy_bowl_runs(0, noise=1.0)
    (pick,) = bayes(NODES_THREADS, configs, values, point_types=AFTER_A_REPLICATE, seed=0)
    assert pick.point_type == "bayes"


def test_too_few_runs_to_tell_noise_from_shape_are_searched_by_expected_improvement():
    # Fewer than three runs per model column: any few runs look like noise to a model.
    configs, values = pure_noise(5)
    (pick,) = bayes(NODES_THREADS, configs, values, point_types=["bayes"] * 4 + ["replicate"])
    assert pick.point_type == "bayes"


def test_runs_that_leave_few_degrees_of_freedom_are_searched_by_expected_improvement():
    # Three runs per model column, but 4 degrees of freedom beyond the model's hyperparameters:
    # too few to call the response noise and spend a run on filling space.
    configs, values = pure_noise(8)
    (pick,) = bayes(NODES_THREADS, configs, values, point_types=["bayes"] * 7 + ["replicate"])
    assert pick.point_type == "bayes"


def test_a_space_filling_pick_meets_the_constraints():
    constraints = parse_constraints(["nodes * threads <= 40"], NODES_THREADS)
    runs = [run for seed in (3, 4, 5) for run in zip(*pure_noise(30, seed), strict=True)]
    allowed = [(c, v) for c, v in runs if all(k.satisfied(c) for k in constraints)]
    configs, values = [c for c, _ in allowed], [v for _, v in allowed]
    types = ["bayes"] * (len(configs) - 1) + ["replicate"]
    for seed in range(5):
        (pick,) = bayes(
            NODES_THREADS, configs, values, point_types=types, constraints=constraints, seed=seed
        )
        assert pick.point_type == "exploration" and pick.config not in configs
        assert all(k.satisfied(pick.config) for k in constraints)


def test_a_leader_passed_over_for_its_uncertainty_is_measured_again_first():
    # Noisy runs, the recommendation measured three times, then another configuration measured
    # once and luckier and luckier: between a lead too small to matter and one large enough to
    # take the recommendation, some configuration leads on mean but not on mean less its
    # uncertainty, and the next batch measures it again (until it has as many runs as the
    # recommendation) ahead of the search.
    challenged = set()
    for seed in range(5):
        rng = np.random.default_rng(seed)
        configs = random_configs(rng)
        values = [bowl(c) + rng.normal(0, 60) for c in configs]
        deployed = recommend(NODES_THREADS, configs, values, seed=seed).config
        configs += [deployed, deployed]
        values += [bowl(deployed) + rng.normal(0, 60) for _ in range(2)]
        mean = np.mean([v for c, v in zip(configs, values, strict=True) if c == deployed])
        lucky = (
            {"nodes": 6, "threads": 23} if deployed["threads"] < 16 else {"nodes": 6, "threads": 8}
        )
        types = ["bayes"] * (len(configs) + 1)
        for lead in range(0, 400, 25):
            runs = ([*configs, lucky], [*values, mean + lead])
            (first, *_), deploy = bayes_batch(NODES_THREADS, *runs, point_types=types)
            if not first.reason.startswith("Measure "):
                continue
            challenged.add(seed)
            measured = sum(c == first.config for c in runs[0])
            assert first.point_type == "replicate" and first.config != deploy.config
            assert first.predicted > deploy.predicted
            assert 1 <= measured < min(deploy.runs, MAX_CHALLENGE_RUNS)
            # Right after a replicate the search comes first.
            (later, *_), _ = bayes_batch(
                NODES_THREADS, *runs, point_types=[*types[:-1], "replicate"]
            )
            assert later.point_type == "bayes"
    assert len(challenged) >= 3


def test_at_the_end_of_a_budget_a_contender_is_measured_again_when_that_is_worth_most():
    # Thirty noisy runs with three trials of the budget left (the last fifth): where a replicate
    # of a contender is expected to raise the true value of the final recommendation more than
    # any new configuration, it comes first; the same runs with no budget, or without noise,
    # never get that reason.
    final = 0
    for seed in range(6):
        configs, values = noisy_bowl_runs(seed, noise=150.0)
        (first,) = bayes(NODES_THREADS, configs, values, seed=seed, budget_left=3)
        (unlimited,) = bayes(NODES_THREADS, configs, values, seed=seed)
        assert "budget is nearly spent" not in unlimited.reason
        if "budget is nearly spent" not in first.reason:
            assert first.point_type == "bayes"
            continue
        final += 1
        gain, new = (
            float(g) for g in re.findall(r"most \((\S+), against (\S+) for", first.reason)[0]
        )
        assert first.point_type == "replicate" and first.config in configs and gain > new >= 0.0
        assert first.predicted is not None and first.uncertainty > 0
        # Far from the end (3 of 100 trials spent) the usual rules hold.
        (early,) = bayes(NODES_THREADS, configs, values, seed=seed, budget_left=97)
        assert "budget is nearly spent" not in early.reason
    assert final >= 2
    for seed in range(3):
        configs, values = noisy_bowl_runs(seed, noise=0.0)
        (first,) = bayes(NODES_THREADS, configs, values, seed=seed, budget_left=1)
        assert first.point_type == "bayes" and first.config not in configs


def test_the_loop_passes_the_budget_on_to_bayesian_optimization():
    configs, values = noisy_bowl_runs(0, noise=150.0)
    runs = Runs(configs=configs, values=values)
    for strategy in ("bayes", "auto"):
        plan = next_batch(strategy, Problem(NODES_THREADS, seed=0), runs, budget_left=3)
        assert "budget is nearly spent" in plan.suggestions[0].reason


def test_a_budget_of_trial_time_ends_as_a_budget_of_trials_does():
    # The same runs with a tenth of a time budget left play its end; with nine tenths, or a
    # fifth of the trials left beside nine tenths of the time, the rule that comes first holds.
    configs, values = noisy_bowl_runs(0, noise=150.0)
    runs = Runs(configs=configs, values=values)
    for strategy in ("bayes", "auto"):
        end = next_batch(
            strategy, Problem(NODES_THREADS, seed=0), runs, budget_left=50, time_left=0.1
        )
        assert "budget is nearly spent" in end.suggestions[0].reason
        early = next_batch(
            strategy, Problem(NODES_THREADS, seed=0), runs, budget_left=50, time_left=0.9
        )
        assert "budget is nearly spent" not in early.suggestions[0].reason
        trials = next_batch(
            strategy, Problem(NODES_THREADS, seed=0), runs, budget_left=3, time_left=0.9
        )
        assert "budget is nearly spent" in trials.suggestions[0].reason
    spent = next_batch("bayes", Problem(NODES_THREADS), runs, budget_left=50, time_left=0.0)
    assert spent.stop_reason == "the budget of trial time is used up" and not spent.suggestions
    assert spent.recommendation is not None and spent.recommendation.config in configs
    for bad in (1.5, math.nan):
        with pytest.raises(DomainError) as error:
            next_batch("bayes", Problem(NODES_THREADS), runs, time_left=bad)
        assert error.value.field == "time_left"


def test_a_point_is_indistinguishable_from_a_run_only_when_noise_hides_the_difference():
    rng = np.random.default_rng(0)
    x = np.linspace(-1.0, 1.0, 40)[:, None]
    signal = np.sin(3.0 * x[:, 0])
    near, far = x[[7]] + 1e-3, np.array([[3.0]])
    noisy = fit(x, signal + rng.normal(0.0, 0.2, len(x)), seed=0)
    assert indistinguishable(noisy, near).tolist() == [True]
    assert indistinguishable(noisy, far).tolist() == [False]
    # Without noise the smallest step is a different point worth a run.
    exact = fit(x, signal, seed=0)
    assert indistinguishable(exact, near).tolist() == [False]


def test_the_mean_and_its_deviation_are_what_scikit_learn_predicts_without_the_noise():
    # mean_and_sd computes the posterior from the fitted model's own factors (one kernel
    # evaluation for EI and the near-repeat rule): it must stay what predict() says.
    rng = np.random.default_rng(1)
    x = rng.uniform(-1.0, 1.0, (50, 3))
    model = fit(x, np.sin(3.0 * x[:, 0]) + x[:, 1] + rng.normal(0.0, 0.2, 50), seed=0)
    points = rng.uniform(-1.0, 1.0, (200, 3))
    mean, sd = mean_and_sd(model, points)
    expected_mean, total_sd = model.predict(points, return_std=True)
    noise = noise_variance(model) * float(np.atleast_1d(model._y_train_std)[0]) ** 2
    assert mean == pytest.approx(expected_mean, abs=1e-9)
    assert sd == pytest.approx(np.sqrt(np.maximum(total_sd**2 - noise, 0.0)), abs=1e-9)


def load_space(machines: str, threads: str) -> FactorSpace:
    return space(
        {"name": machines, "kind": "integer", "low": 1, "high": 8},
        {"name": threads, "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
    )


def test_the_model_sees_the_connections_and_the_load_per_node():
    with_load = Encoder(load_space("clients", "threads_per_client"))
    rows = [[1, 4, 9], [8, 64, 1], [2, 16, 4], [4, 8, 2]]
    x = with_load.features(rows)
    # log2 of 4 .. 512 connections, coded -1..+1: 32 connections (2 x 16, 4 x 8) is 3/7 of it.
    assert x[:, -3] == pytest.approx([-1.0, 1.0, 2 * 3 / 7 - 1, 2 * 3 / 7 - 1])
    # Connections per node, log2 of 4/9 .. 512: 8 per node (32 on 4 nodes) and 16 (on 2).
    low, high = math.log2(4 / 9), 9.0
    per_node = [(math.log2(v) - low) / (high - low) * 2 - 1 for v in (4 / 9, 512, 8, 16)]
    assert x[:, -2] == pytest.approx(per_node)
    # On the busiest node, log2 of 4 (one client, 4 threads) .. 512 (8 x 64 on one node): 16
    # for 2 clients of 16 threads on 4 nodes (one each) as for 4 of 8 on 2 nodes (two each).
    assert x[:, -1] == pytest.approx([-1.0, 1.0, 2 * 2 / 7 - 1, 2 * 2 / 7 - 1])
    assert Encoder(load_space("machines", "threads")).features(rows).shape == (4, 3)
    # Lattice points gathered by index get the same features as the same rows given whole.
    values = [[1, 2, 4, 8], [4, 8, 16, 64], [1, 2, 4, 9]]
    index = np.array([[0, 0, 3], [3, 3, 0], [1, 2, 2], [2, 1, 1]])
    assert with_load.gathered(values, index) == pytest.approx(x)


def test_the_load_per_node_counts_the_nodes_clients_connect_to():
    sp = space(
        {"name": "nodes", "kind": "integer", "low": 3, "high": 5},
        {"name": "load_nodes", "kind": "integer", "low": 1, "high": 3},
        {"name": "clients", "kind": "integer", "low": 1, "high": 4},
        {"name": "threads_per_client", "kind": "integer", "low": 8, "high": 16},
    )
    x = Encoder(sp).features([[5, 1, 4, 8], [3, 1, 4, 8], [3, 3, 4, 8]])
    # 32 connections on one loaded node, whatever the cluster's size; on three, a third.
    assert x[0, -2] == x[1, -2] > x[2, -2]
    assert x[1, -2] - x[2, -2] == pytest.approx(2 * math.log2(3) / (6 - math.log2(8 / 3)))
    # The busiest of three loaded nodes takes two of the four clients: 16 of the 32.
    assert x[0, -1] == x[1, -1] > x[2, -1]
    assert x[1, -1] - x[2, -1] == pytest.approx(2 * 1 / (math.log2(64) - math.log2(8)))


def test_the_busiest_node_tells_an_uneven_split_of_the_clients_from_an_even_one():
    # Client i connects to node i mod n: 6 clients on 4 nodes put two on two of them.
    encoder = Encoder(load_space("clients", "threads_per_client"))
    even, uneven = encoder.features([[4, 18, 4], [6, 12, 4]])
    # The same 72 connections, 18 per node on average, but 24 on the busiest node, not 18.
    assert even[-3:-1] == pytest.approx(uneven[-3:-1])
    assert uneven[-1] - even[-1] == pytest.approx(2 * math.log2(24 / 18) / 7)


def connections_bowl(config: dict) -> float:
    """Throughput by the Universal Scalability Law in the connections (peak near 45),
    less a penalty away from 4 nodes."""
    n = config["machines"] * config["threads"]
    return (
        1000 * n / (1 + 0.05 * (n - 1) + 0.0005 * n * (n - 1)) / 30 - 5 * (config["nodes"] - 4) ** 2
    )


@pytest.mark.parametrize("seed", range(3))
def test_the_connections_feature_predicts_unseen_splits_of_the_load(seed):
    # The same runs on factors named so that the model does not see the connections: it must
    # learn the ridge point by point, and predicts new configurations far worse.
    rng = np.random.default_rng(seed)

    def draw(count: int) -> list[dict]:
        threads = np.exp2(rng.uniform(2, 6, count)).round().astype(int)
        return [
            {"machines": int(m), "threads": int(t), "nodes": int(n)}
            for m, t, n in zip(
                rng.integers(1, 9, count), threads, rng.integers(1, 10, count), strict=True
            )
        ]

    runs, points = draw(25), draw(200)
    values = [connections_bowl(c) for c in runs]
    truth = np.array([connections_bowl(p) for p in points])
    renamed = {"machines": "clients", "threads": "threads_per_client", "nodes": "nodes"}

    def error(names: dict[str, str]) -> float:
        def named(c: dict) -> dict:
            return {names[k]: v for k, v in c.items()}

        sp = load_space(names["machines"], names["threads"])
        found = predict(sp, [named(c) for c in runs], values, [named(p) for p in points])
        assert found is not None
        return float(np.sqrt(np.mean((np.array([m for m, _ in found]) - truth) ** 2)))

    plain = {k: k for k in renamed}
    # 0.29-0.57 on seeds 0-5: the busiest node's feature, which this bowl does not use, costs
    # the named model some of its lead on 25 runs.
    assert error(renamed) < 0.6 * error(plain)


NODES_RUNTIME = space(
    {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
    {"name": "runtime_s", "kind": "continuous", "low": 60, "high": 180},
)


def test_under_noise_a_run_is_not_suggested_again_with_its_runtime_nudged():
    # The runtime does nothing; nodes peak at 6 under noise as large as a step's difference.
    # Replicates aside, the search spends its runs on other points, not on a run a second off.
    for seed in range(5):
        rng = np.random.default_rng(seed)
        configs = [
            {"nodes": int(n), "runtime_s": float(r)}
            for n, r in zip(rng.integers(1, 10, 20), rng.uniform(60, 180, 20), strict=True)
        ]
        values = [1000 - 10 * (c["nodes"] - 6) ** 2 + rng.normal(0, 15) for c in configs]
        suggestions = bayes(NODES_RUNTIME, configs, values, count=3, seed=seed)
        for s in suggestions:
            assert s.point_type == "replicate" or not any(
                c["nodes"] == s.config["nodes"]
                and abs(c["runtime_s"] - s.config["runtime_s"]) < 2.0
                for c in configs
            ), (seed, s.config)


def test_the_recommendation_meets_the_limits_when_a_run_is_predicted_to():
    configs = [*CORNERS, {"nodes": 6, "threads": 23}, {"nodes": 3, "threads": 8}]
    values = [bowl(c) for c in configs]
    latency = [2.0 * c["threads"] for c in configs]  # 46 ms at the bowl's top
    limit = Limit("latency_p95_ms", max=20.0)
    found = recommend(
        NODES_THREADS, configs, values, limits=[limit], responses={"latency_p95_ms": latency}
    )
    assert 2.0 * found.config["threads"] <= 20.0
    assert "predicted to meet every limit" in found.reason


def rising(config: dict) -> float:
    """Throughput rising with the threads, peaking in the nodes at 6."""
    return 1000.0 - 10.0 * (config["nodes"] - 6) ** 2 + 10.0 * config["threads"]


def queueing(config: dict) -> float:
    """A p95 latency that doubles with every 8 threads: 5.5 ms at 1, 37 at 23, 1.3 s at 64."""
    return 5.0 * 2.0 ** (config["threads"] / 8.0)


@pytest.mark.parametrize("seed", range(3))
def test_a_latency_that_grows_by_factors_is_held_to_its_limit_closely(seed):
    # On the raw latency (1.3 s at the corners) the model could not place 38 ms: in 15 steps it
    # ran the best configuration within the limit in one seed of four.
    limit = Limit("latency_p95_ms", max=38.0)
    configs = list(CORNERS)
    for _ in range(10):
        (s,) = bayes(
            NODES_THREADS,
            configs,
            [rising(c) for c in configs],
            limits=[limit],
            responses={"latency_p95_ms": [queueing(c) for c in configs]},
            seed=seed,
        )
        configs.append(s.config)
    best = {"nodes": 6, "threads": 23}  # 24 threads take 40 ms
    assert best in configs
    found = recommend(
        NODES_THREADS,
        configs,
        [rising(c) for c in configs],
        limits=[limit],
        responses={"latency_p95_ms": [queueing(c) for c in configs]},
    )
    assert found.config == best
    said = re.search(r"latency_p95_ms predicted ([0-9.]+)", s.reason)
    assert said and float(said[1]) == pytest.approx(queueing(s.config), rel=0.05)


def test_the_recommendation_keeps_a_standard_deviation_from_the_limit():
    grid = [{"nodes": n, "threads": t} for n in (1, 3, 6, 9) for t in (1, 4, 8, 16, 23, 32, 64)]
    edge = {"nodes": 6, "threads": 23}
    configs = [*grid, edge]
    noise = np.exp(np.random.default_rng(0).normal(0.0, 0.08, len(configs)))  # 8 % per run
    latency = [queueing(c) * n for c, n in zip(configs, noise, strict=True)]
    # The edge's two runs measured 37.9 and 35.4 ms: a mean 1 % below a limit of 37 ms.
    assert [round(v, 1) for c, v in zip(configs, latency, strict=True) if c == edge] == [37.9, 35.4]
    values = [rising(c) for c in configs]

    def deployed(most: float) -> dict:
        limit = Limit("latency_p95_ms", max=most)
        found = recommend(
            NODES_THREADS, configs, values, limits=[limit], responses={"latency_p95_ms": latency}
        )
        return found.config

    assert deployed(42.0) == edge
    assert deployed(37.0) == {"nodes": 6, "threads": 16}  # 20 ms


def test_next_batch_recommends_at_every_step_and_when_the_budget_is_spent():
    runs = Runs(configs=CORNERS, values=[bowl(c) for c in CORNERS])
    for strategy in ("bayes", "auto", "augment"):
        plan = next_batch(strategy, Problem(NODES_THREADS), runs, budget_left=5)
        assert plan.recommendation is not None and plan.recommendation.config in CORNERS
    spent = next_batch("bayes", Problem(NODES_THREADS), runs, budget_left=0)
    assert spent.stop_reason and spent.recommendation.config == {"nodes": 5, "threads": 8}
    one = next_batch("bayes", Problem(NODES_THREADS), Runs(configs=CORNERS[:1], values=[1.0]))
    assert one.recommendation.config == CORNERS[0] and one.recommendation.uncertainty is None
    assert next_batch("bayes", Problem(NODES_THREADS), Runs()).recommendation is None


def test_the_training_set_is_capped_keeping_the_best_and_a_spread_of_the_rest():
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (900, 3))
    y = -np.sum(x**2, axis=1)
    keep = training_rows(x, y, limit=90)
    assert len(keep) == len(set(keep)) == 90
    best = set(np.argsort(-y)[:30])
    assert best <= set(keep)
    # The rest spreads out: the corners of the cube are represented.
    assert np.max(np.abs(x[keep]).min(axis=1)) > 0.7
    assert list(training_rows(x[:50], y[:50], limit=90)) == list(range(50))


def test_a_suggestion_after_800_runs_stays_within_seconds():
    rng = np.random.default_rng(2)
    sp = space(
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "clients", "kind": "integer", "low": 1, "high": 8},
        {"name": "threads", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
        {"name": "appliers", "kind": "integer", "low": 1, "high": 16, "scale": "log2"},
        {"name": "buffer_gb", "kind": "continuous", "low": 1.0, "high": 9.0},
    )
    configs = [sp.decode(rng.uniform(-1, 1, 5)) for _ in range(800)]
    values = [
        -((c["nodes"] - 3) ** 2) - (c["clients"] - 3) ** 2 + rng.normal(0, 0.5) for c in configs
    ]
    # 5 s on an idle machine is the goal, which benchmarks/optimizer.py judges.
    (s,) = assert_within(10.0, 1, lambda: bayes(sp, configs, values, seed=0))
    assert sp.check_config(s.config) == s.config


def test_a_suggestion_after_800_runs_of_a_narrow_peak_stays_within_seconds():
    # Six continuous factors and a narrow peak: the runs' long upper tail brings in the warped
    # search model, and every run's values would join the lattice's lines (800 a factor).
    rng = np.random.default_rng(3)
    sp = space(
        *({"name": f"x{i}", "kind": "continuous", "low": 0.0, "high": 1.0} for i in range(6))
    )
    configs = [sp.decode(rng.uniform(-1, 1, 6)) for _ in range(800)]

    def peak(c: dict) -> float:
        return math.exp(-8.0 * sum((c[f"x{i}"] - 0.3) ** 2 for i in range(6)))

    values = [peak(c) + rng.normal(0, 0.01) for c in configs]
    suggestions, recommendation = assert_within(
        6.0, 1, lambda: bayes_batch(sp, configs, values, seed=0)
    )
    assert sp.check_config(suggestions[0].config) == suggestions[0].config
    # Learning from 250 of the runs, it still deploys one of the best few measured.
    assert peak(recommendation.config) >= sorted(map(peak, configs))[-5]


def test_a_noisy_shape_is_never_fitted_as_all_noise():
    # 12 noisy runs of a quadratic in 7 features: maximum likelihood alone has a second mode
    # that puts the signal at its lower bound and calls every difference noise.
    def noise_over_signal(seed: int, signal_prior: bool) -> float:
        rng = np.random.default_rng(seed)
        x = rng.uniform(-1.0, 1.0, (12, 7))
        shape = 1.0 - (x[:, 0] - 0.3) ** 2 - 0.5 * x[:, 1] ** 2 + 0.3 * x[:, 2]
        y = shape + rng.normal(0.0, 0.4, 12)
        model = fit(x, y, seed=0, signal_prior=signal_prior)
        return noise_variance(model) / signal_variance(model)

    # The noise is about the shape's size: either may be called larger, neither a thousandth.
    assert max(noise_over_signal(s, True) for s in range(20)) < 100.0
    assert sum(noise_over_signal(s, False) > 100.0 for s in range(20)) >= 2


def test_a_pessimistic_model_expects_the_worst_run_far_from_every_run():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1.0, 1.0, (15, 2))
    y = np.exp(-4.0 * np.sum((x - 0.2) ** 2, axis=1))
    far = np.array([[60.0, -60.0]])
    worst = fit(x, y, seed=0, pessimistic=True)
    average = fit(x, y, seed=0)
    assert mean_and_sd(worst, far)[0][0] == pytest.approx(y.min(), abs=1e-6)
    assert mean_and_sd(average, far)[0][0] == pytest.approx(y.mean(), abs=1e-6)
    # The kriging believer's refit keeps the prior mean: the lowest of what it learns.
    more = refit(worst, np.vstack([x, [[0.9, 0.9]]]), np.append(y, -1.0))
    assert mean_and_sd(more, far)[0][0] == pytest.approx(-1.0, abs=1e-6)


def test_the_search_learns_the_warped_runs_and_the_user_reads_the_runs_as_measured():
    # Most runs near zero and a few high, as on Hartmann-6: the model that chooses where to
    # search learns the warped runs, which pull the long upper tail in; the recommendation and
    # every figure a suggestion shows come from the model of the runs as measured.
    sp = space(*({"name": n, "kind": "continuous", "low": 0.0, "high": 1.0} for n in "xyz"))
    rng = np.random.default_rng(4)
    configs = [sp.decode(rng.uniform(-1, 1, 3)) for _ in range(20)]
    values = [
        3.0 * math.exp(-8.0 * ((c["x"] - 0.3) ** 2 + (c["y"] - 0.6) ** 2 + (c["z"] - 0.4) ** 2))
        for c in configs
    ]
    fitted = Models.fitted(Problem(sp), Runs(configs, values))
    assert fitted is not None and fitted.search is not None
    warp = Warp.of(np.array(values))
    assert warp.power < 1.0 and fitted.search is not fitted.model
    assert fitted.w_fit == pytest.approx(warp.forward(np.array(values)))
    # Far from every run the search expects the worst run, the judge the runs' mean.
    far = np.full((1, 3), 60.0)
    assert mean_and_sd(fitted.search, far)[0][0] == pytest.approx(min(fitted.w_fit), abs=1e-6)
    assert mean_and_sd(fitted.model, far)[0][0] == pytest.approx(np.mean(values), abs=1e-6)
    (s,), deploy = bayes_batch(sp, configs, values, seed=0)
    ((mean, sd),) = predict(sp, configs, values, [s.config], seed=0) or []
    assert s.predicted == pytest.approx(mean) and s.uncertainty == pytest.approx(sd)
    assert deploy.predicted == pytest.approx(max(values), rel=1e-3)
    # A throughput's runs, a long lower tail: the warp leaves them as they are, and one model
    # does both.
    starved = 1.0 - np.array(values)
    flat = Models.fitted(Problem(sp), Runs(configs, list(starved)))
    assert flat is not None
    assert flat.search is flat.model
