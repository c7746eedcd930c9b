"""Which way a response is optimized, and on which scale the search models it."""

from __future__ import annotations

from experiments.errors import DomainError

GOALS: tuple[str, ...] = ("maximize", "minimize")
# "log": the response grows by factors (a latency: 10 ms where the cluster keeps up, seconds
# where queues build), so the search models its logarithm; "linear": its values as measured.
SCALES: tuple[str, ...] = ("linear", "log")
# The units of a duration, as the ends of the service's response names (latency_p95_ms,
# restart_s): a duration's default scale is "log". A rate (errors_per_s) is not a duration.
_DURATION_ENDINGS: tuple[str, ...] = ("_ms", "_s")
_RATE_ENDING = "_per_s"


def check_goal(goal: object, field: str = "goal") -> str:
    """The goal, or DomainError naming `field` when it is not one of GOALS."""
    if goal not in GOALS:
        raise DomainError(field, f"must be one of {', '.join(GOALS)}")
    return str(goal)


def check_scale(scale: object, field: str = "scale") -> str:
    """The scale, or DomainError naming `field` when it is not one of SCALES."""
    if scale not in SCALES:
        raise DomainError(field, f"must be one of {', '.join(SCALES)}")
    return str(scale)


def default_scale(response: str) -> str:
    """The scale a response is searched on unless the client chooses: "log" for a duration
    (its name ends in its unit, `_ms` or `_s`, and not in `_per_s`), else "linear"."""
    duration = response.endswith(_DURATION_ENDINGS) and not response.endswith(_RATE_ENDING)
    return "log" if duration else "linear"
