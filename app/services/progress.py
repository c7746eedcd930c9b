"""The read model of experiments: each with its progress (trial counts by status), best
result so far, timing and latest optimization loop, as a status poll or a listing sees it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import overview, rows
from app.db.models import Experiment, Optimization, Trial, utcnow
from app.services import tallies
from app.services.access import experiment_of, visible_experiment
from app.services.api_keys import Principal
from app.services.errors import NotFoundError
from app.services.tallies import TallyCache
from app.statuses import TrialStatus

ACTIVE_STATUSES = (TrialStatus.PENDING, TrialStatus.QUEUED, TrialStatus.RUNNING)


@dataclass(frozen=True)
class Best:
    """The best succeeded trial so far for the objective."""

    trial_id: int
    value: float
    config: dict[str, Any]


@dataclass(frozen=True)
class Timing:
    """How long the experiment has run and how long it will take, at one trial at a time (a
    target runs one trial at a time): the mean duration of the finished trials times what is
    left, less what the running trials have done. None until a trial has finished."""

    elapsed_s: float | None
    mean_trial_s: float | None
    remaining_s: float | None
    estimated_finish_at: datetime | None


@dataclass(frozen=True)
class LoopProgress:
    """An optimization loop, how many trials of its budget it has used and, with a budget of
    trial time, how many seconds of it (`seconds_used`)."""

    optimization: Optimization
    trials_used: int
    seconds_used: float | None = None


def loop_seconds_used(loop: Optimization, trials: Sequence[Trial]) -> float | None:
    """With a budget of trial time, the seconds the loop's trials have taken, each from its
    start to its end (a resize or restart included); None without such a budget."""
    mine = [(t.started_at, t.finished_at) for t in trials if t.optimization_id == loop.id]
    return _seconds_used(loop, mine)


@dataclass(frozen=True)
class ExperimentDetail:
    """An experiment with its progress (trial counts by status), its latest optimization loop
    and, if asked, its trials."""

    experiment: Experiment
    progress: dict[str, int]
    best: Best | None
    timing: Timing
    optimization: LoopProgress | None = None
    trials: Sequence[Trial] = field(default_factory=list)
    replayed: bool = False


async def get(
    session: AsyncSession, *, experiment_id: int, with_trials: bool = False
) -> ExperimentDetail:
    """One experiment with its progress."""
    return await _detail(session, await experiment_of(session, experiment_id), with_trials)


async def view(
    session: AsyncSession, *, experiment_id: int, viewer: Principal, cache: TallyCache
) -> ExperimentDetail:
    """One experiment as a status poll sees it, 404 unless `viewer` may see it: its row read
    once, and what its trials add up to from `cache` while they have not changed."""
    experiment = await visible_experiment(session, experiment_id=experiment_id, viewer=viewer)
    return (await _summaries(session, [experiment], cache))[0]


async def get_all(
    session: AsyncSession,
    *,
    viewer: Principal,
    limit: int,
    offset: int,
    status: str | None = None,
    target: str | None = None,
    cache: TallyCache | None = None,
) -> list[ExperimentDetail]:
    """The experiments `viewer` may see, newest first, of one `status` and `target` when
    given, with their progress (what their trials add up to from `cache` while they have not
    changed)."""
    owner = None if viewer.admin else viewer.owner
    experiments = await rows.list_experiments(
        session, owner=owner, limit=limit, offset=offset, status=status, target=target
    )
    return await _summaries(session, experiments, cache)


async def _detail(
    session: AsyncSession, experiment: Experiment, with_trials: bool
) -> ExperimentDetail:
    if not with_trials:
        return (await _summaries(session, [experiment]))[0]
    trials = await rows.list_trials(session, experiment.id)
    return ExperimentDetail(
        experiment=experiment,
        progress=_progress(trials),
        best=_best(experiment, trials),
        timing=timing_of(trials, utcnow()),
        optimization=_loop(await rows.latest_optimization(session, experiment.id), trials),
        trials=trials,
    )


async def _summaries(
    session: AsyncSession, experiments: Sequence[Experiment], cache: TallyCache | None = None
) -> list[ExperimentDetail]:
    """The details of experiments without their trials, from what their trials add up to
    (see `tallies.tallies`); each loop is read afresh (its status changes on its own)."""
    if not experiments:
        return []
    counted = await tallies.tallies(session, experiments, cache)
    loops = await overview.get_optimizations(
        session, [t.latest_loop for t in counted.values() if t.latest_loop is not None]
    )
    timed = [loop.id for loop in loops.values() if loop.budget_seconds is not None]
    times = await overview.loop_trial_times(session, timed)
    bests = _bests(experiments, [row for t in counted.values() for row in t.top])
    now = utcnow()
    details = []
    for experiment in experiments:
        tally = counted[experiment.id]
        loop = loops.get(tally.latest_loop or 0)
        details.append(
            ExperimentDetail(
                experiment=experiment,
                progress=_progress_of(tally.summaries),
                best=bests.get(experiment.id),
                timing=_timing(_run_times_of(tally.summaries, tally.running_starts), now),
                optimization=(
                    None
                    if loop is None
                    else LoopProgress(
                        optimization=loop,
                        trials_used=tally.loop_trials,
                        seconds_used=_seconds_used(loop, times.get(loop.id, [])),
                    )
                ),
            )
        )
    return details


async def get_trials(
    session: AsyncSession, *, experiment_id: int, viewer: Principal
) -> Sequence[Trial]:
    """An experiment's trials in run order, without their raw output; 404 unless `viewer`
    may see the experiment."""
    await visible_experiment(session, experiment_id=experiment_id, viewer=viewer)
    return await rows.list_trials(session, experiment_id, raw_output=False)


async def get_trial(session: AsyncSession, *, trial_id: int) -> Trial:
    """One trial."""
    trial = await rows.get_trial(session, trial_id)
    if trial is None:
        raise NotFoundError("trial", trial_id)
    return trial


async def loop_progress(session: AsyncSession, loop: Optimization) -> LoopProgress:
    """A loop with the number of trials it has run so far."""
    trials = await rows.list_trials(session, loop.experiment_id)
    progress = _loop(loop, trials)
    assert progress is not None
    return progress


def _loop(loop: Optimization | None, trials: Sequence[Trial]) -> LoopProgress | None:
    if loop is None:
        return None
    return LoopProgress(
        optimization=loop,
        trials_used=sum(t.optimization_id == loop.id for t in trials),
        seconds_used=loop_seconds_used(loop, trials),
    )


def _seconds_used(
    loop: Optimization, times: Sequence[tuple[datetime | None, datetime | None]]
) -> float | None:
    """The seconds from start to end of the trials of `times` (one not started or not ended
    yet spends none), when the loop has a budget of trial time."""
    if loop.budget_seconds is None:
        return None
    return sum(
        (finished - started).total_seconds()
        for started, finished in times
        if started is not None and finished is not None
    )


def _progress(trials: Sequence[Trial]) -> dict[str, int]:
    counts = {status.value: 0 for status in TrialStatus}
    for trial in trials:
        counts[trial.status] += 1
    counts["total"] = len(trials)
    return counts


def _progress_of(summaries: Sequence[overview.StatusSummary]) -> dict[str, int]:
    """`_progress` from the database's counts by status."""
    counts = {status.value: 0 for status in TrialStatus}
    for summary in summaries:
        counts[summary.status] += summary.count
    counts["total"] = sum(s.count for s in summaries)
    return counts


FINISHED_STATUSES = (TrialStatus.SUCCEEDED, TrialStatus.FAILED)


WAITING_STATUSES = (TrialStatus.PENDING, TrialStatus.QUEUED)


MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True)
class _RunTimes:
    """What the timing of an experiment needs from its trials: the first start and the last
    finish of any trial, whether any is left to run, how many wait, the finished (succeeded or
    failed) trials' count and total duration, and the starts of the running ones."""

    first_start: datetime | None
    last_finish: datetime | None
    active: bool
    waiting: int
    finished: int
    finished_us: int
    running_starts: Sequence[datetime]


def _run_times_of(
    summaries: Sequence[overview.StatusSummary], running_starts: Sequence[datetime]
) -> _RunTimes:
    starts = [s.first_started_at for s in summaries if s.first_started_at is not None]
    finishes = [s.last_finished_at for s in summaries if s.last_finished_at is not None]
    finished = [s for s in summaries if s.status in FINISHED_STATUSES]
    return _RunTimes(
        first_start=min(starts, default=None),
        last_finish=max(finishes, default=None),
        active=any(s.status in ACTIVE_STATUSES for s in summaries),
        waiting=sum(s.count for s in summaries if s.status in WAITING_STATUSES),
        finished=sum(s.timed for s in finished),
        finished_us=sum(s.timed_us for s in finished),
        running_starts=running_starts,
    )


def timing_of(trials: Sequence[Trial], now: datetime) -> Timing:
    """Elapsed and estimated remaining time of an experiment's trials at `now`; once no trial
    is left to run, the clock stops at the last finish."""
    starts = [t.started_at for t in trials if t.started_at is not None]
    finishes = [t.finished_at for t in trials if t.finished_at is not None]
    durations = [
        (t.finished_at - t.started_at) // MICROSECOND
        for t in trials
        if t.status in FINISHED_STATUSES and t.started_at is not None and t.finished_at is not None
    ]
    times = _RunTimes(
        first_start=min(starts, default=None),
        last_finish=max(finishes, default=None),
        active=any(t.status in ACTIVE_STATUSES for t in trials),
        waiting=sum(t.status in WAITING_STATUSES for t in trials),
        finished=len(durations),
        finished_us=sum(durations),
        running_starts=[
            t.started_at
            for t in trials
            if t.status == TrialStatus.RUNNING and t.started_at is not None
        ],
    )
    return _timing(times, now)


def _timing(times: _RunTimes, now: datetime) -> Timing:
    end = now if times.active or times.last_finish is None else times.last_finish
    first = times.first_start
    elapsed = None if first is None else (end - first).total_seconds()
    if not times.finished:
        return Timing(
            elapsed_s=elapsed, mean_trial_s=None, remaining_s=None, estimated_finish_at=None
        )
    # The mean of exact durations (integer microseconds, as the database adds them up).
    mean = times.finished_us / 1e6 / times.finished
    running = [max(mean - (now - start).total_seconds(), 0.0) for start in times.running_starts]
    remaining = times.waiting * mean + sum(running)
    return Timing(
        elapsed_s=elapsed,
        mean_trial_s=mean,
        remaining_s=remaining,
        estimated_finish_at=end + timedelta(seconds=remaining),
    )


def _best(experiment: Experiment, trials: Sequence[Trial]) -> Best | None:
    objective = experiment.parsed_objective
    response, goal = objective.response, objective.goal
    scored = [
        (value, t)
        for t in trials
        if t.status == TrialStatus.SUCCEEDED and (value := measured_value(t, response)) is not None
    ]
    if not scored:
        return None
    pick = max if goal == "maximize" else min
    value, trial = pick(scored, key=lambda pair: pair[0])
    return Best(trial_id=trial.id, value=value, config=trial.config)


def _bests(experiments: Sequence[Experiment], top: Sequence[Any]) -> dict[int, Best]:
    """`_best` of each experiment from the database's pick of its top trial for its objective
    and any trial whose responses only Python could read (see `overview.top_trials`):
    the same choice as `_best` over every trial in run order."""
    objectives = {e.id: (e.parsed_objective.response, e.parsed_objective.goal) for e in experiments}
    candidates: dict[int, list[Any]] = {}
    for row in sorted(top, key=lambda r: (r.run_order, r.id)):
        candidates.setdefault(row.experiment_id, []).append(row)
    bests: dict[int, Best] = {}
    for experiment_id, trials in candidates.items():
        response, goal = objectives[experiment_id]
        scored = [(v, t) for t in trials if (v := measured_value(t, response)) is not None]
        if scored:
            pick = max if goal == "maximize" else min
            value, trial = pick(scored, key=lambda pair: pair[0])
            bests[experiment_id] = Best(trial_id=trial.id, value=value, config=trial.config)
    return bests


def measured_value(trial: Trial, response: str) -> float | None:
    """The trial's finite value of `response`, or None when it has none."""
    value = (trial.responses or {}).get(response)
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None
