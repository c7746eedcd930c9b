"""New trials, and sending them to the workers: queued in the database first, then one message
each to their target's queue."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import rows
from app.db.models import Experiment, Trial, utcnow
from app.queue import BrokerUnavailableError, TaskQueue
from app.services.errors import UnavailableError
from app.statuses import ExperimentStatus, TrialSource, TrialStatus
from experiments.factors import Config, FactorSpace


def new_trial(
    space: FactorSpace,
    *,
    experiment_id: int,
    run_order: int,
    config: Mapping[str, Any],
    point_type: str,
    source: TrialSource,
    optimization_id: int | None = None,
) -> Trial:
    """A new pending trial of one configuration, with its coded values."""
    checked = space.check_config(config)
    return Trial(
        experiment_id=experiment_id,
        run_order=run_order,
        point_type=point_type,
        source=source,
        config=checked,
        coded=space.coded(checked),
        status=TrialStatus.PENDING,
        attempts=0,
        optimization_id=optimization_id,
    )


def mark_fresh_replicates(
    space: FactorSpace, trials: Sequence[Trial], measured: Iterable[Config]
) -> None:
    """Mark every one of `trials` (in run order) that measures again a configuration of
    `measured` or of an earlier one of them to restart every node first: a replicate measured
    in a fresh cluster state, not in the state the last run left."""
    seen = {space.key(config) for config in measured}
    for trial in trials:
        if trial.reads_current:  # today's configuration, its values still to be read
            continue
        key = space.key(trial.config)
        trial.restart_first = key in seen
        seen.add(key)


async def send_trials(
    session: AsyncSession, *, experiment: Experiment, trial_ids: Sequence[int], queue: TaskQueue
) -> list[int]:
    """Queue pending trials in the order given and send them to the workers; returns the ids
    sent. Raises UnavailableError when the broker is down: what was not sent stays pending."""
    # One transaction of conditional updates: a concurrent start waits on these rows and then
    # finds them no longer pending, so no trial is sent twice. Committed before anything is sent,
    # so a worker always finds its trial queued.
    now, status_before = utcnow(), experiment.status
    queued = [
        trial_id
        for trial_id in trial_ids
        if await rows.transition(
            session,
            trial_id,
            from_statuses=[TrialStatus.PENDING],
            to_status=TrialStatus.QUEUED,
            values={"queued_at": now},
        )
    ]
    if queued:
        experiment.status = ExperimentStatus.RUNNING
    await session.commit()
    try:
        await queue.enqueue_trials(queued, target=experiment.target)
    except BrokerUnavailableError as error:
        # Whatever was not sent goes back to pending, so a later start sends it.
        for trial_id in queued[error.sent :]:
            await rows.transition(
                session,
                trial_id,
                from_statuses=[TrialStatus.QUEUED],
                to_status=TrialStatus.PENDING,
                values={"queued_at": None},
            )
        if error.sent == 0:
            experiment.status = status_before
        await session.commit()
        raise UnavailableError(str(error)) from error
    return queued


async def send_loop_start(
    session: AsyncSession, *, experiment: Experiment, optimization_id: int, queue: TaskQueue
) -> None:
    """Send what a new closed loop runs first: the experiment's planned trials still pending
    (the last one to finish sends the loop's first round), or, without any, that first round.
    Raises UnavailableError when the broker is down."""
    pending = await rows.list_trials(session, experiment.id, status=TrialStatus.PENDING)
    if pending:
        ids = [t.id for t in pending]
        await send_trials(session, experiment=experiment, trial_ids=ids, queue=queue)
        return
    try:
        await queue.enqueue_advance(optimization_id, target=experiment.target)
    except BrokerUnavailableError as error:
        raise UnavailableError(str(error)) from error
