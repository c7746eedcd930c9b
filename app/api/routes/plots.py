"""Pictures: slices of the fitted response surface as JSON, and review plots as PNG."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response
from pydantic import Field

from app.api.deps import KeyFirstRoute, OwnedExperimentId, SessionDep, TargetsDep
from app.api.schemas.analysis import SurfaceOut
from app.api.schemas.common import KEYED_RESPONSES, ModelOrder, error_responses
from app.services import plots
from app.services.plots import PlotKind
from experiments.terms import DEFAULT_MODEL

router = APIRouter(
    prefix="/experiments",
    tags=["plots"],
    responses=KEYED_RESPONSES | error_responses(404),
    route_class=KeyFirstRoute,
)

FactorName = Annotated[str | None, Query(max_length=64, description="a factor of the experiment")]
ResponseName = Annotated[
    str | None, Query(max_length=64, description="the response (the objective's by default)")
]


@router.get("/{experiment_id}/surface")
async def get_surface(
    experiment_id: OwnedExperimentId,
    session: SessionDep,
    targets: TargetsDep,
    x: FactorName = None,
    y: FactorName = None,
    response: ResponseName = None,
    model: ModelOrder = DEFAULT_MODEL,
    points: Annotated[int, Query(ge=2, le=200, description="settings per numeric axis")] = 40,
    y_points: Annotated[
        int | None, Query(ge=2, le=200, description="settings of y (default: points)")
    ] = None,
    held: Annotated[
        list[Annotated[str, Field(max_length=200)]] | None,
        Query(
            max_length=30,
            description="another factor held at a setting of its region instead of the"
            " optimum, as name:value (repeat for each), e.g. held=nodes:3; a setting of x or"
            " y is ignored",
        ),
    ] = None,
    continuous: Annotated[
        bool,
        Query(description="integer factors sampled between their whole numbers (smooth)"),
    ] = False,
) -> SurfaceOut:
    """The predicted response over `x` (and `y`) with 95 % confidence intervals, the other
    factors held at the optimum or at `held`; `x` defaults to the most important factor."""
    report = await plots.surface_slice(
        session,
        experiment_id=experiment_id,
        response=response,
        model=model,
        x=x,
        y=y,
        points=points,
        y_points=y_points,
        targets=targets,
        held=held or (),
        continuous=continuous,
    )
    return SurfaceOut(
        response=report.response,
        model=report.model,
        model_label=report.model_label,
        optimum=report.optimum,
        **report.slice.as_dict(),
    )


@router.get(
    "/{experiment_id}/plots/{kind}.png",
    response_class=Response,
    responses={
        200: {
            "content": {"image/png": {"schema": {"type": "string", "format": "binary"}}},
            "description": "the plot as a PNG image",
        }
    },
)
async def get_plot(
    experiment_id: OwnedExperimentId,
    kind: PlotKind,
    session: SessionDep,
    targets: TargetsDep,
    x: FactorName = None,
    y: FactorName = None,
    response: ResponseName = None,
    model: ModelOrder = DEFAULT_MODEL,
    width: Annotated[int, Query(ge=200, le=2400, description="pixels")] = 800,
    height: Annotated[int, Query(ge=200, le=2400, description="pixels")] = 600,
) -> Response:
    """A review plot rendered on the server: `contour`, `surface` (3-D) and `interaction` over
    `x` and `y` (the two most important factors by default) with the others at the optimum,
    `main_effects`, `pareto` (standardized effects), `half_normal` (unreplicated two-level
    designs), `residuals`, and `progress` (best so far against trials)."""
    image = await plots.png(
        session,
        experiment_id=experiment_id,
        kind=kind,
        response=response,
        model=model,
        x=x,
        y=y,
        size=(width, height),
        targets=targets,
    )
    return Response(content=image, media_type="image/png")
