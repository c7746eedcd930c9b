"""The optimizer benchmark: the problems' exact optima, the figures it computes, and a tiny run."""

import dataclasses
import io

import numpy as np
import pytest
from rich.console import Console

from benchmarks.optimizer import (
    error_lines,
    goals_table,
    problem_table,
    race,
    run_all,
    summarize,
    trials_to,
)
from benchmarks.optimizer_problems import (
    BRANIN_SPACE,
    branin_function,
    hartmann6_function,
    problem,
    simulated_lattice,
    simulated_tps,
)

HARTMANN_MINIMIZER = [0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573]
HARTMANN_MINIMUM = -3.32237


def test_hartmann6_gives_the_published_minimum_at_the_published_minimizer():
    assert round(float(hartmann6_function(np.array(HARTMANN_MINIMIZER))), 5) == HARTMANN_MINIMUM


def test_hartmann6_mixed_optimum_is_below_the_continuous_one_and_attained():
    p = problem("hartmann6")
    assert p.optimum <= -HARTMANN_MINIMUM
    assert p.space.check_config(p.optimum_config) == p.optimum_config
    assert p.truth(p.optimum_config) == p.optimum
    # No random point of the mixed space does better.
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (200_000, 6))
    x[:, :3] = rng.integers(0, 9, (200_000, 3)) / 8
    assert -hartmann6_function(x).min() <= p.optimum


def test_branin_mixed_optimum_matches_brute_force():
    p = problem("branin")
    x1 = np.arange(-5, 11)[:, None]
    x2 = np.linspace(0, 15, 150_001)[None, :]
    assert p.optimum == pytest.approx(float(branin_function(x1, x2).min()), abs=1e-4)
    assert BRANIN_SPACE.check_config(p.optimum_config) == p.optimum_config
    assert p.truth(p.optimum_config) == p.optimum


def test_simulated_optimum_is_the_lattice_maximum_at_any_runtime_up_to_120_s():
    p = problem("simulated")
    lattice = simulated_lattice()
    assert len(lattice) == 9 * 8 * 61 * 16
    at_60 = simulated_tps(lattice, 60.0)
    assert p.optimum == at_60.max()
    assert p.truth(p.optimum_config) == pytest.approx(p.optimum, rel=1e-12)
    # Throughput does not depend on the runtime up to the stall at 120 s, and is lower after it.
    np.testing.assert_allclose(simulated_tps(lattice, 120.0), at_60, rtol=1e-12)
    assert simulated_tps(lattice, 180.0).max() < p.optimum
    assert p.optimum == pytest.approx(1505.3, abs=0.05)
    assert {k: p.optimum_config[k] for k in list(p.optimum_config)[:4]} == {
        "nodes": 3,
        "clients": 3,
        "threads_per_client": 21,
        "wsrep_slave_threads": 1,
    }


def test_trials_to_threshold_and_never_reaching():
    truths = [10.0, 50.0, 40.0, 97.0, 99.0, 100.0]

    def within(percent):
        return lambda v: v >= 100.0 - percent

    assert trials_to(truths, within(5), budget=6) == 4
    assert trials_to(truths, within(2), budget=6) == 5
    assert trials_to(truths, within(0), budget=6) == 6
    assert trials_to(truths, within(2), budget=4) == 5  # beyond the budget: never reached
    assert trials_to([], within(2), budget=10) == 11


def test_within_and_percent_for_both_goals():
    maximize, minimize = problem("hartmann6"), problem("branin")
    assert maximize.within(maximize.optimum * 0.98, 2)
    assert not maximize.within(maximize.optimum * 0.979, 2)
    assert minimize.within(minimize.optimum * 1.05, 5)
    assert not minimize.within(minimize.optimum * 1.051, 5)
    assert minimize.percent_of_optimum(minimize.optimum * 2) == pytest.approx(50.0)
    assert maximize.percent_of_optimum(maximize.optimum / 2) == pytest.approx(50.0)


def test_summary_is_median_and_quartiles():
    s = summarize([1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert (s.median, s.q25, s.q75) == (5.0, 3.0, 7.0)
    s = summarize([4.0, 1.0, 2.0, 3.0, float("nan")])
    assert (s.median, s.q25, s.q75) == (2.5, 1.75, 3.25)


def test_tiny_run_end_to_end():
    results = run_all(["branin"], ["random", "bayes"], seeds=1, budget=12, jobs=1)
    assert [(r.problem, r.method, r.seed) for r in results] == [
        ("branin", "random", 0),
        ("branin", "bayes", 0),
    ]
    for r in results:
        assert r.budget == 12
        assert set(r.trials_to) == {"2", "5"}
        assert all(1 <= n <= 13 for n in r.trials_to.values())
        assert set(r.best_at) == {"10"}
        assert 0 < r.best_at["10"] <= 100
        assert len(r.race.truths) == len(r.race.values) == len(r.race.configs) == 12
        assert r.race.ended == "budget"
        assert r.seconds_per_suggestion > 0
        assert r.budget_races == {}
        assert r.errors == []
        assert not r.stopped_itself
        assert all(BRANIN_SPACE.check_config(c) == c for c in r.race.configs)
    assert set(results[1].race.point_types) <= {"space_filling", "initial", "bayes", "replicate"}
    out = io.StringIO()
    console = Console(file=out, width=200)
    console.print(problem_table("branin", results, ["random", "bayes"]))
    console.print(goals_table(results, ["branin"]))
    text = out.getvalue()
    assert "trials to 2 %" in text and "random" in text and "bayes" in text
    assert error_lines(results) == []
    failed = dataclasses.replace(results[0], errors=["budget 12: ValueError: boom"])
    assert error_lines([failed]) == ["error, branin random, seeds 0: budget 12: ValueError: boom"]


def test_budget_aware_method_gets_a_run_per_budget():
    (result,) = run_all(["branin"], ["auto"], seeds=1, budget=20, jobs=1)
    assert set(result.budget_races) == {"10", "20"}
    assert all(len(r.truths) <= int(b) for b, r in result.budget_races.items())
    assert list(result.best_at) == ["10", "20"]


class Exploding:
    """Two trials, then the proposal raises, as a service bug would."""

    stop_reason = None

    def __init__(self):
        self.calls = 0

    def ask(self, history, budget_left):
        self.calls += 1
        if self.calls > 2:
            raise ValueError("boom")
        return [({"x1": 3, "x2": 2.0 + self.calls}, "fake")]


def test_a_method_that_raises_ends_its_race_with_the_error_recorded():
    result = race(problem("branin"), Exploding(), seed=0, budget=10)
    assert result.ended == "error"
    assert len(result.truths) == 2
    assert result.error.strip().endswith("ValueError: boom")
