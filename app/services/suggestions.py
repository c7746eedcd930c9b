"""Use case: suggest the next configurations of an experiment (nothing is stored or run)."""

from __future__ import annotations

import math

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import repositories
from app.services.errors import NotFoundError
from app.statuses import TrialStatus
from experiments.constraints import parse_constraints
from experiments.factors import FactorSpace
from experiments.suggest import Suggestion, suggest


async def get_suggestions(
    session: AsyncSession, *, experiment_id: int, strategy: str, count: int
) -> list[Suggestion]:
    """Suggestions from the succeeded trials that measured the objective's response."""
    experiment = await repositories.get_experiment(session, experiment_id)
    if experiment is None:
        raise NotFoundError("experiment", experiment_id)
    response = experiment.objective["response"]
    trials = [
        t
        for t in await repositories.list_trials(session, experiment_id)
        if t.status == TrialStatus.SUCCEEDED
        and isinstance((t.responses or {}).get(response), int | float)
        and math.isfinite(t.responses[response])  # type: ignore[index]
    ]
    space = FactorSpace.from_dicts(experiment.factors)
    return suggest(
        strategy,
        space,
        [t.config for t in trials],
        [float(t.responses[response]) for t in trials],  # type: ignore[index]
        goal=experiment.objective["goal"],
        count=count,
        constraints=parse_constraints(experiment.constraints, space),
        seed=experiment.id,
    )
