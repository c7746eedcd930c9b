"""Celery tasks: thin wrappers that reload by id, call a service and record the outcome.

What a trial survives here:
- the database unreachable for a while (a restart): every database step is retried with backoff
  for `db_retry_seconds`, and a result measured is held until it is recorded;
- the same trial delivered twice: the claim is atomic, the second delivery is logged and skipped;
- its experiment cancelled while it runs: a watcher polls the trial every `cancel_poll_seconds`
  (and renews the leases), the target stops its run, the trial is recorded `cancelled`.
Every delivery's outcome is logged as "trial <id> outcome: <outcome>".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import threading
import traceback
from dataclasses import dataclass, field
from datetime import timedelta

from celery.signals import worker_shutdown

from app.config import get_settings
from app.db.session import AsyncSession
from app.queue import ADVANCE_OPTIMIZATION_TASK, RUN_TRIAL_TASK, TaskQueue
from app.services import optimization_loop, trial_runs
from app.services.errors import UnavailableError
from app.services.trial_runs import ClaimedTrial
from app.statuses import Failure, TrialStatus
from app.target_specs import load_targets
from worker import runtime
from worker.celery_app import celery_app
from worker.runtime import retrying
from worker.targets import build_target
from worker.targets.base import (
    InfeasibleError,
    InfrastructureError,
    Target,
    TargetError,
    TrialCancelledError,
    TrialResult,
)

log = logging.getLogger(__name__)

_targets: dict[str, Target] = {}
# How long this worker waits for another worker's trial on the same cluster before giving up.
LEASE_WAIT = timedelta(hours=2)


@dataclass
class _Stop:
    """Set by the watcher when the running trial must stop, with the reason."""

    event: threading.Event = field(default_factory=threading.Event)
    reason: str | None = None


@celery_app.task(name=RUN_TRIAL_TASK)
def run_trial(trial_id: int) -> str:
    """Run one trial by id: lease its target, claim it, run it, record responses or error."""
    return runtime.run(execute_trial(trial_id))


async def execute_trial(trial_id: int) -> str:
    """Lease the target, claim and run the trial, record it; returns what happened, logged."""
    outcome = await _execute_trial(trial_id)
    log.info("trial %s outcome: %s", trial_id, outcome)
    return outcome


async def _execute_trial(trial_id: int) -> str:
    target = await retrying(
        f"reading trial {trial_id}",
        lambda session: trial_runs.target_name(session, trial_id=trial_id),
    )
    if target is None:
        return "skipped (not queued: a duplicate delivery, or cancelled)"
    holder = f"{socket.gethostname()}:{os.getpid()}"
    lease = timedelta(seconds=get_settings().trial_lease_seconds)
    if not await _wait_for_target(trial_id, target, holder, lease):
        return "skipped (no longer queued: run by another delivery, or cancelled)"
    try:
        claimed = await _claim(trial_id, holder, lease)
        if claimed is None:
            return "skipped (claimed by another delivery)"
        return await _run(claimed, holder, lease)
    finally:
        await retrying(
            f"releasing target {target}",
            lambda session: trial_runs.release_target(session, target=target, holder=holder),
        )


async def _claim(trial_id: int, holder: str, lease: timedelta) -> ClaimedTrial | None:
    tries = 0

    async def take(session: AsyncSession) -> ClaimedTrial | None:
        nonlocal tries
        tries += 1
        claimed = await trial_runs.claim(session, trial_id=trial_id, worker=holder, lease=lease)
        if claimed is None and tries > 1:
            # The earlier try's commit may have gone through before its connection broke.
            claimed = await trial_runs.held_by(session, trial_id=trial_id, worker=holder)
        return claimed

    return await retrying(f"claiming trial {trial_id}", take)


async def _run(claimed: ClaimedTrial, holder: str, lease: timedelta) -> str:
    """Run the trial on its target while a watcher renews the leases and polls for a cancel;
    then record what happened (the watcher stops first: it must not stop a finished run)."""
    stop = _Stop()
    watcher = asyncio.create_task(_watch(claimed, holder, lease, stop))
    outcome: TrialResult | Exception
    try:
        target = _target(claimed.target)
        outcome = await asyncio.to_thread(
            target.run, claimed.config, run_key=claimed.trial_id, cancel=stop.event
        )
    except Exception as error:
        outcome = error
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    return await _record(claimed, outcome, stop.reason)


async def _record(
    claimed: ClaimedTrial, outcome: TrialResult | Exception, stop_reason: str | None
) -> str:
    if isinstance(outcome, TrialCancelledError):
        return await _stopped(claimed, stop_reason or "cancelled")
    if isinstance(outcome, InfrastructureError):
        return await _failed(claimed, str(outcome), Failure.INFRASTRUCTURE)
    if isinstance(outcome, InfeasibleError):
        return await _failed(claimed, str(outcome), Failure.INFEASIBLE)
    if isinstance(outcome, TargetError):
        return await _failed(claimed, str(outcome), Failure.ERROR)
    if isinstance(outcome, Exception):  # a bug in a target must fail the trial, not leave it
        trace = "".join(traceback.format_exception(outcome, limit=5))
        return await _failed(claimed, trace, Failure.ERROR)
    result = outcome
    try:
        recorded = await retrying(
            f"recording the result of trial {claimed.trial_id}",
            lambda session: trial_runs.record_success(
                session, claimed=claimed, responses=result.responses, raw_output=result.raw_output
            ),
        )
    except Exception:
        # Out of retries: the trial runs again once its lease expires, but what this run
        # measured stays in the log for the operator.
        log.error(
            "trial %s: result NOT recorded: %s", claimed.trial_id, json.dumps(result.responses)
        )
        raise
    if not recorded:
        return "not recorded (the trial was claimed again by another worker, which records it)"
    await _continue_loop(claimed)
    return "succeeded"


async def _stopped(claimed: ClaimedTrial, reason: str) -> str:
    """The watcher stopped the run: record `cancelled`, or leave the trial to its new owner."""
    if reason != "cancelled":
        return f"stopped ({reason})"
    recorded = await retrying(
        f"recording trial {claimed.trial_id} as cancelled",
        lambda session: trial_runs.record_cancelled(session, claimed=claimed),
    )
    return "cancelled" if recorded else "stopped (the trial was no longer this worker's)"


async def _failed(claimed: ClaimedTrial, error: str, failure: Failure) -> str:
    if claimed.target in _targets and failure != Failure.INFEASIBLE:
        # The next trial must start from a known state, whatever this one left behind; a
        # configuration the server refused left the cluster as it was.
        await asyncio.to_thread(_targets[claimed.target].recover)
    status = await retrying(
        f"recording the failure of trial {claimed.trial_id}",
        lambda session: trial_runs.record_failure(
            session,
            claimed=claimed,
            error=error,
            failure=failure,
            max_attempts=get_settings().max_trial_attempts,
        ),
    )
    if status == TrialStatus.QUEUED:
        await TaskQueue(get_settings().broker_url).enqueue_trials(
            [claimed.trial_id], target=claimed.target
        )
        return "requeued"
    await _continue_loop(claimed)
    return "failed"


async def _continue_loop(claimed: ClaimedTrial) -> None:
    """Send the next step of the experiment's optimization loop when this trial was the last
    of its round."""
    experiment_id = claimed.experiment_id
    due = await retrying(
        f"checking the optimization loop of experiment {experiment_id}",
        lambda session: trial_runs.optimization_to_advance(session, experiment_id=experiment_id),
    )
    if due is not None:
        queue = TaskQueue(get_settings().broker_url)
        await queue.enqueue_advance(due, target=claimed.target)


@celery_app.task(name=ADVANCE_OPTIMIZATION_TASK)
def advance_optimization(optimization_id: int) -> str:
    """Plan and send the next round of a closed optimization loop, or record why it stopped."""
    return runtime.run(execute_advance(optimization_id))


async def execute_advance(optimization_id: int) -> str:
    """One step of the loop; a loop that breaks is marked failed with its error, never left
    running with nothing to run. The step is retried while the database is unreachable (a
    round is claimed atomically: a step that did commit plans nothing the second time)."""
    settings = get_settings()
    queue = TaskQueue(settings.broker_url)
    try:
        sent = await retrying(
            f"advancing optimization {optimization_id}",
            lambda session: optimization_loop.advance(
                session,
                optimization_id=optimization_id,
                queue=queue,
                targets=load_targets(settings.targets_file),
            ),
        )
    except UnavailableError as error:
        # The round's trials stay pending: a later start, or the next step, sends them.
        log.warning("optimization %s: trials not sent: %s", optimization_id, error)
        return "broker unavailable"
    except Exception as error:
        if runtime.unreachable(error):
            return "database unavailable"  # logged by `retrying`; the loop is left as it was
        log.exception("optimization %s failed", optimization_id)
        failure = traceback.format_exc(limit=5)
        await retrying(
            f"recording the failure of optimization {optimization_id}",
            lambda session: optimization_loop.fail(
                session, optimization_id=optimization_id, error=failure
            ),
        )
        return "failed"
    return f"sent {len(sent)} trial(s)"


async def _wait_for_target(trial_id: int, target: str, holder: str, lease: timedelta) -> bool:
    """Take the target's lease, waiting while another worker runs a trial on it; False when the
    trial stopped being queued meanwhile (cancelled, or run by another delivery): nothing to do.
    """

    async def take(session: AsyncSession) -> bool | None:
        if await trial_runs.target_name(session, trial_id=trial_id) is None:
            return None
        return await trial_runs.acquire_target(session, target=target, holder=holder, ttl=lease)

    deadline = asyncio.get_running_loop().time() + LEASE_WAIT.total_seconds()
    while True:
        taken = await retrying(f"leasing target {target} for trial {trial_id}", take)
        if taken is None:
            return False
        if taken:
            return True
        if asyncio.get_running_loop().time() > deadline:
            raise TargetError(f"target '{target}' stayed busy for {LEASE_WAIT}")
        await asyncio.sleep(1.0)


async def _watch(claimed: ClaimedTrial, holder: str, lease: timedelta, stop: _Stop) -> None:
    """While the trial runs: poll it every `cancel_poll_seconds` and stop the run when it must
    stop (cancelled, or claimed again elsewhere); renew the target's and the trial's leases
    every third of the lease, so a long trial keeps its cluster and the reaper leaves it alone
    while this worker lives. A database that does not answer is logged and tried again."""
    clock = asyncio.get_running_loop()
    renew_every = lease.total_seconds() / 3
    next_renewal = clock.time() + renew_every
    failing = False
    while True:
        try:
            async with runtime.database().session() as session:
                reason = await trial_runs.stop_reason(session, claimed=claimed)
                if reason is None and clock.time() >= next_renewal:
                    await trial_runs.acquire_target(
                        session, target=claimed.target, holder=holder, ttl=lease
                    )
                    await trial_runs.renew_lease(
                        session, trial_id=claimed.trial_id, worker=holder, lease=lease
                    )
                    next_renewal = clock.time() + renew_every
        except Exception as error:  # the database may be restarting: try again next time
            if not failing:
                log.warning(
                    "trial %s: database unreachable, leases not renewed (retrying): %s",
                    claimed.trial_id,
                    runtime.describe(error),
                )
            failing = True
            next_renewal = clock.time()  # renew as soon as it answers: the lease ran on
        else:
            if failing:
                log.warning("trial %s: database reachable again", claimed.trial_id)
            failing = False
            if reason is not None:
                log.info("trial %s: stopping the run: %s", claimed.trial_id, reason)
                stop.reason = reason
                stop.event.set()
                return
        await asyncio.sleep(get_settings().cancel_poll_seconds)


def _target(name: str) -> Target:
    if name not in _targets:
        specs = load_targets(get_settings().targets_file)
        if name not in specs:
            raise TargetError(f"target '{name}' is not defined in this worker's targets file")
        _targets[name] = build_target(specs[name])
    return _targets[name]


@worker_shutdown.connect
def _release_targets(**_: object) -> None:
    """Release what the targets hold (e.g. cluster processes) and close the database pool."""
    while _targets:
        _, target = _targets.popitem()
        target.close()
    runtime.close()
