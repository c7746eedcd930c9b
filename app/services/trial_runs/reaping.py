"""The reaper: a background task of the API that keeps every trial moving.

Workers renew a running trial's lease; when one dies (SIGKILL, a lost machine) its lease runs
out and the reaper sends the trial again, or fails it after the attempt limit. Trials left
queued without a message (the broker restarted without persistence) are sent again; a trial
whose worker died after its experiment was cancelled is cancelled; an optimization loop whose
round ended long ago without the next one planned is asked again. Several API processes may
reap at once: every change is a conditional UPDATE, and a trial sent twice runs once.
`reap` is one pass, `reap_forever` the API's loop of passes.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.config import Settings
from app.db import rows
from app.db.models import Optimization, utcnow
from app.db.session import Database
from app.queue import TaskQueue
from app.services.trial_runs.states import complete_experiment_if_done, round_over, with_attempt
from app.statuses import ExperimentStatus, Failure, TrialStatus

log = logging.getLogger(__name__)


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
    keeping every attempt's error), and send again the queued trials sent more than
    `resend_after` ago whose message neither waits in the broker nor was delivered within
    `resend_after`: it was lost with a broker restart, or a worker holds it unacknowledged and
    died before it claimed the trial (or still waits for its target: a copy is harmless).

    The database is the source of truth: sending a trial twice is harmless, a worker claims it
    once. A trial whose experiment was cancelled while its worker was lost is cancelled."""
    now = utcnow()
    expired = await _expired(session, now, max_attempts)
    await session.commit()
    live = await queue.live_trial_ids(delivered_since=now - resend_after)
    # After a broker restart thousands of trials may have lost their message: sent again in
    # one UPDATE and one batch per target, not a few round trips each.
    lost = [
        queued
        for queued in await rows.queued_trials_before(session, now - resend_after)
        if queued.trial_id not in live and queued.trial_id not in expired.requeued
    ]
    resent = [queued.trial_id for queued in lost]
    await rows.mark_queued(session, resent, now)
    await session.commit()
    by_target: dict[str, list[int]] = {}
    for trial_id in expired.requeued:
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
    return Reaped(
        requeued=expired.requeued,
        failed=expired.failed,
        resent=resent,
        cancelled=expired.cancelled,
        advanced=[loop.id for loop in stalled],
    )


@dataclass(frozen=True)
class _Expired:
    """What became of the running trials whose lease expired (not yet committed)."""

    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    cancelled: list[int] = field(default_factory=list)


async def _expired(session: AsyncSession, now: datetime, max_attempts: int) -> _Expired:
    """Cancel, queue again or fail every running trial whose lease expired."""
    done = _Expired()
    for trial in await rows.expired_trials(session, now):
        experiment = await rows.get_experiment(session, trial.experiment_id)
        if experiment is not None and experiment.status == ExperimentStatus.CANCELLED:
            if await rows.transition(
                session,
                trial.id,
                from_statuses=[TrialStatus.RUNNING],
                to_status=TrialStatus.CANCELLED,
                values=rows.finished_values(now),
                lease_expired_by=now,
            ):
                done.cancelled.append(trial.id)
            continue
        error = with_attempt(
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
            # Read before this UPDATE waited for a lock (SQLite's, or a row's): a lease its
            # worker renewed meanwhile is its worker's again.
            lease_expired_by=now,
        ):
            continue  # its worker finished it, or renewed its lease, after all
        if retry:
            done.requeued.append(trial.id)
        else:
            done.failed.append(trial.id)
            await complete_experiment_if_done(session, trial.experiment_id)
    return done


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
        if not round_over(trials):
            continue
        last_change = max([loop.updated_at, *(t.finished_at for t in trials if t.finished_at)])
        if last_change < before:
            stalled.append(loop)
    return stalled


async def reap_forever(database: Database, queue: TaskQueue, settings: Settings) -> None:
    """Reap every `reaper_interval_seconds` until cancelled; a pass that fails (database or
    broker down) is logged and retried at the next interval."""
    while True:
        await asyncio.sleep(settings.reaper_interval_seconds)
        try:
            async with database.session() as session:
                reaped = await reap(
                    session,
                    queue=queue,
                    max_attempts=settings.max_trial_attempts,
                    resend_after=timedelta(seconds=settings.resend_after_seconds),
                )
        except Exception as error:  # the next pass retries; the database keeps the state
            log.warning("reaper pass failed: %s", error)
            continue
        if reaped.advanced:
            log.warning(
                "reaper: optimization loops %s had finished their round long ago without "
                "planning the next (a lost message): asked again",
                reaped.advanced,
            )
        if reaped.requeued or reaped.failed or reaped.resent or reaped.cancelled:
            log.warning(
                "reaper: trials %s lost their worker and were sent again, %s failed for good "
                "after %d attempts, %s had lost their message and were sent again, %s lost "
                "their worker after their experiment was cancelled and are cancelled",
                reaped.requeued,
                reaped.failed,
                settings.max_trial_attempts,
                reaped.resent,
                reaped.cancelled,
            )
