"""A worker's drive of one trial, and of one step of an optimization loop.

What a trial survives here:
- the database unreachable for a while (a restart): every database step goes through the
  worker's `steps` (retried with backoff), and a result measured is held until it is recorded,
  as long as the trial's lease holds; once the reaper took the trial back, the attempt counts
  lost and the trial runs again (the run is stopped, a result is not recorded);
- the same trial delivered twice: the claim is atomic, the second delivery is skipped;
- its experiment cancelled while it runs: a watcher polls the trial every `cancel_poll_seconds`
  (and renews the leases), the run is stopped, the trial is recorded `cancelled`.

The worker passes in what only it has (`Worker`): how to run a configuration on the target and
how to bring the target back to a known state, its database session factory and retry policy,
and the queue. The target's own errors are the worker's to classify (`Outcome`); this module
decides what each outcome means for the trial, the experiment and its loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import traceback
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Protocol, TypeVar

from app.db.session import AsyncSession, describe
from app.queue import TaskQueue
from app.services.trial_runs import states
from app.services.trial_runs.states import ClaimedTrial
from app.statuses import Failure, TrialStatus

log = logging.getLogger(__name__)

T = TypeVar("T")
# How long a worker waits for another worker's trial on the same cluster before giving up.
LEASE_WAIT = timedelta(hours=2)
NOT_ITS_OWN = "the trial is no longer this worker's: its lease ran out, or it was cancelled"


class Steps(Protocol):
    """Runs one database step in a session of its own, retried while the database is down."""

    def __call__(
        self, what: str, operation: Callable[[AsyncSession], Awaitable[T]]
    ) -> Awaitable[T]: ...


class TargetBusyError(RuntimeError):
    """Another worker held the target for longer than `LEASE_WAIT`."""


@dataclass(frozen=True)
class Outcome:
    """What running a trial on its target came to: responses measured, a failure of a kind
    (`failure` with its `error`), or a run stopped on request (`cancelled`). `config` is the
    whole configuration run when the worker completed the trial's own (settings it read from
    the nodes first); None when it ran the trial's as stored."""

    responses: Mapping[str, float] = field(default_factory=dict)
    raw_output: str = ""
    record: Mapping[str, Any] | None = None
    config: Mapping[str, Any] | None = None
    failure: Failure | None = None
    error: str = ""
    cancelled: bool = False


@dataclass(frozen=True)
class Worker:
    """What the lifecycle needs of the worker process that drives it.

    `run` runs a claimed trial's configuration on its target and returns the outcome; it blocks
    (it is called in a thread) and stops early once its event is set. `recover` brings a
    target, by name, back to a known state after a failed trial.
    """

    holder: str
    lease: timedelta
    max_attempts: int
    cancel_poll_seconds: float
    queue: TaskQueue
    steps: Steps
    sessions: Callable[[], AbstractAsyncContextManager[AsyncSession]]
    run: Callable[[ClaimedTrial, threading.Event], Outcome]
    recover: Callable[[str], None]
    # What the end of a trial moves on besides its experiment's loop (a confirmation's next
    # pairs or result); called once the trial is recorded.
    after_run: Callable[[ClaimedTrial], Awaitable[None]] | None = None


@dataclass
class _Stop:
    """Set by the watcher when the running trial must stop, with the reason."""

    event: threading.Event = field(default_factory=threading.Event)
    reason: str | None = None


async def execute(trial_id: int, worker: Worker) -> str:
    """Lease the target, claim and run the trial, record it; returns what happened."""
    target = await worker.steps(
        f"reading trial {trial_id}",
        lambda session: states.target_name(session, trial_id=trial_id),
    )
    if target is None:
        return "skipped (not queued: a duplicate delivery, or cancelled)"
    if not await _wait_for_target(trial_id, target, worker):
        return "skipped (no longer queued: run by another delivery, or cancelled)"
    try:
        claimed = await _claim(trial_id, worker)
        if claimed is None:
            return "skipped (claimed by another delivery)"
        return await _run(claimed, worker)
    finally:
        await worker.steps(
            f"releasing target {target}",
            lambda session: states.release_target(session, target=target, holder=worker.holder),
        )


async def _wait_for_target(trial_id: int, target: str, worker: Worker) -> bool:
    """Take the target's lease, waiting while another worker runs a trial on it; False when the
    trial stopped being queued meanwhile (cancelled, or run by another delivery): nothing to do.
    """

    async def take(session: AsyncSession) -> bool | None:
        if await states.target_name(session, trial_id=trial_id) is None:
            return None
        return await states.acquire_target(
            session, target=target, holder=worker.holder, ttl=worker.lease
        )

    deadline = asyncio.get_running_loop().time() + LEASE_WAIT.total_seconds()
    while True:
        taken = await worker.steps(f"leasing target {target} for trial {trial_id}", take)
        if taken is None:
            return False
        if taken:
            return True
        if asyncio.get_running_loop().time() > deadline:
            raise TargetBusyError(f"target '{target}' stayed busy for {LEASE_WAIT}")
        await asyncio.sleep(1.0)


async def _claim(trial_id: int, worker: Worker) -> ClaimedTrial | None:
    tries = 0

    async def take(session: AsyncSession) -> ClaimedTrial | None:
        nonlocal tries
        tries += 1
        claimed = await states.claim(
            session, trial_id=trial_id, worker=worker.holder, lease=worker.lease
        )
        if claimed is None and tries > 1:
            # The earlier try's commit may have gone through before its connection broke.
            claimed = await states.held_by(session, trial_id=trial_id, worker=worker.holder)
        return claimed

    return await worker.steps(f"claiming trial {trial_id}", take)


async def _run(claimed: ClaimedTrial, worker: Worker) -> str:
    """Run the trial on its target while a watcher renews the leases and polls for a cancel;
    then record what happened (the watcher stops first: it must not stop a finished run)."""
    stop = _Stop()
    watcher = asyncio.create_task(_watch(claimed, worker, stop))
    try:
        outcome = await asyncio.to_thread(worker.run, claimed, stop.event)
    except Exception as error:  # a bug in a target must fail the trial, not leave it
        trace = "".join(traceback.format_exception(error, limit=5))
        outcome = Outcome(failure=Failure.ERROR, error=trace)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    if outcome.cancelled:
        return await _stopped(claimed, worker, stop.reason or "cancelled")
    if outcome.failure is not None:
        return await _failed(claimed, worker, outcome.error, outcome.failure)
    return await _succeeded(claimed, worker, outcome)


async def _succeeded(claimed: ClaimedTrial, worker: Worker, outcome: Outcome) -> str:
    try:
        recorded = await worker.steps(
            f"recording the result of trial {claimed.trial_id}",
            lambda session: states.record_success(
                session,
                claimed=claimed,
                responses=dict(outcome.responses),
                raw_output=outcome.raw_output,
                record=dict(outcome.record) if outcome.record is not None else None,
                config=dict(outcome.config) if outcome.config is not None else None,
            ),
        )
    except Exception:
        # Out of retries: the trial runs again once its lease expires, but what this run
        # measured stays in the log for the operator.
        log.error(
            "trial %s: result NOT recorded: %s",
            claimed.trial_id,
            json.dumps(dict(outcome.responses)),
        )
        raise
    if not recorded:
        log.warning(
            "trial %s: result of attempt %d not recorded (%s): %s",
            claimed.trial_id,
            claimed.attempt,
            NOT_ITS_OWN,
            json.dumps(dict(outcome.responses)),
        )
        return f"not recorded ({NOT_ITS_OWN})"
    await _continue_loop(claimed, worker)
    await _after_run(claimed, worker)
    return "succeeded"


async def _stopped(claimed: ClaimedTrial, worker: Worker, reason: str) -> str:
    """The watcher stopped the run: record `cancelled`, or leave the trial to its new owner."""
    if reason != "cancelled":
        return f"stopped ({reason})"
    recorded = await worker.steps(
        f"recording trial {claimed.trial_id} as cancelled",
        lambda session: states.record_cancelled(session, claimed=claimed),
    )
    if not recorded:
        return "stopped (the trial was no longer this worker's)"
    await _after_run(claimed, worker)
    return "cancelled"


async def _failed(claimed: ClaimedTrial, worker: Worker, error: str, failure: Failure) -> str:
    if failure != Failure.INFEASIBLE:
        # The next trial must start from a known state, whatever this one left behind; a
        # configuration the server refused left the cluster as it was.
        await asyncio.to_thread(worker.recover, claimed.target)
    status = await worker.steps(
        f"recording the failure of trial {claimed.trial_id}",
        lambda session: states.record_failure(
            session,
            claimed=claimed,
            error=error,
            failure=failure,
            max_attempts=worker.max_attempts,
        ),
    )
    if status == TrialStatus.QUEUED:
        await worker.queue.enqueue_trials([claimed.trial_id], target=claimed.target)
        return "requeued"
    if status is None:
        return f"not recorded ({NOT_ITS_OWN})"
    await _continue_loop(claimed, worker)
    await _after_run(claimed, worker)
    return "failed"


async def _continue_loop(claimed: ClaimedTrial, worker: Worker) -> None:
    """Send the next step of the experiment's optimization loop when this trial was the last
    of its round."""
    experiment_id = claimed.experiment_id
    due = await worker.steps(
        f"checking the optimization loop of experiment {experiment_id}",
        lambda session: states.optimization_to_advance(session, experiment_id=experiment_id),
    )
    if due is not None:
        await worker.queue.enqueue_advance(due, target=claimed.target)


async def _after_run(claimed: ClaimedTrial, worker: Worker) -> None:
    """What else the trial's end moves on (`Worker.after_run`); its failure is logged, never
    the trial's: the trial is recorded, and a GET of the confirmation moves it on too."""
    if worker.after_run is None:
        return
    try:
        await worker.after_run(claimed)
    except Exception:
        log.exception("trial %s: what its end moves on failed", claimed.trial_id)


async def _watch(claimed: ClaimedTrial, worker: Worker, stop: _Stop) -> None:
    """While the trial runs: poll it every `cancel_poll_seconds` and stop the run when it must
    stop (cancelled, or claimed again elsewhere); renew the target's and the trial's leases
    every third of the lease, so a long trial keeps its cluster and the reaper leaves it alone
    while this worker lives. A database that does not answer is logged and tried again."""
    clock = asyncio.get_running_loop()
    renew_every = worker.lease.total_seconds() / 3
    next_renewal = clock.time() + renew_every
    failing = False
    while True:
        try:
            async with worker.sessions() as session:
                reason = await states.stop_reason(session, claimed=claimed)
                if reason is None and clock.time() >= next_renewal:
                    await _renew_leases(session, claimed, worker)
                    next_renewal = clock.time() + renew_every
        except Exception as error:  # the database may be restarting: try again next time
            if not failing:
                log.warning(
                    "trial %s: database unreachable, leases not renewed (retrying): %s",
                    claimed.trial_id,
                    describe(error),
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
        await asyncio.sleep(worker.cancel_poll_seconds)


async def _renew_leases(session: AsyncSession, claimed: ClaimedTrial, worker: Worker) -> None:
    await states.acquire_target(
        session, target=claimed.target, holder=worker.holder, ttl=worker.lease
    )
    await states.renew_lease(
        session, trial_id=claimed.trial_id, worker=worker.holder, lease=worker.lease
    )
