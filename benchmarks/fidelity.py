"""Short trials as a cheap fidelity: the time until the recommendation is right, with and without.

Run `python -m benchmarks.fidelity [--seeds 10] [--full-trials 40] [--jobs 2]`. The simulated
cluster of the optimizer benchmark (nodes 1-9, clients 1-8, threads per client 4-64, applier
threads 1-16; the optimum is its lattice optimum) in three factor spaces, each raced by `auto`:
- `full` (the baseline): every trial runs 180 s, as the published study's longer runs did;
- `short`: every trial runs 10 s, what a user in a hurry does (fine where short runs rank the
  configurations as full ones do, as here; nothing warns when they do not);
- `fidelity`: runtime_s is a factor from 10 to 180 s marked as the fidelity, so the service may
  run short trials and recommends at 180 s (`experiments.suggest.fidelity`).
A run of T seconds measures what the simulated cluster measures in T seconds, with its
published stall after 120 s (a 180 s run measures 0.70 of what any run up to 120 s does: short
runs overstate a full one by 42 %), and 3 % noise at every length (on the lab the spread between
replicates did not grow for short runs: benchmarks/runtime_fidelity.py). Both spaces get the
same seeds and the same time budget, `--full-trials` trials of 180 s; a trial costs its runtime
plus `TRIAL_OVERHEAD_S`, and `auto` is told the share of that budget left, as a closed loop with
a budget of trial time is, so the end of its budget is the last fifth of the time. The
recommendation after each trial is scored by its noise-free tps in a 180 s run.

Figures per space, median [25th, 75th percentile] over the seeds: the seconds of trials until
the recommendation stays within 2 % of the optimum (a seed that never gets there counts as
beyond the budget), how many seeds got there, the recommendation's % of the optimum after a
quarter, half and all of the budget, the trials run and the share of them at 120 s; and the
ratio of the fidelity space's median seconds to the baseline's, measured in the same run.
"""

from __future__ import annotations

import argparse
import functools
import math
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
from rich.console import Console
from rich.table import Table
from threadpoolctl import threadpool_limits

from benchmarks.optimizer import Race, race, summarize, trials_to_stay
from benchmarks.optimizer_methods import Service, TrialTime
from benchmarks.optimizer_problems import (
    SIMULATED_NOISE,
    SIMULATED_SPACE,
    Observation,
    Problem,
    simulated_lattice_tps,
    simulated_tps,
    simulated_truth,
)
from experiments.factors import Config, Factor, FactorSpace, Value
from experiments.suggest.fidelity import TRIAL_OVERHEAD_S
from worker.targets.simulated import SimulatedTarget

FULL_S = 180
SHORTEST_S = 10
# Each space's fixed runtime (None: the trial's own runtime_s, the fidelity).
RUNTIMES: dict[str, int | None] = {"full": FULL_S, "short": SHORTEST_S, "fidelity": None}
SPACES = tuple(RUNTIMES)
THRESHOLD = 2.0
CHECKPOINTS = (0.25, 0.5, 1.0)

RUNTIME = Factor("runtime_s", "integer", low=SHORTEST_S, high=FULL_S, unit="s", fidelity=True)


def runtime_of(space_name: str, config: Mapping[str, Value]) -> float:
    """The trial's runtime: the space's fixed one, else the trial's own."""
    fixed = RUNTIMES[space_name]
    return float(config["runtime_s"] if fixed is None else fixed)


def deployed_tps(config: Mapping[str, Value]) -> float:
    """The noise-free tps of deploying `config`, as a full-length run measures it."""
    return simulated_truth(dict(config) | {"runtime_s": float(FULL_S)})


def fidelity_problem(space_name: str) -> Problem:
    """The simulated cluster in the factor space called `space_name` (one of SPACES)."""
    cluster = SIMULATED_SPACE.factors[:4]
    space = FactorSpace(cluster if RUNTIMES[space_name] else (*cluster, RUNTIME))

    def observe(config: Mapping[str, Value], seed: int, run_index: int) -> Observation:
        runtime = runtime_of(space_name, config)
        target = SimulatedTarget("simulated", {"seed": seed, "noise": SIMULATED_NOISE})
        measured = target.run(dict(config) | {"runtime_s": runtime}, run_key=run_index)
        return Observation(measured.responses["tps"])

    lattice, _ = simulated_lattice_tps()
    values = simulated_tps(lattice, FULL_S)
    best = int(np.argmax(values))
    optimum: Config = {f.name: int(v) for f, v in zip(cluster, lattice[best], strict=True)}
    return Problem(
        space_name,
        space,
        "maximize",
        deployed_tps,
        observe,
        float(values[best]),
        optimum,
        noise=SIMULATED_NOISE,
        noise_text=f"{SIMULATED_NOISE:.0%} noise",
    )


def trial_seconds(space_name: str, config: Mapping[str, Value]) -> float:
    """What a trial costs: its runtime and the fixed overhead."""
    return runtime_of(space_name, config) + TRIAL_OVERHEAD_S


@dataclass(frozen=True)
class Outcome:
    """One space's race for one seed, read on the time axis."""

    space: str
    seed: int
    seconds_to: float  # inf when the recommendation never stays within the threshold
    percent_at: tuple[float, ...]  # the recommendation at each checkpoint of the budget
    trials: int
    full_share: float
    suggestion_seconds: float


def run_one(space_name: str, seed: int, budget_s: float) -> Outcome:
    """Race `auto` on one space for one seed within `budget_s` seconds of trials."""
    problem = fidelity_problem(space_name)
    trials = int(budget_s // ((RUNTIMES[space_name] or SHORTEST_S) + TRIAL_OVERHEAD_S)) + 1
    cost = functools.partial(trial_seconds, space_name)
    method = Service("auto", problem, seed, trials, TrialTime(budget_s, cost))
    with threadpool_limits(1):
        done = race(problem, method, seed, trials)
    return outcome(space_name, seed, done, problem, budget_s)


def outcome(space_name: str, seed: int, done: Race, problem: Problem, budget_s: float) -> Outcome:
    """The race's figures on the time axis."""
    spent = np.cumsum([trial_seconds(space_name, c) for c in done.configs])
    within = [t for t, total in zip(done.recommended, spent, strict=True) if total <= budget_s]
    stay = trials_to_stay(within, lambda v: problem.within(v, THRESHOLD), len(within))
    percent = []
    for share in CHECKPOINTS:
        held = [
            v for v, total in zip(done.recommended, spent, strict=True) if total <= share * budget_s
        ]
        percent.append(problem.percent_of_optimum(held[-1]) if held else 0.0)
    return Outcome(
        space_name,
        seed,
        float(spent[stay - 1]) if stay <= len(within) else math.inf,
        tuple(percent),
        len(done.configs),
        sum(runtime_of(space_name, c) == FULL_S for c in done.configs) / max(len(done.configs), 1),
        done.ask_seconds / max(done.proposed, 1),
    )


def run_all(seeds: int, budget_s: float, jobs: int) -> list[Outcome]:
    """Both spaces for every seed, over `jobs` processes."""
    simulated_lattice_tps()  # solved once, here, so forked workers inherit it
    tasks = [(s, seed, budget_s) for seed in range(seeds) for s in SPACES]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(run_one, *zip(*tasks, strict=True)))


def table(outcomes: Sequence[Outcome], budget_s: float) -> Table:
    """One row per space and the ratio against the baseline."""
    seeds = len({o.seed for o in outcomes})
    result = Table(
        title=f"auto on the simulated cluster, {seeds} seeds, {budget_s:.0f} s of trials each"
        f" (a {FULL_S} s trial costs {FULL_S + TRIAL_OVERHEAD_S:g} s); baseline: full",
        caption="median [25th, 75th percentile]; seconds beyond the budget: never",
    )
    for column in (
        "space",
        f"seconds to {THRESHOLD:g} %",
        "reached",
        *(f"rec. at {share:.0%} of budget, %" for share in CHECKPOINTS),
        "trials",
        f"at {FULL_S} s",
        "s/suggestion",
        "vs baseline",
    ):
        result.add_column(column, justify="left" if column == "space" else "right")
    medians = {}
    for name in SPACES:
        rows = [o for o in outcomes if o.space == name]
        seconds = summarize([min(o.seconds_to, 2 * budget_s) for o in rows])
        medians[name] = seconds.median
        cells = [
            name,
            f"{_seconds(seconds.median, budget_s)} [{_seconds(seconds.q25, budget_s)},"
            f" {_seconds(seconds.q75, budget_s)}]",
            f"{sum(math.isfinite(o.seconds_to) for o in rows)}/{len(rows)}",
        ]
        for i in range(len(CHECKPOINTS)):
            s = summarize([o.percent_at[i] for o in rows])
            cells.append(f"{s.median:.1f} [{s.q25:.1f}, {s.q75:.1f}]")
        cells.append(f"{summarize([o.trials for o in rows]).median:g}")
        cells.append(f"{summarize([o.full_share for o in rows]).median:.0%}")
        cells.append(f"{summarize([o.suggestion_seconds for o in rows]).median:.2f}")
        base = medians["full"]
        cells.append("1" if name == "full" else _ratio(medians[name], base, budget_s))
        result.add_row(*cells)
    return result


def _seconds(value: float, budget_s: float) -> str:
    return f">{budget_s:.0f}" if value > budget_s else f"{value:.0f}"


def _ratio(ours: float, base: float, budget_s: float) -> str:
    if ours > budget_s and base > budget_s:
        return "n/a"
    mark = "<=" if base > budget_s else (">=" if ours > budget_s else "")
    return f"{mark}{ours / min(base, budget_s):.2f}"


def main() -> None:
    """Race both spaces and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--full-trials", type=int, default=40, help="the budget in full trials")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    budget_s = args.full_trials * (FULL_S + TRIAL_OVERHEAD_S)
    started = time.perf_counter()
    outcomes = run_all(args.seeds, budget_s, args.jobs)
    console = Console(width=160)
    console.print(table(outcomes, budget_s))
    console.print(f"total wall time {time.perf_counter() - started:.0f} s ({args.jobs} jobs)")


if __name__ == "__main__":
    main()
