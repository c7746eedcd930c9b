"""What to run next: sequential response-surface steps and Bayesian optimization.

Each strategy is a `Strategy` subclass (`base.py`) working on a `Problem`, listed by name in
`STRATEGIES` (`STRATEGY_NAMES`, and `SUMMARIES` says what each does). `suggest` proposes the
next runs by one strategy and returns a `Plan` (the suggestions, the stage and why);
`next_batch` is one step of the closed loop: the same, within a budget and a stopping rule on
the expected improvement, with the configuration to deploy now (`recommendation`). All are
pure: the service and the benchmarks call them alike.
"""

from __future__ import annotations

import dataclasses
import math

from experiments.errors import DomainError
from experiments.suggest.auto import Auto
from experiments.suggest.base import NotFitted, Strategy, recommended
from experiments.suggest.bayes import Models
from experiments.suggest.problem import Problem
from experiments.suggest.strategies import Augment, Bayes, Replicate, SteepestAscent
from experiments.suggest.values import DONE, Limit, Plan, Recommendation, Runs, Suggestion

__all__ = [
    "DONE",
    "LOOP_STRATEGY_NAMES",
    "STRATEGIES",
    "STRATEGY_NAMES",
    "SUMMARIES",
    "Limit",
    "NotFitted",
    "Plan",
    "Problem",
    "Recommendation",
    "Runs",
    "Strategy",
    "Suggestion",
    "next_batch",
    "recommendation",
    "suggest",
]

STRATEGIES: dict[str, type[Strategy]] = {
    kind.name: kind for kind in (Auto, Augment, SteepestAscent, Bayes, Replicate)
}
# The one list of the strategies' names, and what each does (for schemas, glossaries, the CLI).
STRATEGY_NAMES: tuple[str, ...] = tuple(STRATEGIES)
SUMMARIES: dict[str, str] = {name: kind.summary for name, kind in STRATEGIES.items()}
LOOP_STRATEGY_NAMES: tuple[str, ...] = tuple(n for n, k in STRATEGIES.items() if k.closes_loop)
MAX_COUNT = 20


def suggest(
    strategy: str,
    problem: Problem,
    runs: Runs,
    *,
    count: int = 1,
    budget: int | None = None,
    time_left: float | None = None,
) -> Plan:
    """The next runs by the strategy named `strategy` (a key of STRATEGIES), each with its
    prediction and reason.

    `count` is the batch size of sequential picks (Bayesian optimization, path steps,
    replicates); design steps of `auto` come whole. `budget` is the number of trials the caller
    can still afford (None: unlimited); `auto` chooses its path by it. `time_left` is the share
    of a budget of trial time not yet spent (None: no such budget).
    """
    kind = _strategy(strategy, count)
    return kind(problem, budget=budget, time_left=time_left).fit(runs).suggest(count)


def _strategy(strategy: str, count: int) -> type[Strategy]:
    """The strategy named `strategy`, once it and the batch size `count` are checked."""
    if strategy not in STRATEGIES:
        raise DomainError("strategy", f"must be one of {', '.join(STRATEGIES)}")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise DomainError("count", f"must be a whole number from 1 to {MAX_COUNT}")
    return STRATEGIES[strategy]


def next_batch(
    strategy: str,
    problem: Problem,
    runs: Runs,
    *,
    batch_size: int = 1,
    budget_left: int | None = None,
    time_left: float | None = None,
    stop_below: float | None = None,
) -> Plan:
    """One step of the closed loop: the next batch, or why the loop stops.

    It stops when a budget is used up (`budget_left` trials, or `time_left`, the share of a
    budget of trial time not yet spent), when the strategy has nothing worth running (e.g. the
    optimum is confirmed), or when the largest expected improvement falls below `stop_below`
    (in the response's units); a replicate of an uncertain incumbent is still run first.
    """
    if time_left is not None and not (math.isfinite(time_left) and time_left <= 1.0):
        raise DomainError("time_left", "must be the share of the time budget left, at most 1")
    used_up = None
    if budget_left is not None and budget_left <= 0:
        used_up = "the budget of trials is used up"
    elif time_left is not None and time_left <= 0:
        used_up = "the budget of trial time is used up"
    count = batch_size if budget_left is None else max(1, min(batch_size, budget_left))
    kind = _strategy(strategy, count)
    if used_up is not None:
        # Nothing to suggest: the judge alone gives the recommendation, no search is fitted.
        found = recommendation(problem, runs)
        return Plan(strategy, DONE, used_up, [], stop_reason=used_up, recommendation=found)
    fitted = kind(problem, budget=budget_left, time_left=time_left).fit(runs)
    plan = fitted.suggest(count)
    if plan.recommendation is None:
        plan = dataclasses.replace(plan, recommendation=fitted.recommend())
    if plan.stop_reason is not None:
        return plan
    return _stopped_below(plan, stop_below, budget_left)


def _stopped_below(plan: Plan, stop_below: float | None, budget_left: int | None) -> Plan:
    """The plan, cut to the budget, or stopped when its expected improvement is below
    `stop_below` (but for a replicate of an uncertain incumbent, which is run first)."""
    gain = plan.expected_improvement
    if stop_below is not None and gain is not None and gain < stop_below:
        replicates = [s for s in plan.suggestions if s.point_type == "replicate"]
        reason = (
            f"the largest expected improvement, {gain:.4g}, is below the threshold {stop_below:g}"
        )
        if replicates:
            return dataclasses.replace(
                plan,
                explanation=f"{plan.explanation} Before stopping ({reason}), the uncertain best"
                " configuration is measured again.",
                suggestions=replicates,
            )
        return dataclasses.replace(plan, suggestions=[], stop_reason=reason)
    if budget_left is not None:
        plan = dataclasses.replace(plan, suggestions=plan.suggestions[:budget_left])
    return plan


def recommendation(problem: Problem, runs: Runs) -> Recommendation | None:
    """What to deploy now: the run configuration of best Gaussian-process mean (less one
    standard deviation), or the only one measured while the runs cannot be modelled; None
    before any run succeeded. (A fitted strategy's `recommend` gives the same.)"""
    return recommended(problem, runs, Models.fitted(problem, runs, search=False))
