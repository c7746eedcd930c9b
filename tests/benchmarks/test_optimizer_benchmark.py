"""The optimizer benchmark: the problems' exact optima, the figures it computes, the
recommendation rule of every method, and a tiny run."""

import dataclasses
import io
import itertools
import warnings

import numpy as np
import pytest
from rich.console import Console

from benchmarks.optimizer import (
    error_lines,
    goals_table,
    main,
    paired_by_seed,
    print_plain,
    problem_table,
    race,
    reference_seconds,
    reused_results,
    run_all,
    share_with_interval,
    suggestion_seconds,
    summarize,
    trials_to,
    trials_to_stay,
    write_json,
)
from benchmarks.optimizer_history import History
from benchmarks.optimizer_methods import (
    Service,
    Tpe,
    TrialTime,
    applicable,
    best_measured,
    make_method,
)
from benchmarks.optimizer_problems import (
    BRANIN_SPACE,
    LATENCY_LIMIT_MS,
    MAX_CONNECTIONS,
    PROBLEM_NAMES,
    TPS_FLOOR,
    branin_function,
    hartmann6_function,
    problem,
    simulated_lattice,
    simulated_lattice_tps,
    simulated_tps,
)
from experiments.goals import default_scale
from experiments.suggest import Problem, Runs, next_batch

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
    lattice, at_60 = simulated_lattice_tps()
    assert len(lattice) == 9 * 8 * 61 * 16
    np.testing.assert_array_equal(lattice, simulated_lattice())
    assert p.optimum == at_60.max()
    assert p.truth(p.optimum_config) == pytest.approx(p.optimum, rel=1e-12)
    # Throughput does not depend on the runtime up to the stall at 120 s, and is lower after it
    # (checked on a seeded tenth of the lattice and its best point: each solve takes seconds).
    rows = np.random.default_rng(0).choice(len(lattice), len(lattice) // 10, replace=False)
    rows = np.append(rows, int(np.argmax(at_60)))
    np.testing.assert_allclose(simulated_tps(lattice[rows], 120.0), at_60[rows], rtol=1e-12)
    assert simulated_tps(lattice[rows], 180.0).max() < p.optimum
    assert p.optimum == pytest.approx(1505.3, abs=0.05)
    assert {k: p.optimum_config[k] for k in list(p.optimum_config)[:4]} == {
        "nodes": 3,
        "clients": 3,
        "threads_per_client": 21,
        "wsrep_slave_threads": 1,
    }


def test_latency_optimum_is_the_lowest_latency_of_the_lattice_that_meets_the_floor():
    p = problem("simulated_latency")
    assert p.score(p.optimum_config) == pytest.approx(p.optimum, rel=1e-12)
    assert p.optimum == pytest.approx(22.67, abs=0.005)
    # No lattice point that meets the floor answers faster: its neighbours (+-1 in each
    # integer factor) and a seeded sample of the rest, one configuration at a time.
    lattice, _ = simulated_lattice_tps()
    centre = np.array([p.optimum_config[n] for n in p.space.names[:4]], dtype=float)
    steps = np.array(list(itertools.product((-1, 0, 1), repeat=4)), dtype=float)
    sample = np.random.default_rng(0).choice(len(lattice), 300, replace=False)
    low, high = lattice.min(axis=0), lattice.max(axis=0)
    for row in np.vstack([centre + steps, lattice[sample]]):
        config = dict(zip(p.space.names[:4], row.astype(int).tolist(), strict=True))
        config["runtime_s"] = 60.0
        if np.all((low <= row) & (row <= high)) and p.feasible(config):
            assert p.truth(config) >= p.optimum
    # The fewest connections answer fastest, and fall short of the floor: deploying them fails.
    alone = dict(p.optimum_config, nodes=1, clients=1, threads_per_client=4)
    assert p.truth(alone) < p.optimum and p.score(alone) is None
    observed = p.observe(p.optimum_config, 0, 0)
    assert observed.value == pytest.approx(p.optimum, rel=0.1)
    assert observed.constrained == pytest.approx(TPS_FLOOR, rel=0.1)


def test_a_limit_is_met_from_either_side():
    floor, ceiling = problem("simulated_latency"), problem("simulated_workloads")
    assert floor.excess(TPS_FLOOR - 10) == pytest.approx(10.0)
    assert floor.excess(TPS_FLOOR + 10) == pytest.approx(-10.0)
    assert floor.meets_limit(TPS_FLOOR) and not floor.meets_limit(TPS_FLOOR - 0.1)
    assert ceiling.excess(LATENCY_LIMIT_MS + 5) == pytest.approx(5.0)
    assert ceiling.meets_limit(LATENCY_LIMIT_MS) and not ceiling.meets_limit(None)
    assert problem("branin").meets_limit(None)


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


def test_a_share_of_seeds_carries_its_exact_interval():
    # Clopper-Pearson's closed forms at the ends: 0/n has upper bound 1 - 0.025^(1/n), n/n
    # lower bound 0.025^(1/n); 0/10: 0-31 %, 10/10: 69-100 %.
    assert share_with_interval(0, 10) == "0/10 (95 % CI 0-31 %)"
    assert share_with_interval(10, 10) == "10/10 (95 % CI 69-100 %)"
    assert share_with_interval(17, 20) == "17/20 (95 % CI 62-97 %)"


def test_summary_is_median_and_quartiles():
    s = summarize([1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert (s.median, s.q25, s.q75) == (5.0, 3.0, 7.0)
    s = summarize([4.0, 1.0, 2.0, 3.0, float("nan")])
    assert (s.median, s.q25, s.q75) == (2.5, 1.75, 3.25)


def test_the_recommendation_must_stay_within_to_count():
    def within(v):
        return v is not None and v >= 98.0

    assert trials_to_stay([90, 99, 97, 99, 99.5], within, budget=5) == 4
    assert trials_to_stay([99, 99, 99], within, budget=10) == 1
    assert trials_to_stay([99, 99, 90], within, budget=10) == 11  # lost at the end: never
    assert trials_to_stay([None, 99], within, budget=10) == 2
    assert trials_to_stay([], within, budget=10) == 11


def test_failing_and_constrained_problems_score_deployments_honestly():
    failing = problem("simulated_failures")
    crowded = {"nodes": 2, "clients": 8, "threads_per_client": 64, "wsrep_slave_threads": 1,
               "runtime_s": 60.0}  # fmt: skip
    assert MAX_CONNECTIONS < 8 * 64
    assert failing.observe(crowded, 0, 0).value is None
    assert failing.score(crowded) is None and failing.percent_of_optimum(None) == 0.0
    assert failing.score(failing.optimum_config) == pytest.approx(failing.optimum)
    workloads = problem("simulated_workloads")
    observed = workloads.observe(workloads.optimum_config, 0, 0)
    assert observed.value > 0 and observed.constrained == pytest.approx(LATENCY_LIMIT_MS, rel=0.1)
    assert workloads.feasible(workloads.optimum_config)
    # The best unconstrained point breaks the limit: deploying it scores nothing.
    loose = dict(workloads.optimum_config, threads_per_client=30)
    assert workloads.truth(loose) > workloads.optimum and workloads.score(loose) is None
    assert not applicable("ccd", workloads) and applicable("grid", workloads)


def _history(p, configs):
    history = History()
    for i, config in enumerate(configs):
        observed = p.observe(config, 0, i)
        history.configs.append(config)
        history.values.append(observed.value)
        history.constrained.append(observed.constrained)
        history.point_types.append("fake")
    return history


def test_the_service_recommends_what_its_loop_reports():
    p = problem("simulated_failures")
    rng = np.random.default_rng(1)
    configs = [p.space.decode(rng.uniform(-1, 1, len(p.space))) for _ in range(12)]
    history = _history(p, configs)
    assert any(v is None for v in history.values) and any(v is not None for v in history.values)
    service = Service("bayes", p, seed=0, budget=30)
    measured = [i for i, v in enumerate(history.values) if v is not None]
    plan = next_batch(
        "bayes",
        p.strategy_problem(0),
        Runs(
            configs=[configs[i] for i in measured],
            values=[history.values[i] for i in measured],
            point_types=["fake"] * len(measured),
            failed=[c for c, v in zip(configs, history.values, strict=True) if v is None],
        ),
        budget_left=18,
    )
    assert service.recommend(history) == plan.recommendation.config
    assert [c for c, _ in service.ask(history, 18)] == [s.config for s in plan.suggestions]
    # Never a configuration whose trial failed.
    assert p.observe(service.recommend(history), 0, 99).value is not None


def test_the_service_searches_each_problem_on_the_scale_the_api_gives_its_response():
    assert problem("simulated_latency").scale == default_scale("latency_p95_ms") == "log"
    assert {problem(n).scale for n in PROBLEM_NAMES if n != "simulated_latency"} == {"linear"}
    p = problem("simulated_latency")
    rng = np.random.default_rng(2)
    configs = [p.space.decode(rng.uniform(-1, 1, len(p.space))) for _ in range(16)]
    history = _history(p, configs)
    runs = Runs(
        configs=configs,
        values=history.values,
        point_types=history.point_types,
        responses={"tps": history.constrained},
    )
    planned = {
        scale: next_batch(
            "bayes",
            Problem(p.space, goal="minimize", scale=scale, limits=(p.limit,)),
            runs,
            budget_left=44,
        )
        .suggestions[0]
        .config
        for scale in ("linear", "log")
    }
    assert planned["log"] != planned["linear"]
    service = Service("bayes", p, seed=0, budget=60)
    assert service.ask(history, 44)[0][0] == planned["log"]


def test_the_service_with_a_budget_of_trial_time_stops_when_it_is_spent():
    # Trials of 10 s against 65 s: the seventh trial starts with 5 s left, and no eighth.
    p = problem("branin")
    timed = TrialTime(65.0, lambda config: 10.0)
    done = race(p, Service("bayes", p, seed=0, budget=40, time=timed), 0, 40)
    assert len(done.configs) == 7 and done.ended == "the budget of trial time is used up"
    assert timed.left(_history(p, done.configs)) == pytest.approx(-5.0 / 65.0)


def test_tpe_tells_failures_and_recommends_its_best_feasible_trial():
    p = problem("simulated_workloads")
    tpe = Tpe(p, seed=0)
    history = History()
    for i in range(6):
        ((config, _),) = tpe.ask(history, 10)
        observed = p.observe(config, 0, i)
        history.configs.append(config)
        history.values.append(None if i == 2 else observed.value)
        history.constrained.append(None if i == 2 else observed.constrained)
        history.point_types.append("tpe")
    assert tpe.recommend(history) == best_measured(p, history)


def test_tiny_run_end_to_end():
    results = run_all(["branin"], ["random", "bayes"], seeds=range(1), budget=12, jobs=1)
    assert [(r.problem, r.method, r.seed) for r in results] == [
        ("branin", "random", 0),
        ("branin", "bayes", 0),
    ]
    for r in results:
        assert r.budget == 12
        assert set(r.trials_to) == set(r.rec_trials_to) == {"2", "5"}
        assert all(1 <= n <= 13 for n in [*r.trials_to.values(), *r.rec_trials_to.values()])
        assert set(r.best_at) == set(r.rec_at) == {"10"}
        assert 0 < r.rec_at["10"] <= r.best_at["10"] <= 100
        assert len(r.race.truths) == len(r.race.values) == len(r.race.recommended) == 12
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
    console.print(
        goals_table(
            results, ["branin"], method="bayes", suggestion_seconds={60: 0.5}, reference=0.25
        )
    )
    text = out.getvalue()
    assert "rec. trials to 2 %" in text and "random" in text and "bayes" in text
    assert "at 60 runs within 1 s" in text and "PASS" in text
    assert "0.50 s (2.0x the reference)" in text
    # The best other method is named with its trials, or "none" when none got there in budget.
    for reached, label in [(5, "(random, 5)"), (13, "(none in budget)")]:
        random = dataclasses.replace(results[0], rec_trials_to={"2": reached, "5": reached})
        out = io.StringIO()
        Console(file=out, width=200).print(goals_table([random, results[1]], ["branin"], "bayes"))
        assert f"0.5 x best peer {label}" in out.getvalue()
    # No peer within the budget of 12: 6 trials halve any figure of theirs, 7 may not.
    never = dataclasses.replace(results[0], rec_trials_to={"2": 13, "5": 13})
    for ours, judged in [(6, "PASS"), (7, "UNDECIDED: rerun with --budget 14"), (13, "FAIL")]:
        mine = dataclasses.replace(results[1], rec_trials_to={"2": ours, "5": ours})
        out = io.StringIO()
        Console(file=out, width=200).print(goals_table([never, mine], ["branin"], "bayes"))
        row = next(line for line in out.getvalue().splitlines() if "0.5 x best peer" in line)
        assert judged in row, out.getvalue()
    assert ">12 (n/a)" in out.getvalue()  # neither got there: no ratio
    assert error_lines(results) == []
    failed = dataclasses.replace(results[0], errors=["budget 12: ValueError: boom"])
    assert error_lines([failed]) == ["error, branin random, seeds 0: budget 12: ValueError: boom"]


def test_install_hints_and_tracebacks_are_printed_as_they_are():
    out = io.StringIO()
    lines = [
        "peer ax not run: No module named 'ax'; pip install -e '.[peers]'",
        "error, branin tpe, seeds 0: x[bold]y[/bold] IndexError: [1, 2][5]",
    ]
    print_plain(Console(file=out, width=200), lines)
    assert out.getvalue().splitlines() == lines


def test_methods_are_compared_seed_by_seed_on_the_seeds_both_ran():
    (base,) = run_all(["branin"], ["random"], seeds=range(1), budget=10, jobs=1)

    def results(method: str, trials: list[int], end: float = 90.0) -> list:
        return [
            dataclasses.replace(
                base, method=method, seed=seed, rec_trials_to={"2": n, "5": n}, rec_at={"10": end}
            )
            for seed, n in enumerate(trials)
        ]

    # Seed 4 only ours ran; 8 against 8 is a tie, and so is 11 (never, at budget 10) against
    # 11 when both recommendations end as near the optimum.
    ours = results("bayes", [3, 8, 11, 5, 2])
    other = results("random", [6, 8, 11, 4])
    duel = paired_by_seed(ours, other)
    assert (duel.ahead, duel.behind, duel.tied) == (1, 1, 2)
    assert duel.p_value() == pytest.approx(1.0)
    assert duel.text() == "1 ahead, 1 behind, 2 tied (sign test p = 1)"
    # Where neither got there, the recommendation that ends nearer the optimum is ahead.
    nearer = paired_by_seed(results("bayes", [11, 11], 95.0), results("random", [11, 3], 97.0))
    assert (nearer.ahead, nearer.behind, nearer.tied) == (0, 2, 0)
    farther = paired_by_seed(results("bayes", [11], 97.0), results("random", [11], 95.0))
    assert (farther.ahead, farther.behind, farther.tied) == (1, 0, 0)
    # Ahead in every one of 8 seeds: two-sided sign test 2 / 2^8.
    sweep = paired_by_seed(results("bayes", [1] * 8), results("random", [5] * 8))
    assert sweep.p_value() == pytest.approx(2 / 256)
    assert paired_by_seed(ours[2:3], other[2:3]).text() == "0 ahead, 0 behind, 1 tied"
    # The goals name the peer it is least ahead of: as many seeds behind as ahead is not ahead.
    weaker = [dataclasses.replace(r, method="tpe", rec_trials_to={"2": 11, "5": 11}) for r in other]
    for peers, closest, measured, verdict in [
        (other + weaker, "random", "1 ahead, 1 behind, 2 tied", "FAIL"),
        (weaker, "tpe", "3 ahead, 0 behind, 1 tied", "PASS"),
    ]:
        out = io.StringIO()
        Console(file=out, width=200).print(goals_table([*ours, *peers], ["branin"], "bayes"))
        (row,) = [line for line in out.getvalue().splitlines() if "seed by seed" in line]
        assert f"ahead of every peer seed by seed (closest: {closest})" in row
        assert measured in row and verdict in row


def test_budget_aware_method_gets_a_run_per_budget():
    (result,) = run_all(["branin"], ["auto"], seeds=range(1), budget=20, jobs=1)
    assert set(result.budget_races) == {"10"}  # the main race is the run at 20
    assert len(result.budget_races["10"].truths) <= 10
    assert list(result.best_at) == list(result.rec_at) == ["10", "20"]


def test_an_earlier_run_is_reused_for_the_methods_not_run_again(tmp_path):
    results = run_all(["branin"], ["random", "auto"], seeds=range(1, 3), budget=20, jobs=1)
    assert sorted({r.seed for r in results}) == [1, 2]
    path = tmp_path / "earlier.json"
    arguments = {"budget": 20, "seeds": 2, "first_seed": 1, "problems": ["branin"], "json": path}
    write_json(path, arguments, results, wall=1.0)
    # The run that reuses it runs auto again: random comes from the file, whole.
    reused = reused_results(path, ["branin"], ["auto"], seeds=range(1, 3), budget=20)
    assert reused == [r for r in results if r.method == "random"]
    assert reused_results(path, ["branin"], ["grid"], seeds=range(2, 3), budget=20) == [
        r for r in results if r.seed == 2
    ]
    assert reused_results(None, ["branin"], ["auto"], seeds=range(1, 3), budget=20) == []
    for seeds, budget, problems in [
        (range(0, 2), 20, ["branin"]),
        (range(1, 4), 20, ["branin"]),
        (range(1, 3), 60, ["branin"]),
        (range(1, 3), 20, ["simulated"]),
    ]:
        with pytest.raises(SystemExit, match="--reuse"):
            reused_results(path, problems, ["auto"], seeds=seeds, budget=budget)
    # A file written before --first-seed holds seeds from 0.
    del arguments["first_seed"]
    write_json(path, arguments, results, wall=1.0)
    with pytest.raises(SystemExit, match="on seeds 0-1; this run needs budget 20 on seeds 1-2"):
        reused_results(path, ["branin"], ["auto"], seeds=range(1, 3), budget=20)


def test_the_reference_fits_without_a_warning_and_times_one_fit():
    # A fit that hits a bound of its hyperparameters warns, and times the optimizer's way to
    # the bound rather than the fit the suggestion times are read against.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        seconds = reference_seconds(repeats=1)
    assert 0.0 < seconds < 60.0


def test_a_suggestion_is_timed_on_the_simulated_cluster():
    # It raises when the default strategy cannot suggest after the runs it is given.
    assert 0.0 < suggestion_seconds(15, repeats=2) < 60.0


@pytest.mark.parametrize("arguments", [["--seeds", "0"], ["--first-seed", "-1"]])
def test_seeds_out_of_range_are_refused_before_any_race(monkeypatch, capsys, arguments):
    monkeypatch.setattr("sys.argv", ["optimizer.py", *arguments])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 2
    assert "--seeds must be at least 1 and --first-seed at least 0" in capsys.readouterr().err


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

    def recommend(self, history):
        return history.configs[0]


def test_a_method_that_raises_ends_its_race_with_the_error_recorded():
    result = race(problem("branin"), Exploding(), seed=0, budget=10)
    assert result.ended == "error"
    assert len(result.truths) == len(result.recommended) == 2
    assert result.error.strip().endswith("ValueError: boom")


def test_every_method_recommends_inside_the_space_on_a_short_race():
    p = problem("branin")
    for name in ("grid", "ccd", "random", "tpe", "auto"):
        method = make_method(name, p, seed=0, budget=8)
        result = race(p, method, seed=0, budget=8)
        pick = method.recommend(History(result.configs, result.values, result.point_types,
                                        [None] * len(result.configs)))  # fmt: skip
        assert pick is not None and p.space.check_config(pick) == pick, name
