"""Robust configuration: the control factors chosen, the noise factors varied over their levels.

A combined-array experiment (Myers, Montgomery and Anderson-Cook, "Response Surface
Methodology", 3rd ed., ch. 10) varies control and noise factors in one design and fits one
model of both. A configuration of the control factors is then judged across the noise levels
(`noise_scenarios`: every combination of each noise factor's levels, equally weighted; a numeric
noise factor without explicit levels is taken at its low and high end, the coded -1 and +1 that
make the average over them the mean model of a noise variable of variance 1). The aim
(`RobustAim`) reduces those values to one: their mean, a quantile, or the worst of them.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from experiments.errors import DomainError
from experiments.factors import Config, Factor, FactorSpace, Value
from experiments.goals import check_goal

AIMS: tuple[str, ...] = ("mean", "quantile", "worst")
# Noise scenarios judged per configuration; a larger product makes every prediction costlier.
MAX_SCENARIOS = 64

__all__ = [
    "AIMS",
    "RobustAim",
    "aggregate",
    "control_space",
    "crossed",
    "noise_factors",
    "noise_scenarios",
]


@dataclass(frozen=True)
class RobustAim:
    """How values across the noise levels become one: `aim` "mean", "quantile" (the
    `quantile` of the values, e.g. 0.1: the level nine in ten noise levels beat when maximizing)
    or "worst" (the lowest when maximizing, the highest when minimizing)."""

    aim: str = "mean"
    quantile: float | None = None

    def __post_init__(self) -> None:
        if self.aim not in AIMS:
            raise DomainError("objective.robust.aim", f"must be one of {', '.join(AIMS)}")
        if self.aim == "quantile":
            q = self.quantile
            if not isinstance(q, int | float) or isinstance(q, bool) or not 0.0 < q < 1.0:
                raise DomainError(
                    "objective.robust.quantile", "the quantile aim needs a quantile between 0 and 1"
                )
        elif self.quantile is not None:
            raise DomainError("objective.robust.quantile", "only the quantile aim takes a quantile")

    @classmethod
    def parse(cls, raw: Mapping[str, object] | None) -> RobustAim:
        """The aim a client sent (`objective.robust`); the mean when none was sent."""
        if raw is None:
            return cls()
        unknown = sorted(set(raw) - {"aim", "quantile"})
        if unknown:
            raise DomainError(f"objective.robust.{unknown[0]}", "not a setting: aim, quantile")
        return cls(aim=str(raw.get("aim", "mean")), quantile=raw.get("quantile"))  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, object]:
        """Plain dict, as stored in the objective."""
        return {"aim": self.aim, "quantile": self.quantile}

    def text(self, goal: str) -> str:
        """The aim in words: "the mean over the noise levels", "the worst noise level"."""
        if self.aim == "mean":
            return "the mean over the noise levels"
        if self.aim == "worst":
            return "the worst noise level"
        share = 1.0 - (self.quantile or 0.0)
        better = "beat" if goal == "maximize" else "stay below"
        return (
            f"the {self.quantile:g} quantile over the noise levels"
            f" ({share:.0%} of them {better} it)"
        )


def noise_factors(space: FactorSpace) -> list[Factor]:
    """The factors marked noise, in factor order."""
    return [f for f in space.factors if f.noise]


def control_space(space: FactorSpace) -> FactorSpace:
    """The space of the factors that are chosen (every factor not marked noise)."""
    return FactorSpace(tuple(f for f in space.factors if not f.noise))


def _levels(factor: Factor) -> tuple[Value, ...]:
    if factor.levels is not None:
        return tuple(factor.levels)
    low, high = factor.bounds
    if factor.kind == "integer":
        return (int(low), int(high))
    return (low, high)


def noise_scenarios(space: FactorSpace) -> list[Config]:
    """Every combination of the noise factors' levels ([{}] without noise factors); raises
    DomainError when there are more than MAX_SCENARIOS."""
    noise = noise_factors(space)
    count = int(np.prod([len(_levels(f)) for f in noise])) if noise else 1
    if count > MAX_SCENARIOS:
        raise DomainError(
            "factors",
            f"the noise factors make {count} combinations of levels; at most {MAX_SCENARIOS}",
        )
    return [
        dict(zip([f.name for f in noise], combo, strict=True))
        for combo in itertools.product(*(_levels(f) for f in noise))
    ]


def crossed(controls: Sequence[Mapping[str, Value]], scenarios: Sequence[Config]) -> list[Config]:
    """Every control configuration at every scenario, control-major: row i * len(scenarios) + j
    is control i at scenario j."""
    return [{**control, **scenario} for control in controls for scenario in scenarios]


def aggregate(values: np.ndarray, aim: RobustAim, goal: str) -> np.ndarray:
    """One value per row of `values` (rows: configurations, columns: noise scenarios)."""
    check_goal(goal)
    table = np.atleast_2d(np.asarray(values, dtype=float))
    if aim.aim == "mean":
        return table.mean(axis=1)
    if aim.aim == "worst":
        return table.min(axis=1) if goal == "maximize" else table.max(axis=1)
    assert aim.quantile is not None
    return np.quantile(table, aim.quantile, axis=1)
