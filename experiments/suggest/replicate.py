"""Replicate the incumbent: repeat the best observed configuration when run-to-run noise makes
it uncertain whether it is truly the best."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from experiments.errors import DomainError
from experiments.factors import Config, FactorSpace
from experiments.goals import check_goal
from experiments.numbers import describe_config
from experiments.robust import aggregate, noise_scenarios
from experiments.suggest.noise import measured_controls
from experiments.suggest.observed import checked_data, same
from experiments.suggest.problem import Problem
from experiments.suggest.values import Runs, Suggestion


def replicate_incumbent(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    *,
    goal: str,
    count: int = 2,
) -> list[Suggestion]:
    """`count` replicates of the best observed configuration (best mean over its runs)."""
    check_goal(goal)
    if count < 1:
        raise DomainError("count", "must be at least 1")
    runs, y = checked_data(space, configs, values)
    groups: list[tuple[Config, list[float]]] = []
    for config, value in zip(runs, y, strict=True):
        for seen, measured in groups:
            if same(space, seen, config):
                measured.append(float(value))
                break
        else:
            groups.append((config, [float(value)]))
    means = np.array([np.mean(measured) for _, measured in groups])
    order = np.argsort(-means if goal == "maximize" else means, kind="stable")
    config, measured = groups[int(order[0])]
    uncertainty = None
    if len(measured) > 1:
        uncertainty = float(np.std(measured, ddof=1) / math.sqrt(len(measured)))
    text = (
        f"Repeat the best configuration so far ({describe_config(config)}): it averaged"
        f" {means[order[0]]:.4g} over {len(measured)} run(s)."
    )
    if len(groups) > 1:
        text += f" The runner-up averaged {means[order[1]]:.4g}."
    text += (
        " Replicates show whether it is truly the best or a lucky measurement, since run-to-run"
        " noise can be as large as the differences between configurations."
    )
    return [
        Suggestion(
            config=dict(config),
            strategy="replicate",
            point_type="replicate",
            reason=text,
            predicted=float(means[order[0]]),
            uncertainty=uncertainty,
            predicted_by="mean of its runs",
        )
        for _ in range(count)
    ]


def replicate_robust(problem: Problem, runs: Runs, count: int) -> list[Suggestion]:
    """`count` replicates of the best control configuration so far, in a space with noise
    factors: of those measured at the most noise scenarios, the best by the problem's aim of
    its measured means there. Each replicate names one scenario it was measured at; the plan
    runs it at every scenario (`experiments.suggest.noise`)."""
    if count < 1:
        raise DomainError("count", "must be at least 1")
    controls = measured_controls(problem, runs)
    if not controls:
        raise DomainError("configs", "no run was measured at a noise level to replicate")
    most = max(len(c.means) for c in controls)
    contenders = [c for c in controls if len(c.means) == most]
    aim, goal = problem.aim, problem.goal
    values = [float(aggregate(np.array(list(c.means.values())), aim, goal)[0]) for c in contenders]
    top = int(np.argmax(problem.sign * np.array(values)))
    best, scenarios = contenders[top], noise_scenarios(problem.space)
    where = describe_config(best.config, problem.space.units)
    text = (
        f"Repeat the best control configuration so far ({where}) at every noise level: by"
        f" {aim.text(goal)} of its measured means it has {values[top]:.4g} over {best.runs}"
        " run(s). Replicates show whether it is truly the best or a lucky measurement."
    )
    config = best.config | scenarios[next(iter(best.means))]
    return [
        Suggestion(
            config=dict(config),
            strategy="replicate",
            point_type="replicate",
            reason=text,
            predicted=values[top],
            predicted_by="mean of its runs",
        )
        for _ in range(count)
    ]
