"""What to run next: sequential response-surface steps and Bayesian optimization."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from experiments.constraints import Constraint
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.suggest.base import Suggestion
from experiments.suggest.bayes import bayes
from experiments.suggest.sequential import augment, replicate_incumbent, steepest_ascent

__all__ = ["STRATEGIES", "Suggestion", "suggest"]

STRATEGIES: tuple[str, ...] = ("augment", "steepest_ascent", "bayes", "replicate")
MAX_COUNT = 20


def suggest(
    strategy: str,
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    *,
    goal: str = "maximize",
    count: int = 1,
    constraints: Sequence[Constraint] = (),
    seed: int = 0,
) -> list[Suggestion]:
    """Up to `count` configurations to run next by `strategy`, each with its reason."""
    if strategy not in STRATEGIES:
        raise DomainError("strategy", f"must be one of {', '.join(STRATEGIES)}")
    if not 1 <= count <= MAX_COUNT:
        raise DomainError("count", f"must be a whole number from 1 to {MAX_COUNT}")
    if strategy == "augment":
        return augment(space, configs, constraints=constraints)[:count]
    if strategy == "steepest_ascent":
        return steepest_ascent(
            space, configs, values, goal=goal, count=count, constraints=constraints
        )
    if strategy == "replicate":
        return replicate_incumbent(space, configs, values, goal=goal, count=count)
    return bayes(space, configs, values, goal=goal, count=count, constraints=constraints, seed=seed)
