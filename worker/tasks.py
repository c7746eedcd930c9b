"""Celery tasks: thin wrappers that reload by id, call a service and record the outcome."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import traceback
from datetime import timedelta

from celery.signals import worker_shutdown

from app.config import get_settings
from app.queue import RUN_TRIAL_TASK
from app.services import trial_runs
from app.targets import load_targets
from worker import runtime
from worker.celery_app import celery_app
from worker.targets import build_target
from worker.targets.base import Target, TargetError

log = logging.getLogger(__name__)

_targets: dict[str, Target] = {}


@celery_app.task(name=RUN_TRIAL_TASK)
def run_trial(trial_id: int) -> str:
    """Run one trial by id: claim it, run it on its target, record responses or error."""
    return runtime.run(execute_trial(trial_id))


async def execute_trial(trial_id: int) -> str:
    """Claim, run and record one trial; returns what happened, for the worker's log."""
    settings = get_settings()
    database = runtime.database()
    async with database.session() as session:
        claimed = await trial_runs.claim(
            session,
            trial_id=trial_id,
            worker=f"{socket.gethostname()}:{os.getpid()}",
            lease=timedelta(seconds=settings.trial_lease_seconds),
        )
    if claimed is None:
        log.info("trial %s is not queued: duplicate delivery ignored", trial_id)
        return "skipped"
    try:
        target = _target(claimed.target)
        result = await asyncio.to_thread(target.run, claimed.config, run_key=trial_id)
    except TargetError as error:
        async with database.session() as session:
            await trial_runs.record_failure(session, claimed=claimed, error=str(error))
        return "failed"
    except Exception:  # a bug in a target must fail the trial, not leave it running
        async with database.session() as session:
            await trial_runs.record_failure(
                session, claimed=claimed, error=traceback.format_exc(limit=5)
            )
        return "failed"
    async with database.session() as session:
        await trial_runs.record_success(
            session, claimed=claimed, responses=result.responses, raw_output=result.raw_output
        )
    return "succeeded"


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
