"""The contract every strategy of the registry keeps (optuna `testing/` style: one suite, run
against every implementation; a strategy added to `STRATEGIES` is covered by it at once).

A strategy is configured with a `Problem`, `fit` to the runs (its models fitted there, once),
then asked to `suggest`, `predict` and `recommend` from what it fitted."""

import copy
import math

import pytest

from experiments.constraints import parse_constraints
from experiments.factors import FactorSpace
from experiments.suggest import (
    STRATEGIES,
    STRATEGY_NAMES,
    SUMMARIES,
    NotFitted,
    Problem,
    Runs,
    Strategy,
)
from experiments.suggest import gaussian_process as gp

SPACE = FactorSpace.from_dicts(
    [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "threads", "kind": "integer", "low": 1, "high": 64, "scale": "log2"},
    ]
)
# Cuts the corner of most nodes and threads (a run there was measured before the rule).
CONSTRAINTS = parse_constraints(["nodes + threads <= 70"], SPACE)
# A configuration on a face of the region, where augment's axial points and Bayesian
# optimization's expected improvement both go: its trial failed.
FAILED = {"nodes": 9, "threads": 8}
NAMES = list(STRATEGIES)


def tps(config: dict) -> float:
    """A throughput of 1000 at 6 nodes and 23 threads, with a wobble standing in for noise."""
    wobble = 7.0 * math.sin(3.0 * config["nodes"] + config["threads"])
    return 1000.0 - 10.0 * (config["nodes"] - 6) ** 2 - 0.4 * (config["threads"] - 23) ** 2 + wobble


def factorial_runs() -> Runs:
    """A two-level factorial with three centre runs, and one failed trial."""
    corners = [{"nodes": n, "threads": t} for n in (1, 9) for t in (1, 64)]
    configs = [*corners, *([{"nodes": 5, "threads": 8}] * 3)]
    values = [tps(c) + 5.0 * i for i, c in enumerate(configs)]
    return Runs(configs=configs, values=values, failed=[FAILED])


def problem(seed: int = 0) -> Problem:
    return Problem(SPACE, constraints=CONSTRAINTS, seed=seed)


def fitted(name: str, seed: int = 0) -> Strategy:
    return STRATEGIES[name](problem(seed)).fit(factorial_runs())


@pytest.fixture
def fits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the Gaussian processes fitted (the one fitting function, `gaussian_process.fit`)."""
    calls: list[int] = []
    original = gp.fit

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(gp, "fit", counting)
    return calls


def test_the_registry_is_the_one_list_of_names_each_with_a_summary():
    assert tuple(STRATEGIES) == STRATEGY_NAMES
    for name, kind in STRATEGIES.items():
        assert kind.name == name
        assert SUMMARIES[name] == kind.summary and kind.summary.strip()


@pytest.mark.parametrize("name", NAMES)
def test_fit_returns_the_strategy_itself(name):
    strategy = STRATEGIES[name](problem())
    assert strategy.fit(factorial_runs()) is strategy


@pytest.mark.parametrize("name", NAMES)
def test_an_unfitted_strategy_refuses_to_answer(name):
    strategy = STRATEGIES[name](problem())
    with pytest.raises(NotFitted, match="fit"):
        strategy.suggest(1)
    with pytest.raises(NotFitted):
        strategy.predict([{"nodes": 5, "threads": 8}])
    with pytest.raises(NotFitted):
        strategy.recommend()


@pytest.mark.parametrize("name", NAMES)
def test_the_same_problem_runs_and_seed_give_the_same_plan(name):
    assert fitted(name, seed=4).suggest(3) == fitted(name, seed=4).suggest(3)


@pytest.mark.parametrize("name", NAMES)
def test_fit_leaves_the_runs_as_they_were(name):
    runs = factorial_runs()
    before = copy.deepcopy(runs)
    STRATEGIES[name](problem()).fit(runs).suggest(2)
    assert runs == before


@pytest.mark.parametrize("name", NAMES)
def test_suggestions_lie_in_the_space_meet_the_constraints_and_avoid_failed_trials(name):
    plan = fitted(name).suggest(4)
    assert plan.suggestions, plan.explanation
    for s in plan.suggestions:
        assert SPACE.check_config(s.config) == s.config
        assert all(c.satisfied(s.config) for c in CONSTRAINTS), s.config
        assert SPACE.key(s.config) != SPACE.key(FAILED)


@pytest.mark.parametrize("name", NAMES)
def test_the_plan_and_its_suggestions_name_the_registry_key(name):
    plan = fitted(name).suggest(2)
    assert plan.strategy == name
    assert all(s.strategy == name for s in plan.suggestions)


@pytest.mark.parametrize("name", NAMES)
def test_models_are_fitted_in_fit_and_never_again(name, fits):
    strategy = fitted(name)
    assert fits, "fit fits the models the strategy answers from"
    fits.clear()
    strategy.suggest(3)
    strategy.predict([{"nodes": 2, "threads": 3}, {"nodes": 8, "threads": 40}])
    strategy.recommend()
    assert fits == []


@pytest.mark.parametrize("name", NAMES)
def test_predictions_are_finite_with_a_non_negative_uncertainty(name):
    strategy = fitted(name)
    points = [{"nodes": 2, "threads": 3}, {"nodes": 8, "threads": 40}]
    predictions = strategy.predict(points)
    assert predictions is not None and len(predictions) == len(points)
    for mean, sd in predictions:
        assert math.isfinite(mean) and math.isfinite(sd) and sd >= 0.0
    for s in strategy.suggest(3).suggestions:
        assert s.predicted is not None and math.isfinite(s.predicted)
        assert s.uncertainty is None or s.uncertainty >= 0.0


@pytest.mark.parametrize("name", NAMES)
def test_the_recommendation_is_a_measured_configuration(name):
    runs = factorial_runs()
    found = STRATEGIES[name](problem()).fit(runs).recommend()
    assert found is not None
    assert found.config in [SPACE.check_config(c, in_region=False) for c in runs.configs]
    assert found.runs >= 1


@pytest.mark.parametrize("name", NAMES)
def test_without_runs_nothing_is_predicted_or_recommended(name):
    strategy = STRATEGIES[name](problem()).fit(Runs())
    assert strategy.predict([{"nodes": 2, "threads": 3}]) is None
    assert strategy.recommend() is None


# The same factors with a noise factor (a table size, never chosen), numeric without levels:
# its noise levels are its low and high ends.
NOISE_SPACE = FactorSpace.from_dicts(
    [
        *SPACE.to_dicts(),
        {"name": "table_size", "kind": "integer", "low": 1000, "high": 100000, "noise": True},
    ]
)
NOISE_FAILED = {**FAILED, "table_size": 1000}


def noise_runs() -> Runs:
    """A two-level factorial of all three factors with three centre runs, one failed trial."""
    corners = [
        {"nodes": n, "threads": t, "table_size": s}
        for n in (1, 9)
        for t in (1, 64)
        for s in (1000, 100000)
    ]
    configs = [*corners, *([{"nodes": 5, "threads": 8, "table_size": 50500}] * 3)]
    values = [tps(c) - 0.001 * c["table_size"] + 5.0 * i for i, c in enumerate(configs)]
    return Runs(configs=configs, values=values, failed=[NOISE_FAILED])


@pytest.mark.parametrize("name", NAMES)
def test_with_a_noise_factor_each_control_configuration_is_suggested_at_every_noise_level(name):
    runs = noise_runs()
    plan = STRATEGIES[name](Problem(NOISE_SPACE)).fit(runs).suggest(3)
    assert plan.suggestions, plan.explanation
    levels: dict[tuple, set] = {}
    for c in [*runs.configs, *runs.failed, *(s.config for s in plan.suggestions)]:
        levels.setdefault((c["nodes"], c["threads"]), set()).add(c["table_size"])
    for s in plan.suggestions:
        assert NOISE_SPACE.check_config(s.config) == s.config
        assert {1000, 100000} <= levels[(s.config["nodes"], s.config["threads"])], s.config
        assert s.predicted is not None and s.strategy == name


@pytest.mark.parametrize("name", NAMES)
def test_with_a_noise_factor_the_recommendation_is_a_measured_control_configuration(name):
    runs = noise_runs()
    found = STRATEGIES[name](Problem(NOISE_SPACE)).fit(runs).recommend()
    assert found is not None
    assert found.config in [{"nodes": c["nodes"], "threads": c["threads"]} for c in runs.configs]
