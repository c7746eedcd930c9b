"""The trial's life: made, sent to the workers, claimed, recorded as it ended.

Every record is conditional on the worker's own claim (worker and attempt), and recording twice
is harmless: a worker that lost its connection in the middle of a commit records again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import rows
from app.db.models import Experiment, Optimization, Trial, utcnow
from app.queue import BrokerUnavailableError, TaskQueue
from app.services.errors import UnavailableError
from app.statuses import FINAL_TRIAL_STATUSES, ExperimentStatus, Failure, TrialSource, TrialStatus
from experiments.factors import FactorSpace


@dataclass(frozen=True)
class ClaimedTrial:
    """A trial this worker now holds the lease on."""

    trial_id: int
    experiment_id: int
    target: str
    config: dict[str, Any]
    attempt: int
    worker: str


async def claim(
    session: AsyncSession, *, trial_id: int, worker: str, lease: timedelta
) -> ClaimedTrial | None:
    """Take a queued trial (atomically); None when it is not queued (a duplicate delivery)."""
    claimed = await rows.claim_trial(session, trial_id, worker=worker, lease=lease)
    await session.commit()
    if not claimed:
        return None
    return await held_by(session, trial_id=trial_id, worker=worker)


async def held_by(session: AsyncSession, *, trial_id: int, worker: str) -> ClaimedTrial | None:
    """The trial if it runs under `worker`'s claim: a claim committed just before the
    connection broke is found again this way. None otherwise."""
    trial = await rows.get_trial(session, trial_id)
    if trial is None or trial.status != TrialStatus.RUNNING or trial.worker != worker:
        return None
    experiment = await rows.get_experiment(session, trial.experiment_id)
    assert experiment is not None
    return ClaimedTrial(
        trial_id=trial.id,
        experiment_id=trial.experiment_id,
        target=experiment.target,
        config=dict(trial.config),
        attempt=trial.attempts,
        worker=worker,
    )


async def record_success(
    session: AsyncSession,
    *,
    claimed: ClaimedTrial,
    responses: dict[str, float],
    raw_output: str,
) -> bool:
    """running -> succeeded with the responses, keeping the errors of earlier attempts; False
    if the trial was taken from this worker."""
    return await _finish(
        session, claimed, TrialStatus.SUCCEEDED, {"responses": responses, "raw_output": raw_output}
    )


async def record_failure(
    session: AsyncSession,
    *,
    claimed: ClaimedTrial,
    error: str,
    failure: Failure = Failure.ERROR,
    raw_output: str | None = None,
    max_attempts: int = 1,
) -> TrialStatus | None:
    """Record a failed attempt, keeping its error after those of earlier attempts.

    An infrastructure failure goes back to `queued` while attempts remain (the caller sends it
    again); any other failure, or the last attempt, is final: `failed`, left out of every fit.
    Returns the new status, or None if the trial was no longer this worker's.
    """
    trial = await rows.get_trial(session, claimed.trial_id)
    history = trial.error if trial is not None else None
    line = _attempt_line(claimed.attempt, failure, error)
    if history is not None and history.endswith(line):
        history = history[: -len(line)].rstrip("\n") or None  # recorded already: record again
    errors = f"{history}\n{line}" if history else line
    if failure == Failure.INFRASTRUCTURE and claimed.attempt < max_attempts:
        requeued = await rows.transition_claimed(
            session,
            claimed.trial_id,
            worker=claimed.worker,
            attempt=claimed.attempt,
            to_status=TrialStatus.QUEUED,
            values={"error": errors, "raw_output": raw_output, "lease_expires_at": None},
        )
        await session.commit()
        return TrialStatus.QUEUED if requeued else None
    done = await _finish(
        session,
        claimed,
        TrialStatus.FAILED,
        {"error": errors, "failure": failure, "raw_output": raw_output},
    )
    return TrialStatus.FAILED if done else None


async def record_cancelled(session: AsyncSession, *, claimed: ClaimedTrial) -> bool:
    """running -> cancelled, with no result: its experiment was cancelled while it ran. False
    if the trial was no longer this worker's."""
    return await _finish(session, claimed, TrialStatus.CANCELLED, {})


async def stop_reason(session: AsyncSession, *, claimed: ClaimedTrial) -> str | None:
    """Why the worker running `claimed` should stop it now, or None: its experiment (or the
    trial) was cancelled, or another worker claimed the trial since.

    A trial the reaper put back in the queue while this worker could not reach the database,
    and that no one claimed again, is still this worker's: its result will be recorded."""
    trial = await rows.get_trial(session, claimed.trial_id)
    if trial is None:
        return "the trial no longer exists"
    experiment = await rows.get_experiment(session, trial.experiment_id)
    if trial.status == TrialStatus.CANCELLED or (
        experiment is not None and experiment.status == ExperimentStatus.CANCELLED
    ):
        return "cancelled"
    if trial.worker != claimed.worker or trial.attempts != claimed.attempt:
        return f"the trial was claimed again by {trial.worker} (attempt {trial.attempts})"
    if trial.status not in (TrialStatus.RUNNING, TrialStatus.QUEUED):
        return f"the trial is {trial.status} already"
    return None


@dataclass(frozen=True)
class Reaped:
    """What one pass of the reaper did: trials whose worker died, sent again or failed for
    good, and queued trials whose message was lost, sent again."""

    requeued: list[int]
    failed: list[int]
    resent: list[int]
    cancelled: list[int] = field(default_factory=list)
    advanced: list[int] = field(default_factory=list)


async def reap(
    session: AsyncSession,
    *,
    queue: TaskQueue,
    max_attempts: int,
    resend_after: timedelta,
) -> Reaped:
    """Return trials whose lease expired to the queue (or fail them after `max_attempts`,
    keeping every attempt's error), and send again the queued trials that have no message in
    the broker (lost with a broker restart) and were queued more than `resend_after` ago.

    The database is the source of truth: sending a trial twice is harmless, a worker claims it
    once. A trial whose experiment was cancelled while its worker was lost is cancelled."""
    now = utcnow()
    requeued, failed, cancelled = [], [], []
    for trial in await rows.expired_trials(session, now):
        experiment = await rows.get_experiment(session, trial.experiment_id)
        if experiment is not None and experiment.status == ExperimentStatus.CANCELLED:
            if await rows.transition(
                session,
                trial.id,
                from_statuses=[TrialStatus.RUNNING],
                to_status=TrialStatus.CANCELLED,
                values=rows.finished_values(now),
            ):
                cancelled.append(trial.id)
            continue
        error = _with_attempt(
            trial.error,
            trial.attempts,
            Failure.LOST,
            f"worker {trial.worker} stopped renewing its lease, which expired at "
            f"{trial.lease_expires_at:%Y-%m-%d %H:%M:%S} UTC",
        )
        retry = trial.attempts < max_attempts
        values: dict[str, Any] = (
            {"error": error, "lease_expires_at": None, "queued_at": now}
            if retry
            else {"error": error, "failure": Failure.LOST, **rows.finished_values()}
        )
        if not await rows.transition(
            session,
            trial.id,
            from_statuses=[TrialStatus.RUNNING],
            to_status=TrialStatus.QUEUED if retry else TrialStatus.FAILED,
            values=values,
        ):
            continue  # its worker finished it after all
        if retry:
            requeued.append(trial.id)
        else:
            failed.append(trial.id)
            await _complete_experiment_if_done(session, trial.experiment_id)
    await session.commit()
    live = await queue.live_trial_ids()
    # After a broker restart thousands of trials may have lost their message: sent again in
    # one UPDATE and one batch per target, not a few round trips each.
    lost = [
        queued
        for queued in await rows.queued_trials_before(session, now - resend_after)
        if queued.trial_id not in live and queued.trial_id not in requeued
    ]
    resent = [queued.trial_id for queued in lost]
    await rows.mark_queued(session, resent, now)
    await session.commit()
    by_target: dict[str, list[int]] = {}
    for trial_id in requeued:
        trial = await rows.get_trial(session, trial_id)
        assert trial is not None  # trials are deleted only with their experiment
        by_target.setdefault(await _target_of(session, trial.experiment_id), []).append(trial_id)
    for queued in lost:
        by_target.setdefault(queued.target, []).append(queued.trial_id)
    for target, trial_ids in by_target.items():
        await queue.enqueue_trials(trial_ids, target=target)
    stalled = await _stalled_loops(session, now - resend_after)
    for loop in stalled:
        await queue.enqueue_advance(loop.id, target=await _target_of(session, loop.experiment_id))
    advanced = [loop.id for loop in stalled]
    return Reaped(
        requeued=requeued, failed=failed, resent=resent, cancelled=cancelled, advanced=advanced
    )


async def _target_of(session: AsyncSession, experiment_id: int) -> str:
    experiment = await rows.get_experiment(session, experiment_id)
    assert experiment is not None  # a trial or a loop keeps its experiment
    return experiment.target


async def _stalled_loops(session: AsyncSession, before: datetime) -> list[Optimization]:
    """Running loops whose round ended before `before` and whose next round was not planned
    since: the message that asks for it was lost (a broker restart). Sending it again is
    harmless: a round is claimed once however often it is asked for."""
    stalled = []
    for loop in await rows.running_optimizations(session):
        trials = await rows.list_trials(session, loop.experiment_id)
        if not _round_over(trials):
            continue
        last_change = max([loop.updated_at, *(t.finished_at for t in trials if t.finished_at)])
        if last_change < before:
            stalled.append(loop)
    return stalled


def _round_over(trials: Sequence[Trial]) -> bool:
    return all(trial.status in FINAL_TRIAL_STATUSES for trial in trials)


async def renew_lease(
    session: AsyncSession, *, trial_id: int, worker: str, lease: timedelta
) -> bool:
    """Keep a running trial's lease alive; False when the trial is no longer this worker's."""
    renewed = await rows.renew_trial_lease(session, trial_id, worker=worker, lease=lease)
    await session.commit()
    return renewed


async def optimization_to_advance(session: AsyncSession, *, experiment_id: int) -> int | None:
    """The experiment's running optimization loop when every trial has finished: its next
    round is due. None otherwise."""
    loop = await rows.running_optimization(session, experiment_id)
    if loop is None:
        return None
    return loop.id if _round_over(await rows.list_trials(session, experiment_id)) else None


async def target_name(session: AsyncSession, *, trial_id: int) -> str | None:
    """The target a queued trial runs on; None when the trial is not queued (nothing to do)."""
    trial = await rows.get_trial(session, trial_id)
    if trial is None or trial.status != TrialStatus.QUEUED:
        return None
    experiment = await rows.get_experiment(session, trial.experiment_id)
    return None if experiment is None else experiment.target


async def acquire_target(
    session: AsyncSession, *, target: str, holder: str, ttl: timedelta
) -> bool:
    """Take (or renew) the exclusive lease on a target: one trial at a time per cluster."""
    return await rows.acquire_target_lease(session, target, holder=holder, ttl=ttl)


async def release_target(session: AsyncSession, *, target: str, holder: str) -> None:
    """Give the target back."""
    await rows.release_target_lease(session, target, holder=holder)


def _attempt_line(attempt: int, failure: Failure, error: str) -> str:
    return f"attempt {attempt} ({failure}): {error}"


def _with_attempt(history: str | None, attempt: int, failure: Failure, error: str) -> str:
    """The trial's error text with one more attempt's error after those of earlier attempts."""
    line = _attempt_line(attempt, failure, error)
    return f"{history}\n{line}" if history else line


async def _finish(
    session: AsyncSession, claimed: ClaimedTrial, status: TrialStatus, values: dict[str, Any]
) -> bool:
    """Record the claimed trial's final status; True also when this very record was made
    before (a retry after the connection broke during the commit)."""
    done = await rows.transition_claimed(
        session,
        claimed.trial_id,
        worker=claimed.worker,
        attempt=claimed.attempt,
        to_status=status,
        values={**values, **rows.finished_values()},
    )
    await _complete_experiment_if_done(session, claimed.experiment_id)
    await session.commit()
    if done:
        return True
    trial = await rows.get_trial(session, claimed.trial_id)
    return (
        trial is not None
        and trial.status == status
        and trial.worker == claimed.worker
        and trial.attempts == claimed.attempt
    )


async def _complete_experiment_if_done(session: AsyncSession, experiment_id: int) -> None:
    experiment = await rows.get_experiment(session, experiment_id)
    if experiment is None or experiment.status != ExperimentStatus.RUNNING:
        return
    if await rows.running_optimization(session, experiment_id) is not None:
        return  # the loop completes the experiment when it stops
    trials = await rows.list_trials(session, experiment_id)
    if all(trial.status in FINAL_TRIAL_STATUSES for trial in trials):
        experiment.status = ExperimentStatus.COMPLETED


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
        coded=dict(zip(space.names, space.encode(checked).tolist(), strict=True)),
        status=TrialStatus.PENDING,
        attempts=0,
        optimization_id=optimization_id,
    )


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
