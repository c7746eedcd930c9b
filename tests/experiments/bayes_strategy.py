"""The Bayes strategy as the tests of Bayesian optimization call it: fitted to runs given as
lists, asked for a batch."""

from collections.abc import Mapping, Sequence

from experiments.factors import FactorSpace
from experiments.suggest import Runs, Suggestion
from experiments.suggest.strategies import Bayes


def bayes(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    *,
    count: int = 1,
    candidates: int = Bayes.candidates,
    budget_left: int | None = None,
    time_left: float | None = None,
    point_types: Sequence[str] = (),
    failed: Sequence[Mapping[str, object]] = (),
    responses: Mapping[str, Sequence[float]] | None = None,
    **problem: object,
) -> list[Suggestion]:
    """The batch of `count` the Bayes strategy suggests after the runs; `problem` holds the
    problem's settings (goal, scale, constraints, limits, seed)."""
    runs = Runs(configs, values, point_types, responses or {}, failed)
    strategy = Bayes(space, budget=budget_left, time_left=time_left, **problem)  # type: ignore[arg-type]
    strategy.candidates = candidates
    return strategy.fit(runs).suggest(count).suggestions
