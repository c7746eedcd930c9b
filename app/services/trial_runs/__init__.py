"""A trial's whole life: made and sent to the workers (`sending`), driven by a worker from its
claim to its record (`execution`), its states and leases in the database (`states`), and put
back in the queue when its worker or its message was lost (`reaping`)."""

from __future__ import annotations

from app.services.trial_runs.execution import Outcome, Worker, execute
from app.services.trial_runs.reaping import Reaped, reap
from app.services.trial_runs.sending import (
    mark_fresh_replicates,
    new_trial,
    send_loop_start,
    send_trials,
)
from app.services.trial_runs.states import (
    ClaimedTrial,
    acquire_target,
    claim,
    held_by,
    optimization_to_advance,
    record_cancelled,
    record_failure,
    record_success,
    release_target,
    renew_lease,
    stop_reason,
    target_name,
)

__all__ = [
    "ClaimedTrial",
    "Outcome",
    "Reaped",
    "Worker",
    "acquire_target",
    "claim",
    "execute",
    "held_by",
    "mark_fresh_replicates",
    "new_trial",
    "optimization_to_advance",
    "reap",
    "record_cancelled",
    "record_failure",
    "record_success",
    "release_target",
    "renew_lease",
    "send_loop_start",
    "send_trials",
    "stop_reason",
    "target_name",
]
