"""The contract of a suggestion strategy (`Strategy`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar, Self, TypeVar

from experiments.constraints import Constraint
from experiments.factors import FactorSpace
from experiments.goals import check_goal, check_scale
from experiments.suggest.values import Limit, Plan, Runs

S = TypeVar("S", bound="Strategy")


class Strategy(ABC):
    """A way of choosing the next runs, in the style of a scikit-learn estimator: configured once
    with the problem, `fit` to the runs so far, then asked to `suggest` a batch.

    ``Bayes(space, goal="minimize", limits=limits, seed=3).fit(runs).suggest(4)``

    `scale` is the scale the Bayesian search models the response on (`experiments.goals`).
    `budget` is the number of trials the caller can still afford (None: unlimited); a strategy
    that plans whole designs (`auto`) chooses its path by it. `time_left` is, with a budget of
    trial time, the share of it not yet spent (None: no such budget); Bayesian optimization
    plays the end of either budget for the final recommendation. Each subclass names itself in
    `name`, the word clients use, and is listed in `experiments.suggest.STRATEGIES`.
    """

    name: ClassVar[str]

    def __init__(
        self,
        space: FactorSpace,
        *,
        goal: str = "maximize",
        scale: str = "linear",
        constraints: Sequence[Constraint] = (),
        limits: Sequence[Limit] = (),
        seed: int = 0,
        budget: int | None = None,
        time_left: float | None = None,
    ) -> None:
        self.space = space
        self.goal = check_goal(goal)
        self.scale = check_scale(scale)
        self.constraints = tuple(constraints)
        self.limits = tuple(limits)
        self.seed = seed
        self.budget = budget
        self.time_left = time_left
        self.runs = Runs()

    def fit(self, runs: Runs) -> Self:
        """Learn from the runs so far; returns the strategy itself, for chaining."""
        self.runs = runs
        return self

    def like(
        self, kind: type[S], *, budget: int | None = None, time_left: float | None = None
    ) -> S:
        """Another strategy configured for the same problem (the runs are not passed on)."""
        return kind(
            self.space,
            goal=self.goal,
            scale=self.scale,
            constraints=self.constraints,
            limits=self.limits,
            seed=self.seed,
            budget=budget,
            time_left=time_left,
        )

    @abstractmethod
    def suggest(self, count: int) -> Plan:
        """The next runs, at most `count` of them where the strategy picks one by one, each with
        its prediction and reason; or, in `Plan.stop_reason`, why nothing is worth running."""
