"""Which way a response is optimized."""

from __future__ import annotations

from experiments.errors import DomainError

GOALS: tuple[str, ...] = ("maximize", "minimize")


def check_goal(goal: object, field: str = "goal") -> str:
    """The goal, or DomainError naming `field` when it is not one of GOALS."""
    if goal not in GOALS:
        raise DomainError(field, f"must be one of {', '.join(GOALS)}")
    return str(goal)
