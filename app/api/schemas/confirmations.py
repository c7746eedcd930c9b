"""A confirmation: the configuration to deploy run against today's in interleaved pairs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from app.api.schemas.common import Strict, Value
from app.api.schemas.trials import TrialOut

MAX_PAIRS = 50


class ConfirmIn(Strict):
    """How to confirm the deploy answer against the baseline."""

    pairs: int | None = Field(
        default=None,
        ge=2,
        le=MAX_PAIRS,
        description="pairs to run; unset: enough for the power asked, from the measured noise",
    )
    max_pairs: int = Field(default=10, ge=2, le=MAX_PAIRS, description="the most pairs chosen")
    power: float = Field(
        default=0.8, gt=0.0, lt=1.0, description="the paired t-test's power to detect the gain"
    )
    fresh: bool | None = Field(
        default=None,
        description="restart every node before each run; unset: wherever the target can",
    )
    seed: int = Field(default=0, ge=0, le=2**31 - 1, description="seeds the pairs' order")


class ConfirmationOut(BaseModel):
    """A confirmation with its plan, its runs, and once they ended its result and sentence."""

    id: int
    experiment_id: int
    status: str = Field(description="running, finished or failed")
    response: str
    goal: str
    candidate: dict[str, Value] = Field(description="the configuration to deploy")
    baseline: dict[str, Value] = Field(description="today's configuration")
    pairs: int
    plan: dict[str, Any] = Field(description="why this many pairs: power, noise, predicted gain")
    prediction: dict[str, float] | None = Field(
        description="the model's prediction of the candidate's mean (mean, se_mean, sd, df)"
    )
    result: dict[str, Any] | None = Field(
        description="the paired gain, its 95 % interval, p, and whether the prediction held"
    )
    sentence: str | None = Field(description="the result in one sentence, to paste")
    error: str | None
    created_at: datetime
    finished_at: datetime | None
    trials: list[TrialOut]
