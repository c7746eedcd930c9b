"""The methods the optimizer benchmark races: the service's strategies and the baselines a user
would pick otherwise. The stronger peers (Optuna's GP, SMAC3, HEBO, Ax) are in
`optimizer_peers.py`; every method follows `optimizer_history.Method`.

Each says what it would tell the user to deploy (`recommend`): the service its loop's
recommendation (the Gaussian process's best mean among the configurations run); a full factorial
and random search the best single measurement, as a user who picks by hand would; the CCD the
quadratic model's optimum once its design is run; Optuna's TPE (in `optimizer_peers.py`, with
the peers) its own best trial.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from experiments import analysis
from experiments.designs import DesignRequest, plan
from experiments.factors import Config
from experiments.suggest import Plan, Runs, next_batch

try:
    from benchmarks.optimizer_history import History, Method
    from benchmarks.optimizer_peers import PEERS, Tpe
    from benchmarks.optimizer_problems import Problem
except ModuleNotFoundError:  # run as `python benchmarks/optimizer.py`: this folder is on the path
    from optimizer_history import History, Method  # type: ignore[no-redef]
    from optimizer_peers import PEERS, Tpe  # type: ignore[no-redef]
    from optimizer_problems import Problem  # type: ignore[no-redef]

OURS: tuple[str, ...] = ("auto", "bayes")
BASELINES: tuple[str, ...] = ("grid", "ccd", "random", "tpe")
METHOD_NAMES: tuple[str, ...] = (*BASELINES, *PEERS, *OURS)
MAX_GRID_LEVELS = 9  # the planner's limit on full factorial levels


def feasible_runs(problem: Problem, history: History) -> list[int]:
    """Indices of the trials that succeeded and met the problem's limit as measured."""
    return [
        i
        for i, value in enumerate(history.values)
        if value is not None and problem.meets_limit(history.constrained[i])
    ]


def best_measured(problem: Problem, history: History) -> Config | None:
    """The configuration of the best single measurement that met the limit (None before any)."""
    feasible = feasible_runs(problem, history)
    if not feasible:
        return None
    sign = 1.0 if problem.goal == "maximize" else -1.0
    best = max(feasible, key=lambda i: sign * history.values[i])  # type: ignore[operator]
    return dict(history.configs[best])


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

    def recommend(self, history: History) -> Config | None:
        return best_measured(self.problem, history)


class CentralComposite(Planned):
    """The face-centred CCD, then one confirmation run at the quadratic model's optimum."""

    def __init__(self, problem: Problem, seed: int) -> None:
        # Face-centred: integer factors cannot take axial points beyond their range.
        super().__init__(problem, DesignRequest(kind="ccd", ccd_type="face_centred", seed=seed))
        self.optimum: Config | None = None

    def ask(self, history: History, budget_left: int) -> list[tuple[Config, str]]:
        batch = super().ask(history, budget_left)
        if batch:
            return batch
        if self.optimum is not None:
            self.stop_reason = "the design and its confirmation run are complete"
            return []
        self.stop_reason = None
        measured = [i for i, v in enumerate(history.values) if v is not None]
        model = analysis.fit(
            self.problem.space,
            [history.configs[i] for i in measured],
            [history.values[i] for i in measured],  # type: ignore[misc]
            goal=self.problem.goal,
            model="quadratic",
        )
        self.optimum = dict(model.optimum.config)
        return [(self.optimum, "confirmation")]

    def recommend(self, history: History) -> Config | None:
        return self.optimum or super().recommend(history)


class RandomSearch:
    """Uniform in coded units, so log2 factors are log-uniform; integers rounded."""

    def __init__(self, problem: Problem, seed: int) -> None:
        self.problem = problem
        self.rng = np.random.default_rng(seed)
        self.stop_reason: str | None = None

    def ask(self, history: History, budget_left: int) -> list[tuple[Config, str]]:
        space = self.problem.space
        return [(space.decode(self.rng.uniform(-1.0, 1.0, len(space))), "random")]

    def recommend(self, history: History) -> Config | None:
        return best_measured(self.problem, history)


@dataclass(frozen=True)
class TrialTime:
    """A budget of trial time: `seconds` in all, a trial costing `cost(config)` seconds."""

    seconds: float
    cost: Callable[[Config], float]

    def left(self, history: History) -> float:
        """The share of the budget the trials so far have not spent (below 0 when overrun)."""
        return 1.0 - sum(map(self.cost, history.configs)) / self.seconds


class Service:
    """A strategy of the service, one closed-loop step per call, recommending what its loop
    reports. One `next_batch` call serves both: the plan for the next trials carries the
    recommendation after the trials so far. With `time`, the loop has a budget of trial time
    beside its `budget` of trials, and stops itself when that is spent."""

    def __init__(
        self, strategy: str, problem: Problem, seed: int, budget: int, time: TrialTime | None = None
    ) -> None:
        self.strategy = strategy
        self.problem = problem
        self.seed = seed
        self.budget = budget
        self.time = time
        self.stop_reason: str | None = None
        self.plans: dict[int, Plan] = {}
        self.aim = problem.strategy_problem(seed)

    def _plan(self, history: History) -> Plan:
        if len(history) not in self.plans:
            self.plans = {len(history): next_batch(
                self.strategy,
                self.aim,
                self._runs(history),
                budget_left=self.budget - len(history),
                time_left=None if self.time is None else self.time.left(history),
            )}  # fmt: skip
        return self.plans[len(history)]

    def _runs(self, history: History) -> Runs:
        measured = [i for i, v in enumerate(history.values) if v is not None]
        responses = {}
        if self.problem.limit is not None:
            responses[self.problem.limit.response] = [history.constrained[i] for i in measured]
        return Runs(
            configs=[history.configs[i] for i in measured],
            values=[history.values[i] for i in measured],  # type: ignore[misc]
            point_types=[history.point_types[i] for i in measured],
            responses=responses,  # type: ignore[arg-type]
            failed=[c for c, v in zip(history.configs, history.values, strict=True) if v is None],
        )

    def ask(self, history: History, budget_left: int) -> list[tuple[Config, str]]:
        found = self._plan(history)
        self.stop_reason = found.stop_reason
        return [(s.config, s.point_type) for s in found.suggestions]

    def recommend(self, history: History) -> Config | None:
        found = self._plan(history).recommendation
        return None if found is None else dict(found.config)


def applicable(name: str, problem: Problem) -> bool:
    """Whether method `name` can run on `problem` (a CCD has no axial points for a category)."""
    return name != "ccd" or all(f.is_numeric for f in problem.space.factors)


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
    if name in PEERS:
        return PEERS[name](problem, seed)  # type: ignore[no-any-return]
    if name in OURS:
        return Service(name, problem, seed, budget)
    raise ValueError(f"unknown method {name!r}; choose from {', '.join(METHOD_NAMES)}")
