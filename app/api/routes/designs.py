"""Designs: preview a plan without storing it; export an experiment's run table."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse, Response

from app.api.deps import KeyFirstRoute, OwnedExperimentId, SessionDep, SettingsDep, TargetsDep
from app.api.schemas.common import KEYED_RESPONSES, error_responses
from app.api.schemas.designs import DesignOut, DesignPointOut, DesignPreviewIn
from app.services import designs

router = APIRouter(tags=["designs"], responses=KEYED_RESPONSES, route_class=KeyFirstRoute)


@router.post("/designs/preview")
async def preview_design(
    body: DesignPreviewIn, targets: TargetsDep, settings: SettingsDep
) -> DesignOut:
    """Plan a design and return it with its quality report; nothing is stored."""
    design = designs.preview(
        factors=[f.model_dump() for f in body.factors],
        design=body.design.model_dump(),
        constraints=body.constraints,
        target=body.target,
        targets=targets,
        max_design_runs=settings.max_design_runs,
    )
    return DesignOut.model_validate(design.as_dict())


@router.get(
    "/experiments/{experiment_id}/design",
    response_model=DesignOut,
    responses={200: {"content": {"text/csv": {"schema": {"type": "string"}}}}}
    | error_responses(404),
)
async def get_design(
    experiment_id: OwnedExperimentId,
    session: SessionDep,
    format: Annotated[Literal["json", "csv"], Query()] = "json",
) -> Response | DesignOut:
    """The experiment's run table as JSON, or as CSV (`?format=csv`) to run trials by hand."""
    experiment, trials = await designs.run_table(session, experiment_id=experiment_id)
    if format == "csv":
        return PlainTextResponse(
            designs.run_table_csv(experiment, trials),
            media_type="text/csv",
            headers={
                "Content-Disposition": f'attachment; filename="experiment-{experiment_id}.csv"'
            },
        )
    report = experiment.design_report or {}
    return DesignOut(
        kind=report.get("kind", "none"),
        model=report.get("model", ""),
        runs=len(trials),
        points=[
            DesignPointOut.model_validate(t).model_copy(
                update={"trial_id": t.id, "status": t.status}
            )
            for t in trials
        ],
        family=report.get("family", {}),
        quality=report.get("quality", {}),
        removed_by_constraints=report.get("removed_by_constraints", 0),
        notes=experiment.design_notes,
    )
