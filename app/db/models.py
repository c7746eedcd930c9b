"""SQLAlchemy models: experiments and their trials. The schema itself is made by migrations."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from app.statuses import (
    ConfirmationStatus,
    ExperimentStatus,
    OptimizationStatus,
    SuggestionStatus,
    TrialSource,
    TrialStatus,
)
from experiments.factors import FactorSpace
from experiments.objective import Objective


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (stored naive UTC, microseconds kept)."""

    impl = DateTime
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> Any:
        if dialect.name == "mysql":
            return dialect.type_descriptor(mysql.DATETIME(fsp=6))
        return dialect.type_descriptor(DateTime())

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else value.replace(tzinfo=UTC)


LongText = Text().with_variant(mysql.LONGTEXT(), "mysql")


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


class Base(DeclarativeBase):
    """Declarative base of all models."""


class Experiment(Base):
    """An experiment: factor space, design request, objective and target, with its status."""

    __tablename__ = "experiments"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(20), default=ExperimentStatus.PLANNED)
    target: Mapped[str] = mapped_column(String(100))
    factors: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    design: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    design_notes: Mapped[list[str]] = mapped_column(JSON, default=list)
    design_report: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    constraints: Mapped[list[str]] = mapped_column(JSON, default=list)
    objective: Mapped[dict[str, Any]] = mapped_column(JSON)
    # Today's configuration as the client gave it (experiments.baseline.Baseline.as_dict).
    baseline: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    owner: Mapped[str | None] = mapped_column(String(100), nullable=True, index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)
    # 0 when made, then counted up only by database triggers, on every change of the
    # experiment's trials and every new loop (migration 0007): it keys the cache of what the
    # trials add up to.
    trials_revision: Mapped[int] = mapped_column(Integer, default=0, server_default=text("0"))

    @property
    def parsed_objective(self) -> Objective:
        """The stored objective as the engine's value type."""
        return Objective.from_stored(self.objective)

    @functools.cached_property
    def factor_space(self) -> FactorSpace:
        """The factor space, built once per loaded experiment (its factors never change)."""
        return FactorSpace.from_dicts(self.factors)


class Trial(Base):
    """One run of the design, or one observation recorded from elsewhere."""

    __tablename__ = "trials"
    __table_args__ = (
        Index("ix_trials_experiment_run_order", "experiment_id", "run_order"),
        Index("ix_trials_experiment_status", "experiment_id", "status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    experiment_id: Mapped[int] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), index=True
    )
    run_order: Mapped[int] = mapped_column(Integer)
    std_order: Mapped[int | None] = mapped_column(Integer, nullable=True)
    block: Mapped[int] = mapped_column(Integer, default=1)
    replicate: Mapped[int] = mapped_column(Integer, default=1)
    whole_plot: Mapped[int | None] = mapped_column(Integer, nullable=True)
    duplicate_of: Mapped[int | None] = mapped_column(Integer, nullable=True)
    point_type: Mapped[str] = mapped_column(String(20))
    rounded: Mapped[bool] = mapped_column(default=False)
    # Restart every node before this trial: a loop's replicate measured in a fresh state.
    restart_first: Mapped[bool] = mapped_column(default=False, server_default=text("0"))
    source: Mapped[str] = mapped_column(String(20), default=TrialSource.DESIGN)
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    coded: Mapped[dict[str, float] | None] = mapped_column(JSON, nullable=True)
    status: Mapped[str] = mapped_column(String(20), default=TrialStatus.PENDING, index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    worker: Mapped[str | None] = mapped_column(String(200), nullable=True)
    queued_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    responses: Mapped[dict[str, float] | None] = mapped_column(JSON, nullable=True)
    raw_output: Mapped[str | None] = mapped_column(LongText, nullable=True)
    # What the trial ran on (versions, variables, status counters, commands): worker/targets/record.
    record: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    error: Mapped[str | None] = mapped_column(LongText, nullable=True)
    failure: Mapped[str | None] = mapped_column(String(20), nullable=True)
    optimization_id: Mapped[int | None] = mapped_column(
        ForeignKey("optimizations.id", ondelete="SET NULL"), nullable=True, index=True
    )
    # Server settings this trial reads from the nodes before it runs (a baseline "current"):
    # its config holds the values read once it ran.
    reads_current: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    # A confirmation's run: its arm ("candidate" or "baseline") and pair. No foreign key: adding
    # one to trials copies the table, which drops the triggers of migration 0007; the
    # experiment's cascade deletes both.
    confirmation_id: Mapped[int | None] = mapped_column(Integer, nullable=True, index=True)
    arm: Mapped[str | None] = mapped_column(String(20), nullable=True)
    pair: Mapped[int | None] = mapped_column(Integer, nullable=True)


class Confirmation(Base):
    """A confirmation run: the deploy answer against the baseline in interleaved pairs, the
    plan it was given (pair count and why), the model's prediction, and its result."""

    __tablename__ = "confirmations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    experiment_id: Mapped[int] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), index=True
    )
    status: Mapped[str] = mapped_column(String(20), default=ConfirmationStatus.RUNNING)
    response: Mapped[str] = mapped_column(String(64))
    goal: Mapped[str] = mapped_column(String(20))
    candidate: Mapped[dict[str, Any]] = mapped_column(JSON)
    baseline: Mapped[dict[str, Any]] = mapped_column(JSON)
    pairs: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(Integer, default=0)
    plan: Mapped[dict[str, Any]] = mapped_column(JSON)
    prediction: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    error: Mapped[str | None] = mapped_column(LongText, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class TargetLease(Base):
    """Who runs trials on a target now: one trial at a time per cluster, until `expires_at`."""

    __tablename__ = "target_leases"

    target: Mapped[str] = mapped_column(String(100), primary_key=True)
    holder: Mapped[str] = mapped_column(String(200))
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Optimization(Base):
    """A closed loop on an experiment: suggest, run, refit, repeat, until it stops."""

    __tablename__ = "optimizations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    experiment_id: Mapped[int] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), index=True
    )
    status: Mapped[str] = mapped_column(String(20), default=OptimizationStatus.RUNNING)
    strategy: Mapped[str] = mapped_column(String(40))
    budget: Mapped[int] = mapped_column(Integer)
    # Seconds of trial time the loop may spend beside its trials (None: only `budget` counts).
    budget_seconds: Mapped[float | None] = mapped_column(Float, nullable=True)
    batch_size: Mapped[int] = mapped_column(Integer, default=1)
    stop_below: Mapped[float | None] = mapped_column(Float, nullable=True)
    # Whether the loop's trials that measure a configuration again restart the nodes first.
    restart_replicates: Mapped[bool] = mapped_column(default=False, server_default=text("0"))
    rounds: Mapped[int] = mapped_column(Integer, default=0)
    stage: Mapped[str | None] = mapped_column(String(40), nullable=True)
    explanation: Mapped[str | None] = mapped_column(LongText, nullable=True)
    expected_improvement: Mapped[float | None] = mapped_column(Float, nullable=True)
    stop_reason: Mapped[str | None] = mapped_column(LongText, nullable=True)
    error: Mapped[str | None] = mapped_column(LongText, nullable=True)
    # What to deploy after the latest round (experiments.suggest.Recommendation as a dict).
    recommendation: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # The one answer to deploy after the latest round, with its evidence
    # (experiments.analysis.deploy.DeployAnswer as a dict).
    deploy: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class Suggestion(Base):
    """A configuration a strategy proposed, with its prediction and reason; open until accepted.

    The closed loop stores what it runs here too (accepted at once), so every trial it ran keeps
    the reason it was chosen.
    """

    __tablename__ = "suggestions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    experiment_id: Mapped[int] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), index=True
    )
    optimization_id: Mapped[int | None] = mapped_column(
        ForeignKey("optimizations.id", ondelete="SET NULL"), nullable=True
    )
    trial_id: Mapped[int | None] = mapped_column(
        ForeignKey("trials.id", ondelete="SET NULL"), nullable=True
    )
    status: Mapped[str] = mapped_column(String(20), default=SuggestionStatus.OPEN)
    strategy: Mapped[str] = mapped_column(String(40))
    stage: Mapped[str] = mapped_column(String(40))
    point_type: Mapped[str] = mapped_column(String(20))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    predicted: Mapped[float | None] = mapped_column(Float, nullable=True)
    uncertainty: Mapped[float | None] = mapped_column(Float, nullable=True)
    expected_improvement: Mapped[float | None] = mapped_column(Float, nullable=True)
    predicted_by: Mapped[str | None] = mapped_column(String(40), nullable=True)
    reason: Mapped[str] = mapped_column(LongText)
    based_on_trials: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class ApiKey(Base):
    """A bearer token of an owner; only its SHA-256 is stored, the token is shown once."""

    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    owner: Mapped[str] = mapped_column(String(100))
    role: Mapped[str] = mapped_column(String(20))
    prefix: Mapped[str] = mapped_column(String(20))
    secret_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)


class IdempotentRequest(Base):
    """A POST done once under an `Idempotency-Key`: a retry with the same key and body gets the
    experiment it made or started instead of doing it again."""

    __tablename__ = "idempotent_requests"
    __table_args__ = (
        UniqueConstraint("owner", "operation", "key", name="uq_idempotent_requests_key"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    owner: Mapped[str] = mapped_column(String(100))
    operation: Mapped[str] = mapped_column(String(100))
    key: Mapped[str] = mapped_column(String(200))
    fingerprint: Mapped[str] = mapped_column(String(64))
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
