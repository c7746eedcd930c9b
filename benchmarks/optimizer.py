"""How many trials the service's optimizer needs to reach the optimum, against the usual tools.

Run `python benchmarks/optimizer.py [--budget 100] [--seeds 20] [--problems ...] [--methods ...]
[--jobs 2] [--json PATH]`. Every method runs on every problem (benchmarks/optimizer_problems.py:
the simulated Galera cluster with 3 % noise, Hartmann 6-D and Branin on mixed integer and
continuous spaces, each with its exact optimum computed) for every seed, one trial at a time,
with the same race budget. The baselines, measured in the same run, are what a user would pick
otherwise: a full factorial (`grid`, the most levels L with L^d within the budget, at most the
planner's 9), a face-centred central composite design plus one confirmation run at the quadratic
model's optimum (`ccd`, the classical one-shot study), uniform random search in coded units
(`random`), and Optuna's multivariate TPE (`tpe`). The service's strategies are `auto` and
`bayes`, through `experiments.suggest.next_batch`.

Figures, each as median [25th, 75th percentile] over the seeds:
- trials to 2 % and to 5 %: the first trial count at which the best noise-free value of the
  configurations tried so far lies within that share of the optimum; a seed that never gets
  there within the budget counts as budget + 1, and "reached" says how many seeds got there;
- best at 10, 20 and 40 trials, as % of the optimum (100 * best / optimum when maximizing,
  100 * optimum / best when minimizing: 100 is the optimum either way). `auto` chooses its path
  by the budget, so its figures come from separate runs with a budget of 10, 20 and 40; the
  other methods ignore the budget, so prefixes of the race serve;
- ms per suggestion: the time a method spends proposing, divided by the trials proposed;
- stopped: seeds where the method itself stopped before the budget (grid and ccd once their
  design and confirmation are run, auto once its optimum is confirmed);
- errors: seeds where proposing raised. The race ends there with the trials it has, and each
  distinct error is printed under the tables (the full traceback is in the JSON).
A race stops early once it is within 2 % and has run at least 40 trials (the largest reported
budget): nothing it would do later changes any figure. Tasks (problem, method, seed) run in
`--jobs` processes, each with one BLAS thread (more made the Gaussian process several times
slower on the 2-core machine), so ms per suggestion is single-threaded time.

Last, the median trials to 2 % of `auto` and `bayes` against `tpe` and `random`, with the goals:
at most 0.5 x TPE and 0.25 x random on every problem, and at most 25 trials on `simulated`.
"""

from __future__ import annotations

import argparse
import json
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import optuna
from rich.console import Console
from rich.table import Table
from threadpoolctl import threadpool_limits

from experiments import analysis
from experiments.designs import DesignRequest, plan
from experiments.factors import Config
from experiments.suggest import Runs, next_batch

try:
    from benchmarks.optimizer_problems import PROBLEM_NAMES, Problem, problem
except ModuleNotFoundError:  # run as `python benchmarks/optimizer.py`: this folder is on the path
    from optimizer_problems import PROBLEM_NAMES, Problem, problem  # type: ignore[no-redef]

METHOD_NAMES: tuple[str, ...] = ("grid", "ccd", "random", "tpe", "auto", "bayes")
OURS: tuple[str, ...] = ("auto", "bayes")
BUDGET_AWARE = frozenset({"auto"})
THRESHOLDS: tuple[float, ...] = (2.0, 5.0)
REPORTED_BUDGETS: tuple[int, ...] = (10, 20, 40)
MAX_GRID_LEVELS = 9  # the planner's limit on full factorial levels
GOAL_VS_TPE = 0.5
GOAL_VS_RANDOM = 0.25
GOAL_SIMULATED_TRIALS = 25


@dataclass
class History:
    """The trials of one race so far, as a method sees them (noisy values only)."""

    configs: list[Config] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    point_types: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.configs)


class Method(Protocol):
    """Proposes the next configurations, each with its point type; none when it stops."""

    stop_reason: str | None

    def ask(self, history: History, budget_left: int) -> list[tuple[Config, str]]: ...


class Planned:
    """A design from the project's planner, run in its (seeded, randomized) order."""

    def __init__(self, problem: Problem, request: DesignRequest) -> None:
        self.problem = problem
        self.request = request
        self.configs: list[Config] | None = None
        self.stop_reason: str | None = None

    def ask(self, history: History, budget_left: int) -> list[tuple[Config, str]]:
        if self.configs is None:
            self.configs = [p.config for p in plan(self.problem.space, self.request).points]
        if len(history) < len(self.configs):
            return [(c, "design") for c in self.configs[len(history) :][:budget_left]]
        self.stop_reason = "the design is complete"
        return []


class CentralComposite(Planned):
    """The face-centred CCD, then one confirmation run at the quadratic model's optimum."""

    def __init__(self, problem: Problem, seed: int) -> None:
        # Face-centred: integer factors cannot take axial points beyond their range.
        super().__init__(problem, DesignRequest(kind="ccd", ccd_type="face_centred", seed=seed))
        self.confirmed = False

    def ask(self, history: History, budget_left: int) -> list[tuple[Config, str]]:
        batch = super().ask(history, budget_left)
        if batch:
            return batch
        if self.confirmed:
            self.stop_reason = "the design and its confirmation run are complete"
            return []
        self.confirmed = True
        model = analysis.fit(
            self.problem.space,
            history.configs,
            history.values,
            goal=self.problem.goal,
            model="quadratic",
        )
        return [(dict(model.optimum.config), "confirmation")]


class RandomSearch:
    """Uniform in coded units, so log2 factors are log-uniform; integers rounded."""

    def __init__(self, problem: Problem, seed: int) -> None:
        self.space = problem.space
        self.rng = np.random.default_rng(seed)
        self.stop_reason: str | None = None

    def ask(self, history: History, budget_left: int) -> list[tuple[Config, str]]:
        return [(self.space.decode(self.rng.uniform(-1.0, 1.0, len(self.space))), "random")]


class Tpe:
    """Optuna's multivariate TPE in an ask/tell loop."""

    def __init__(self, problem: Problem, seed: int) -> None:
        self.space = problem.space
        optuna.logging.set_verbosity(optuna.logging.WARNING)  # else one line per trial
        with warnings.catch_warnings():
            # multivariate=True is flagged experimental; it is what the issue compares against.
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.TPESampler(multivariate=True, seed=seed)
        self.study = optuna.create_study(direction=problem.goal, sampler=sampler)
        self.pending: optuna.trial.Trial | None = None
        self.stop_reason: str | None = None

    def ask(self, history: History, budget_left: int) -> list[tuple[Config, str]]:
        if self.pending is not None:
            self.study.tell(self.pending, history.values[-1])
        trial = self.study.ask()
        config: Config = {}
        for factor in self.space.factors:
            low, high = factor.bounds
            log = factor.scale == "log2"
            if factor.kind == "integer":
                config[factor.name] = trial.suggest_int(factor.name, int(low), int(high), log=log)
            elif factor.kind == "continuous":
                config[factor.name] = trial.suggest_float(factor.name, low, high, log=log)
            else:
                raise ValueError(f"{factor.name}: {factor.kind} factors are not benchmarked")
        self.pending = trial
        return [(config, "tpe")]


class Service:
    """A strategy of the service, one closed-loop step per call."""

    def __init__(self, strategy: str, problem: Problem, seed: int) -> None:
        self.strategy = strategy
        self.problem = problem
        self.seed = seed
        self.stop_reason: str | None = None

    def ask(self, history: History, budget_left: int) -> list[tuple[Config, str]]:
        runs = Runs(configs=history.configs, values=history.values, point_types=history.point_types)
        found = next_batch(
            self.strategy,
            self.problem.space,
            runs,
            goal=self.problem.goal,
            budget_left=budget_left,
            seed=self.seed,
        )
        self.stop_reason = found.stop_reason
        return [(s.config, s.point_type) for s in found.suggestions]


def make_method(name: str, problem: Problem, seed: int, budget: int) -> Method:
    """A fresh method called `name` (one of METHOD_NAMES) for one race."""
    if name == "grid":
        d = len(problem.space)
        levels = 2
        while levels < MAX_GRID_LEVELS and (levels + 1) ** d <= budget:
            levels += 1
        return Planned(problem, DesignRequest(kind="full_factorial", levels=levels, seed=seed))
    if name == "ccd":
        return CentralComposite(problem, seed)
    if name == "random":
        return RandomSearch(problem, seed)
    if name == "tpe":
        return Tpe(problem, seed)
    if name in OURS:
        return Service(name, problem, seed)
    raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHOD_NAMES)}")


@dataclass
class Race:
    """One method on one problem for one seed: every trial and how the race ended."""

    budget: int
    configs: list[Config]
    point_types: list[str]
    values: list[float]
    truths: list[float]
    ask_seconds: float
    proposed: int
    ended: str  # "budget", "reached" (early stop), "error", or the method's own stop reason
    error: str | None = None  # the traceback when proposing raised


def race(problem: Problem, method: Method, seed: int, budget: int) -> Race:
    """Ask `method` for configurations and evaluate them until the budget is spent, the method
    stops, or the early-stop rule (module docstring) holds."""
    history, truths = History(), []
    ask_seconds, proposed, ended, error = 0.0, 0, "budget", None
    enough = min(budget, max(REPORTED_BUDGETS))
    while len(history) < budget:
        started = time.perf_counter()
        try:
            batch = method.ask(history, budget - len(history))
        except Exception:  # the service is measured as it is: a crash ends the race, recorded
            batch, error = [], traceback.format_exc()
        ask_seconds += time.perf_counter() - started
        if error is not None:
            ended = "error"
            break
        if not batch:
            ended = method.stop_reason or "the method proposed nothing"
            break
        proposed += len(batch)
        for config, point_type in batch[: budget - len(history)]:
            history.values.append(problem.observe(config, seed, len(history)))
            history.configs.append(config)
            history.point_types.append(point_type)
            truths.append(problem.truth(config))
        if len(history) >= enough and any(problem.within(t, THRESHOLDS[0]) for t in truths):
            ended = "reached"
            break
    return Race(
        budget,
        history.configs,
        history.point_types,
        history.values,
        truths,
        ask_seconds,
        proposed,
        ended,
        error,
    )


def trials_to(truths: Sequence[float], reached: Callable[[float], bool], budget: int) -> int:
    """The first trial count whose best true value so far is within the threshold, else
    budget + 1. (The best so far is within it exactly when some trial so far is.)"""
    for i, truth in enumerate(truths[:budget]):
        if reached(truth):
            return i + 1
    return budget + 1


def best_percent(problem: Problem, truths: Sequence[float]) -> float:
    """The best true value among `truths` as % of the optimum (nan when there are none)."""
    if not truths:
        return float("nan")
    best = max(truths) if problem.goal == "maximize" else min(truths)
    return problem.percent_of_optimum(best)


@dataclass
class Result:
    """Every figure of one (problem, method, seed), with the raw races behind them."""

    problem: str
    method: str
    seed: int
    budget: int
    trials_to: dict[str, int]  # threshold in % -> trials
    best_at: dict[str, float]  # budget -> % of optimum
    seconds_per_suggestion: float
    stopped_itself: bool
    errors: list[str]  # the last line of each traceback, any race of the task
    wall_seconds: float
    race: Race
    budget_races: dict[str, Race]  # budget-aware methods: the separate run at each budget


def run_task(problem_name: str, method_name: str, seed: int, budget: int) -> Result:
    """Race one method on one problem for one seed, plus its fixed-budget runs if it needs them."""
    started = time.perf_counter()
    p = problem(problem_name)
    main = race(p, make_method(method_name, p, seed, budget), seed, budget)
    budgets = [b for b in REPORTED_BUDGETS if b <= budget]
    budget_races = {}
    if method_name in BUDGET_AWARE:
        budget_races = {
            str(b): race(p, make_method(method_name, p, seed, b), seed, b) for b in budgets
        }
    best_at = {
        str(b): best_percent(p, budget_races[str(b)].truths if budget_races else main.truths[:b])
        for b in budgets
    }
    return Result(
        problem=problem_name,
        method=method_name,
        seed=seed,
        budget=budget,
        trials_to={
            f"{t:g}": trials_to(main.truths, lambda v, t=t: p.within(v, t), budget)
            for t in THRESHOLDS
        },
        best_at=best_at,
        seconds_per_suggestion=main.ask_seconds / max(main.proposed, 1),
        stopped_itself=main.ended not in ("budget", "reached", "error"),
        errors=[
            f"budget {r.budget}: {r.error.strip().splitlines()[-1]}"
            for r in [main, *budget_races.values()]
            if r.error
        ],
        wall_seconds=time.perf_counter() - started,
        race=main,
        budget_races=budget_races,
    )


def run_all(
    problems: Sequence[str],
    methods: Sequence[str],
    seeds: int,
    budget: int,
    jobs: int,
    progress: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Every (problem, method, seed), over `jobs` processes; results in task order."""
    for name in problems:
        problem(name)  # the optima once, here, so forked workers inherit them
    tasks = [(p, m, s, budget) for p in problems for m in methods for s in range(seeds)]
    if jobs <= 1:
        results = []
        with threadpool_limits(1):
            for task in tasks:
                results.append(run_task(*task))
                if progress:
                    progress(results[-1])
        return results
    order = {task: i for i, task in enumerate(tasks)}
    done: list[Result | None] = [None] * len(tasks)
    with ProcessPoolExecutor(max_workers=jobs, initializer=_one_blas_thread) as pool:
        # The service's methods are the slowest: start them first so the pool ends evenly.
        slow_first = sorted(tasks, key=lambda t: t[1] not in OURS)
        futures = {pool.submit(run_task, *task): task for task in slow_first}
        for future in as_completed(futures):
            result = future.result()
            done[order[futures[future]]] = result
            if progress:
                progress(result)
    return [r for r in done if r is not None]


def _one_blas_thread() -> None:
    # OpenBLAS threads on top of the worker processes spin against each other: the Gaussian
    # process took 4-6x longer per suggestion with 2 BLAS threads than with 1 on 2 cores.
    threadpool_limits(1)


@dataclass(frozen=True)
class Summary:
    """Median and interquartile range of one figure over the seeds."""

    median: float
    q25: float
    q75: float


def summarize(values: Sequence[float]) -> Summary:
    """Median, 25th and 75th percentiles (linear interpolation), ignoring nan."""
    data = np.asarray(values, dtype=float)
    data = data[~np.isnan(data)]
    if data.size == 0:
        return Summary(float("nan"), float("nan"), float("nan"))
    q25, median, q75 = np.percentile(data, [25, 50, 75])
    return Summary(float(median), float(q25), float(q75))


def _trials(value: float, budget: int) -> str:
    return f">{budget}" if value > budget else f"{value:g}"


def _trials_cell(s: Summary, budget: int) -> str:
    return f"{_trials(s.median, budget)} [{_trials(s.q25, budget)}, {_trials(s.q75, budget)}]"


def _percent_cell(s: Summary) -> str:
    return "n/a" if np.isnan(s.median) else f"{s.median:.1f} [{s.q25:.1f}, {s.q75:.1f}]"


def problem_table(name: str, results: Sequence[Result], methods: Sequence[str]) -> Table:
    """One row per method: trials to 2 % and 5 %, best at 10/20/40, ms per suggestion."""
    p = problem(name)
    budget = results[0].budget
    seeds = len({r.seed for r in results})
    where = ", ".join(
        f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in p.optimum_config.items()
    )
    noise = f"{p.noise:.0%} noise" if p.noise else "noise-free"
    table = Table(
        title=f"{name}: {p.goal} (optimum {p.optimum:.6g} at {where}; {noise});"
        f" budget {budget}, {seeds} seeds, median [IQR]"
    )
    table.add_column("method")
    for t in THRESHOLDS:
        table.add_column(f"trials to {t:g} %", justify="right")
        table.add_column("reached", justify="right")
    budgets = [b for b in REPORTED_BUDGETS if b <= budget]
    for b in budgets:
        table.add_column(f"best at {b}, % of opt", justify="right")
    table.add_column("ms/suggestion", justify="right")
    table.add_column("stopped", justify="right")
    table.add_column("errors", justify="right")
    for method in methods:
        rows = [r for r in results if r.method == method]
        if not rows:
            continue
        cells = [method]
        for t in THRESHOLDS:
            trials = [r.trials_to[f"{t:g}"] for r in rows]
            cells.append(_trials_cell(summarize(trials), budget))
            cells.append(f"{sum(n <= budget for n in trials)}/{len(rows)}")
        cells += [_percent_cell(summarize([r.best_at[str(b)] for r in rows])) for b in budgets]
        per = summarize([1e3 * r.seconds_per_suggestion for r in rows])
        cells.append(f"{per.median:.3g} [{per.q25:.3g}, {per.q75:.3g}]")
        cells.append(f"{sum(r.stopped_itself for r in rows)}/{len(rows)}")
        cells.append(f"{sum(bool(r.errors) for r in rows)}/{len(rows)}")
        table.add_row(*cells)
    return table


def _ratio(ours: float, other: float, budget: int) -> str:
    """The ratio, marked as a bound when a median is censored (budget + 1: never reached)."""
    if ours > budget and other > budget:
        return "n/a"
    mark = "<=" if other > budget else (">=" if ours > budget else "")
    return f"{mark}{ours / other:.2f}"


def goals_table(results: Sequence[Result], problems: Sequence[str]) -> Table:
    """Median trials to 2 % of auto and bayes against TPE and random, with the issue's goals."""
    budget = results[0].budget
    key = f"{THRESHOLDS[0]:g}"
    table = Table(title=f"Median trials to {key} % of the optimum: ours against TPE and random")
    for column in (
        "problem",
        "method",
        "ours",
        "tpe",
        "ratio",
        f"<= {GOAL_VS_TPE}",
        "random",
        "ratio",
        f"<= {GOAL_VS_RANDOM}",
        f"<= {GOAL_SIMULATED_TRIALS} trials",
    ):
        table.add_column(column, justify="left" if column in ("problem", "method") else "right")

    def median(name: str, method: str) -> float | None:
        trials = [r.trials_to[key] for r in results if r.problem == name and r.method == method]
        return summarize(trials).median if trials else None

    def verdict(ok: bool) -> str:
        return "[green]PASS[/green]" if ok else "[red]FAIL[/red]"

    for name in problems:
        for method in OURS:
            ours = median(name, method)
            if ours is None:
                continue
            cells = [name, method, _trials(ours, budget)]
            for peer, goal in (("tpe", GOAL_VS_TPE), ("random", GOAL_VS_RANDOM)):
                other = median(name, peer)
                if other is None:
                    cells += ["n/a", "n/a", "n/a"]
                    continue
                # Passing needs our median inside the budget; a censored peer only helps us.
                cells += [
                    _trials(other, budget),
                    _ratio(ours, other, budget),
                    verdict(ours <= budget and ours <= goal * other),
                ]
            cells.append(verdict(ours <= GOAL_SIMULATED_TRIALS) if name == "simulated" else "")
            table.add_row(*cells)
    return table


def error_lines(results: Sequence[Result]) -> list[str]:
    """Each distinct error of a (problem, method), with the seeds it happened on."""
    seeds: dict[tuple[str, str, str], list[int]] = {}
    for r in results:
        for error in r.errors:
            seeds.setdefault((r.problem, r.method, error), []).append(r.seed)
    return [
        f"error, {name} {method}, seeds {', '.join(map(str, found))}: {error}"
        for (name, method, error), found in seeds.items()
    ]


def main() -> None:
    """Run every method on every problem and print the tables."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--budget", type=int, default=100, help="race budget (default 100)")
    parser.add_argument("--seeds", type=int, default=20, help="seeds 0..N-1 (default 20)")
    parser.add_argument("--problems", nargs="+", choices=PROBLEM_NAMES, default=PROBLEM_NAMES)
    parser.add_argument("--methods", nargs="+", choices=METHOD_NAMES, default=METHOD_NAMES)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--json", type=Path, help="write every per-seed result here")
    args = parser.parse_args()
    console = Console(width=max(Console().width, 200))
    status = Console(stderr=True)
    total = len(args.problems) * len(args.methods) * args.seeds
    finished: list[Result] = []

    def progress(result: Result) -> None:
        finished.append(result)
        status.print(
            f"{len(finished)}/{total} {result.problem} {result.method} seed"
            f" {result.seed}: {result.wall_seconds:.1f} s",
            highlight=False,
        )

    started = time.perf_counter()
    results = run_all(args.problems, args.methods, args.seeds, args.budget, args.jobs, progress)
    wall = time.perf_counter() - started
    for name in args.problems:
        console.print(problem_table(name, [r for r in results if r.problem == name], args.methods))
    console.print(goals_table(results, args.problems))
    for line in error_lines(results):
        console.print(line, highlight=False)
    console.print(f"total wall time {wall:.0f} s ({args.jobs} jobs)")
    if args.json:
        raw = {
            "arguments": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "optima": {
                n: {"value": problem(n).optimum, "config": problem(n).optimum_config}
                for n in args.problems
            },
            "wall_seconds": wall,
            "results": [asdict(r) for r in results],
        }
        args.json.write_text(json.dumps(raw, indent=1))
        console.print(f"raw results: {args.json}")


if __name__ == "__main__":
    main()
