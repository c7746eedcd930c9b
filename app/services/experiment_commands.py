"""The commands on an experiment: create (validate and plan), start, cancel."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import rows
from app.db.models import Experiment, Trial, utcnow
from app.queue import TaskQueue
from app.services import baselines, designs, warm_start
from app.services import idempotency as idempotent
from app.services.access import experiment_of, target_of
from app.services.api_keys import Principal
from app.services.errors import ConflictError
from app.services.idempotency import Idempotency
from app.services.progress import ExperimentDetail, get
from app.services.trial_runs import mark_fresh_replicates, send_trials
from app.statuses import ExperimentStatus, OptimizationStatus, TrialStatus
from experiments.constraints import parse_constraints
from experiments.designs import Design
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.galera.target_spec import TargetSpec
from experiments.objective import Objective

CREATE_OPERATION = "POST /experiments"


@dataclass(frozen=True)
class NewExperiment:
    """What a client submits to create an experiment."""

    name: str
    target: str
    factors: list[dict[str, Any]]
    objective: dict[str, Any]
    viewer: Principal
    design: dict[str, Any] | None = None
    constraints: list[str] = field(default_factory=list)
    warm_start_from: list[int] = field(default_factory=list)
    baseline: object = None

    @property
    def owner(self) -> str:
        """Who the experiment will belong to."""
        return self.viewer.owner


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
        replayed = await _replayed(session, new.owner, idempotency)
        if replayed is not None:
            return replayed
    target = target_of(targets, new.target)
    space, target_notes = target.prepared_space(FactorSpace.from_dicts(new.factors))
    baseline = baselines.parsed(new.baseline, space, target)
    experiment = _experiment_row(new, target, space)
    experiment.baseline = None if baseline is None else baseline.as_dict()
    design = await _planned(experiment, space, new, target, target_notes, max_design_runs)
    if design is not None:
        configs = [point.config for point in design.points]
        target.check_plan(configs)
        baselines.check_noise_varies(space, configs)
    session.add(experiment)
    await session.flush()
    first = 1
    if baseline is not None:
        measured = baselines.trial_rows(baseline, space, experiment.id)
        await session.execute(insert(Trial), measured)
        first += len(measured)
    if design is not None and design.points:
        await session.execute(insert(Trial), designs.trial_rows(design, experiment.id, first))
        first += len(design.points)
    if new.warm_start_from:
        await _warm_start(session, experiment, new, space, target, targets, first)
    return await _committed(session, experiment, new.owner, idempotency)


async def _replayed(
    session: AsyncSession, owner: str, idempotency: Idempotency
) -> ExperimentDetail | None:
    """The experiment an earlier request with this idempotency key made, marked replayed;
    None when no request made one."""
    made = await idempotent.earlier(
        session, owner=owner, operation=CREATE_OPERATION, idempotency=idempotency
    )
    if made is None:
        return None
    return replace(await get(session, experiment_id=made, with_trials=True), replayed=True)


def _experiment_row(new: NewExperiment, target: TargetSpec, space: FactorSpace) -> Experiment:
    """The new experiment's row, planned, its objective checked against the target's
    responses."""
    parsed = Objective.parse(new.objective, target.check_response)
    if parsed.robust is not None and not any(f.noise for f in space.factors):
        raise DomainError(
            "objective.robust",
            "the experiment has no noise factor to be robust over: mark one with noise: true",
        )
    objective = parsed.as_dict()
    return Experiment(
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


async def _warm_start(
    session: AsyncSession,
    experiment: Experiment,
    new: NewExperiment,
    space: FactorSpace,
    target: TargetSpec,
    targets: Mapping[str, TargetSpec],
    first_run_order: int,
) -> None:
    """Copy the compatible trials of the experiments `new` warm-starts from, numbered from
    `first_run_order`, and say so in the design notes."""
    seeded = await warm_start.copied_trials(
        session,
        sources=new.warm_start_from,
        viewer=new.viewer,
        space=space,
        target=target,
        targets=targets,
        experiment_id=experiment.id,
        first_run_order=first_run_order,
    )
    session.add_all(seeded.trials)
    experiment.design_notes = [*(experiment.design_notes or []), seeded.note]


async def _committed(
    session: AsyncSession,
    experiment: Experiment,
    owner: str,
    idempotency: Idempotency | None,
) -> ExperimentDetail:
    """Commit the new experiment with its idempotency key; when a concurrent request with the
    same key committed first, its experiment, replayed."""
    if idempotency is not None:
        idempotent.remember(
            session,
            owner=owner,
            operation=CREATE_OPERATION,
            idempotency=idempotency,
            experiment_id=experiment.id,
        )
    try:
        await session.commit()
    except IntegrityError:
        await session.rollback()
        # A concurrent request with the same key committed first: answer with its experiment.
        replayed = None if idempotency is None else await _replayed(session, owner, idempotency)
        if replayed is None:
            raise
        return replayed
    return await get(session, experiment_id=experiment.id, with_trials=True)


async def _planned(
    experiment: Experiment,
    space: FactorSpace,
    new: NewExperiment,
    target: TargetSpec,
    target_notes: list[str],
    max_design_runs: int,
) -> Design | None:
    """The experiment's design, its notes and report set on the row; None without a design
    (the constraints are still checked)."""
    if new.design is None:
        parse_constraints(new.constraints, space)
        return None
    # Planning is pure Python for tens of milliseconds: off the event loop, so the API
    # answers other requests meanwhile.
    design = await asyncio.to_thread(
        designs.planned,
        space,
        design=new.design,
        constraints=new.constraints,
        max_design_runs=max_design_runs,
        limits=designs.target_limits(target, space),
    )
    experiment.design_notes = [*target_notes, *design.notes]
    experiment.design_report = designs.report_of(design)
    return design


async def start(
    session: AsyncSession,
    *,
    experiment_id: int,
    queue: TaskQueue,
    targets: Mapping[str, TargetSpec],
    owner: str,
    idempotency: Idempotency | None = None,
    restart_replicates: bool = False,
) -> ExperimentDetail:
    """Queue every pending trial in run order; each is committed as queued before it is sent.
    With `restart_replicates`, a trial that measures a configuration again (a replicated design
    point, a centre point after the first, one already measured) restarts every node first.

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
    pending = await rows.list_trials(session, experiment_id, status=TrialStatus.PENDING)
    if restart_replicates:
        target.check_starts_fresh()
        measured = await rows.list_trials(
            session, experiment_id, status=TrialStatus.SUCCEEDED, raw_output=False
        )
        mark_fresh_replicates(experiment.factor_space, pending, [t.config for t in measured])
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


async def cancel(session: AsyncSession, *, experiment_id: int) -> ExperimentDetail:
    """Cancel every trial that has not started and the running optimization loop.

    Running trials are stopped by their workers, which poll for this (`cancel_poll_seconds`):
    each stops its target's run (its sysbench processes), records the trial `cancelled` with
    no result and releases the target, within seconds. A trial whose worker is gone is
    cancelled by the reaper when its lease expires."""
    experiment = await experiment_of(session, experiment_id)
    await rows.cancel_unstarted_trials(session, experiment_id)
    loop = await rows.running_optimization(session, experiment_id)
    if loop is not None:
        loop.status = OptimizationStatus.CANCELLED
        loop.stop_reason = "the experiment was cancelled"
        loop.finished_at = utcnow()
    experiment.status = ExperimentStatus.CANCELLED
    await session.commit()
    return await get(session, experiment_id=experiment_id)
