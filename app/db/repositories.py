"""Queries and atomic state changes on experiments and trials. No business rules here."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Boolean,
    Float,
    Integer,
    String,
    bindparam,
    delete,
    func,
    literal,
    null,
    or_,
    select,
    type_coerce,
    union_all,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import defer
from sqlalchemy.sql.functions import FunctionElement

from app.db.models import Experiment, Optimization, Suggestion, TargetLease, Trial, utcnow
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
    session: AsyncSession, *, owner: str | None, limit: int, offset: int
) -> Sequence[Experiment]:
    """Experiments of `owner` (everybody's when None), newest first."""
    query = select(Experiment)
    if owner is not None:
        query = query.where(Experiment.owner == owner)
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
) -> bool:
    """Move a trial to `to_status` only if it is in one of `from_statuses`: one atomic UPDATE.

    Returns whether this call made the change; a concurrent caller that lost the race gets False.
    """
    statement = (
        update(Trial)
        .where(Trial.id == trial_id, Trial.status.in_(list(from_statuses)))
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

    The claim holds while the trial runs under that worker and attempt, and also once the
    reaper put it back in the queue (its lease ran out while the worker could not reach the
    database) as long as no one claimed it again."""
    statement = (
        update(Trial)
        .where(
            Trial.id == trial_id,
            Trial.worker == worker,
            Trial.attempts == attempt,
            Trial.status.in_([TrialStatus.RUNNING, TrialStatus.QUEUED]),
        )
        .values(status=to_status, **(values or {}))
        .execution_options(synchronize_session=False)
    )
    return (await session.execute(statement)).rowcount == 1  # type: ignore[attr-defined]


# --- what GET /experiments and GET /experiments/{id} show, added up in the database ------
# Built once: these run on every read of an experiment, and building a statement costs more
# than running it. The ids are an expanding bind parameter.


class _MicrosecondsBetween(FunctionElement[int]):
    """`end - start` in whole microseconds, exactly (NULL when either is NULL)."""

    type = Integer()
    inherit_cache = True
    name = "microseconds_between"


@compiles(_MicrosecondsBetween, "sqlite")
def _microseconds_between_sqlite(element: Any, compiler: Any, **kw: Any) -> str:
    # Stored as 'YYYY-MM-DD HH:MM:SS.ffffff': whole seconds, then the digits. unixepoch()
    # (SQLite 3.38) parses a date in half the time of strftime('%s').
    start, end = (compiler.process(clause, **kw) for clause in element.clauses)
    if sqlite3.sqlite_version_info >= (3, 38):
        seconds = f"(unixepoch({end}) - unixepoch({start}))"
    else:
        seconds = (
            f"(CAST(strftime('%s', {end}) AS INTEGER) - CAST(strftime('%s', {start}) AS INTEGER))"
        )
    return (
        f"({seconds} * 1000000 + CAST(substr({end}, 21, 6) AS INTEGER)"
        f" - CAST(substr({start}, 21, 6) AS INTEGER))"
    )


@compiles(_MicrosecondsBetween, "mysql")
def _microseconds_between_mysql(element: Any, compiler: Any, **kw: Any) -> str:
    start, end = (compiler.process(clause, **kw) for clause in element.clauses)
    return f"TIMESTAMPDIFF(MICROSECOND, {start}, {end})"


class _JsonNumber(FunctionElement[float]):
    """The finite number at a JSON path of a column; NULL when it is anything else, or when the
    column is not valid JSON to the database (SQLite keeps what Python's json writes: NaN)."""

    type = Float()
    inherit_cache = True
    name = "json_number"


@compiles(_JsonNumber, "sqlite")
def _json_number_sqlite(element: Any, compiler: Any, **kw: Any) -> str:
    column, path = (compiler.process(clause, **kw) for clause in element.clauses)
    value = f"json_extract({column}, {path})"
    return (
        f"CASE WHEN json_valid({column}) THEN CASE WHEN json_type({column}, {path}) "
        f"IN ('integer', 'real') AND abs({value}) <= {sys.float_info.max!r} THEN {value} END END"
    )


@compiles(_JsonNumber, "mysql")
def _json_number_mysql(element: Any, compiler: Any, **kw: Any) -> str:
    # A JSON column of MariaDB/MySQL holds valid JSON only, and no infinity.
    column, path = (compiler.process(clause, **kw) for clause in element.clauses)
    return (
        f"CASE WHEN JSON_TYPE(JSON_EXTRACT({column}, {path})) IN "
        f"('INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL') "
        f"THEN CAST(JSON_EXTRACT({column}, {path}) AS DOUBLE) END"
    )


class _UnreadableJson(FunctionElement[bool]):
    """Whether a column is text that the database cannot read as JSON: SQLite keeps what
    Python's json writes (NaN, Infinity); MariaDB/MySQL keep valid JSON only."""

    type = Boolean()
    inherit_cache = True
    name = "unreadable_json"


@compiles(_UnreadableJson, "sqlite")
def _unreadable_json_sqlite(element: Any, compiler: Any, **kw: Any) -> str:
    (column,) = (compiler.process(clause, **kw) for clause in element.clauses)
    return f"(json_valid({column}) = 0)"


@compiles(_UnreadableJson, "mysql")
def _unreadable_json_mysql(element: Any, compiler: Any, **kw: Any) -> str:
    return "(1 = 0)"


_trials = Trial.__table__.c
_DURATION = _MicrosecondsBetween(_trials.started_at, _trials.finished_at)
_JSON = Trial.__table__.c.responses.type


@dataclass(frozen=True)
class StatusSummary:
    """An experiment's trials of one status, added up: how many, the first start, the last
    finish, how many have both a start and a finish with their total duration, and how many
    have started with the first and last start (all of them when there are two or fewer)."""

    experiment_id: int
    status: str
    count: int
    first_started_at: datetime | None
    last_finished_at: datetime | None
    timed: int
    timed_us: int
    started: int
    last_started_at: datetime | None

    @property
    def starts(self) -> list[datetime] | None:
        """Every start, when two or fewer trials started; None when there are more."""
        if self.started > 2:
            return None
        known = [self.first_started_at, self.last_started_at][: self.started]
        return [start for start in known if start is not None]


@dataclass(frozen=True)
class TrialsOverview:
    """What the trials of some experiments add up to (`summaries`, one per experiment and
    status), their best trials for one objective (`top`, see `top_trials`), and the newest
    optimization loop of each experiment that has one (`latest_loops`, experiment id -> id)."""

    summaries: list[StatusSummary]
    top: list[Any]
    latest_loops: dict[int, int]


@dataclass(frozen=True)
class _TopTrial:
    """A row of `top_trials`."""

    experiment_id: int
    id: int
    run_order: int
    config: dict[str, Any]
    responses: dict[str, Any] | None


def _top_trials_select(ids: Any, maximize: bool) -> Any:
    """The rows of `top_trials`: the value is read once per trial, as the sort key of a window
    (NULL, not a number, sorts last either way)."""
    value = _JsonNumber(_trials.responses, bindparam("path", type_=String()))
    succeeded = (_trials.experiment_id.in_(ids), _trials.status == TrialStatus.SUCCEEDED)
    ranked = (
        select(
            _trials.id,
            func.row_number()
            .over(
                partition_by=_trials.experiment_id,
                order_by=((value if maximize else -value).desc(), _trials.run_order, _trials.id),
            )
            .label("rank"),
        )
        .where(*succeeded)
        .subquery()
    )
    firsts = select(ranked.c.id).where(ranked.c.rank == 1)
    unreadable = select(_trials.id).where(*succeeded, _UnreadableJson(_trials.responses))
    picked = union_all(firsts, unreadable).subquery()
    table = Trial.__table__
    return select(
        table.c.experiment_id, table.c.id, table.c.run_order, table.c.config, table.c.responses
    ).join_from(table, picked, table.c.id == picked.c.id)


def _overview_statement(maximize: bool) -> Any:
    """One round trip for a page of experiments: the summaries, the top trials and the newest
    loops as the rows of one UNION ALL, told apart by their first column."""
    ids = bindparam("experiment_ids", expanding=True)
    nothing = null()
    summaries = (
        select(
            literal("summary").label("kind"),
            _trials.experiment_id,
            _trials.status,
            func.count().label("n1"),
            func.count(_DURATION).label("n2"),
            func.sum(_DURATION).label("n3"),
            func.count(_trials.started_at).label("n4"),
            func.min(_trials.started_at).label("t1"),
            func.max(_trials.finished_at).label("t2"),
            func.max(_trials.started_at).label("t3"),
            type_coerce(nothing, _JSON).label("config"),
            type_coerce(nothing, _JSON).label("responses"),
        )
        .where(_trials.experiment_id.in_(ids))
        .group_by(_trials.experiment_id, _trials.status)
    )
    top = _top_trials_select(bindparam("top_ids", expanding=True), maximize).subquery()
    tops = select(
        literal("top"),
        top.c.experiment_id,
        nothing,
        top.c.id,
        top.c.run_order,
        nothing,
        nothing,
        nothing,
        nothing,
        nothing,
        top.c.config,
        top.c.responses,
    )
    loops = (
        select(
            literal("loop"),
            Optimization.experiment_id,
            nothing,
            func.max(Optimization.id),
            *(nothing for _ in range(8)),
        )
        .where(Optimization.experiment_id.in_(ids))
        .group_by(Optimization.experiment_id)
    )
    return union_all(summaries, tops, loops)


_OVERVIEW = {True: _overview_statement(True), False: _overview_statement(False)}
_TOP_TRIALS = {
    maximize: _top_trials_select(bindparam("top_ids", expanding=True), maximize)
    for maximize in (True, False)
}
_RUNNING_STARTS = select(_trials.experiment_id, _trials.started_at).where(
    _trials.experiment_id.in_(bindparam("experiment_ids", expanding=True)),
    _trials.status == TrialStatus.RUNNING,
    _trials.started_at.is_not(None),
)
_LOOPS = (
    select(Optimization)
    .where(Optimization.id.in_(bindparam("optimization_ids", expanding=True)))
    .execution_options(populate_existing=True)
)
_LOOP_TRIALS = (
    select(_trials.optimization_id, func.count())
    .where(_trials.optimization_id.in_(bindparam("optimization_ids", expanding=True)))
    .group_by(_trials.optimization_id)
)


async def overview_trials(
    session: AsyncSession,
    experiment_ids: Sequence[int],
    *,
    top_ids: Sequence[int],
    response: str,
    maximize: bool,
) -> TrialsOverview:
    """The trials of `experiment_ids` added up, and the top trials of `top_ids` (some of them)
    for `response` (see `top_trials`), in one query."""
    if not experiment_ids:
        return TrialsOverview(summaries=[], top=[], latest_loops={})
    params = {
        "experiment_ids": list(experiment_ids),
        "top_ids": list(top_ids),
        "path": f'$."{response}"',
    }
    rows = (await session.execute(_OVERVIEW[maximize], params)).all()
    summaries = [
        StatusSummary(
            experiment_id=row[1],
            status=row[2],
            count=int(row[3]),
            first_started_at=row[7],
            last_finished_at=row[8],
            timed=int(row[4]),
            timed_us=int(row[5] or 0),
            started=int(row[6]),
            last_started_at=row[9],
        )
        for row in rows
        if row[0] == "summary"
    ]
    top = [
        _TopTrial(
            experiment_id=row[1], id=row[3], run_order=row[4], config=row[10], responses=row[11]
        )
        for row in rows
        if row[0] == "top"
    ]
    loops = {int(row[1]): int(row[3]) for row in rows if row[0] == "loop"}
    return TrialsOverview(summaries=summaries, top=top, latest_loops=loops)


async def top_trials(
    session: AsyncSession, experiment_ids: Sequence[int], *, response: str, maximize: bool
) -> Sequence[Any]:
    """Per experiment, the succeeded trial with the highest (or lowest) number for `response`,
    the first in run order among equal ones, and every succeeded trial whose responses the
    database cannot read as JSON; rows of (experiment_id, id, run_order, config, responses)."""
    if not experiment_ids:
        return []
    params = {"top_ids": list(experiment_ids), "path": f'$."{response}"'}
    return (await session.execute(_TOP_TRIALS[maximize], params)).all()


async def running_trial_starts(
    session: AsyncSession, experiment_ids: Sequence[int]
) -> list[tuple[int, datetime]]:
    """(experiment id, start) of every running trial that has started."""
    if not experiment_ids:
        return []
    params = {"experiment_ids": list(experiment_ids)}
    return [(row[0], row[1]) for row in (await session.execute(_RUNNING_STARTS, params)).all()]


async def get_optimizations(
    session: AsyncSession, optimization_ids: Sequence[int]
) -> dict[int, Optimization]:
    """Optimization loops by id, read afresh."""
    if not optimization_ids:
        return {}
    params = {"optimization_ids": list(optimization_ids)}
    return {loop.id: loop for loop in (await session.scalars(_LOOPS, params)).all()}


async def count_loop_trials(
    session: AsyncSession, optimization_ids: Sequence[int]
) -> dict[int, int]:
    """How many trials each optimization loop has made (loops with none are left out)."""
    if not optimization_ids:
        return {}
    params = {"optimization_ids": list(optimization_ids)}
    rows = (await session.execute(_LOOP_TRIALS, params)).all()
    return {int(row[0]): int(row[1]) for row in rows}
