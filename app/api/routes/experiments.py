"""Experiments: create, read, start, cancel, record observations, analyse."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query, Response, status

from app.api.deps import (
    CurrentKey,
    ExperimentId,
    IdempotencyKey,
    KeyFirstRoute,
    OwnedExperimentId,
    QueueDep,
    SessionDep,
    SettingsDep,
    TalliesDep,
    TargetsDep,
)
from app.api.routes.optimization_loop import optimization_out
from app.api.schemas.analysis import AnalysisOut
from app.api.schemas.common import KEYED_RESPONSES, ModelOrder, error_responses
from app.api.schemas.experiments import (
    ExperimentIn,
    ExperimentOut,
    ExperimentWithTrialsOut,
    StartIn,
)
from app.api.schemas.trials import EXAMPLE_OBSERVATION, ObservationIn, TrialOut
from app.services import (
    analysis_inputs,
    baselines,
    experiment_commands,
    optimization_loop,
    progress,
)
from app.services.experiment_commands import NewExperiment
from app.services.idempotency import Idempotency
from app.services.observations import record_observations as store_observations
from app.services.progress import ExperimentDetail
from app.statuses import ExperimentStatus
from experiments.terms import DEFAULT_MODEL

router = APIRouter(
    prefix="/experiments",
    tags=["experiments"],
    responses=KEYED_RESPONSES,
    route_class=KeyFirstRoute,
)

REPLAYED_HEADER = "Idempotent-Replayed"


def _idempotency(key: str | None, body: str = "") -> Idempotency | None:
    return None if key is None else Idempotency.of(key, body)


def _mark_replayed(response: Response, detail: ExperimentDetail) -> None:
    """Tell the client its request was answered from an earlier one with the same key."""
    if detail.replayed:
        response.headers[REPLAYED_HEADER] = "true"


def _out(detail: ExperimentDetail) -> ExperimentOut:
    e = detail.experiment
    return ExperimentOut(
        id=e.id,
        name=e.name,
        status=e.status,
        target=e.target,
        factors=e.factors,
        design=e.design,
        design_notes=e.design_notes,
        constraints=e.constraints,
        objective=e.parsed_objective.as_dict(),
        baseline=baselines.view(e, detail.trials if detail.trials else None),
        created_at=e.created_at,
        updated_at=e.updated_at,
        progress=detail.progress,
        best=detail.best,  # type: ignore[arg-type]
        timing=detail.timing,  # type: ignore[arg-type]
        optimization=optimization_out(detail.optimization) if detail.optimization else None,
    )


@router.post("", status_code=status.HTTP_201_CREATED)
async def create_experiment(
    body: ExperimentIn,
    session: SessionDep,
    targets: TargetsDep,
    settings: SettingsDep,
    viewer: CurrentKey,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> ExperimentWithTrialsOut:
    """Validate an experiment, plan its design and store it with its planned trials; it
    belongs to the key's owner."""
    new = NewExperiment(
        viewer=viewer,
        name=body.name,
        target=body.target,
        factors=[f.model_dump() for f in body.factors],
        objective=body.objective.model_dump(),
        design=body.design.model_dump() if body.design is not None else None,
        constraints=body.constraints,
        warm_start_from=body.warm_start_from,
        baseline=body.baseline,
    )
    detail = await experiment_commands.create(
        session,
        new=new,
        targets=targets,
        max_design_runs=settings.max_design_runs,
        idempotency=_idempotency(idempotency_key, body.model_dump_json()),
    )
    _mark_replayed(response, detail)
    return ExperimentWithTrialsOut(
        **_out(detail).model_dump(),
        trials=[TrialOut.model_validate(t) for t in detail.trials],
    )


@router.get("")
async def list_experiments(
    session: SessionDep,
    viewer: CurrentKey,
    tallies: TalliesDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
    status: Annotated[
        ExperimentStatus | None, Query(description="only experiments in this status")
    ] = None,
    target: Annotated[
        str | None, Query(max_length=100, description="only experiments on this target")
    ] = None,
) -> list[ExperimentOut]:
    """The key owner's experiments (an admin's key: everybody's), newest first; filtered by
    status and target when given."""
    details = await progress.get_all(
        session,
        viewer=viewer,
        limit=limit,
        offset=offset,
        status=status,
        target=target,
        cache=tallies,
    )
    return [_out(d) for d in details]


@router.get("/{experiment_id}", responses=error_responses(404))
async def get_experiment(
    experiment_id: ExperimentId, session: SessionDep, viewer: CurrentKey, tallies: TalliesDep
) -> ExperimentOut:
    """One experiment with its progress and best result so far."""
    return _out(
        await progress.view(session, experiment_id=experiment_id, viewer=viewer, cache=tallies)
    )


@router.get("/{experiment_id}/trials", responses=error_responses(404))
async def list_trials(
    experiment_id: ExperimentId, session: SessionDep, viewer: CurrentKey
) -> list[TrialOut]:
    """The experiment's trials in run order."""
    trials = await progress.get_trials(session, experiment_id=experiment_id, viewer=viewer)
    return [TrialOut.model_validate(t) for t in trials]


@router.post("/{experiment_id}/start", responses=error_responses(404, 409))
async def start_experiment(
    experiment_id: OwnedExperimentId,
    session: SessionDep,
    queue: QueueDep,
    targets: TargetsDep,
    viewer: CurrentKey,
    response: Response,
    body: Annotated[StartIn, Body(default_factory=StartIn)],
    idempotency_key: IdempotencyKey = None,
) -> ExperimentOut:
    """Queue every pending trial, in run order, for the workers. With `restart_replicates` a
    trial that measures a configuration again restarts every node first (`restart_first`)."""
    detail = await experiment_commands.start(
        session,
        experiment_id=experiment_id,
        queue=queue,
        targets=targets,
        owner=viewer.owner,
        idempotency=_idempotency(idempotency_key),
        restart_replicates=body.restart_replicates,
    )
    _mark_replayed(response, detail)
    return _out(detail)


@router.post("/{experiment_id}/cancel", responses=error_responses(404))
async def cancel_experiment(experiment_id: OwnedExperimentId, session: SessionDep) -> ExperimentOut:
    """Cancel every trial that has not started yet."""
    return _out(await experiment_commands.cancel(session, experiment_id=experiment_id))


@router.post(
    "/{experiment_id}/observations",
    status_code=status.HTTP_201_CREATED,
    responses=error_responses(404, 409),
)
async def record_observations(
    experiment_id: OwnedExperimentId,
    session: SessionDep,
    queue: QueueDep,
    targets: TargetsDep,
    observations: Annotated[
        list[ObservationIn], Body(min_length=1, max_length=1000, examples=[[EXAMPLE_OBSERVATION]])
    ],
) -> list[TrialOut]:
    """Record results measured elsewhere, on any target; all or none are stored. On a runnable
    target they are imported runs (never run again). A running optimization loop then plans
    its next round."""
    trials = await store_observations(
        session,
        experiment_id=experiment_id,
        observations=[o.model_dump() for o in observations],
        targets=targets,
    )
    recorded = [TrialOut.model_validate(t) for t in trials]
    await optimization_loop.advance_running(
        session, experiment_id=experiment_id, queue=queue, targets=targets
    )
    return recorded


@router.get("/{experiment_id}/analysis", responses=error_responses(404))
async def get_analysis(
    experiment_id: OwnedExperimentId,
    session: SessionDep,
    targets: TargetsDep,
    response: Annotated[str | None, Query(max_length=64)] = None,
    model: ModelOrder = DEFAULT_MODEL,
) -> AnalysisOut:
    """Fit a model of one response (the objective's by default) and report its optimum."""
    report = await analysis_inputs.analyze(
        session, experiment_id=experiment_id, response=response, model=model, targets=targets
    )
    return AnalysisOut(
        response=report.response,
        trials_used=report.trials_used,
        trials_failed=report.trials_failed,
        baseline=report.baseline,
        **report.result,
    )
