"""Liveness of the service and reachability of its database and broker."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from app.api.deps import DatabaseDep, QueueDep
from app.api.schemas.service import HealthOut, ServiceHealth
from app.services import health

router = APIRouter(tags=["health"])


@router.get(
    "/health",
    responses={
        503: {"model": HealthOut, "description": "the database or the broker does not answer"}
    },
)
async def get_health(database: DatabaseDep, queue: QueueDep, response: Response) -> HealthOut:
    """200 when the database and the broker answer, 503 naming the one that does not."""
    result = await health.check(database=database, queue=queue)
    if not result.ok:
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    return HealthOut(
        status="ok" if result.ok else "degraded",
        database=ServiceHealth(ok=result.database_ok, error=result.database_error),
        broker=ServiceHealth(ok=result.broker_ok, error=result.broker_error),
    )
