"""Use case: the closed loop. Suggest, run, refit, repeat, until the budget or a stopping rule.

A loop advances one round at a time: when every trial of its experiment has finished, `advance`
asks the strategy for the next batch (`experiments.suggest.next_batch`), stores each pick as an
accepted suggestion with its reason, creates the trials and sends them to the workers. The
worker that records the last trial of a round sends the next `advance` (by task name); on a
manual target `advance` runs in the API when observations arrive, and the round's trials wait
for them. The round counter is taken with one conditional UPDATE, so a round is planned once
however often `advance` is delivered.

With noise factors each pick of a round is a control configuration and becomes one trial per
noise level (`experiments.suggest.noise`); the budget is spent in whole control configurations,
and the recommendation and the deploy answer stored on the loop are control configurations
judged across the noise levels by the objective's robust aim.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import traceback
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import models, rows
from app.db.models import utcnow
from app.db.session import unreachable
from app.queue import TaskQueue
from app.services import access, analysis_inputs, progress, suggestions, trial_runs
from app.services.errors import ConflictError, NotFoundError, UnavailableError
from app.services.trial_runs.execution import Steps
from app.statuses import (
    FINAL_TRIAL_STATUSES,
    ExperimentStatus,
    OptimizationStatus,
    SuggestionStatus,
    TrialSource,
    TrialStatus,
)
from experiments.analysis.deploy import DeployAnswer
from experiments.errors import DomainError
from experiments.factors import Config, FactorSpace
from experiments.galera.target_spec import TargetSpec
from experiments.numbers import finite_or_none
from experiments.suggest import DONE, LOOP_STRATEGY_NAMES, Plan, Recommendation, next_batch
from experiments.terms import DEFAULT_MODEL

log = logging.getLogger(__name__)

MAX_BUDGET = 500
MAX_BUDGET_SECONDS = 30 * 24 * 3600.0
MAX_BATCH_SIZE = 20


@dataclass(frozen=True)
class LoopRequest:
    """How a client asks for a closed loop."""

    strategy: str = "auto"
    budget: int = 20
    budget_seconds: float | None = None
    batch_size: int = 1
    stop_when_expected_improvement_below: float | None = None
    restart_replicates: bool = False

    def check(self) -> None:
        """Raise DomainError naming the first field that breaks its rule."""
        if self.strategy not in LOOP_STRATEGY_NAMES:
            raise DomainError(
                "strategy",
                f"a closed loop runs one of {', '.join(LOOP_STRATEGY_NAMES)}: the other strategies"
                " take one step and cannot go on by themselves",
            )
        if not 1 <= self.budget <= MAX_BUDGET:
            raise DomainError("budget", f"must be a whole number from 1 to {MAX_BUDGET}")
        seconds = self.budget_seconds
        if seconds is not None and not (
            math.isfinite(seconds) and 0 < seconds <= MAX_BUDGET_SECONDS
        ):
            raise DomainError(
                "budget_seconds",
                f"must be a number of seconds above 0, at most {MAX_BUDGET_SECONDS:.0f} (30 days)",
            )
        if not 1 <= self.batch_size <= MAX_BATCH_SIZE:
            raise DomainError("batch_size", f"must be a whole number from 1 to {MAX_BATCH_SIZE}")
        threshold = self.stop_when_expected_improvement_below
        if threshold is not None and not (math.isfinite(threshold) and threshold >= 0):
            raise DomainError(
                "stop_when_expected_improvement_below",
                "must be a finite number of at least 0, in the objective's units",
            )


async def start(
    session: AsyncSession,
    *,
    experiment_id: int,
    request: LoopRequest,
    queue: TaskQueue,
    targets: Mapping[str, TargetSpec],
) -> progress.LoopProgress:
    """Start a closed loop on the experiment. Trials still pending are sent first; the loop's
    first round is planned when every trial has finished."""
    request.check()
    experiment = await access.experiment_of(session, experiment_id)
    if experiment.status == ExperimentStatus.CANCELLED:
        raise ConflictError(f"experiment {experiment_id} was cancelled; it runs nothing more")
    target = access.target_of(targets, experiment.target)
    if request.restart_replicates:
        target.check_starts_fresh()
    if request.budget_seconds is not None and not target.runnable:
        raise DomainError(
            "budget_seconds",
            f"target '{target.name}' records observations made elsewhere, so the service does not"
            " time its trials: give the loop a budget of trials only",
        )
    # Two concurrent starts must not both find no loop running and start one each: end the
    # transaction of the reads above (a MariaDB snapshot older than the other start's commit),
    # take the experiment's row, then read the loops afresh.
    await session.commit()
    await rows.lock_experiment(session, experiment_id)
    running = await rows.running_optimization(session, experiment_id)
    if running is not None:
        raise ConflictError(
            f"optimization {running.id} already runs on experiment {experiment_id}; wait for it"
            " to stop, or cancel the experiment"
        )
    loop = models.Optimization(
        experiment_id=experiment_id,
        status=OptimizationStatus.RUNNING,
        strategy=request.strategy,
        budget=request.budget,
        budget_seconds=request.budget_seconds,
        batch_size=request.batch_size,
        stop_below=request.stop_when_expected_improvement_below,
        restart_replicates=request.restart_replicates,
        rounds=0,
    )
    session.add(loop)
    experiment.status = ExperimentStatus.RUNNING
    await session.commit()
    if not target.runnable:
        await advance(session, optimization_id=loop.id, queue=queue, targets=targets)
        return await progress.loop_progress(session, await _get(session, loop.id))
    try:
        await trial_runs.send_loop_start(
            session, experiment=experiment, optimization_id=loop.id, queue=queue
        )
    except UnavailableError as error:
        await _finish(session, loop, OptimizationStatus.FAILED, error=f"not started: {error}")
        raise
    return await progress.loop_progress(session, await _get(session, loop.id))


async def _get(session: AsyncSession, optimization_id: int) -> models.Optimization:
    loop = await rows.get_optimization(session, optimization_id)
    if loop is None:
        raise NotFoundError("optimization", optimization_id)
    return loop


async def advance(
    session: AsyncSession,
    *,
    optimization_id: int,
    queue: TaskQueue,
    targets: Mapping[str, TargetSpec],
) -> list[int]:
    """Plan and start the loop's next round if it is due; returns the trial ids it sent.

    Nothing happens while the loop is not running or a trial of its experiment has not
    finished. A round that ends the loop records why (budget, stopping rule, the strategy has
    nothing worth running) and completes the experiment.
    """
    loop = await rows.get_optimization(session, optimization_id)
    if loop is None or loop.status != OptimizationStatus.RUNNING:
        return []
    experiment = await access.experiment_of(session, loop.experiment_id)
    trials = await rows.list_trials(session, experiment.id)
    if experiment.status == ExperimentStatus.CANCELLED:
        await _finish(session, loop, OptimizationStatus.CANCELLED, "the experiment was cancelled")
        return []
    if any(t.status not in FINAL_TRIAL_STATUSES for t in trials):
        return []
    seen = loop.rounds
    used = sum(t.optimization_id == loop.id for t in trials)
    # Planning fits a model (seconds on a large experiment): off the API's event loop.
    plan, deploy = await asyncio.to_thread(_next, experiment, trials, loop, used)
    if not await rows.claim_round(session, loop.id, seen=seen):
        await session.rollback()
        return []  # another delivery of this step planned the round
    if plan.stage != DONE:  # a stop for budget or error keeps the stage the loop was at
        loop.stage, loop.explanation = plan.stage, plan.explanation
        loop.expected_improvement = finite_or_none(plan.expected_improvement)
    if plan.recommendation is not None:
        loop.recommendation = _stored(plan.recommendation)
    if deploy is not None:
        loop.deploy = deploy.as_dict()
    if plan.stop_reason is not None:
        await _finish(session, loop, OptimizationStatus.STOPPED, plan.stop_reason)
        return []
    measured = [t.config for t in trials if t.status == TrialStatus.SUCCEEDED]
    created = await _round_trials(session, experiment, loop, plan, measured)
    experiment.status = ExperimentStatus.RUNNING
    await session.commit()
    if not access.target_of(targets, experiment.target).runnable:
        return []  # the round's trials wait for their observations
    return await trial_runs.send_trials(
        session, experiment=experiment, trial_ids=created, queue=queue
    )


async def _round_trials(
    session: AsyncSession,
    experiment: models.Experiment,
    loop: models.Optimization,
    plan: Plan,
    measured: list[Config],
) -> list[int]:
    """The round's picks stored as accepted suggestions, each with its new pending trial;
    returns the trial ids. `measured` are the configurations of the succeeded trials: with
    `restart_replicates`, a pick that measures one of them (or an earlier pick) again restarts
    the nodes first."""
    space = experiment.factor_space
    plan = _grouped(space, plan)
    order = await rows.max_run_order(session, experiment.id)
    stored = suggestions.stored(experiment, plan, based_on=len(measured), optimization_id=loop.id)
    trials = [
        trial_runs.new_trial(
            space,
            experiment_id=experiment.id,
            run_order=order + offset,
            config=suggestion.config,
            point_type=suggestion.point_type,
            source=TrialSource.SUGGESTION,
            optimization_id=loop.id,
        )
        for offset, suggestion in enumerate(plan.suggestions, start=1)
    ]
    if loop.restart_replicates:
        trial_runs.mark_fresh_replicates(space, trials, measured)
    created = []
    for row, trial in zip(stored, trials, strict=True):
        session.add(trial)
        await session.flush()
        row.status, row.trial_id = SuggestionStatus.ACCEPTED, trial.id
        session.add(row)
        created.append(trial.id)
    return created


def _stored(recommendation: Recommendation) -> dict[str, object]:
    """The recommendation as JSON can hold it (no NaN or infinity)."""
    found = recommendation.as_dict()
    for name in ("predicted", "uncertainty", "observed"):
        found[name] = finite_or_none(found[name])  # type: ignore[arg-type]
    return found


async def fail(session: AsyncSession, *, optimization_id: int, error: str) -> None:
    """Mark a running loop failed with the error that broke it; its trials are kept."""
    await session.rollback()
    loop = await rows.get_optimization(session, optimization_id)
    if loop is not None and loop.status == OptimizationStatus.RUNNING:
        await _finish(session, loop, OptimizationStatus.FAILED, error=error)


async def advance_running(
    session: AsyncSession,
    *,
    experiment_id: int,
    queue: TaskQueue,
    targets: Mapping[str, TargetSpec],
) -> None:
    """Advance the experiment's running loop, if there is one (after new observations)."""
    loop = await rows.running_optimization(session, experiment_id)
    if loop is not None:
        await advance(session, optimization_id=loop.id, queue=queue, targets=targets)


def _next(
    experiment: models.Experiment,
    trials: list[models.Trial],
    loop: models.Optimization,
    used: int,
) -> tuple[Plan, DeployAnswer | None]:
    """The round's plan, and the answer to deploy built on its recommendation (the one the
    analysis gives while no run has been measured since)."""
    try:
        runs, problem = suggestions.runs_of(experiment, trials, seed=experiment.id + loop.rounds)
        plan = next_batch(
            loop.strategy,
            problem,
            runs,
            batch_size=loop.batch_size,
            budget_left=loop.budget - used,
            time_left=_time_left(loop, trials),
            stop_below=loop.stop_below,
        )
    except DomainError as error:
        reason = f"the {loop.strategy} strategy cannot go on: {error.rule}"
        return Plan(loop.strategy, DONE, reason, [], stop_reason=reason), None
    if plan.recommendation is None:
        return plan, None
    return plan, analysis_inputs.deploy_of(experiment, trials, DEFAULT_MODEL, plan.recommendation)


def _time_left(loop: models.Optimization, trials: list[models.Trial]) -> float | None:
    """The share of the loop's budget of trial time not yet spent (None without one)."""
    used = progress.loop_seconds_used(loop, trials)
    if used is None or loop.budget_seconds is None:
        return None
    return 1.0 - used / loop.budget_seconds


def _grouped(space: FactorSpace, plan: Plan) -> Plan:
    """A batch of sequential picks ordered by the hard-to-change factors, so the cluster is
    resized as rarely as the batch allows (designs come in their own split-plot order)."""
    slow = [f.name for f in space.factors if f.hard_to_change]
    if not slow or plan.stage != "bayes":
        return plan
    # A factor's values are all numbers or all strings, so the tuples compare position by position.
    ordered = sorted(plan.suggestions, key=lambda s: tuple(s.config[n] for n in slow))
    return dataclasses.replace(plan, suggestions=ordered)


async def _finish(
    session: AsyncSession,
    loop: models.Optimization,
    status: OptimizationStatus,
    reason: str | None = None,
    *,
    error: str | None = None,
) -> None:
    loop.status = status
    loop.stop_reason = reason
    loop.error = error
    loop.finished_at = utcnow()
    experiment = await rows.get_experiment(session, loop.experiment_id)
    trials = await rows.list_trials(session, loop.experiment_id)
    if (
        experiment is not None
        and experiment.status == ExperimentStatus.RUNNING
        and all(t.status in FINAL_TRIAL_STATUSES for t in trials)
    ):
        experiment.status = ExperimentStatus.COMPLETED
    await session.commit()


async def advance_loop(
    optimization_id: int, *, steps: Steps, queue: TaskQueue, targets: Mapping[str, TargetSpec]
) -> str:
    """One step of the loop; a loop that breaks is marked failed with its error, never left
    running with nothing to run. The step is retried while the database is unreachable (a
    round is claimed atomically: a step that did commit plans nothing the second time)."""
    try:
        sent = await steps(
            f"advancing optimization {optimization_id}",
            lambda session: advance(
                session, optimization_id=optimization_id, queue=queue, targets=targets
            ),
        )
    except UnavailableError as error:
        # The round's trials stay pending: a later start, or the next step, sends them.
        log.warning("optimization %s: trials not sent: %s", optimization_id, error)
        return "broker unavailable"
    except Exception as error:
        if unreachable(error):
            return "database unavailable"  # logged by `steps`; the loop is left as it was
        log.exception("optimization %s failed", optimization_id)
        failure = traceback.format_exc(limit=5)
        await steps(
            f"recording the failure of optimization {optimization_id}",
            lambda session: fail(session, optimization_id=optimization_id, error=failure),
        )
        return "failed"
    return f"sent {len(sent)} trial(s)"
