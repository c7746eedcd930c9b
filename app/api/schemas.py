"""Request and response bodies of the REST API (pydantic v2)."""

from __future__ import annotations

import dataclasses
import functools
import typing
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import Query
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, create_model, field_validator

from app.services.optimization_loop import MAX_BUDGET_SECONDS
from experiments.analysis import Analysis, Optimum
from experiments.analysis.deploy import DeployAnswer
from experiments.suggest import LOOP_STRATEGY_NAMES, STRATEGY_NAMES

ModelOrder = Annotated[
    str,
    Query(
        max_length=20,
        description="model order: linear, interaction, quadratic, or auto (the default: the"
        " terms the runs support, selected from the quadratic model by AICc)",
    ),
]

Value = int | float | str

# Numbers a client sends are finite and at most 1e15 in size: far beyond any benchmark setting
# or result, and small enough that fits, plots and suggestions never overflow.
MAX_MAGNITUDE = 10**15
Number = Annotated[float, Field(ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, le=MAX_MAGNITUDE, allow_inf_nan=False)]
Name = Annotated[str, Field(max_length=64)]
# A factor value as sent: a bounded whole number, a bounded number, or a category name.
ValueIn = Annotated[int, Field(ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE)] | Number | Name


Constraint = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        examples=["clients * threads_per_client <= 256"],
        description="a linear inequality on factors; a product of two factors is allowed",
    ),
]


class ErrorOut(BaseModel):
    """An error answered in one sentence that names what was wrong."""

    detail: str


_ERRORS: dict[int, str] = {
    401: "no API key, or one that is not valid or was revoked (`WWW-Authenticate: Bearer`)",
    404: "no such experiment, trial or suggestion, or one the key's owner may not see",
    409: "the experiment's state forbids it (e.g. cancelled, a manual target, already running)",
    413: "the request body is larger than GALERA_DOE_MAX_BODY_BYTES (default 1 MiB)",
    415: "the body is not JSON: its Content-Type is not application/json",
    503: "the database or the broker is unreachable; retry shortly",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` documenting the plain errors (`{"detail": "..."}`) a route answers;
    422 (`detail` a list naming `loc` and `msg`) is documented by FastAPI itself."""
    documented: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        documented[code] = {"model": ErrorOut, "description": _ERRORS[code]}
        if code == 401:
            documented[code]["headers"] = {
                "WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}}
            }
    return documented


class FieldErrorOut(BaseModel):
    """One field that broke a rule."""

    loc: list[str | int] = Field(
        description="where: body, query, path or header, then the field's path (list indexes"
        ' as numbers), e.g. ["body", "factors", 0, "high"]'
    )
    msg: str = Field(description="the rule it broke, in one sentence")
    type: str = Field(description="the kind of rule (domain_rule for the service's own)")


class FieldErrorsOut(BaseModel):
    """The request was refused: every field that broke a rule, and the rule."""

    detail: list[FieldErrorOut] = Field(description="one entry per field refused")


# What every route behind an API key may answer besides its own outcomes.
KEYED_RESPONSES = error_responses(401, 503) | {
    422: {
        "model": FieldErrorsOut,
        "description": "a field broke a rule: `loc` names it, `msg` says the rule; `type`"
        " domain_rule for a rule of the service's that a schema cannot state (low below high,"
        " the responses a target reports, a design's size)",
    }
}


def _integer_if_whole(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _number_types(annotation: Any) -> set[Any]:
    if annotation in (int, float):
        return {annotation}
    return set().union(*(_number_types(arg) for arg in typing.get_args(annotation)))


@functools.cache
def _takes_integers(model: type[BaseModel], field: str) -> bool:
    """Whether the field holds integers, or a list of them, and no other numbers."""
    return _number_types(model.model_fields[field].annotation) == {int}


class Strict(BaseModel):
    """Unknown fields are an error, so a typo never passes silently; every value must have
    its documented JSON type (no `true` for a number, no `"3"` for an integer); NaN and
    Infinity (which Python's JSON reader accepts) are refused in every number."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

    @field_validator("*", mode="before")
    @classmethod
    def _whole_numbers_are_integers(cls, value: Any, info: ValidationInfo) -> Any:
        """89.0 for an integer field is 89: JSON has one kind of number, and JSON Schema's
        `integer` (what the schema says) is any number without a fraction, however written."""
        if info.field_name is None or not _takes_integers(cls, info.field_name):
            return value
        if isinstance(value, list):
            return [_integer_if_whole(item) for item in value]
        return _integer_if_whole(value)


class FactorIn(Strict):
    """One factor: a numeric range (low/high), explicit levels, or categories."""

    name: str = Field(max_length=64, examples=["nodes"])
    kind: Literal["continuous", "integer", "categorical"] = "continuous"
    low: Number | None = None
    high: Number | None = None
    levels: list[ValueIn] | None = Field(default=None, max_length=50)
    unit: str = Field(default="", max_length=32)
    scale: Literal["linear", "log2"] = "linear"
    hard_to_change: bool = False
    fidelity: bool = False


class DesignIn(Strict):
    """Which design to plan and its options; the planner checks the values and the size.

    kind: full_factorial, fractional_factorial, plackett_burman, ccd, box_behnken,
    latin_hypercube or d_optimal.
    """

    kind: str = Field(default="full_factorial", max_length=40)
    levels: int = Field(default=2, description="levels per low/high factor (full factorial)")
    resolution: int | None = Field(default=None, description="fractional factorial resolution")
    runs: int | None = Field(
        default=None, description="run count (fractional, Plackett-Burman, LHS, D-optimal)"
    )
    ccd_type: str | None = Field(
        default=None,
        max_length=20,
        description="circumscribed, inscribed or face_centred; unset: circumscribed, or"
        " face-centred when its axial points would leave a hard range (design notes say which)",
    )
    alpha: Annotated[str, Field(max_length=20)] | Number = Field(
        default="rotatable", description="rotatable, orthogonal or a number"
    )
    model: str | None = Field(
        default=None, max_length=20, description="linear, interaction or quadratic"
    )
    candidates: int | None = Field(default=None, description="D-optimal candidate set size")
    centre_points: int | None = Field(
        default=None, description="centre points per block; default 4 for ccd, 3 for box_behnken"
    )
    replicates: int = 1
    blocks: int = 1
    randomize: bool = True
    seed: int = 0


class ResponseBoundIn(Strict):
    """A limit another response must respect at the optimum, e.g. latency_p95_ms at most 50."""

    response: str = Field(max_length=64, examples=["latency_p95_ms"])
    min: Number | None = None
    max: Number | None = Field(default=None, examples=[50])


class DesirabilityIn(Strict):
    """One response of a Derringer-Suich desirability objective: 0 outside low..high, 1 at its
    best (high for maximize, low for minimize, `target` for target), `weight` the curve's
    exponent and `importance` its weight in the overall geometric mean."""

    response: str = Field(max_length=64, examples=["tps"])
    goal: Literal["maximize", "minimize", "target"] = "maximize"
    low: Number
    high: Number
    target: Number | None = None
    weight: Positive = 1.0
    importance: Positive = 1.0


class ObjectiveIn(Strict):
    """The response to optimize, in which direction, limits on other responses, and optionally
    several responses combined by desirability (the optimum then maximizes it)."""

    response: str = Field(max_length=64, examples=["tps"])
    goal: Literal["maximize", "minimize"] = "maximize"
    constraints: list[ResponseBoundIn] = Field(default_factory=list, max_length=10)
    desirability: list[DesirabilityIn] = Field(default_factory=list, max_length=10)
    scale: Literal["linear", "log"] | None = None


EXAMPLE_FACTORS = [
    {"name": "nodes", "kind": "integer", "low": 1, "high": 5, "hard_to_change": True},
    {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
]
EXAMPLE_OBSERVATION = {
    "config": {"nodes": 3, "threads_per_client": 16},
    "responses": {"tps": 1480.5, "latency_p95_ms": 14.2},
}


class ExperimentIn(Strict):
    """A new experiment. `design: null` plans nothing (e.g. to import observations)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "nodes and threads",
                    "target": "simulated",
                    "factors": EXAMPLE_FACTORS,
                    "design": {"kind": "full_factorial", "levels": 3, "seed": 1},
                    "objective": {"response": "tps", "goal": "maximize"},
                }
            ]
        }
    )
    name: str = Field(min_length=1, max_length=200)
    target: str = Field(max_length=100, examples=["simulated"])
    factors: list[FactorIn] = Field(min_length=1, max_length=30)
    design: DesignIn | None = Field(default_factory=DesignIn)
    constraints: list[Constraint] = Field(default_factory=list, max_length=20)
    objective: ObjectiveIn
    warm_start_from: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=list,
        max_length=20,
        description="earlier experiments (yours, on a target of the same kind) whose succeeded"
        " trials inside the new factor ranges seed this one; they are never run again",
    )


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


class TrialDetailOut(TrialOut):
    """A trial with the raw output of the tools that measured it."""

    raw_output: str | None
    record: dict[str, Any] | None


class BestOut(BaseModel):
    """The best succeeded trial so far for the objective."""

    model_config = ConfigDict(from_attributes=True)

    trial_id: int
    value: float
    config: dict[str, Value]


class TimingOut(BaseModel):
    """Elapsed time and the estimated time to finish, at one trial at a time per target."""

    model_config = ConfigDict(from_attributes=True)

    elapsed_s: float | None = Field(description="since the first trial started")
    mean_trial_s: float | None = Field(description="mean duration of the finished trials")
    remaining_s: float | None = Field(description="estimated; None until a trial finished")
    estimated_finish_at: datetime | None


# An experiment's request as the service stored it and answers with it: every field present,
# keys an older release stored and this one no longer knows left out.
_STORED = ConfigDict(extra="ignore", strict=False, json_schema_serialization_defaults_required=True)


class FactorOut(FactorIn):
    """One factor as stored: what FactorIn took, its defaults filled in."""

    model_config = _STORED


class ResponseBoundOut(ResponseBoundIn):
    """A limit on another response, as stored."""

    model_config = _STORED


class DesirabilityOut(DesirabilityIn):
    """One response of a desirability objective, as stored."""

    model_config = _STORED


class ObjectiveOut(ObjectiveIn):
    """The objective as stored, its scale chosen when it was not given."""

    model_config = _STORED
    constraints: list[ResponseBoundOut] = Field(default_factory=list)
    desirability: list[DesirabilityOut] = Field(default_factory=list)
    scale: Literal["linear", "log"] = "linear"


class DesignSpecOut(DesignIn):
    """The design asked for, as stored."""

    model_config = _STORED


class ExperimentOut(BaseModel):
    """An experiment with its progress: trial counts by status, and the best so far."""

    id: int
    name: str
    status: str
    target: str
    factors: list[FactorOut]
    design: DesignSpecOut | None
    design_notes: list[str]
    constraints: list[str]
    objective: ObjectiveOut
    created_at: datetime
    updated_at: datetime
    progress: dict[str, int] = Field(description="trial counts by status, and the total")
    best: BestOut | None
    timing: TimingOut
    optimization: OptimizationOut | None = Field(
        default=None, description="the latest closed optimization loop, if any"
    )


class ExperimentWithTrialsOut(ExperimentOut):
    """An experiment and its planned trials."""

    trials: list[TrialOut]


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
    **_engine_fields(Analysis),
)


class ServiceHealth(BaseModel):
    """Whether one dependency answers."""

    ok: bool
    error: str | None


class HealthOut(BaseModel):
    """Reachability of the database and the broker."""

    status: Literal["ok", "degraded"]
    database: ServiceHealth
    broker: ServiceHealth


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


class TargetOut(BaseModel):
    """A target as clients see it: never its settings (they hold addresses and credentials)."""

    name: str
    kind: str
    runnable: bool
    factors: list[str] | None = Field(description="factor names it sets; null: any name")
    accepts_server_variables: bool
    responses: list[str] | None = Field(description="responses it reports; null: any name")


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


RESTART_REPLICATES = "restart every node before a trial that measures a configuration again"
BUDGET_SECONDS = (
    "seconds of trial time the loop may spend beside its trials (each trial's wall time, start to"
    " finish); it stops when either budget is spent, and plays the end of the budget in the last"
    " fifth of either"
)


class StartIn(Strict):
    """How to run an experiment's pending trials."""

    restart_replicates: bool = Field(default=False, description=RESTART_REPLICATES)


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
