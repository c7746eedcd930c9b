"""The fidelity benchmark: its problems, its time axis, and a tiny run of every space."""

import io

import pytest
from rich.console import Console

from benchmarks.fidelity import (
    FULL_S,
    SHORTEST_S,
    SPACES,
    Outcome,
    fidelity_problem,
    outcome,
    run_one,
    table,
    trial_seconds,
)
from benchmarks.optimizer import Race
from benchmarks.optimizer_problems import problem
from experiments.suggest.fidelity import TRIAL_OVERHEAD_S


def test_every_space_has_the_optimum_of_a_full_length_run_and_short_runs_overstate_it():
    optima = {name: fidelity_problem(name) for name in SPACES}
    assert len({(p.optimum, tuple(p.optimum_config.items())) for p in optima.values()}) == 1
    p = optima["fidelity"]
    assert p.space.fidelity is not None and p.space.fidelity.name == "runtime_s"
    assert p.score(p.optimum_config | {"runtime_s": SHORTEST_S}) == pytest.approx(p.optimum)
    full = p.observe(p.optimum_config | {"runtime_s": FULL_S}, 0, 0).value
    short = p.observe(p.optimum_config | {"runtime_s": SHORTEST_S}, 0, 0).value
    assert short / full == pytest.approx(1 / 0.704, rel=0.01)  # the stall after 120 s
    assert optima["short"].observe(p.optimum_config, 0, 0).value == short
    # The stall is the same share everywhere: a 180 s run's optimum is the usual one.
    assert p.truth(p.optimum_config) == pytest.approx(p.optimum)
    assert p.optimum_config == {
        k: v for k, v in problem("simulated").optimum_config.items() if k != "runtime_s"
    }


def test_a_trial_costs_its_space_runtime_and_the_overhead():
    config = {"nodes": 3, "clients": 3, "threads_per_client": 8, "wsrep_slave_threads": 1}
    assert trial_seconds("full", config) == FULL_S + TRIAL_OVERHEAD_S
    assert trial_seconds("short", config) == SHORTEST_S + TRIAL_OVERHEAD_S
    assert trial_seconds("fidelity", config | {"runtime_s": 40}) == 40 + TRIAL_OVERHEAD_S


def test_the_time_axis_reads_when_the_recommendation_stays_within_two_percent():
    p = fidelity_problem("fidelity")
    good, bad = p.optimum, 0.9 * p.optimum
    lengths = [10, 10, 180, 10, 180]  # 13, 26, 209, 222, 405 s
    race = Race(
        budget=5,
        configs=[p.optimum_config | {"runtime_s": t} for t in lengths],
        point_types=["bayes"] * 5,
        values=[1.0] * 5,
        truths=[good] * 5,
        recommended=[None, bad, good, good, good],
        ask_seconds=1.0,
        proposed=5,
        ended="budget",
    )
    found = outcome("fidelity", 0, race, p, budget_s=400.0)
    assert found.seconds_to == 3 * TRIAL_OVERHEAD_S + 200  # from the third trial on
    # A quarter and half of 400 s hold the second trial's recommendation, all of it the fourth's.
    assert found.percent_at == (pytest.approx(90.0), pytest.approx(90.0), pytest.approx(100.0))
    assert found.trials == 5 and found.full_share == pytest.approx(0.4)
    never = outcome("fidelity", 0, race, p, budget_s=20.0)
    assert never.seconds_to == float("inf")


def test_a_tiny_run_of_every_space_is_tabled():
    outcomes = [run_one(name, 0, 3 * (FULL_S + TRIAL_OVERHEAD_S)) for name in SPACES]
    assert all(isinstance(o, Outcome) and o.trials >= 3 for o in outcomes)
    by_space = {o.space: o for o in outcomes}
    assert by_space["full"].full_share == 1.0 and by_space["short"].full_share == 0.0
    assert by_space["short"].trials > by_space["fidelity"].trials > by_space["full"].trials
    console = Console(file=io.StringIO(), width=200)
    console.print(table(outcomes, 3 * (FULL_S + TRIAL_OVERHEAD_S)))
    printed = console.file.getvalue()
    assert all(name in printed for name in SPACES) and "vs baseline" in printed
