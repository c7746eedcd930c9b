"""What GET /experiments and GET /experiments/{id} show, added up in the database: counts,
timing and the best trials per experiment, with the dialect extensions (SQLite, MariaDB) they
need."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Float,
    Integer,
    String,
    bindparam,
    func,
    literal,
    null,
    select,
    type_coerce,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from app.db.models import Optimization, Trial
from app.statuses import TrialStatus

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
_LOOP_TRIAL_TIMES = select(_trials.optimization_id, _trials.started_at, _trials.finished_at).where(
    _trials.optimization_id.in_(bindparam("optimization_ids", expanding=True)),
    _trials.started_at.is_not(None),
    _trials.finished_at.is_not(None),
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


async def loop_trial_times(
    session: AsyncSession, optimization_ids: Sequence[int]
) -> dict[int, list[tuple[datetime, datetime]]]:
    """When each trial of these loops started and ended, by loop (trials not yet started or
    not yet ended, and loops with none, are left out)."""
    if not optimization_ids:
        return {}
    params = {"optimization_ids": list(optimization_ids)}
    found: dict[int, list[tuple[datetime, datetime]]] = {}
    for loop, started, finished in (await session.execute(_LOOP_TRIAL_TIMES, params)).all():
        found.setdefault(int(loop), []).append((started, finished))
    return found
