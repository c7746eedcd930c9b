"""Single trials."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import OwnedTrialId, SessionDep
from app.api.schemas import TrialDetailOut
from app.services import experiments

router = APIRouter(prefix="/trials", tags=["trials"])


@router.get("/{trial_id}")
async def get_trial(trial_id: OwnedTrialId, session: SessionDep) -> TrialDetailOut:
    """One trial with its raw output."""
    return TrialDetailOut.model_validate(await experiments.get_trial(session, trial_id=trial_id))
