"""The closed optimization loop: start it; its progress is part of GET /experiments/{id}."""

from __future__ import annotations

from fastapi import APIRouter, status

from app.api.deps import KeyFirstRoute, OwnedExperimentId, QueueDep, SessionDep, TargetsDep
from app.api.schemas.common import KEYED_RESPONSES, error_responses
from app.api.schemas.suggestions import OptimizationOut, OptimizeIn
from app.services import optimization_loop
from app.services.progress import LoopProgress

router = APIRouter(
    prefix="/experiments",
    tags=["suggestions"],
    responses=KEYED_RESPONSES | error_responses(404),
    route_class=KeyFirstRoute,
)


def optimization_out(progress: LoopProgress) -> OptimizationOut:
    """The loop as clients see it."""
    loop = progress.optimization
    return OptimizationOut(
        id=loop.id,
        experiment_id=loop.experiment_id,
        status=loop.status,
        strategy=loop.strategy,
        budget=loop.budget,
        budget_seconds=loop.budget_seconds,
        batch_size=loop.batch_size,
        stop_when_expected_improvement_below=loop.stop_below,
        restart_replicates=loop.restart_replicates,
        rounds=loop.rounds,
        trials_used=progress.trials_used,
        seconds_used=progress.seconds_used,
        stage=loop.stage,
        explanation=loop.explanation,
        expected_improvement=loop.expected_improvement,
        stop_reason=loop.stop_reason,
        error=loop.error,
        recommendation=loop.recommendation,
        deploy=loop.deploy,
        started_at=loop.started_at,
        updated_at=loop.updated_at,
        finished_at=loop.finished_at,
    )


@router.post(
    "/{experiment_id}/optimize",
    status_code=status.HTTP_202_ACCEPTED,
    responses=error_responses(409),
)
async def start_optimization(
    experiment_id: OwnedExperimentId,
    body: OptimizeIn,
    session: SessionDep,
    queue: QueueDep,
    targets: TargetsDep,
) -> OptimizationOut:
    """Start the closed loop; follow it in GET /experiments/{id} (`optimization`)."""
    progress = await optimization_loop.start(
        session,
        experiment_id=experiment_id,
        request=optimization_loop.LoopRequest(**body.model_dump()),
        queue=queue,
        targets=targets,
    )
    return optimization_out(progress)
