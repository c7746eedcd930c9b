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


class Failure(StrEnum):
    """Why a trial failed: the first kind is retried, the others are final."""

    INFRASTRUCTURE = "infrastructure"  # the cluster was unhealthy: retried up to the attempt limit
    INFEASIBLE = "infeasible"  # the configuration cannot work (e.g. too many connections)
    ERROR = "error"  # anything else: the error and the log tail are kept
    LOST = "lost"  # its worker died (lease expired) on every attempt


class TrialSource(StrEnum):
    """Where a trial came from."""

    DESIGN = "design"
    OBSERVATION = "observation"
    SUGGESTION = "suggestion"  # an accepted suggestion, or a run of the closed loop
    WARM_START = "warm_start"  # copied from an earlier experiment, never run again
    BASELINE = "baseline"  # today's configuration, measured first
    CONFIRMATION = "confirmation"  # a run of a confirmation, held out of the model it tests


class OptimizationStatus(StrEnum):
    """Where a closed optimization loop is: it runs until it stops, is cancelled or fails."""

    RUNNING = "running"
    STOPPED = "stopped"  # budget used up, stopping rule met, or nothing left worth running
    CANCELLED = "cancelled"
    FAILED = "failed"  # the loop itself broke (its error is kept); its trials are kept


class SuggestionStatus(StrEnum):
    """A stored suggestion is open until it is accepted (turned into a trial)."""

    OPEN = "open"
    ACCEPTED = "accepted"


class ConfirmationStatus(StrEnum):
    """A confirmation runs until its pairs are measured (finished) or it cannot finish."""

    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"  # a run failed for good, or the experiment was cancelled
