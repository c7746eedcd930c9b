"""What an experiment optimizes: one response by a goal, limits on other responses, or several
responses combined by Derringer-Suich desirability. Validated once, where a client's request
enters (`Objective.parse`); read back from storage as it was stored (`Objective.from_stored`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from experiments.desirability_settings import check_desirability
from experiments.errors import DomainError
from experiments.factors import NAME_PATTERN
from experiments.goals import check_goal, check_scale, default_scale
from experiments.robust import RobustAim

DESIRABILITY_FIELDS = ("goal", "low", "high", "target", "weight", "importance")
# Checks that a response can be measured where the experiment runs: (name, field) -> None.
ResponseCheck = Callable[[str, str], None]


@dataclass(frozen=True)
class Bound:
    """A limit on another response: `min`, `max` or both."""

    response: str
    min: float | None = None
    max: float | None = None


@dataclass(frozen=True)
class Objective:
    """The objective's response and goal, its bounds on other responses, its desirability
    items (each the stored mapping of DESIRABILITY_FIELDS and its response), the scale the
    search models what is optimized on (`experiments.goals.SCALES`), and how the values across
    the noise factors' levels become one (`robust`; None: their mean, when there are any)."""

    response: str
    goal: str = "maximize"
    bounds: tuple[Bound, ...] = ()
    desirability: tuple[Mapping[str, Any], ...] = ()
    scale: str = "linear"
    robust: RobustAim | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any], check_response: ResponseCheck) -> Objective:
        """The objective a client sent, checked; DomainError names the field and the rule."""
        response, goal = raw.get("response"), raw.get("goal", "maximize")
        if not isinstance(response, str) or not NAME_PATTERN.match(response):
            raise DomainError("objective.response", "must be a response name like 'tps'")
        goal = check_goal(goal, "objective.goal")
        check_response(response, "objective.response")
        bounds = tuple(
            _bound(i, bound, response, check_response)
            for i, bound in enumerate(raw.get("constraints") or [])
        )
        items: list[Mapping[str, Any]] = []
        for i, item in enumerate(raw.get("desirability") or []):
            items.append(_desirability_item(i, item, items, check_response))
        scale = raw.get("scale")
        if scale is None:
            scale = _default_scale(response, items)
        elif check_scale(scale, "objective.scale") == "log" and items:
            raise DomainError(
                "objective.scale",
                "must be linear with desirability: the overall desirability, from 0 to 1, is"
                " what is optimized",
            )
        robust = raw.get("robust")
        return cls(
            response=response,
            goal=goal,
            bounds=bounds,
            desirability=tuple(items),
            scale=scale,
            robust=None if robust is None else RobustAim.parse(robust),
        )

    @classmethod
    def from_stored(cls, raw: Mapping[str, Any]) -> Objective:
        """The objective as `as_dict` stored it (checked when it was parsed). Objectives stored
        before it had a scale get the default scale."""
        desirability = tuple(raw.get("desirability") or [])
        return cls(
            response=raw["response"],
            goal=raw["goal"],
            bounds=tuple(
                Bound(b["response"], b.get("min"), b.get("max"))
                for b in raw.get("constraints") or []
            ),
            desirability=desirability,
            scale=raw.get("scale") or _default_scale(raw["response"], desirability),
            robust=None if raw.get("robust") is None else RobustAim.parse(raw["robust"]),
        )

    def as_dict(self) -> dict[str, Any]:
        """The stored (and API) form."""
        return {
            "response": self.response,
            "goal": self.goal,
            "constraints": [
                {"response": b.response, "min": b.min, "max": b.max} for b in self.bounds
            ],
            "desirability": [dict(item) for item in self.desirability],
            "scale": self.scale,
            "robust": None if self.robust is None else self.robust.as_dict(),
        }

    @property
    def responses(self) -> list[str]:
        """Every response the objective needs measured: its own, the bounded, the combined."""
        return [
            self.response,
            *(b.response for b in self.bounds),
            *(item["response"] for item in self.desirability),
        ]


def _default_scale(response: str, desirability: Sequence[Mapping[str, Any]]) -> str:
    return "linear" if desirability else default_scale(response)


def _bound(i: int, bound: Mapping[str, Any], response: str, check: ResponseCheck) -> Bound:
    where = f"objective.constraints.{i}"
    name, low, high = bound.get("response"), bound.get("min"), bound.get("max")
    if not isinstance(name, str) or not NAME_PATTERN.match(name) or name == response:
        raise DomainError(f"{where}.response", "must name another response, like 'abort_rate'")
    check(name, f"{where}.response")
    if low is None and high is None:
        raise DomainError(where, "give min, max or both")
    if low is not None and high is not None and low > high:
        raise DomainError(f"{where}.max", "must not be below min")
    return Bound(name, low, high)


def _desirability_item(
    i: int, item: Mapping[str, Any], earlier: list[Mapping[str, Any]], check: ResponseCheck
) -> Mapping[str, Any]:
    where = f"objective.desirability.{i}"
    name = item.get("response")
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise DomainError(f"{where}.response", "must be a response name")
    check(name, f"{where}.response")
    if name in (g["response"] for g in earlier):
        raise DomainError(f"{where}.response", f"'{name}' has a goal already")
    try:
        check_desirability(
            item.get("goal", "maximize"),
            item.get("low"),  # type: ignore[arg-type]
            item.get("high"),  # type: ignore[arg-type]
            item.get("target"),
            item.get("weight", 1.0),
        )
    except DomainError as error:
        raise DomainError(where, error.rule) from None
    return {k: item.get(k) for k in DESIRABILITY_FIELDS} | {"response": name}
