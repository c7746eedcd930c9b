"""A design planned without storing anything: the request and its run table."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.common import Strict, Value
from app.api.schemas.experiments import EXAMPLE_FACTORS, Constraint, DesignIn, FactorIn


class DesignPreviewIn(Strict):
    """A design to plan without storing anything (the target, if named, checks the factors)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"factors": EXAMPLE_FACTORS, "design": {"kind": "ccd"}, "target": "simulated"}
            ]
        }
    )
    factors: list[FactorIn] = Field(min_length=1, max_length=30)
    design: DesignIn = Field(default_factory=DesignIn)
    constraints: list[Constraint] = Field(default_factory=list, max_length=20)
    target: str | None = Field(default=None, max_length=100)


class DesignPointOut(BaseModel):
    """One run of a design table."""

    model_config = ConfigDict(from_attributes=True)

    run_order: int
    std_order: int | None
    block: int
    whole_plot: int | None
    replicate: int
    point_type: str
    config: dict[str, Value]
    coded: dict[str, float] | None
    rounded: bool
    duplicate_of: int | None
    trial_id: int | None = None
    status: str | None = None


class DesignOut(BaseModel):
    """A planned design: its runs, the family's facts (e.g. aliases), quality and notes."""

    kind: str
    model: str
    runs: int
    points: list[DesignPointOut]
    family: dict[str, Any]
    quality: dict[str, Any]
    removed_by_constraints: int
    notes: list[str]
