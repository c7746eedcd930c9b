"""Use cases on experiments: create (validate and plan), read, start, cancel, observe, analyse."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import repositories
from app.db.models import Experiment, Optimization, Trial, utcnow
from app.queue import BrokerUnavailableError, TaskQueue
from app.services import designs, tallies
from app.services import idempotency as idempotent
from app.services.api_keys import Principal
from app.services.errors import ConflictError, NotFoundError, UnavailableError
from app.services.idempotency import Idempotency
from app.services.tallies import TallyCache
from app.statuses import ExperimentStatus, OptimizationStatus, TrialSource, TrialStatus
from app.targets import TargetSpec
from experiments import analysis
from experiments.analysis.optimize import check_desirability
from experiments.constraints import parse_constraints
from experiments.errors import DomainError
from experiments.factors import NAME_PATTERN, FactorSpace
from experiments.goals import check_goal

DESIRABILITY_FIELDS = ("goal", "low", "high", "target", "weight", "importance")
MIN_TRIALS_TO_FIT = 2
MAX_OBSERVATIONS = 1000
ACTIVE_STATUSES = (TrialStatus.PENDING, TrialStatus.QUEUED, TrialStatus.RUNNING)
CREATE_OPERATION = "POST /experiments"


@dataclass(frozen=True)
class NewExperiment:
    """What a client submits to create an experiment."""

    name: str
    target: str
    factors: list[dict[str, Any]]
    objective: dict[str, Any]
    owner: str
    design: dict[str, Any] | None = None
    constraints: list[str] = field(default_factory=list)


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
    """An optimization loop and how many trials of its budget it has used."""

    optimization: Optimization
    trials_used: int


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


@dataclass(frozen=True)
class AnalysisReport:
    """A fitted model of one response, with what was left out of the fit."""

    response: str
    trials_used: int
    trials_failed: int
    result: dict[str, Any]


async def create(
    session: AsyncSession,
    *,
    new: NewExperiment,
    targets: Mapping[str, TargetSpec],
    max_design_runs: int,
    idempotency: Idempotency | None = None,
) -> ExperimentDetail:
    """Validate the factor space, objective and target, plan the design and store it all.

    With an idempotency key, a request already made returns the experiment it made
    (`replayed`); the key is stored in the experiment's own transaction, so two concurrent
    requests with one key make one experiment."""
    if idempotency is not None:
        made = await idempotent.earlier(
            session, owner=new.owner, operation=CREATE_OPERATION, idempotency=idempotency
        )
        if made is not None:
            return replace(await get(session, experiment_id=made, with_trials=True), replayed=True)
    target = target_of(targets, new.target)
    space, target_notes = target.prepared_space(FactorSpace.from_dicts(new.factors))
    objective = _check_objective(new.objective, target)
    experiment = Experiment(
        name=new.name,
        target=target.name,
        factors=space.to_dicts(),
        design=new.design,
        design_notes=[],
        constraints=list(new.constraints),
        objective=objective,
        status=ExperimentStatus.PLANNED,
        owner=new.owner,
    )
    design = None
    if new.design is not None:
        # Planning is pure Python for tens of milliseconds: off the event loop, so the API
        # answers other requests meanwhile.
        design = await asyncio.to_thread(
            designs.planned,
            space,
            design=new.design,
            constraints=new.constraints,
            max_design_runs=max_design_runs,
        )
        experiment.design_notes = [*target_notes, *design.notes]
        experiment.design_report = designs.report_of(design)
    else:
        parse_constraints(new.constraints, space)
    session.add(experiment)
    await session.flush()
    if design is not None and design.points:
        await session.execute(insert(Trial), designs.trial_rows(design, experiment.id))
    if idempotency is not None:
        idempotent.remember(
            session,
            owner=new.owner,
            operation=CREATE_OPERATION,
            idempotency=idempotency,
            experiment_id=experiment.id,
        )
    try:
        await session.commit()
    except IntegrityError:
        await session.rollback()
        # A concurrent request with the same key committed first: answer with its experiment.
        made = idempotency and await idempotent.earlier(
            session, owner=new.owner, operation=CREATE_OPERATION, idempotency=idempotency
        )
        if not made:
            raise
        return replace(await get(session, experiment_id=made, with_trials=True), replayed=True)
    return await get(session, experiment_id=experiment.id, with_trials=True)


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
    cache: TallyCache | None = None,
) -> list[ExperimentDetail]:
    """The experiments `viewer` may see, newest first, with their progress (what their
    trials add up to from `cache` while they have not changed)."""
    owner = None if viewer.admin else viewer.owner
    experiments = await repositories.list_experiments(
        session, owner=owner, limit=limit, offset=offset
    )
    return await _summaries(session, experiments, cache)


async def _detail(
    session: AsyncSession, experiment: Experiment, with_trials: bool
) -> ExperimentDetail:
    if not with_trials:
        return (await _summaries(session, [experiment]))[0]
    trials = await repositories.list_trials(session, experiment.id)
    return ExperimentDetail(
        experiment=experiment,
        progress=_progress(trials),
        best=_best(experiment, trials),
        timing=timing_of(trials, utcnow()),
        optimization=_loop(await repositories.latest_optimization(session, experiment.id), trials),
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
    loops = await repositories.get_optimizations(
        session, [t.latest_loop for t in counted.values() if t.latest_loop is not None]
    )
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
                    else LoopProgress(optimization=loop, trials_used=tally.loop_trials)
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
    return await repositories.list_trials(session, experiment_id, raw_output=False)


async def get_trial(session: AsyncSession, *, trial_id: int) -> Trial:
    """One trial."""
    trial = await repositories.get_trial(session, trial_id)
    if trial is None:
        raise NotFoundError("trial", trial_id)
    return trial


async def start(
    session: AsyncSession,
    *,
    experiment_id: int,
    queue: TaskQueue,
    targets: Mapping[str, TargetSpec],
    owner: str,
    idempotency: Idempotency | None = None,
) -> ExperimentDetail:
    """Queue every pending trial in run order; each is committed as queued before it is sent.

    A start retried with the idempotency key of one that succeeded sends nothing (a start
    without a key sends nothing twice either: only pending trials are sent)."""
    operation = f"POST /experiments/{experiment_id}/start"
    if idempotency is not None and await idempotent.earlier(
        session, owner=owner, operation=operation, idempotency=idempotency
    ):
        return replace(await get(session, experiment_id=experiment_id), replayed=True)
    experiment = await experiment_of(session, experiment_id)
    if experiment.status == ExperimentStatus.CANCELLED:
        raise ConflictError(f"experiment {experiment_id} was cancelled; it cannot be started")
    target = target_of(targets, experiment.target)
    if not target.runnable:
        raise ConflictError(
            f"target '{target.name}' is {target.kind}: it runs nothing; "
            f"record results with POST /experiments/{experiment_id}/observations"
        )
    pending = await repositories.list_trials(session, experiment_id, status=TrialStatus.PENDING)
    ids = [t.id for t in pending]
    await send_trials(session, experiment=experiment, trial_ids=ids, queue=queue)
    if idempotency is not None:
        idempotent.remember(
            session,
            owner=owner,
            operation=operation,
            idempotency=idempotency,
            experiment_id=experiment_id,
        )
        try:
            await session.commit()
        except IntegrityError:  # a concurrent retry recorded the same start
            await session.rollback()
    return await get(session, experiment_id=experiment_id)


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
        if await repositories.transition(
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
            await repositories.transition(
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


async def cancel(session: AsyncSession, *, experiment_id: int) -> ExperimentDetail:
    """Cancel every trial that has not started and the running optimization loop.

    Running trials are stopped by their workers, which poll for this (`cancel_poll_seconds`):
    each stops its target's run (its sysbench processes), records the trial `cancelled` with
    no result and releases the target, within seconds. A trial whose worker is gone is
    cancelled by the reaper when its lease expires."""
    experiment = await experiment_of(session, experiment_id)
    await repositories.cancel_unstarted_trials(session, experiment_id)
    loop = await repositories.running_optimization(session, experiment_id)
    if loop is not None:
        loop.status = OptimizationStatus.CANCELLED
        loop.stop_reason = "the experiment was cancelled"
        loop.finished_at = utcnow()
    experiment.status = ExperimentStatus.CANCELLED
    await session.commit()
    return await get(session, experiment_id=experiment_id)


async def record_observations(
    session: AsyncSession,
    *,
    experiment_id: int,
    observations: Sequence[Mapping[str, Any]],
    targets: Mapping[str, TargetSpec],
) -> list[Trial]:
    """Store results measured elsewhere (manual targets): all of them or, on any error, none.

    An observation whose configuration matches a pending planned trial fills that trial;
    any other becomes a new trial.
    """
    experiment = await experiment_of(session, experiment_id)
    target = target_of(targets, experiment.target)
    if target.runnable:
        raise ConflictError(
            f"target '{target.name}' is {target.kind}: its trials are run by the workers; "
            "observations are recorded only for manual targets"
        )
    if experiment.status == ExperimentStatus.CANCELLED:
        raise ConflictError(
            f"experiment {experiment_id} was cancelled: it takes no more observations"
        )
    if not observations:
        raise DomainError("observations", "must hold at least one observation")
    if len(observations) > MAX_OBSERVATIONS:
        raise DomainError("observations", f"at most {MAX_OBSERVATIONS} per request")
    space = FactorSpace.from_dicts(experiment.factors)
    checked = [
        (_observed_config(space, item, i), _observed_responses(item, i))
        for i, item in enumerate(observations)
    ]
    pending = list(
        await repositories.list_trials(session, experiment_id, status=TrialStatus.PENDING)
    )
    next_order = await repositories.max_run_order(session, experiment_id)
    now = utcnow()
    recorded: list[Trial] = []
    for config, responses in checked:
        trial = next((t for t in pending if t.config == config), None)
        if trial is None:
            next_order += 1
            trial = new_trial(
                space,
                experiment_id=experiment_id,
                run_order=next_order,
                config=config,
                point_type="observed",
                source=TrialSource.OBSERVATION,
            )
            session.add(trial)
        else:
            pending.remove(trial)
        trial.status = TrialStatus.SUCCEEDED
        trial.responses = responses
        trial.started_at = trial.finished_at = now
        recorded.append(trial)
    looping = await repositories.running_optimization(session, experiment_id) is not None
    done = not pending and not looping
    experiment.status = ExperimentStatus.COMPLETED if done else ExperimentStatus.RUNNING
    await session.commit()
    return recorded


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


@dataclass(frozen=True)
class FitInputs:
    """What a fit of one response needs, gathered from an experiment's succeeded trials."""

    experiment: Experiment
    response: str
    space: FactorSpace
    trials_used: int
    trials_failed: int
    arguments: dict[str, Any]


async def fit_inputs(
    session: AsyncSession,
    *,
    experiment_id: int,
    response: str | None,
    targets: Mapping[str, TargetSpec],
) -> FitInputs:
    """The configurations, values, limits and goals of the trials that measured `response` (the
    objective's by default) and every response its objective constrains; DomainError when fewer
    than two did."""
    experiment = await experiment_of(session, experiment_id)
    name = response or experiment.objective["response"]
    target = targets.get(experiment.target)
    if target is not None:
        target.check_response(name, "response")
    trials = await repositories.list_trials(session, experiment_id)
    bounds = experiment.objective.get("constraints") or []
    goals = experiment.objective.get("desirability") or []
    needed = [name, *(bound["response"] for bound in bounds), *(g["response"] for g in goals)]
    used = [
        t
        for t in trials
        if t.status == TrialStatus.SUCCEEDED and all(_value(t, n) is not None for n in needed)
    ]
    failed = sum(t.status == TrialStatus.FAILED for t in trials)
    if len(used) < MIN_TRIALS_TO_FIT:
        raise DomainError(
            "response",
            f"'{name}' was measured by {len(used)} succeeded trial(s) of experiment "
            f"{experiment_id} ({failed} failed); a fit needs at least {MIN_TRIALS_TO_FIT}",
        )
    space = FactorSpace.from_dicts(experiment.factors)
    arguments = {
        "configs": [t.config for t in used],
        "values": [_value(t, name) for t in used],
        "goal": experiment.objective["goal"],
        "constraints": parse_constraints(experiment.constraints, space),
        "labels": [f"trial {t.id}" for t in used],
        "whole_plots": [t.whole_plot for t in used],
        "response": name,
        "limits": [
            analysis.ResponseLimit(
                response=bound["response"],
                values=[_value(t, bound["response"]) for t in used],  # type: ignore[misc]
                min=bound["min"],
                max=bound["max"],
            )
            for bound in bounds
        ],
        "desirability": [
            analysis.ResponseGoal(
                values=[_value(t, g["response"]) for t in used],  # type: ignore[misc]
                **g,
            )
            for g in goals
        ],
    }
    return FitInputs(
        experiment=experiment,
        response=name,
        space=space,
        trials_used=len(used),
        trials_failed=failed,
        arguments=arguments,
    )


async def analyze(
    session: AsyncSession,
    *,
    experiment_id: int,
    response: str | None,
    model: str,
    targets: Mapping[str, TargetSpec],
) -> AnalysisReport:
    """Fit a model of one response on the succeeded trials and find its optimum."""
    inputs = await fit_inputs(
        session, experiment_id=experiment_id, response=response, targets=targets
    )
    fitted = analysis.fit(inputs.space, model=model, **inputs.arguments)
    return AnalysisReport(
        response=inputs.response,
        trials_used=inputs.trials_used,
        trials_failed=inputs.trials_failed,
        result=fitted.as_dict(),
    )


async def visible_experiment(
    session: AsyncSession, *, experiment_id: int, viewer: Principal
) -> Experiment:
    """The experiment, read afresh; NotFoundError unless it exists and `viewer` may see it:
    another owner's experiment is answered exactly like a missing one, so its existence leaks
    nothing."""
    experiment = await repositories.get_experiment(session, experiment_id)
    if experiment is None or not viewer.sees(experiment.owner):
        raise NotFoundError("experiment", experiment_id)
    return experiment


async def check_trial_visible(session: AsyncSession, *, trial_id: int, viewer: Principal) -> None:
    """NotFoundError unless the trial exists and `viewer` may see its experiment."""
    trial = await repositories.get_trial(session, trial_id)
    experiment = trial and await repositories.get_experiment(session, trial.experiment_id)
    if experiment is None or not viewer.sees(experiment.owner):
        raise NotFoundError("trial", trial_id)


async def experiment_of(session: AsyncSession, experiment_id: int) -> Experiment:
    """The experiment, or NotFoundError."""
    experiment = await repositories.get_experiment(session, experiment_id)
    if experiment is None:
        raise NotFoundError("experiment", experiment_id)
    return experiment


def target_of(targets: Mapping[str, TargetSpec], name: str) -> TargetSpec:
    """The named target, or DomainError naming `target` and the known ones."""
    if name not in targets:
        raise DomainError("target", f"unknown target '{name}'; known: {', '.join(sorted(targets))}")
    return targets[name]


def _check_objective(objective: Mapping[str, Any], target: TargetSpec) -> dict[str, Any]:
    response, goal = objective.get("response"), objective.get("goal", "maximize")
    if not isinstance(response, str) or not NAME_PATTERN.match(response):
        raise DomainError("objective.response", "must be a response name like 'tps'")
    goal = check_goal(goal, "objective.goal")
    target.check_response(response, "objective.response")
    bounds = []
    for i, bound in enumerate(objective.get("constraints") or []):
        where = f"objective.constraints.{i}"
        name, low, high = bound.get("response"), bound.get("min"), bound.get("max")
        if not isinstance(name, str) or not NAME_PATTERN.match(name) or name == response:
            raise DomainError(f"{where}.response", "must name another response, like 'abort_rate'")
        target.check_response(name, f"{where}.response")
        if low is None and high is None:
            raise DomainError(where, "give min, max or both")
        if low is not None and high is not None and low > high:
            raise DomainError(f"{where}.max", "must not be below min")
        bounds.append({"response": name, "min": low, "max": high})
    goals = []
    for i, item in enumerate(objective.get("desirability") or []):
        where = f"objective.desirability.{i}"
        name = item.get("response")
        if not isinstance(name, str) or not NAME_PATTERN.match(name):
            raise DomainError(f"{where}.response", "must be a response name")
        target.check_response(name, f"{where}.response")
        if name in (g["response"] for g in goals):
            raise DomainError(f"{where}.response", f"'{name}' has a goal already")
        try:
            check_desirability(
                item.get("goal", "maximize"),
                item.get("low"),  # type: ignore[arg-type]
                item.get("high"),  # type: ignore[arg-type]
                item.get("target"),
                item.get("weight", 1.0),
            )
        except DomainError as error:
            raise DomainError(where, error.rule) from None
        goals.append({k: item.get(k) for k in DESIRABILITY_FIELDS} | {"response": name})
    return {"response": response, "goal": goal, "constraints": bounds, "desirability": goals}


def _observed_config(space: FactorSpace, item: Mapping[str, Any], i: int) -> dict[str, Any]:
    config = item.get("config")
    if not isinstance(config, Mapping):
        raise DomainError(f"observations.{i}.config", "must be an object of factor values")
    try:
        return space.check_config(config)
    except DomainError as error:
        raise DomainError(f"observations.{i}.config.{error.field}", error.rule) from None


def _observed_responses(item: Mapping[str, Any], i: int) -> dict[str, float]:
    responses = item.get("responses")
    if not isinstance(responses, Mapping) or not responses:
        raise DomainError(f"observations.{i}.responses", "must be a non-empty object")
    checked: dict[str, float] = {}
    for name, value in responses.items():
        field_name = f"observations.{i}.responses.{name}"
        if not isinstance(name, str) or not NAME_PATTERN.match(name):
            raise DomainError(field_name, "a response name must match [A-Za-z_][A-Za-z0-9_]*")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise DomainError(field_name, "must be a number")
        if not math.isfinite(value):
            raise DomainError(field_name, "must be finite")
        checked[name] = float(value)
    return checked


def _value(trial: Trial, response: str) -> float | None:
    value = (trial.responses or {}).get(response)
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


async def loop_progress(session: AsyncSession, loop: Optimization) -> LoopProgress:
    """A loop with the number of trials it has run so far."""
    trials = await repositories.list_trials(session, loop.experiment_id)
    progress = _loop(loop, trials)
    assert progress is not None
    return progress


def _loop(loop: Optimization | None, trials: Sequence[Trial]) -> LoopProgress | None:
    if loop is None:
        return None
    return LoopProgress(
        optimization=loop, trials_used=sum(t.optimization_id == loop.id for t in trials)
    )


def _progress(trials: Sequence[Trial]) -> dict[str, int]:
    counts = {status.value: 0 for status in TrialStatus}
    for trial in trials:
        counts[trial.status] += 1
    counts["total"] = len(trials)
    return counts


def _progress_of(summaries: Sequence[repositories.StatusSummary]) -> dict[str, int]:
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
    summaries: Sequence[repositories.StatusSummary], running_starts: Sequence[datetime]
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
    response, goal = experiment.objective["response"], experiment.objective["goal"]
    scored = [
        (value, t)
        for t in trials
        if t.status == TrialStatus.SUCCEEDED and (value := _value(t, response)) is not None
    ]
    if not scored:
        return None
    pick = max if goal == "maximize" else min
    value, trial = pick(scored, key=lambda pair: pair[0])
    return Best(trial_id=trial.id, value=value, config=trial.config)


def _bests(experiments: Sequence[Experiment], top: Sequence[Any]) -> dict[int, Best]:
    """`_best` of each experiment from the database's pick of its top trial for its objective
    and any trial whose responses only Python could read (see `repositories.top_trials`):
    the same choice as `_best` over every trial in run order."""
    objectives = {e.id: (e.objective["response"], e.objective["goal"]) for e in experiments}
    candidates: dict[int, list[Any]] = {}
    for row in sorted(top, key=lambda r: (r.run_order, r.id)):
        candidates.setdefault(row.experiment_id, []).append(row)
    bests: dict[int, Best] = {}
    for experiment_id, trials in candidates.items():
        response, goal = objectives[experiment_id]
        scored = [(v, t) for t in trials if (v := _value(t, response)) is not None]
        if scored:
            pick = max if goal == "maximize" else min
            value, trial = pick(scored, key=lambda pair: pair[0])
            bests[experiment_id] = Best(trial_id=trial.id, value=value, config=trial.config)
    return bests
