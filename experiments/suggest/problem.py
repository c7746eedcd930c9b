"""The problem a strategy works on (`Problem`): checked once, built once by each caller."""

from __future__ import annotations

from dataclasses import dataclass

from experiments.constraints import Constraint
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.goals import check_goal, check_scale
from experiments.robust import RobustAim, noise_factors
from experiments.suggest.values import Limit


@dataclass(frozen=True)
class Problem:
    """What to optimize: the factor space, the goal ("maximize" or "minimize"), the scale the
    Bayesian search models the response on (`experiments.goals`), the factor constraints, the
    limits on other responses, the seed of every random choice, and how a control
    configuration is judged across the noise factors' levels (`robust`; None: their mean).

    ``Problem(space, goal="minimize", limits=(Limit("latency_p95_ms", max=50),), seed=3)``
    """

    space: FactorSpace
    goal: str = "maximize"
    scale: str = "linear"
    constraints: tuple[Constraint, ...] = ()
    limits: tuple[Limit, ...] = ()
    seed: int = 0
    robust: RobustAim | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.space, FactorSpace):
            raise DomainError("space", "must be a factor space")
        check_goal(self.goal)
        check_scale(self.scale)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise DomainError("seed", "must be a whole number")
        # Any sequence is taken; the problem keeps tuples, so it stays a value.
        object.__setattr__(self, "constraints", tuple(self.constraints))
        object.__setattr__(self, "limits", tuple(self.limits))
        for i, limit in enumerate(self.limits):
            if not isinstance(limit, Limit):
                raise DomainError(f"limits.{i}", "must be a Limit")
        if self.robust is not None and not isinstance(self.robust, RobustAim):
            raise DomainError("robust", "must be a RobustAim")

    @property
    def sign(self) -> float:
        """+1 for a maximized response, -1 for a minimized one: the models maximize sign * y."""
        return 1.0 if self.goal == "maximize" else -1.0

    @property
    def noisy(self) -> bool:
        """Whether the space has noise factors: then suggestions are control configurations
        run at every noise level, and the recommendation a control configuration."""
        return bool(noise_factors(self.space))

    @property
    def aim(self) -> RobustAim:
        """The robust aim (`robust`, or the mean when none was given)."""
        return self.robust or RobustAim()
