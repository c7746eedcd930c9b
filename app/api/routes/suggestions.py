"""What to run next: suggestions (stored, accepted one by one) and the closed optimization loop."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, status

from app.api.deps import KeyFirstRoute, OwnedExperimentId, QueueDep, SessionDep, TargetsDep
from app.api.schemas import (
    KEYED_RESPONSES,
    OptimizationOut,
    OptimizeIn,
    PlanOut,
    SuggestionOut,
    SuggestionsIn,
    TrialOut,
    error_responses,
)
from app.services import optimization, suggestions
from app.services.progress import LoopProgress

router = APIRouter(
    prefix="/experiments",
    tags=["suggestions"],
    responses=KEYED_RESPONSES | error_responses(404),
    route_class=KeyFirstRoute,
)

SuggestionId = Annotated[int, Path(ge=1, le=2**31 - 1)]


def optimization_out(progress: LoopProgress) -> OptimizationOut:
    """The loop as clients see it."""
    loop = progress.optimization
    return OptimizationOut(
        id=loop.id,
        experiment_id=loop.experiment_id,
        status=loop.status,
        strategy=loop.strategy,
        budget=loop.budget,
        batch_size=loop.batch_size,
        stop_when_expected_improvement_below=loop.stop_below,
        rounds=loop.rounds,
        trials_used=progress.trials_used,
        stage=loop.stage,
        explanation=loop.explanation,
        expected_improvement=loop.expected_improvement,
        stop_reason=loop.stop_reason,
        error=loop.error,
        started_at=loop.started_at,
        updated_at=loop.updated_at,
        finished_at=loop.finished_at,
    )


@router.post("/{experiment_id}/suggestions", responses=error_responses(400, 413))
async def suggest_next(
    experiment_id: OwnedExperimentId, body: SuggestionsIn, session: SessionDep
) -> PlanOut:
    """Configurations to run next, with predictions and reasons; stored, nothing is run."""
    proposal = await suggestions.propose(
        session, experiment_id=experiment_id, strategy=body.strategy, count=body.count
    )
    plan = proposal.plan
    return PlanOut(
        strategy=plan.strategy,
        stage=plan.stage,
        explanation=plan.explanation,
        stop_reason=plan.stop_reason,
        expected_improvement=plan.expected_improvement,
        suggestions=[SuggestionOut.model_validate(s) for s in proposal.suggestions],
    )


@router.get("/{experiment_id}/suggestions")
async def list_suggestions(
    experiment_id: OwnedExperimentId, session: SessionDep
) -> list[SuggestionOut]:
    """Every suggestion made for the experiment, with the trial each accepted one became."""
    found = await suggestions.get_all(session, experiment_id=experiment_id)
    return [SuggestionOut.model_validate(s) for s in found]


@router.post(
    "/{experiment_id}/suggestions/{suggestion_id}/accept",
    status_code=status.HTTP_201_CREATED,
    responses=error_responses(409),
)
async def accept_suggestion(
    experiment_id: OwnedExperimentId,
    suggestion_id: SuggestionId,
    session: SessionDep,
    queue: QueueDep,
    targets: TargetsDep,
) -> TrialOut:
    """Turn a suggestion into a trial and run it (manual targets: it waits for its result)."""
    trial = await suggestions.accept(
        session,
        experiment_id=experiment_id,
        suggestion_id=suggestion_id,
        queue=queue,
        targets=targets,
    )
    return TrialOut.model_validate(trial)


@router.post(
    "/{experiment_id}/optimize",
    status_code=status.HTTP_202_ACCEPTED,
    responses=error_responses(400, 409, 413),
)
async def optimize(
    experiment_id: OwnedExperimentId,
    body: OptimizeIn,
    session: SessionDep,
    queue: QueueDep,
    targets: TargetsDep,
) -> OptimizationOut:
    """Start the closed loop; follow it in GET /experiments/{id} (`optimization`)."""
    progress = await optimization.start(
        session,
        experiment_id=experiment_id,
        request=optimization.LoopRequest(**body.model_dump()),
        queue=queue,
        targets=targets,
    )
    return optimization_out(progress)
