"""The Bayes strategy as the tests of Bayesian optimization call it: fitted to runs given as
lists, asked for a batch, a recommendation or predictions."""

from collections.abc import Mapping, Sequence

from experiments.factors import FactorSpace
from experiments.suggest import Problem, Recommendation, Runs, Suggestion
from experiments.suggest.bayes import CANDIDATES
from experiments.suggest.strategies import Bayes


def fitted(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    *,
    budget_left: int | None = None,
    time_left: float | None = None,
    point_types: Sequence[str] = (),
    failed: Sequence[Mapping[str, object]] = (),
    responses: Mapping[str, Sequence[float]] | None = None,
    **problem: object,
) -> Bayes:
    """The Bayes strategy fitted to the runs; `problem` holds the problem's settings (goal,
    scale, constraints, limits, seed)."""
    runs = Runs(configs, values, point_types, responses or {}, failed)
    strategy = Bayes(Problem(space, **problem), budget=budget_left, time_left=time_left)  # type: ignore[arg-type]
    return strategy.fit(runs)


def bayes(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    *,
    count: int = 1,
    candidates: int = CANDIDATES,
    **options: object,
) -> list[Suggestion]:
    """The batch of `count` the Bayes strategy suggests after the runs (`fitted`'s options)."""
    strategy = fitted(space, configs, values, **options)  # type: ignore[arg-type]
    strategy.candidates = candidates
    return strategy.suggest(count).suggestions


def bayes_batch(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    **options: object,
) -> tuple[list[Suggestion], Recommendation | None]:
    """The batch of one and the recommendation, from one fit."""
    strategy = fitted(space, configs, values, **options)  # type: ignore[arg-type]
    return strategy.suggest(1).suggestions, strategy.recommend()


def recommend(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    **options: object,
) -> Recommendation:
    """The recommendation of the Bayes strategy fitted to the runs."""
    found = fitted(space, configs, values, **options).recommend()  # type: ignore[arg-type]
    assert found is not None
    return found


def predict(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    points: Sequence[Mapping[str, object]],
    **options: object,
) -> list[tuple[float, float]] | None:
    """The predictions of the Bayes strategy fitted to the runs at `points`."""
    return fitted(space, configs, values, **options).predict(points)  # type: ignore[arg-type]
