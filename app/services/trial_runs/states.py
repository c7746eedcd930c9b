"""The states of a trial a worker holds: claimed, its leases renewed, recorded as it ended.

Every record is conditional on the worker's own claim (worker and attempt, the trial running),
and recording twice is harmless: a worker that lost its connection in the middle of a commit
records again. The lease decides between a worker and the reaper: whichever writes first once
it ran out wins, in one conditional UPDATE, and the trial ends one way only: the worker's
record (its lease renewed or its result recorded first), or attempt lost and run again (the
reaper's), never a success over an attempt the reaper counted lost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import rows
from app.db.models import Trial
from app.statuses import FINAL_TRIAL_STATUSES, ExperimentStatus, Failure, TrialStatus
from experiments.factors import FactorSpace


@dataclass(frozen=True)
class ClaimedTrial:
    """A trial this worker now holds the lease on."""

    trial_id: int
    experiment_id: int
    target: str
    config: dict[str, Any]
    attempt: int
    worker: str
    restart_first: bool = False
    # The settings to read from the nodes before the trial runs (a baseline's "current"), and
    # the experiment's factors, which check the values read.
    reads_current: tuple[str, ...] = ()
    factors: list[dict[str, Any]] | None = None
    # The confirmation the trial is a run of, which its end may advance.
    confirmation_id: int | None = None


async def claim(
    session: AsyncSession, *, trial_id: int, worker: str, lease: timedelta
) -> ClaimedTrial | None:
    """Take a queued trial (atomically); None when it is not queued (a duplicate delivery)."""
    claimed = await rows.claim_trial(session, trial_id, worker=worker, lease=lease)
    await session.commit()
    if not claimed:
        return None
    return await held_by(session, trial_id=trial_id, worker=worker)


async def held_by(session: AsyncSession, *, trial_id: int, worker: str) -> ClaimedTrial | None:
    """The trial if it runs under `worker`'s claim: a claim committed just before the
    connection broke is found again this way. None otherwise."""
    trial = await rows.get_trial(session, trial_id)
    if trial is None or trial.status != TrialStatus.RUNNING or trial.worker != worker:
        return None
    experiment = await rows.get_experiment(session, trial.experiment_id)
    assert experiment is not None
    return ClaimedTrial(
        trial_id=trial.id,
        experiment_id=trial.experiment_id,
        target=experiment.target,
        config=dict(trial.config),
        attempt=trial.attempts,
        worker=worker,
        restart_first=trial.restart_first,
        reads_current=tuple(trial.reads_current or ()),
        factors=list(experiment.factors),
        confirmation_id=trial.confirmation_id,
    )


async def record_success(
    session: AsyncSession,
    *,
    claimed: ClaimedTrial,
    responses: dict[str, float],
    raw_output: str,
    record: dict[str, Any] | None = None,
    config: Mapping[str, Any] | None = None,
) -> bool:
    """running -> succeeded with the responses and the record of what it ran on, keeping the
    errors of earlier attempts; False if the trial was taken from this worker. `config`: the
    whole configuration it ran, when the worker completed it (the settings it read from the
    nodes), stored with its coded values."""
    values: dict[str, Any] = {"responses": responses, "raw_output": raw_output, "record": record}
    if config is not None:
        space = FactorSpace.from_dicts(claimed.factors or ())
        values["config"] = dict(config)
        values["coded"] = space.coded(config)
    return await _finish(session, claimed, TrialStatus.SUCCEEDED, values)


async def record_failure(
    session: AsyncSession,
    *,
    claimed: ClaimedTrial,
    error: str,
    failure: Failure = Failure.ERROR,
    raw_output: str | None = None,
    max_attempts: int = 1,
) -> TrialStatus | None:
    """Record a failed attempt, keeping its error after those of earlier attempts.

    An infrastructure failure goes back to `queued` while attempts remain (the caller sends it
    again); any other failure, or the last attempt, is final: `failed`, left out of every fit.
    Returns the new status, or None if the trial was no longer this worker's.
    """
    trial = await rows.get_trial(session, claimed.trial_id)
    history = trial.error if trial is not None else None
    line = _attempt_line(claimed.attempt, failure, error)
    recorded = history is not None and history.endswith(line)
    if recorded:
        history = history[: -len(line)].rstrip("\n") or None  # recorded already: record again
    errors = f"{history}\n{line}" if history else line
    if failure == Failure.INFRASTRUCTURE and claimed.attempt < max_attempts:
        requeued = await rows.transition_claimed(
            session,
            claimed.trial_id,
            worker=claimed.worker,
            attempt=claimed.attempt,
            to_status=TrialStatus.QUEUED,
            values={"error": errors, "raw_output": raw_output, "lease_expires_at": None},
        )
        await session.commit()
        # Queued under this claim with this very line last: this worker's own earlier record
        # (the reaper's would end with its "lost" line).
        again = (
            recorded
            and trial is not None
            and trial.status == TrialStatus.QUEUED
            and trial.worker == claimed.worker
            and trial.attempts == claimed.attempt
        )
        return TrialStatus.QUEUED if requeued or again else None
    done = await _finish(
        session,
        claimed,
        TrialStatus.FAILED,
        {"error": errors, "failure": failure, "raw_output": raw_output},
    )
    return TrialStatus.FAILED if done else None


async def record_cancelled(session: AsyncSession, *, claimed: ClaimedTrial) -> bool:
    """running -> cancelled, with no result: its experiment was cancelled while it ran. False
    if the trial was no longer this worker's."""
    return await _finish(session, claimed, TrialStatus.CANCELLED, {})


async def stop_reason(session: AsyncSession, *, claimed: ClaimedTrial) -> str | None:
    """Why the worker running `claimed` should stop it now, or None: its experiment (or the
    trial) was cancelled, another worker claimed the trial since, or the reaper took it back
    (its lease ran out while this worker could not renew it): that attempt is lost, its result
    would not be recorded, and the target is wanted for the attempt that replaces it."""
    trial = await rows.get_trial(session, claimed.trial_id)
    if trial is None:
        return "the trial no longer exists"
    experiment = await rows.get_experiment(session, trial.experiment_id)
    if trial.status == TrialStatus.CANCELLED or (
        experiment is not None and experiment.status == ExperimentStatus.CANCELLED
    ):
        return "cancelled"
    if trial.worker != claimed.worker or trial.attempts != claimed.attempt:
        return f"the trial was claimed again by {trial.worker} (attempt {trial.attempts})"
    if trial.status == TrialStatus.QUEUED:
        return "its lease ran out and the reaper sent it again"
    if trial.status != TrialStatus.RUNNING:
        return f"the trial is {trial.status} already"
    return None


def round_over(trials: Sequence[Trial]) -> bool:
    """Whether every trial of the experiment has finished (a loop's round is over)."""
    return all(trial.status in FINAL_TRIAL_STATUSES for trial in trials)


async def renew_lease(
    session: AsyncSession, *, trial_id: int, worker: str, lease: timedelta
) -> bool:
    """Keep a running trial's lease alive; False when the trial is no longer this worker's."""
    renewed = await rows.renew_trial_lease(session, trial_id, worker=worker, lease=lease)
    await session.commit()
    return renewed


async def optimization_to_advance(session: AsyncSession, *, experiment_id: int) -> int | None:
    """The experiment's running optimization loop when every trial has finished: its next
    round is due. None otherwise."""
    loop = await rows.running_optimization(session, experiment_id)
    if loop is None:
        return None
    return loop.id if round_over(await rows.list_trials(session, experiment_id)) else None


async def target_name(session: AsyncSession, *, trial_id: int) -> str | None:
    """The target a queued trial runs on; None when the trial is not queued (nothing to do)."""
    trial = await rows.get_trial(session, trial_id)
    if trial is None or trial.status != TrialStatus.QUEUED:
        return None
    experiment = await rows.get_experiment(session, trial.experiment_id)
    return None if experiment is None else experiment.target


async def acquire_target(
    session: AsyncSession, *, target: str, holder: str, ttl: timedelta
) -> bool:
    """Take (or renew) the exclusive lease on a target: one trial at a time per cluster."""
    return await rows.acquire_target_lease(session, target, holder=holder, ttl=ttl)


async def release_target(session: AsyncSession, *, target: str, holder: str) -> None:
    """Give the target back."""
    await rows.release_target_lease(session, target, holder=holder)


def _attempt_line(attempt: int, failure: Failure, error: str) -> str:
    return f"attempt {attempt} ({failure}): {error}"


def with_attempt(history: str | None, attempt: int, failure: Failure, error: str) -> str:
    """The trial's error text with one more attempt's error after those of earlier attempts."""
    line = _attempt_line(attempt, failure, error)
    return f"{history}\n{line}" if history else line


async def _finish(
    session: AsyncSession, claimed: ClaimedTrial, status: TrialStatus, values: dict[str, Any]
) -> bool:
    """Record the claimed trial's final status; True also when this very record was made
    before (a retry after the connection broke during the commit)."""
    done = await rows.transition_claimed(
        session,
        claimed.trial_id,
        worker=claimed.worker,
        attempt=claimed.attempt,
        to_status=status,
        values={**values, **rows.finished_values()},
    )
    await complete_experiment_if_done(session, claimed.experiment_id)
    await session.commit()
    if done:
        return True
    trial = await rows.get_trial(session, claimed.trial_id)
    return (
        trial is not None
        and trial.status == status
        and trial.worker == claimed.worker
        and trial.attempts == claimed.attempt
    )


async def complete_experiment_if_done(session: AsyncSession, experiment_id: int) -> None:
    """Mark a running experiment completed once none of its trials is left to run."""
    experiment = await rows.get_experiment(session, experiment_id)
    if experiment is None or experiment.status != ExperimentStatus.RUNNING:
        return
    if await rows.running_optimization(session, experiment_id) is not None:
        return  # the loop completes the experiment when it stops
    trials = await rows.list_trials(session, experiment_id)
    if all(trial.status in FINAL_TRIAL_STATUSES for trial in trials):
        experiment.status = ExperimentStatus.COMPLETED
