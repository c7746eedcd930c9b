"""Targets: the operator's places to run trials, listed without their settings."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import KeyFirstRoute, TargetsDep
from app.api.schemas.common import KEYED_RESPONSES
from app.api.schemas.service import TargetOut

router = APIRouter(tags=["targets"], responses=KEYED_RESPONSES, route_class=KeyFirstRoute)


@router.get("/targets")
async def list_targets(targets: TargetsDep) -> list[TargetOut]:
    """Names, kinds and the factors each target accepts; never addresses or credentials."""
    return [
        TargetOut(
            name=spec.name,
            kind=spec.kind,
            runnable=spec.runnable,
            factors=list(spec.factors) if spec.factors is not None else None,
            accepts_server_variables=spec.accepts_server_variables,
            responses=list(spec.responses) if spec.responses is not None else None,
        )
        for spec in sorted(targets.values(), key=lambda spec: spec.name)
    ]
