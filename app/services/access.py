"""Who may see which experiment and trial, and the lookups that answer 404 or 422 when a
name or id is unknown."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import rows
from app.db.models import Experiment
from app.services.api_keys import Principal
from app.services.errors import NotFoundError
from experiments.errors import DomainError
from experiments.galera.target_spec import TargetSpec


async def visible_experiment(
    session: AsyncSession, *, experiment_id: int, viewer: Principal
) -> Experiment:
    """The experiment, read afresh; NotFoundError unless it exists and `viewer` may see it:
    another owner's experiment is answered exactly like a missing one, so its existence leaks
    nothing."""
    experiment = await rows.get_experiment(session, experiment_id)
    if experiment is None or not viewer.sees(experiment.owner):
        raise NotFoundError("experiment", experiment_id)
    return experiment


async def check_trial_visible(session: AsyncSession, *, trial_id: int, viewer: Principal) -> None:
    """NotFoundError unless the trial exists and `viewer` may see its experiment."""
    trial = await rows.get_trial(session, trial_id)
    experiment = trial and await rows.get_experiment(session, trial.experiment_id)
    if experiment is None or not viewer.sees(experiment.owner):
        raise NotFoundError("trial", trial_id)


async def experiment_of(session: AsyncSession, experiment_id: int) -> Experiment:
    """The experiment, or NotFoundError."""
    experiment = await rows.get_experiment(session, experiment_id)
    if experiment is None:
        raise NotFoundError("experiment", experiment_id)
    return experiment


def target_of(targets: Mapping[str, TargetSpec], name: str) -> TargetSpec:
    """The named target, or DomainError naming `target` and the known ones."""
    if name not in targets:
        raise DomainError("target", f"unknown target '{name}'; known: {', '.join(sorted(targets))}")
    return targets[name]
