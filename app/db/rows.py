"""Rows of experiments, trials, loops, suggestions, target leases, API keys and idempotent
requests: reads and atomic state changes. No business rules here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    delete,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer

from app.db.models import (
    ApiKey,
    Experiment,
    IdempotentRequest,
    Optimization,
    Suggestion,
    TargetLease,
    Trial,
    utcnow,
)
from app.statuses import OptimizationStatus, SuggestionStatus, TrialStatus


async def get_experiment(session: AsyncSession, experiment_id: int) -> Experiment | None:
    """One experiment by id, read afresh from the database."""
    return await session.get(Experiment, experiment_id, populate_existing=True)


async def lock_experiment(session: AsyncSession, experiment_id: int) -> None:
    """Hold the experiment's row (MariaDB) or the database (SQLite) for writing until the
    transaction ends: a second request that does the same waits, then reads what the first
    committed. A no-op UPDATE, because SQLite has no SELECT ... FOR UPDATE."""
    statement = (
        update(Experiment)
        .where(Experiment.id == experiment_id)
        .values(updated_at=Experiment.updated_at)
        .execution_options(synchronize_session=False)
    )
    await session.execute(statement)


async def list_experiments(
    session: AsyncSession,
    *,
    owner: str | None,
    limit: int,
    offset: int,
    status: str | None = None,
    target: str | None = None,
) -> Sequence[Experiment]:
    """Experiments of `owner` (everybody's when None), newest first, of one `status` and one
    `target` when given."""
    query = select(Experiment)
    if owner is not None:
        query = query.where(Experiment.owner == owner)
    if status is not None:
        query = query.where(Experiment.status == status)
    if target is not None:
        query = query.where(Experiment.target == target)
    query = query.order_by(Experiment.id.desc()).limit(limit).offset(offset)
    return (await session.scalars(query)).all()


async def get_trial(session: AsyncSession, trial_id: int) -> Trial | None:
    """One trial by id, read afresh from the database."""
    return await session.get(Trial, trial_id, populate_existing=True)


async def list_trials(
    session: AsyncSession,
    experiment_id: int,
    *,
    status: str | None = None,
    raw_output: bool = True,
) -> Sequence[Trial]:
    """An experiment's trials in run order, optionally of one status; without `raw_output`
    that column is not read (the trials' raw output must then not be used)."""
    query = select(Trial).where(Trial.experiment_id == experiment_id)
    if status is not None:
        query = query.where(Trial.status == status)
    if not raw_output:
        query = query.options(defer(Trial.raw_output, raiseload=True))
    query = query.order_by(Trial.run_order, Trial.id).execution_options(populate_existing=True)
    return (await session.scalars(query)).all()


async def max_run_order(session: AsyncSession, experiment_id: int) -> int:
    """The highest run order used so far in an experiment (0 when it has no trials)."""
    query = select(func.max(Trial.run_order)).where(Trial.experiment_id == experiment_id)
    return (await session.scalar(query)) or 0


async def transition(
    session: AsyncSession,
    trial_id: int,
    *,
    from_statuses: Sequence[str],
    to_status: str,
    values: dict[str, Any] | None = None,
    lease_expired_by: datetime | None = None,
) -> bool:
    """Move a trial to `to_status` only if it is in one of `from_statuses` (and, with
    `lease_expired_by`, its lease ran out before then): one atomic UPDATE.

    Returns whether this call made the change; a concurrent caller that lost the race gets False.
    """
    lease = [] if lease_expired_by is None else [Trial.lease_expires_at < lease_expired_by]
    statement = (
        update(Trial)
        .where(Trial.id == trial_id, Trial.status.in_(list(from_statuses)), *lease)
        .values(status=to_status, **(values or {}))
        .execution_options(synchronize_session=False)
    )
    result = await session.execute(statement)
    return result.rowcount == 1  # type: ignore[attr-defined]


async def claim_trial(
    session: AsyncSession, trial_id: int, *, worker: str, lease: timedelta
) -> bool:
    """queued -> running with a lease and one more attempt, atomically."""
    now = utcnow()
    return await transition(
        session,
        trial_id,
        from_statuses=[TrialStatus.QUEUED],
        to_status=TrialStatus.RUNNING,
        values={
            "attempts": Trial.attempts + 1,
            "worker": worker,
            "started_at": now,
            "lease_expires_at": now + lease,
            "finished_at": None,
        },
    )


async def renew_trial_lease(
    session: AsyncSession, trial_id: int, *, worker: str, lease: timedelta
) -> bool:
    """Push a running trial's lease forward, if this worker still holds it."""
    statement = (
        update(Trial)
        .where(Trial.id == trial_id, Trial.status == TrialStatus.RUNNING, Trial.worker == worker)
        .values(lease_expires_at=utcnow() + lease)
        .execution_options(synchronize_session=False)
    )
    return (await session.execute(statement)).rowcount == 1  # type: ignore[attr-defined]


async def expired_trials(session: AsyncSession, now: datetime) -> Sequence[Trial]:
    """Running trials whose lease ran out: their worker stopped renewing it."""
    statement = select(Trial).where(
        Trial.status == TrialStatus.RUNNING, Trial.lease_expires_at < now
    )
    return (await session.execute(statement)).scalars().all()


@dataclass(frozen=True)
class QueuedTrial:
    """A queued trial's id and its experiment's target."""

    trial_id: int
    target: str


async def queued_trials_before(session: AsyncSession, before: datetime) -> list[QueuedTrial]:
    """Queued trials sent before `before` (or never sent), in id order."""
    statement = (
        select(Trial.id, Experiment.target)
        .join_from(Trial, Experiment, Trial.experiment_id == Experiment.id)
        .where(
            Trial.status == TrialStatus.QUEUED,
            or_(Trial.queued_at.is_(None), Trial.queued_at < before),
        )
        .order_by(Trial.id)
    )
    rows = (await session.execute(statement)).all()
    return [QueuedTrial(trial_id=row[0], target=row[1]) for row in rows]


MARK_QUEUED_BATCH = 500  # ids per UPDATE: well within any driver's bound parameters


async def mark_queued(session: AsyncSession, trial_ids: Sequence[int], now: datetime) -> None:
    """Set `queued_at` of those trials that are still queued: they are sent (again) now."""
    for start in range(0, len(trial_ids), MARK_QUEUED_BATCH):
        await session.execute(
            update(Trial)
            .where(
                Trial.id.in_(trial_ids[start : start + MARK_QUEUED_BATCH]),
                Trial.status == TrialStatus.QUEUED,
            )
            .values(queued_at=now)
            .execution_options(synchronize_session=False)
        )


async def cancel_unstarted_trials(session: AsyncSession, experiment_id: int) -> int:
    """pending/queued -> cancelled for one experiment; returns how many were cancelled."""
    statement = (
        update(Trial)
        .where(
            Trial.experiment_id == experiment_id,
            Trial.status.in_([TrialStatus.PENDING, TrialStatus.QUEUED]),
        )
        .values(status=TrialStatus.CANCELLED, finished_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    result = await session.execute(statement)
    return int(result.rowcount)  # type: ignore[attr-defined]


def finished_values(now: datetime | None = None) -> dict[str, Any]:
    """Columns set on every trial that reaches a final status."""
    return {"finished_at": now or utcnow(), "lease_expires_at": None}


async def acquire_target_lease(
    session: AsyncSession, target: str, *, holder: str, ttl: timedelta
) -> bool:
    """Take or renew the lease on a target unless another holder's lease is still valid."""
    now = utcnow()
    renewed = await session.execute(
        update(TargetLease)
        .where(
            TargetLease.target == target,
            or_(TargetLease.holder == holder, TargetLease.expires_at < now),
        )
        .values(holder=holder, expires_at=now + ttl)
        .execution_options(synchronize_session=False)
    )
    if renewed.rowcount == 1:  # type: ignore[attr-defined]
        await session.commit()
        return True
    session.add(TargetLease(target=target, holder=holder, expires_at=now + ttl))
    try:
        await session.commit()
    except IntegrityError:
        # Another holder's valid lease is there (or was inserted a moment ago).
        await session.rollback()
        return False
    return True


async def release_target_lease(session: AsyncSession, target: str, *, holder: str) -> None:
    """Give a target back, if this holder still has it."""
    await session.execute(
        delete(TargetLease).where(TargetLease.target == target, TargetLease.holder == holder)
    )
    await session.commit()


async def get_optimization(session: AsyncSession, optimization_id: int) -> Optimization | None:
    """One optimization loop by id, read afresh."""
    return await session.get(Optimization, optimization_id, populate_existing=True)


async def latest_optimization(session: AsyncSession, experiment_id: int) -> Optimization | None:
    """The experiment's most recent optimization loop, if any."""
    query = (
        select(Optimization)
        .where(Optimization.experiment_id == experiment_id)
        .order_by(Optimization.id.desc())
        .limit(1)
        .execution_options(populate_existing=True)
    )
    return (await session.scalars(query)).first()


async def running_optimizations(session: AsyncSession) -> Sequence[Optimization]:
    """Every running optimization loop."""
    query = (
        select(Optimization)
        .where(Optimization.status == OptimizationStatus.RUNNING)
        .execution_options(populate_existing=True)
    )
    return (await session.scalars(query)).all()


async def running_optimization(session: AsyncSession, experiment_id: int) -> Optimization | None:
    """The experiment's running optimization loop, if one runs."""
    query = (
        select(Optimization)
        .where(
            Optimization.experiment_id == experiment_id,
            Optimization.status == OptimizationStatus.RUNNING,
        )
        .execution_options(populate_existing=True)
    )
    return (await session.scalars(query)).first()


async def claim_round(session: AsyncSession, optimization_id: int, *, seen: int) -> bool:
    """Take the next round of a running loop if no one took it since `seen`: one atomic UPDATE."""
    result = await session.execute(
        update(Optimization)
        .where(
            Optimization.id == optimization_id,
            Optimization.rounds == seen,
            Optimization.status == OptimizationStatus.RUNNING,
        )
        .values(rounds=seen + 1, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return result.rowcount == 1  # type: ignore[attr-defined]


async def get_suggestion(session: AsyncSession, suggestion_id: int) -> Suggestion | None:
    """One stored suggestion by id, read afresh."""
    return await session.get(Suggestion, suggestion_id, populate_existing=True)


async def list_suggestions(session: AsyncSession, experiment_id: int) -> Sequence[Suggestion]:
    """An experiment's stored suggestions, oldest first."""
    query = (
        select(Suggestion)
        .where(Suggestion.experiment_id == experiment_id)
        .order_by(Suggestion.id)
        .execution_options(populate_existing=True)
    )
    return (await session.scalars(query)).all()


async def accept_suggestion(session: AsyncSession, suggestion_id: int, *, trial_id: int) -> bool:
    """open -> accepted with its trial, atomically; False when it was accepted already."""
    result = await session.execute(
        update(Suggestion)
        .where(Suggestion.id == suggestion_id, Suggestion.status == SuggestionStatus.OPEN)
        .values(status=SuggestionStatus.ACCEPTED, trial_id=trial_id)
        .execution_options(synchronize_session=False)
    )
    return result.rowcount == 1  # type: ignore[attr-defined]


async def transition_claimed(
    session: AsyncSession,
    trial_id: int,
    *,
    worker: str,
    attempt: int,
    to_status: str,
    values: dict[str, Any] | None = None,
) -> bool:
    """Move a trial that `worker` claimed for `attempt` to `to_status`: one atomic UPDATE.

    The claim holds while the trial runs under that worker and attempt: once the reaper took
    it back (its lease ran out), that attempt is lost and the trial runs again."""
    statement = (
        update(Trial)
        .where(
            Trial.id == trial_id,
            Trial.worker == worker,
            Trial.attempts == attempt,
            Trial.status == TrialStatus.RUNNING,
        )
        .values(status=to_status, **(values or {}))
        .execution_options(synchronize_session=False)
    )
    return (await session.execute(statement)).rowcount == 1  # type: ignore[attr-defined]


async def active_key(session: AsyncSession, secret_hash: str) -> ApiKey | None:
    """The unrevoked key with this hash."""
    query = select(ApiKey).where(ApiKey.secret_hash == secret_hash, ApiKey.revoked_at.is_(None))
    return (await session.scalars(query)).first()


async def list_keys(session: AsyncSession) -> Sequence[ApiKey]:
    """Every key, oldest first, revoked ones included."""
    return (await session.scalars(select(ApiKey).order_by(ApiKey.id))).all()


async def find_keys(session: AsyncSession, ident: str) -> Sequence[ApiKey]:
    """Keys whose id or prefix is `ident`."""
    by_id = ApiKey.id == int(ident) if ident.isdigit() else ApiKey.prefix == ident
    query = select(ApiKey).where(or_(by_id, ApiKey.prefix == ident)).order_by(ApiKey.id)
    return (await session.scalars(query)).all()


async def find_request(
    session: AsyncSession, *, owner: str, operation: str, key: str
) -> IdempotentRequest | None:
    """The request an owner already made under this idempotency key."""
    query = select(IdempotentRequest).where(
        IdempotentRequest.owner == owner,
        IdempotentRequest.operation == operation,
        IdempotentRequest.key == key,
    )
    return (await session.scalars(query)).first()
