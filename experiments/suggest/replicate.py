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
from experiments.suggest.observed import checked_data, same
from experiments.suggest.values import Suggestion


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
