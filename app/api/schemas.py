"""Request and response bodies of the REST API (pydantic v2)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Value = int | float | str


class Strict(BaseModel):
    """Unknown fields are an error, so a typo never passes silently."""

    model_config = ConfigDict(extra="forbid")


class FactorIn(Strict):
    """One factor: a numeric range (low/high), explicit levels, or categories."""

    name: str = Field(max_length=64, examples=["nodes"])
    kind: Literal["continuous", "integer", "categorical"] = "continuous"
    low: float | None = None
    high: float | None = None
    levels: list[Value] | None = Field(default=None, max_length=50)
    unit: str = Field(default="", max_length=32)
    scale: Literal["linear", "log2"] = "linear"
    hard_to_change: bool = False


class DesignIn(Strict):
    """Which design to plan; the planner checks the values and the size."""

    kind: str = Field(default="full_factorial", max_length=40)
    levels: int = 2
    centre_points: int = 0
    replicates: int = 1
    randomize: bool = True
    seed: int = 0


class ObjectiveIn(Strict):
    """The response to optimize and in which direction."""

    response: str = Field(max_length=64, examples=["tps"])
    goal: Literal["maximize", "minimize"] = "maximize"


class ExperimentIn(Strict):
    """A new experiment. `design: null` plans nothing (e.g. to import observations)."""

    name: str = Field(min_length=1, max_length=200)
    target: str = Field(max_length=100, examples=["simulated"])
    factors: list[FactorIn] = Field(min_length=1, max_length=30)
    design: DesignIn | None = Field(default_factory=DesignIn)
    objective: ObjectiveIn


class ObservationIn(Strict):
    """One result measured elsewhere: the configuration and what it gave."""

    config: dict[str, Value]
    responses: dict[str, float]


class TrialOut(BaseModel):
    """A trial as listed (without its raw output)."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    experiment_id: int
    run_order: int
    std_order: int | None
    block: int
    replicate: int
    point_type: str
    rounded: bool
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


class TrialDetailOut(TrialOut):
    """A trial with the raw output of the tools that measured it."""

    raw_output: str | None


class BestOut(BaseModel):
    """The best succeeded trial so far for the objective."""

    model_config = ConfigDict(from_attributes=True)

    trial_id: int
    value: float
    config: dict[str, Value]


class ExperimentOut(BaseModel):
    """An experiment with its progress: trial counts by status, and the best so far."""

    id: int
    name: str
    status: str
    target: str
    factors: list[dict[str, Any]]
    design: dict[str, Any] | None
    design_notes: list[str]
    objective: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    progress: dict[str, int]
    best: BestOut | None


class ExperimentWithTrialsOut(ExperimentOut):
    """An experiment and its planned trials."""

    trials: list[TrialOut]


class AnalysisOut(BaseModel):
    """The fitted model of one response and its optimum (fields grow with the analysis)."""

    model_config = ConfigDict(extra="allow")

    response: str
    trials_used: int
    trials_failed: int


class ServiceHealth(BaseModel):
    """Whether one dependency answers."""

    ok: bool
    error: str | None


class HealthOut(BaseModel):
    """Reachability of the database and the broker."""

    status: Literal["ok", "degraded"]
    database: ServiceHealth
    broker: ServiceHealth
