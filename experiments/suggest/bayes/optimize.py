"""Bayesian optimization's entry point: the next batch from the models fitted to the runs."""

from __future__ import annotations

from experiments.blas import one_blas_thread
from experiments.errors import DomainError
from experiments.suggest.bayes.batch import LEADERS, batch
from experiments.suggest.bayes.candidates import Pool
from experiments.suggest.bayes.models import Models
from experiments.suggest.bayes.robust_search import RobustSearch
from experiments.suggest.bayes.rules import FINAL_SHARE
from experiments.suggest.problem import Problem
from experiments.suggest.values import Runs, Suggestion

# How many quasi-random points start the search of a lattice too large to score whole.
CANDIDATES = 4096


@one_blas_thread
def bayes_batch(
    problem: Problem,
    models: Models,
    runs: Runs,
    count: int,
    *,
    budget_left: int | None = None,
    time_left: float | None = None,
    candidates: int = CANDIDATES,
) -> list[Suggestion]:
    """Up to `count` configurations of highest expected improvement, chosen as one batch by
    `models` (fitted to `runs` with the search's model). `budget_left` is the trials the caller
    can still afford, `time_left` the share of a budget of trial time not yet spent: in the
    last `FINAL_SHARE` of either the batch is led by the knowledge gradient. Every suggestion is
    a valid configuration of the space meeting every factor constraint; fewer than `count` come
    back only when fewer unrun configurations remain. Raises DomainError on bad options, or when
    no configuration meets the constraints or every allowed one has been run."""
    _check_at_least("count", count, 1)
    _check_at_least("candidates", candidates, 16)
    if budget_left is not None:
        _check_at_least("budget_left", budget_left, 1)
    if time_left is not None and not 0.0 < time_left <= 1.0:
        raise DomainError("time_left", "must be the share of the time budget left, above 0 up to 1")
    # The lattice takes the values of the runs the models learned from (and of the leaders),
    # not of every run: beyond the training cap its lines grew with every run.
    on_lattice = [*models.learned, *models.incumbent.ranked[:LEADERS]]
    pool = Pool(
        problem.space,
        models.encoder,
        problem.constraints,
        on_lattice,
        problem.seed,
        candidates,
        models.fidelity,
    )
    final = (
        budget_left is not None
        and budget_left <= FINAL_SHARE * (len(runs) + len(runs.failed) + budget_left)
    ) or (time_left is not None and time_left <= FINAL_SHARE)
    robust = RobustSearch.of(problem, models.encoder, models.learned[0])
    suggestions = batch(models, pool, problem.sign, count, runs.types, final, robust)
    if not suggestions:
        raise DomainError(
            "configs",
            "every configuration allowed by the factors and constraints has been run already",
        )
    return suggestions


def _check_at_least(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise DomainError(name, f"must be a whole number of at least {low}")
