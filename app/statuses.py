"""Lifecycle states of experiments and trials, shared by the data layer and the API."""

from enum import StrEnum


class TrialStatus(StrEnum):
    """Where a trial is in its life; the last three are final."""

    PENDING = "pending"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINAL_TRIAL_STATUSES = frozenset({TrialStatus.SUCCEEDED, TrialStatus.FAILED, TrialStatus.CANCELLED})


class ExperimentStatus(StrEnum):
    """Planned until started; completed when no trial is left to run."""

    PLANNED = "planned"
    RUNNING = "running"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class TrialSource(StrEnum):
    """Where a trial came from."""

    DESIGN = "design"
    OBSERVATION = "observation"
