"""What the service answers of itself: its health and the operator's targets."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ServiceHealth(BaseModel):
    """Whether one dependency answers."""

    ok: bool
    error: str | None


class HealthOut(BaseModel):
    """Reachability of the database and the broker."""

    status: Literal["ok", "degraded"]
    database: ServiceHealth
    broker: ServiceHealth


class TargetOut(BaseModel):
    """A target as clients see it: never its settings (they hold addresses and credentials)."""

    name: str
    kind: str
    runnable: bool
    factors: list[str] | None = Field(description="factor names it sets; null: any name")
    accepts_server_variables: bool
    responses: list[str] | None = Field(description="responses it reports; null: any name")
