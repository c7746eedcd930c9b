"""Single trials."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import KeyFirstRoute, OwnedTrialId, SessionDep
from app.api.schemas.common import KEYED_RESPONSES, error_responses
from app.api.schemas.trials import TrialDetailOut
from app.services import progress

router = APIRouter(
    prefix="/trials",
    tags=["trials"],
    responses=KEYED_RESPONSES | error_responses(404),
    route_class=KeyFirstRoute,
)


@router.get("/{trial_id}")
async def get_trial(trial_id: OwnedTrialId, session: SessionDep) -> TrialDetailOut:
    """One trial with its raw output."""
    return TrialDetailOut.model_validate(await progress.get_trial(session, trial_id=trial_id))
