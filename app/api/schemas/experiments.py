"""An experiment: the factors, design and objective a client submits, how to start it, and the
experiment as stored and answered, with its progress."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.api.schemas.common import RESTART_REPLICATES, Number, Positive, Strict, Value, ValueIn
from app.api.schemas.suggestions import OptimizationOut
from app.api.schemas.trials import TrialOut

Constraint = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        examples=["clients * threads_per_client <= 256"],
        description="a linear inequality on factors; a product of two factors is allowed",
    ),
]


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
    noise: bool = Field(
        default=False,
        description="varied by the design but never chosen (a workload, a write share): the"
        " optimum is the best configuration of the other factors across its levels",
    )


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


class RobustIn(Strict):
    """How a configuration is judged across the noise factors' levels."""

    aim: Literal["mean", "quantile", "worst"] = Field(
        default="mean",
        description="mean: the mean over the noise levels; quantile: that quantile of them;"
        " worst: the worst level",
    )
    quantile: float | None = Field(
        default=None, description="the quantile aim's quantile, between 0 and 1 (e.g. 0.1)"
    )


class ObjectiveIn(Strict):
    """The response to optimize, in which direction, limits on other responses, and optionally
    several responses combined by desirability (the optimum then maximizes it)."""

    response: str = Field(max_length=64, examples=["tps"])
    goal: Literal["maximize", "minimize"] = "maximize"
    constraints: list[ResponseBoundIn] = Field(default_factory=list, max_length=10)
    desirability: list[DesirabilityIn] = Field(default_factory=list, max_length=10)
    scale: Literal["linear", "log"] | None = None
    robust: RobustIn | None = Field(
        default=None,
        description="with noise factors: the aim across their levels (default: the mean)",
    )


EXAMPLE_FACTORS = [
    {"name": "nodes", "kind": "integer", "low": 1, "high": 5, "hard_to_change": True},
    {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
]


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
    baseline: Literal["current"] | dict[str, ValueIn] | None = Field(
        default=None,
        examples=[{"nodes": 3, "threads_per_client": 16, "wsrep_slave_threads": "current"}],
        description="today's configuration, shown beside every optimum and confirmed against:"
        ' each control factor\'s value, or "current" to read a server variable or provider'
        ' option from the nodes ("current" alone reads every factor); measured first',
    )
    warm_start_from: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=list,
        max_length=20,
        description="earlier experiments (yours, on a target of the same kind) whose succeeded"
        " trials inside the new factor ranges seed this one; they are never run again",
    )


class StartIn(Strict):
    """How to run an experiment's pending trials."""

    restart_replicates: bool = Field(default=False, description=RESTART_REPLICATES)


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


class RobustOut(RobustIn):
    """The robust aim, as stored."""

    model_config = _STORED


class ObjectiveOut(ObjectiveIn):
    """The objective as stored, its scale chosen when it was not given."""

    model_config = _STORED
    constraints: list[ResponseBoundOut] = Field(default_factory=list)
    desirability: list[DesirabilityOut] = Field(default_factory=list)
    scale: Literal["linear", "log"] = "linear"
    robust: RobustOut | None = None


class DesignSpecOut(DesignIn):
    """The design asked for, as stored."""

    model_config = _STORED


class BaselineOut(BaseModel):
    """Today's configuration: the values given, the settings read from the nodes, and the
    whole configuration once they were read (None until then)."""

    given: dict[str, Value]
    current: list[str] = Field(description="the factors read from the nodes")
    config: dict[str, Value] | None = Field(
        description="the baseline's control configuration: given plus read values"
    )


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
    baseline: BaselineOut | None = Field(
        default=None, description="today's configuration, as given and as read from the nodes"
    )
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
