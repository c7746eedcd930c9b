"""What to run next: sequential response-surface steps and Bayesian optimization.

`suggest` proposes the next runs by one strategy and returns a `Plan` (the suggestions, the stage
and why); `next_batch` is one step of the closed loop: the same, within a budget and a stopping
rule on the expected improvement. Both are pure: the service and the benchmarks call them alike.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from experiments.constraints import Constraint
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.goals import check_goal
from experiments.suggest.auto import auto, initial_runs
from experiments.suggest.base import DONE, Limit, Plan, Runs, Suggestion
from experiments.suggest.bayes import MODEL_NAME, bayes_plan, predict
from experiments.suggest.initial import space_filling
from experiments.suggest.sequential import augment, replicate_incumbent, steepest_ascent

__all__ = ["DONE", "STRATEGIES", "Limit", "Plan", "Runs", "Suggestion", "next_batch", "suggest"]

STRATEGIES: tuple[str, ...] = ("auto", "augment", "steepest_ascent", "bayes", "replicate")
MAX_COUNT = 20


def suggest(
    strategy: str,
    space: FactorSpace,
    runs: Runs,
    *,
    goal: str = "maximize",
    count: int = 1,
    constraints: Sequence[Constraint] = (),
    limits: Sequence[Limit] = (),
    seed: int = 0,
    budget: int | None = None,
) -> Plan:
    """The next runs by `strategy`, each with its prediction and reason.

    `count` is the batch size of sequential picks (Bayesian optimization, path steps,
    replicates); design steps of `auto` come whole. `budget` is the number of trials the caller
    can still afford (None: unlimited); `auto` chooses its path by it.
    """
    if strategy not in STRATEGIES:
        raise DomainError("strategy", f"must be one of {', '.join(STRATEGIES)}")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise DomainError("count", f"must be a whole number from 1 to {MAX_COUNT}")
    check_goal(goal)
    if strategy == "auto":
        plan = auto(
            space,
            runs,
            goal=goal,
            count=count,
            constraints=constraints,
            limits=limits,
            seed=seed,
            budget=budget,
        )
    elif strategy == "augment":
        found = augment(space, runs.configs, constraints=constraints)[:count]
        plan = Plan(
            strategy,
            "augment",
            "Axial and centre points complete the two-level factorial into a central composite"
            " design, which can estimate the curvature of the response.",
            found,
        )
    elif strategy == "steepest_ascent":
        found = steepest_ascent(
            space, runs.configs, runs.values, goal=goal, count=count, constraints=constraints
        )
        plan = Plan(
            strategy,
            "steepest_ascent",
            "Points along the path of steepest ascent of the first-order model.",
            found,
        )
    elif strategy == "replicate":
        found = replicate_incumbent(space, runs.configs, runs.values, goal=goal, count=count)
        plan = Plan(strategy, "replicate", "Replicates of the best configuration so far.", found)
    else:
        plan = _bayes(space, runs, goal, count, constraints, limits, seed)
    return _finished(plan, strategy, space, runs, seed)


def next_batch(
    strategy: str,
    space: FactorSpace,
    runs: Runs,
    *,
    goal: str = "maximize",
    batch_size: int = 1,
    budget_left: int | None = None,
    stop_below: float | None = None,
    constraints: Sequence[Constraint] = (),
    limits: Sequence[Limit] = (),
    seed: int = 0,
) -> Plan:
    """One step of the closed loop: the next batch, or why the loop stops.

    It stops when the budget is used up, when the strategy has nothing worth running (e.g. the
    optimum is confirmed), or when the largest expected improvement falls below `stop_below`
    (in the response's units); a replicate of an uncertain incumbent is still run first.
    """
    if budget_left is not None and budget_left <= 0:
        reason = "the budget of trials is used up"
        return Plan(strategy, DONE, reason, [], stop_reason=reason)
    count = batch_size if budget_left is None else max(1, min(batch_size, budget_left))
    plan = suggest(
        strategy,
        space,
        runs,
        goal=goal,
        count=count,
        constraints=constraints,
        limits=limits,
        seed=seed,
        budget=budget_left,
    )
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


def _bayes(
    space: FactorSpace,
    runs: Runs,
    goal: str,
    count: int,
    constraints: Sequence[Constraint],
    limits: Sequence[Limit],
    seed: int,
) -> Plan:
    if len(runs) < 2 or np.ptp(np.asarray(runs.values, dtype=float)) == 0:
        n = max(initial_runs(space) - len(runs), 1)
        reason = (
            f"Start of Bayesian optimization: {n} space-filling runs (maximin Latin hypercube)"
            " give the Gaussian process a first picture of the whole region."
        )
        already = [*runs.configs, *runs.failed]
        found = space_filling(space, n, constraints, seed, reason, already=already)
        return Plan("bayes", "initial", reason, found)
    return bayes_plan(
        space,
        runs,
        strategy="bayes",
        explanation="Bayesian optimization: a Gaussian process fitted to the runs picks the"
        " configurations of highest expected improvement.",
        goal=goal,
        count=count,
        constraints=constraints,
        limits=limits,
        seed=seed,
    )


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
