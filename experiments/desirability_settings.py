"""The settings of a Derringer-Suich desirability curve and their checks: light, so that the
objective's checks at submission do not import the analysis (statsmodels, scipy)."""

from __future__ import annotations

import math

from experiments.errors import DomainError

DESIRABILITY_GOALS: tuple[str, ...] = ("maximize", "minimize", "target")


def check_desirability(
    goal: str,
    low: float,
    high: float,
    target: float | None,
    weight: float,
    weight_high: float | None = None,
) -> None:
    """Raise DomainError unless these settings define a desirability curve."""
    if goal not in DESIRABILITY_GOALS:
        raise DomainError("objective.desirability", f"goal must be one of {DESIRABILITY_GOALS}")
    if not (finite(low) and finite(high) and low < high):
        raise DomainError("objective.desirability", "low and high are finite, low below high")
    if goal == "target" and not (target is not None and finite(target) and low <= target <= high):
        raise DomainError("objective.desirability", "a target goal needs low <= target <= high")
    for exponent in (weight, weight if weight_high is None else weight_high):
        if not (finite(exponent) and exponent > 0):
            raise DomainError("objective.desirability", "weights are above 0")


def finite(value: object) -> bool:
    """Whether `value` is a finite int or float (a bool is not a number here)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )
