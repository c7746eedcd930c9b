"""Celery tasks: a thin shell over `app.services.trial_runs`, which drives each trial.

What the worker adds is what only it has: the targets it builds from its targets file (kept
for the life of the process), how their errors classify a failed run, its event loop and
database retries (`worker.runtime`). Every delivery's outcome is logged as
"trial <id> outcome: <outcome>".
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Mapping
from datetime import timedelta

from celery.signals import worker_shutdown, worker_shutting_down

from app.config import get_settings
from app.queue import ADVANCE_OPTIMIZATION_TASK, RUN_TRIAL_TASK, TaskQueue
from app.services import confirmations, optimization_loop, trial_runs
from app.services.trial_runs import ClaimedTrial, Outcome
from app.statuses import Failure
from app.target_specs import load_targets
from experiments.baseline import Baseline
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from worker import runtime
from worker.celery_app import celery_app
from worker.targets import build_target
from worker.targets.base import (
    InfeasibleError,
    InfrastructureError,
    Target,
    TargetError,
    TrialCancelledError,
    Value,
)

log = logging.getLogger(__name__)

_targets: dict[str, Target] = {}
# Set by SIGTERM (a warm shutdown); the cancel events of the trials this process runs now.
_stopping = threading.Event()
_running: set[threading.Event] = set()
STOPPED_MID_TRIAL = "the worker was stopped during the trial (SIGTERM): it runs again"


@celery_app.task(name=RUN_TRIAL_TASK)
def run_trial(trial_id: int) -> str:
    """Run one trial by id: lease its target, claim it, run it, record responses or error."""
    return runtime.run(execute_trial(trial_id))


async def execute_trial(trial_id: int) -> str:
    """Drive the trial (`trial_runs.execute`) with this worker's targets; logs the outcome."""
    settings = get_settings()
    worker = trial_runs.Worker(
        holder=f"{socket.gethostname()}:{os.getpid()}",
        lease=timedelta(seconds=settings.trial_lease_seconds),
        max_attempts=settings.max_trial_attempts,
        cancel_poll_seconds=settings.cancel_poll_seconds,
        queue=TaskQueue(settings.broker_url),
        steps=runtime.retrying,
        sessions=lambda: runtime.database().session(),
        run=_run_on_target,
        recover=_recover,
        after_run=_after_trial,
    )
    outcome = await trial_runs.execute(trial_id, worker)
    log.info("trial %s outcome: %s", trial_id, outcome)
    return outcome


async def _after_trial(claimed: ClaimedTrial) -> None:
    """A confirmation's run ended: send its next pairs or work out its result."""
    confirmation_id = claimed.confirmation_id
    if confirmation_id is None:
        return
    queue = TaskQueue(get_settings().broker_url)
    await runtime.retrying(
        f"advancing confirmation {confirmation_id}",
        lambda session: confirmations.advance(
            session, confirmation_id=confirmation_id, queue=queue
        ),
    )


@celery_app.task(name=ADVANCE_OPTIMIZATION_TASK)
def advance_optimization(optimization_id: int) -> str:
    """Plan and send the next round of a closed optimization loop, or record why it stopped."""
    settings = get_settings()
    return runtime.run(
        optimization_loop.advance_loop(
            optimization_id,
            steps=runtime.retrying,
            queue=TaskQueue(settings.broker_url),
            targets=load_targets(settings.targets_file),
        )
    )


def _run_on_target(claimed: ClaimedTrial, cancel: threading.Event) -> Outcome:
    """Run the configuration on the trial's target (the settings it reads from the nodes first,
    `_read_config`); its errors say what kind of failure it was. A trial the worker's own
    shutdown stopped is an infrastructure failure: it runs again."""
    _running.add(cancel)
    if _stopping.is_set():
        cancel.set()
    try:
        target = _target(claimed.target)
        config, read = _read_config(target, claimed)
        result = target.run(
            config, run_key=claimed.trial_id, cancel=cancel, fresh=claimed.restart_first
        )
    except DomainError as error:
        # A value the nodes run lies outside the factor's space: no run can change that.
        return Outcome(failure=Failure.INFEASIBLE, error=f"{error.field}: {error.rule}")
    except TrialCancelledError:
        if _stopping.is_set():
            return Outcome(failure=Failure.INFRASTRUCTURE, error=STOPPED_MID_TRIAL)
        return Outcome(cancelled=True)
    except InfrastructureError as error:
        return Outcome(failure=Failure.INFRASTRUCTURE, error=str(error))
    except InfeasibleError as error:
        return Outcome(failure=Failure.INFEASIBLE, error=str(error))
    except TargetError as error:
        return Outcome(failure=Failure.ERROR, error=str(error))
    finally:
        _running.discard(cancel)
    if read is None:
        return Outcome(
            responses=result.responses, raw_output=result.raw_output, record=result.record
        )
    return Outcome(
        responses=result.responses,
        raw_output=result.raw_output,
        record={**(result.record or {}), "read_from_nodes": read},
        config=config,
    )


def _read_config(
    target: Target, claimed: ClaimedTrial
) -> tuple[Mapping[str, Value], dict[str, str] | None]:
    """The configuration to run and the settings' text read from the nodes (None when the
    trial reads none): the trial's given values, with the values its nodes run now of the
    settings it reads (`baseline: current`), checked against the experiment's factors.
    DomainError names a value the nodes run that is not one of its factor's."""
    names = claimed.reads_current
    if not names:
        return claimed.config, None
    # Only the given values: a value stored for a setting to read is a placeholder.
    given = {name: value for name, value in claimed.config.items() if name not in names}
    read = target.read_current(given, names)
    space = FactorSpace.from_dicts(claimed.factors or ())
    resolved = Baseline(given=given, current=names).resolved(space, read)
    return space.check_config(resolved), read


def _recover(name: str) -> None:
    """Bring a target this worker has built back to a known state after a failed trial."""
    if name in _targets:
        _targets[name].recover()


def _target(name: str) -> Target:
    if name not in _targets:
        specs = load_targets(get_settings().targets_file)
        if name not in specs:
            raise TargetError(f"target '{name}' is not defined in this worker's targets file")
        _targets[name] = build_target(specs[name])
    return _targets[name]


@worker_shutting_down.connect
def _stop_running_trials(**_: object) -> None:
    """SIGTERM: stop the running trial now rather than wait for its end (a lab trial takes
    minutes), so that the shutdown releases the targets before whoever sent the signal gives
    up and kills the worker, which would leave the nodes it started running."""
    _stopping.set()
    for cancel in list(_running):
        cancel.set()


@worker_shutdown.connect
def _release_targets(**_: object) -> None:
    """Release what the targets hold (e.g. cluster processes) and close the database pool."""
    while _targets:
        _, target = _targets.popitem()
        target.close()
    runtime.close()
