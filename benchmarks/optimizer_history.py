"""What every method of the optimizer benchmark sees and answers: the race's history so far.

A method proposes configurations with `ask` and names the configuration it would tell the user
to deploy with `recommend` (its own incumbent or model optimum). The benchmark scores both: the
best configuration tried (what no user sees) and the recommended one (what the user deploys).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from experiments.factors import Config


@dataclass
class History:
    """The trials of one race so far, as a method sees them (noisy values only).

    `values[i]` is None when trial i failed (no measurement); `constrained[i]` is the observed
    value of the problem's constrained second response (None when the problem has none or the
    trial failed), which must meet the problem's `limit`.
    """

    configs: list[Config] = field(default_factory=list)
    values: list[float | None] = field(default_factory=list)
    point_types: list[str] = field(default_factory=list)
    constrained: list[float | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.configs)


class Method(Protocol):
    """Proposes the next configurations, each with its point type (none when it stops), and
    recommends one configuration at any point of the race."""

    stop_reason: str | None

    def ask(self, history: History, budget_left: int) -> list[tuple[Config, str]]: ...

    def recommend(self, history: History) -> Config | None: ...
