"""What the fitted model says: the analysis of a response, and its slices for the plots."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from pydantic import BaseModel, Field, create_model

from app.api.schemas.common import Value
from experiments.analysis import Analysis, Optimum
from experiments.analysis.baseline_view import BaselineView


def _engine_fields(result: type) -> dict[str, Any]:
    """The fields of an engine result dataclass, typed as it types them, for a response model
    that carries it whole (one definition of each field: the engine's)."""
    hints = typing.get_type_hints(result)
    return {field.name: (hints[field.name], ...) for field in dataclasses.fields(result)}


AnalysisOut = create_model(
    "AnalysisOut",
    __doc__="The fitted model of one response: terms, ANOVA, fit statistics, ranked factors,"
    " the optimum with its intervals, diagnostics and the explanation.",
    response=(str, Field(description="the response modelled")),
    trials_used=(int, Field(description="succeeded trials that measured it (the fit's runs)")),
    trials_failed=(int, Field(description="failed trials, left out of the fit")),
    baseline=(
        BaselineView | None,
        Field(
            default=None,
            description="today's configuration beside the optimum and the configuration to"
            " deploy: measured, predicted, and the predicted gain over it",
        ),
    ),
    **_engine_fields(Analysis),
)


class SlicePointOut(BaseModel):
    """An observed run projected onto the slice's plane."""

    x: Value
    y: Value | None
    value: float


class SurfaceOut(BaseModel):
    """Predictions of the fitted model over one or two factors, the others at the optimum
    (or where `held` put them)."""

    response: str
    model: str
    optimum: Optimum
    x: str
    y: str | None
    x_values: list[Value]
    y_values: list[Value]
    predicted: list[list[float]] = Field(description="one row per y value (one row without y)")
    ci_low: list[list[float | None]]
    ci_high: list[list[float | None]]
    feasible: list[list[bool]] = Field(
        description="False where a factor constraint or a limit on another response is broken"
    )
    held: dict[str, Value]
    runs: list[SlicePointOut]
    inside: list[list[bool]] = Field(
        description="False where no run was made nearby (outside the convex hull of the runs):"
        " the prediction there is an extrapolation"
    )
    continuous: bool = Field(
        description="whether integer factors are sampled between their whole numbers"
    )
    model_label: str = Field(description="the model's terms, e.g. auto (...): nodes + threads")
