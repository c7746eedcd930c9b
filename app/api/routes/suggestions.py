"""What to run next: suggestions, stored and accepted one by one."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, status

from app.api.deps import KeyFirstRoute, OwnedExperimentId, QueueDep, SessionDep, TargetsDep
from app.api.schemas.common import KEYED_RESPONSES, error_responses
from app.api.schemas.suggestions import PlanOut, SuggestionOut, SuggestionsIn
from app.api.schemas.trials import TrialOut
from app.services import suggestions

router = APIRouter(
    prefix="/experiments",
    tags=["suggestions"],
    responses=KEYED_RESPONSES | error_responses(404),
    route_class=KeyFirstRoute,
)

SuggestionId = Annotated[int, Path(ge=1, le=2**31 - 1)]


@router.post("/{experiment_id}/suggestions")
async def suggest(
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
