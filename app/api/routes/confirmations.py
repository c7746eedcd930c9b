"""Confirmations: the configuration to deploy against today's, run on the cluster itself."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Path, status

from app.api.deps import (
    KeyFirstRoute,
    OwnedExperimentId,
    QueueDep,
    SessionDep,
    TargetsDep,
)
from app.api.schemas.common import KEYED_RESPONSES, error_responses
from app.api.schemas.confirmations import ConfirmationOut, ConfirmIn
from app.api.schemas.trials import TrialOut
from app.services import confirmations
from app.services.confirmations import ConfirmationDetail, ConfirmRequest

router = APIRouter(
    prefix="/experiments",
    tags=["confirmations"],
    responses=KEYED_RESPONSES | error_responses(404),
    route_class=KeyFirstRoute,
)

ConfirmationId = Annotated[int, Path(ge=1, le=2**31 - 1)]


def confirmation_out(detail: ConfirmationDetail) -> ConfirmationOut:
    """A confirmation as the API answers it."""
    row = detail.confirmation
    return ConfirmationOut(
        id=row.id,
        experiment_id=row.experiment_id,
        status=row.status,
        response=row.response,
        goal=row.goal,
        candidate=row.candidate,
        baseline=row.baseline,
        pairs=row.pairs,
        plan=row.plan,
        prediction=row.prediction,
        result=row.result,
        sentence=None if row.result is None else row.result.get("sentence"),
        error=row.error,
        created_at=row.created_at,
        finished_at=row.finished_at,
        trials=[TrialOut.model_validate(t) for t in detail.trials],
    )


@router.post(
    "/{experiment_id}/confirm",
    status_code=status.HTTP_201_CREATED,
    responses=error_responses(409),
)
async def confirm(
    experiment_id: OwnedExperimentId,
    session: SessionDep,
    queue: QueueDep,
    targets: TargetsDep,
    body: Annotated[ConfirmIn, Body(default_factory=ConfirmIn)],
) -> ConfirmationOut:
    """Run the configuration to deploy against the baseline in randomized interleaved pairs,
    as many as the measured noise needs to detect the predicted gain."""
    detail = await confirmations.start(
        session,
        experiment_id=experiment_id,
        request=ConfirmRequest(**body.model_dump()),
        queue=queue,
        targets=targets,
    )
    return confirmation_out(detail)


@router.get("/{experiment_id}/confirmations")
async def list_confirmations(
    experiment_id: OwnedExperimentId, session: SessionDep, queue: QueueDep
) -> list[ConfirmationOut]:
    """The experiment's confirmations, newest first, each with its result once it ended."""
    found = await confirmations.get_all(session, experiment_id=experiment_id, queue=queue)
    return [confirmation_out(d) for d in found]


@router.get("/{experiment_id}/confirmations/{confirmation_id}")
async def get_confirmation(
    experiment_id: OwnedExperimentId,
    confirmation_id: ConfirmationId,
    session: SessionDep,
    queue: QueueDep,
) -> ConfirmationOut:
    """One confirmation: its plan, runs, and result once every run ended."""
    detail = await confirmations.get(
        session, experiment_id=experiment_id, confirmation_id=confirmation_id, queue=queue
    )
    return confirmation_out(detail)
