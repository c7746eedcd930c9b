"""What to run next: sequential response-surface steps and Bayesian optimization.

Each strategy is a `Strategy` subclass (`base.py`) working on a `Problem`, listed by name in
`STRATEGIES` (`STRATEGY_NAMES`, and `SUMMARIES` says what each does). `suggest` proposes the
next runs by one strategy and returns a `Plan` (the suggestions, the stage and why);
`next_batch` is one step of the closed loop: the same, within a budget and a stopping rule on
the expected improvement, with the configuration to deploy now (`recommendation`). All are
pure: the service and the benchmarks call them alike.

With noise factors (`experiments.robust`) every strategy still plans in the whole space, but
`Strategy.suggest` runs each control configuration it picks at every noise level
(`experiments.suggest.noise`; `count` counts control configurations), and the recommendation
is a control configuration judged by the problem's robust aim
(`experiments.suggest.bayes.robust_deploy`); a closed loop spends its budget in whole control
configurations.
"""

from __future__ import annotations

import dataclasses
import math

from experiments.errors import DomainError
from experiments.suggest.auto import Auto
from experiments.suggest.base import NotFitted, Strategy, recommended
from experiments.suggest.bayes import Models
from experiments.suggest.noise import control_of, scenario_count
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
    (in the response's units); a replicate of an uncertain incumbent is still run first. With
    noise factors `batch_size` counts control configurations, each run at every noise level,
    and the plan is cut to those that fit the trials left (it stops when none does).
    """
    if time_left is not None and not (math.isfinite(time_left) and time_left <= 1.0):
        raise DomainError("time_left", "must be the share of the time budget left, at most 1")
    used_up = None
    if budget_left is not None and budget_left <= 0:
        used_up = "the budget of trials is used up"
    elif time_left is not None and time_left <= 0:
        used_up = "the budget of trial time is used up"
    # With noise factors a pick is a control configuration run at every noise level.
    per_pick = scenario_count(problem)
    count = batch_size if budget_left is None else max(1, min(batch_size, budget_left // per_pick))
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
    return _within_budget(problem, _stopped_below(plan, stop_below), budget_left)


def _stopped_below(plan: Plan, stop_below: float | None) -> Plan:
    """The plan, or stopped when its expected improvement is below `stop_below` (but for a
    replicate of an uncertain incumbent, which is run first)."""
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
    return plan


def _within_budget(problem: Problem, plan: Plan, budget_left: int | None) -> Plan:
    """The plan cut to the `budget_left` trials; with noise factors, to the whole control
    configurations (each at the noise levels it is planned at) that fit, and stopped when not
    one fits."""
    if budget_left is None or plan.stop_reason is not None:
        return plan
    if not problem.noisy:
        return dataclasses.replace(plan, suggestions=plan.suggestions[:budget_left])
    blocks: list[list[Suggestion]] = []
    for s in plan.suggestions:
        control = control_of(problem, s.config)
        if blocks and control_of(problem, blocks[-1][0].config) == control:
            blocks[-1].append(s)
        else:
            blocks.append([s])
    kept: list[Suggestion] = []
    for block in blocks:
        if len(kept) + len(block) > budget_left:
            break
        kept.extend(block)
    if plan.suggestions and not kept:
        reason = (
            f"the {budget_left} trial(s) left cannot measure a control configuration at every"
            f" one of the {scenario_count(problem)} noise levels"
        )
        return dataclasses.replace(plan, suggestions=[], stop_reason=reason)
    return dataclasses.replace(plan, suggestions=kept)


def recommendation(problem: Problem, runs: Runs) -> Recommendation | None:
    """What to deploy now: the run configuration of best Gaussian-process mean (less one
    standard deviation), or the only one measured while the runs cannot be modelled; None
    before any run succeeded. (A fitted strategy's `recommend` gives the same.)"""
    return recommended(problem, runs, Models.fitted(problem, runs, search=False))
