"""Celery tasks: thin wrappers that reload by id, call a service and record the outcome."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import traceback
from datetime import timedelta

from celery.signals import worker_shutdown

from app.config import get_settings
from app.queue import ADVANCE_OPTIMIZATION_TASK, RUN_TRIAL_TASK, TaskQueue
from app.services import optimization, trial_runs
from app.services.errors import UnavailableError
from app.services.trial_runs import ClaimedTrial
from app.statuses import Failure, TrialStatus
from app.targets import load_targets
from worker import runtime
from worker.celery_app import celery_app
from worker.targets import build_target
from worker.targets.base import (
    InfeasibleError,
    InfrastructureError,
    Target,
    TargetError,
    TrialResult,
)

log = logging.getLogger(__name__)

_targets: dict[str, Target] = {}
# How long this worker waits for another worker's trial on the same cluster before giving up.
LEASE_WAIT = timedelta(hours=2)


@celery_app.task(name=RUN_TRIAL_TASK)
def run_trial(trial_id: int) -> str:
    """Run one trial by id: lease its target, claim it, run it, record responses or error."""
    return runtime.run(execute_trial(trial_id))


async def execute_trial(trial_id: int) -> str:
    """Lease the target, claim and run the trial, record it; returns what happened, for the log."""
    database = runtime.database()
    async with database.session() as session:
        target = await trial_runs.target_name(session, trial_id=trial_id)
    if target is None:
        log.info("trial %s is not queued: duplicate delivery ignored", trial_id)
        return "skipped"
    holder = f"{socket.gethostname()}:{os.getpid()}"
    lease = timedelta(seconds=get_settings().trial_lease_seconds)
    await _wait_for_target(target, holder, lease)
    try:
        async with database.session() as session:
            claimed = await trial_runs.claim(session, trial_id=trial_id, worker=holder, lease=lease)
        if claimed is None:
            return "skipped"
        renewal = asyncio.create_task(_keep_leases(target, claimed.trial_id, holder, lease))
        try:
            return await _run(claimed)
        finally:
            renewal.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewal
    finally:
        async with database.session() as session:
            await trial_runs.release_target(session, target=target, holder=holder)


async def _run(claimed: ClaimedTrial) -> str:
    try:
        target = _target(claimed.target)
        result: TrialResult = await asyncio.to_thread(
            target.run, claimed.config, run_key=claimed.trial_id
        )
    except InfrastructureError as error:
        return await _failed(claimed, str(error), Failure.INFRASTRUCTURE)
    except InfeasibleError as error:
        return await _failed(claimed, str(error), Failure.INFEASIBLE)
    except TargetError as error:
        return await _failed(claimed, str(error), Failure.ERROR)
    except Exception:  # a bug in a target must fail the trial, not leave it running
        return await _failed(claimed, traceback.format_exc(limit=5), Failure.ERROR)
    async with runtime.database().session() as session:
        await trial_runs.record_success(
            session, claimed=claimed, responses=result.responses, raw_output=result.raw_output
        )
    await _continue_loop(claimed.experiment_id)
    return "succeeded"


async def _failed(claimed: ClaimedTrial, error: str, failure: Failure) -> str:
    if claimed.target in _targets and failure != Failure.INFEASIBLE:
        # The next trial must start from a known state, whatever this one left behind; a
        # configuration the server refused left the cluster as it was.
        await asyncio.to_thread(_targets[claimed.target].recover)
    async with runtime.database().session() as session:
        status = await trial_runs.record_failure(
            session,
            claimed=claimed,
            error=error,
            failure=failure,
            max_attempts=get_settings().max_trial_attempts,
        )
    if status == TrialStatus.QUEUED:
        await TaskQueue(get_settings().broker_url).enqueue_trials([claimed.trial_id])
        return "requeued"
    await _continue_loop(claimed.experiment_id)
    return "failed"


async def _continue_loop(experiment_id: int) -> None:
    """Send the next step of the experiment's optimization loop when this trial was the last
    of its round."""
    async with runtime.database().session() as session:
        due = await trial_runs.optimization_to_advance(session, experiment_id=experiment_id)
    if due is not None:
        await TaskQueue(get_settings().broker_url).enqueue_advance(due)


@celery_app.task(name=ADVANCE_OPTIMIZATION_TASK)
def advance_optimization(optimization_id: int) -> str:
    """Plan and send the next round of a closed optimization loop, or record why it stopped."""
    return runtime.run(execute_advance(optimization_id))


async def execute_advance(optimization_id: int) -> str:
    """One step of the loop; a loop that breaks is marked failed with its error, never left
    running with nothing to run."""
    settings = get_settings()
    queue = TaskQueue(settings.broker_url)
    async with runtime.database().session() as session:
        try:
            sent = await optimization.advance(
                session,
                optimization_id=optimization_id,
                queue=queue,
                targets=load_targets(settings.targets_file),
            )
        except UnavailableError as error:
            # The round's trials stay pending: a later start, or the next step, sends them.
            log.warning("optimization %s: trials not sent: %s", optimization_id, error)
            return "broker unavailable"
        except Exception:
            log.exception("optimization %s failed", optimization_id)
            await optimization.fail(
                session, optimization_id=optimization_id, error=traceback.format_exc(limit=5)
            )
            return "failed"
    return f"sent {len(sent)} trial(s)"


async def _wait_for_target(target: str, holder: str, lease: timedelta) -> None:
    """Take the target's lease, waiting while another worker runs a trial on it."""
    deadline = asyncio.get_running_loop().time() + LEASE_WAIT.total_seconds()
    while True:
        async with runtime.database().session() as session:
            if await trial_runs.acquire_target(session, target=target, holder=holder, ttl=lease):
                return
        if asyncio.get_running_loop().time() > deadline:
            raise TargetError(f"target '{target}' stayed busy for {LEASE_WAIT}")
        await asyncio.sleep(1.0)


async def _keep_leases(target: str, trial_id: int, holder: str, lease: timedelta) -> None:
    """Renew the target's and the trial's leases while the trial runs: a long trial keeps its
    cluster, and the reaper leaves it alone while this worker lives."""
    while True:
        await asyncio.sleep(lease.total_seconds() / 3)
        try:
            async with runtime.database().session() as session:
                await trial_runs.acquire_target(session, target=target, holder=holder, ttl=lease)
                await trial_runs.renew_lease(session, trial_id=trial_id, worker=holder, lease=lease)
        except Exception as error:  # the database may be restarting: try again next time
            log.warning("trial %s: leases not renewed: %s", trial_id, error)


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
