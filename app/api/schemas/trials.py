"""A trial as listed and in detail, and an observation: a result measured elsewhere."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.common import Name, Number, Strict, Value, ValueIn

EXAMPLE_OBSERVATION = {
    "config": {"nodes": 3, "threads_per_client": 16},
    "responses": {"tps": 1480.5, "latency_p95_ms": 14.2},
}


class ObservationIn(Strict):
    """One result measured elsewhere: the configuration and what it gave."""

    model_config = ConfigDict(json_schema_extra={"examples": [EXAMPLE_OBSERVATION]})
    config: dict[Name, ValueIn] = Field(max_length=30, description="the factor settings")
    responses: dict[Name, Number] = Field(max_length=50, description="what the run measured")
    block: int | None = Field(
        default=None,
        ge=1,
        le=1000,
        description="the block the run belongs to (analysed as a fixed effect)",
    )
    whole_plot: int | None = Field(
        default=None,
        ge=1,
        # The trials' whole_plot column is a 32-bit INTEGER.
        le=2**31 - 1,
        description="the whole plot of a split-plot run (hard-to-change settings)",
    )


class TrialOut(BaseModel):
    """A trial as listed (without its raw output)."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    experiment_id: int
    run_order: int
    std_order: int | None
    block: int
    replicate: int
    whole_plot: int | None
    point_type: str
    rounded: bool
    restart_first: bool
    duplicate_of: int | None
    source: str
    config: dict[str, Value]
    coded: dict[str, float] | None
    status: str
    attempts: int
    worker: str | None
    lease_expires_at: datetime | None
    queued_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    responses: dict[str, float] | None
    error: str | None
    failure: str | None
    reads_current: list[str] | None = Field(
        default=None, description="settings it reads from the nodes first (today's, baseline)"
    )
    confirmation_id: int | None = Field(default=None, description="the confirmation it runs for")
    arm: str | None = Field(default=None, description="a confirmation's candidate or baseline")
    pair: int | None = Field(default=None, description="the confirmation's pair it belongs to")


class TrialDetailOut(TrialOut):
    """A trial with the raw output of the tools that measured it."""

    raw_output: str | None
    record: dict[str, Any] | None
