"""What to run next: sequential response-surface steps and Bayesian optimization.

Each strategy is a `Strategy` subclass (`base.py`), listed by name in `STRATEGIES`. `suggest`
proposes the next runs by one strategy and returns a `Plan` (the suggestions, the stage and why);
`next_batch` is one step of the closed loop: the same, within a budget and a stopping rule on the
expected improvement, with the configuration to deploy now (`recommendation`). All are pure: the
service and the benchmarks call them alike.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from experiments.constraints import Constraint
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.numbers import describe_config, format_value
from experiments.suggest.auto import Auto
from experiments.suggest.base import Strategy
from experiments.suggest.bayes import MODEL_NAME, predict, recommend
from experiments.suggest.strategies import Augment, Bayes, Replicate, SteepestAscent
from experiments.suggest.values import DONE, Limit, Plan, Recommendation, Runs, Suggestion

__all__ = [
    "DONE",
    "STRATEGIES",
    "Limit",
    "Plan",
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
MAX_COUNT = 20


def suggest(
    strategy: str,
    space: FactorSpace,
    runs: Runs,
    *,
    goal: str = "maximize",
    scale: str = "linear",
    count: int = 1,
    constraints: Sequence[Constraint] = (),
    limits: Sequence[Limit] = (),
    seed: int = 0,
    budget: int | None = None,
    time_left: float | None = None,
) -> Plan:
    """The next runs by the strategy named `strategy` (a key of STRATEGIES), each with its
    prediction and reason.

    `scale` is the scale the Bayesian search models the response on (`experiments.goals`).
    `count` is the batch size of sequential picks (Bayesian optimization, path steps,
    replicates); design steps of `auto` come whole. `budget` is the number of trials the caller
    can still afford (None: unlimited); `auto` chooses its path by it. `time_left` is the share
    of a budget of trial time not yet spent (None: no such budget).
    """
    if strategy not in STRATEGIES:
        raise DomainError("strategy", f"must be one of {', '.join(STRATEGIES)}")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise DomainError("count", f"must be a whole number from 1 to {MAX_COUNT}")
    chosen = STRATEGIES[strategy](
        space,
        goal=goal,
        scale=scale,
        constraints=constraints,
        limits=limits,
        seed=seed,
        budget=budget,
        time_left=time_left,
    )
    return _finished(chosen.fit(runs).suggest(count), strategy, space, runs, seed)


def next_batch(
    strategy: str,
    space: FactorSpace,
    runs: Runs,
    *,
    goal: str = "maximize",
    scale: str = "linear",
    batch_size: int = 1,
    budget_left: int | None = None,
    time_left: float | None = None,
    stop_below: float | None = None,
    constraints: Sequence[Constraint] = (),
    limits: Sequence[Limit] = (),
    seed: int = 0,
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
    if used_up is not None:
        plan = Plan(strategy, DONE, used_up, [], stop_reason=used_up)
        return _recommending(plan, space, runs, goal, limits, seed)
    count = batch_size if budget_left is None else max(1, min(batch_size, budget_left))
    plan = suggest(
        strategy,
        space,
        runs,
        goal=goal,
        scale=scale,
        count=count,
        constraints=constraints,
        limits=limits,
        seed=seed,
        budget=budget_left,
        time_left=time_left,
    )
    plan = _recommending(plan, space, runs, goal, limits, seed)
    if plan.stop_reason is not None:
        return plan
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


def _finished(plan: Plan, strategy: str, space: FactorSpace, runs: Runs, seed: int) -> Plan:
    """Every suggestion named by the strategy asked for, and predicted by a Gaussian process
    when its own strategy has no model (when the runs can be modelled at all)."""
    missing = [s for s in plan.suggestions if s.predicted is None]
    predictions = (
        predict(space, runs.configs, runs.values, [s.config for s in missing], seed=seed)
        if missing
        else None
    )
    filled = iter(predictions or [])
    suggestions = []
    for s in plan.suggestions:
        if s.predicted is None and predictions is not None:
            mean, sd = next(filled)
            s = dataclasses.replace(s, predicted=mean, uncertainty=sd, predicted_by=MODEL_NAME)
        suggestions.append(dataclasses.replace(s, strategy=strategy))
    return dataclasses.replace(plan, strategy=strategy, suggestions=suggestions)


def recommendation(
    space: FactorSpace,
    runs: Runs,
    *,
    goal: str = "maximize",
    limits: Sequence[Limit] = (),
    seed: int = 0,
) -> Recommendation | None:
    """What to deploy now: the run configuration of best Gaussian-process mean, or the only
    one measured while the runs cannot be modelled; None before any run succeeded."""
    if len(runs) == 0:
        return None
    try:
        return recommend(
            space,
            runs.configs,
            runs.values,
            goal=goal,
            limits=limits,
            responses=runs.responses,
            failed=runs.failed,
            seed=seed,
        )
    except DomainError:
        pass
    # One run, or every run equal: the first measured is as good as any.
    config, value = space.check_config(runs.configs[0], in_region=False), float(runs.values[0])
    reason = (
        f"Deploy {describe_config(config, space.units)}: it measured {format_value(value)}, and"
        " no model can be fitted yet (one run, or every run measured the same)."
    )
    same = [c for c in runs.configs if space.check_config(c, in_region=False) == config]
    return Recommendation(config, value, None, len(same), value, None, reason)


def _recommending(
    plan: Plan, space: FactorSpace, runs: Runs, goal: str, limits: Sequence[Limit], seed: int
) -> Plan:
    if plan.recommendation is not None:
        return plan
    found = recommendation(space, runs, goal=goal, limits=limits, seed=seed)
    return dataclasses.replace(plan, recommendation=found)
