"""Suggestions and the closed optimization loop, and the strategies they take: the strategy
fields of `SuggestionsIn` and `OptimizeIn` are validated here, against the engine's registry."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.common import MAX_MAGNITUDE, RESTART_REPLICATES, Strict, Value
from app.services.optimization_loop import MAX_BUDGET_SECONDS
from experiments.analysis.deploy import DeployAnswer
from experiments.suggest import LOOP_STRATEGY_NAMES, STRATEGY_NAMES


class StrategyOut(BaseModel):
    """A suggestion strategy of the engine's registry."""

    name: str = Field(description="the name `suggest` and `optimize` take")
    summary: str = Field(description="what the strategy does")
    closes_loop: bool = Field(
        description="whether it can drive a closed loop (`POST .../optimize`) by itself"
    )


class SuggestionsIn(Strict):
    """How many configurations to suggest, and by which strategy.

    `auto` takes the staged path an expert would (screening, curvature test, composite design,
    confirmation, Bayesian optimization where the quadratic model falls short); `count` is the
    batch size of sequential picks, while design steps come whole.
    """

    strategy: Literal[STRATEGY_NAMES] = "auto"
    count: int = Field(default=1, ge=1, le=20)


class SuggestionOut(BaseModel):
    """A stored suggestion: the configuration, what the model expects of it, why it was
    chosen, and the trial it became once accepted."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    experiment_id: int
    optimization_id: int | None
    status: str
    trial_id: int | None
    strategy: str
    stage: str
    point_type: str
    config: dict[str, Value]
    predicted: float | None
    uncertainty: float | None = Field(description="standard deviation of the predicted mean")
    expected_improvement: float | None
    predicted_by: str | None
    reason: str
    based_on_trials: int
    created_at: datetime


class PlanOut(BaseModel):
    """What a strategy proposes: its stage and why, the stored suggestions, or why to stop."""

    strategy: str
    stage: str
    explanation: str
    stop_reason: str | None
    expected_improvement: float | None
    suggestions: list[SuggestionOut]


BUDGET_SECONDS = (
    "seconds of trial time the loop may spend beside its trials (each trial's wall time, start to"
    " finish); it stops when either budget is spent, and plays the end of the budget in the last"
    " fifth of either"
)


class OptimizeIn(Strict):
    """A closed loop: suggest, run, refit, repeat until the budget or the stopping rule."""

    strategy: Literal[LOOP_STRATEGY_NAMES] = "auto"
    budget: int = Field(default=20, ge=1, le=500, description="trials the loop may run")
    budget_seconds: float | None = Field(
        default=None, gt=0, le=MAX_BUDGET_SECONDS, allow_inf_nan=False, description=BUDGET_SECONDS
    )
    batch_size: int = Field(default=1, ge=1, le=20, description="trials per round")
    stop_when_expected_improvement_below: float | None = Field(
        default=None,
        ge=0,
        le=MAX_MAGNITUDE,
        description="stop when no configuration is expected to gain this much (objective units)",
    )
    restart_replicates: bool = Field(default=False, description=RESTART_REPLICATES)


class RecommendationOut(BaseModel):
    """What the loop recommends deploying now: of the configurations run, the one its model
    puts best, with the model's mean there and that mean's standard deviation."""

    config: dict[str, Value]
    predicted: float | None
    uncertainty: float | None
    runs: int = Field(description="how many trials measured this configuration")
    observed: float | None = Field(description="the mean of those measurements")
    predicted_by: str | None
    reason: str


class OptimizationOut(BaseModel):
    """A closed optimization loop and its progress; `stop_reason` says why it stopped, and
    `recommendation` what to deploy after its latest round."""

    id: int
    experiment_id: int
    status: str
    strategy: str
    budget: int
    budget_seconds: float | None = Field(description=BUDGET_SECONDS)
    batch_size: int
    stop_when_expected_improvement_below: float | None
    restart_replicates: bool
    rounds: int
    trials_used: int
    seconds_used: float | None = Field(
        description="seconds of trial time its trials have taken, with a budget_seconds"
    )
    stage: str | None
    explanation: str | None
    expected_improvement: float | None
    stop_reason: str | None
    error: str | None
    recommendation: RecommendationOut | None
    deploy: DeployAnswer | None = Field(
        description="the one configuration to deploy after the loop's latest round, with its"
        " evidence and the other candidates labelled (the analysis gives the same answer)"
    )
    started_at: datetime
    updated_at: datetime
    finished_at: datetime | None
