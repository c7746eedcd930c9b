"""Use cases of suggestions: propose the next configurations (stored, not run), accept one."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import models, rows
from app.queue import TaskQueue
from app.services import access, progress, trial_runs
from app.services.errors import ConflictError, NotFoundError
from app.statuses import ExperimentStatus, SuggestionStatus, TrialSource, TrialStatus
from experiments.analysis.optimize import measured_desirability
from experiments.constraints import parse_constraints
from experiments.galera.target_spec import TargetSpec
from experiments.numbers import finite_or_none
from experiments.suggest import Limit, Plan, Problem, Runs, suggest


@dataclass(frozen=True)
class Proposal:
    """A strategy's plan and the suggestions stored from it (with their ids)."""

    plan: Plan
    suggestions: list[models.Suggestion]


def runs_of(
    experiment: models.Experiment, trials: Sequence[models.Trial], *, seed: int | None = None
) -> tuple[Runs, Problem]:
    """The trials as the strategies see them (succeeded runs that measured everything the
    objective needs, their point types and limited responses, and the failed configurations),
    and the problem they solve, seeded by `seed` (None: the experiment's id).

    An objective that combines responses by desirability is optimized as their overall
    desirability (maximized); otherwise the objective's response in its direction. With noise
    factors the problem judges control configurations by the objective's robust aim (its mean
    over the noise levels when it states none).
    """
    objective = experiment.parsed_objective
    limits = [Limit(response=b.response, min=b.min, max=b.max) for b in objective.bounds]
    goals = objective.desirability
    needed = objective.responses
    configs, values, types, failed = [], [], [], []
    responses: dict[str, list[float]] = {lim.response: [] for lim in limits}
    for trial in trials:
        if trial.status == TrialStatus.FAILED:
            failed.append(trial.config)
        measured = _measured(trial.responses or {})
        if trial.status != TrialStatus.SUCCEEDED or not all(n in measured for n in needed):
            continue
        configs.append(trial.config)
        types.append(trial.point_type)
        if goals:
            values.append(measured_desirability(goals, measured))
        else:
            values.append(measured[objective.response])
        for lim in limits:
            responses[lim.response].append(measured[lim.response])
    runs = Runs(
        configs=configs, values=values, point_types=types, responses=responses, failed=failed
    )
    space = experiment.factor_space
    problem = Problem(
        space,
        goal="maximize" if goals else objective.goal,
        scale=objective.scale,
        constraints=tuple(parse_constraints(experiment.constraints, space)),
        limits=tuple(limits),
        seed=experiment.id if seed is None else seed,
        robust=objective.robust,
    )
    return runs, problem


def plan_for(
    experiment: models.Experiment,
    trials: Sequence[models.Trial],
    *,
    strategy: str,
    count: int,
    budget: int | None = None,
) -> Plan:
    """What `strategy` proposes next for the experiment (nothing is stored)."""
    runs, problem = runs_of(experiment, trials)
    return suggest(strategy, problem, runs, count=count, budget=budget)


def stored(
    experiment: models.Experiment, plan: Plan, *, based_on: int, optimization_id: int | None
) -> list[models.Suggestion]:
    """Rows for the plan's suggestions (added to nothing yet)."""
    return [
        models.Suggestion(
            experiment_id=experiment.id,
            optimization_id=optimization_id,
            status=SuggestionStatus.OPEN,
            strategy=plan.strategy,
            stage=plan.stage,
            point_type=s.point_type,
            config=s.config,
            predicted=finite_or_none(s.predicted),
            uncertainty=finite_or_none(s.uncertainty),
            expected_improvement=finite_or_none(s.expected_improvement),
            predicted_by=s.predicted_by,
            reason=s.reason,
            based_on_trials=based_on,
        )
        for s in plan.suggestions
    ]


async def propose(
    session: AsyncSession, *, experiment_id: int, strategy: str, count: int
) -> Proposal:
    """The next configurations by `strategy`, stored as open suggestions; nothing runs. With
    noise factors `count` counts control configurations, each suggested at every noise level."""
    experiment = await access.experiment_of(session, experiment_id)
    trials = await rows.list_trials(session, experiment_id)
    # Fitting the strategy's model takes seconds on a large experiment: off the event loop.
    plan = await asyncio.to_thread(plan_for, experiment, trials, strategy=strategy, count=count)
    based_on = sum(t.status == TrialStatus.SUCCEEDED for t in trials)
    made = stored(experiment, plan, based_on=based_on, optimization_id=None)
    session.add_all(made)
    await session.commit()
    return Proposal(plan=plan, suggestions=made)


async def get_all(session: AsyncSession, *, experiment_id: int) -> Sequence[models.Suggestion]:
    """The experiment's stored suggestions, oldest first."""
    await access.experiment_of(session, experiment_id)
    return await rows.list_suggestions(session, experiment_id)


async def accept(
    session: AsyncSession,
    *,
    experiment_id: int,
    suggestion_id: int,
    queue: TaskQueue,
    targets: Mapping[str, TargetSpec],
) -> models.Trial:
    """Turn an open suggestion into a trial and run it (on a manual target, the trial waits
    for its observation). Raises ConflictError when it was accepted already."""
    experiment = await access.experiment_of(session, experiment_id)
    suggestion = await rows.get_suggestion(session, suggestion_id)
    if suggestion is None or suggestion.experiment_id != experiment_id:
        raise NotFoundError("suggestion", suggestion_id)
    if experiment.status == ExperimentStatus.CANCELLED:
        raise ConflictError(f"experiment {experiment_id} was cancelled; it runs nothing more")
    if suggestion.status != SuggestionStatus.OPEN:
        raise ConflictError(
            f"suggestion {suggestion_id} was accepted already: it is trial {suggestion.trial_id}"
        )
    target = access.target_of(targets, experiment.target)
    space = experiment.factor_space
    trial = trial_runs.new_trial(
        space,
        experiment_id=experiment_id,
        run_order=await rows.max_run_order(session, experiment_id) + 1,
        config=suggestion.config,
        point_type=suggestion.point_type,
        source=TrialSource.SUGGESTION,
    )
    session.add(trial)
    await session.flush()
    if not await rows.accept_suggestion(session, suggestion_id, trial_id=trial.id):
        await session.rollback()
        raise ConflictError(f"suggestion {suggestion_id} was accepted already")
    experiment.status = ExperimentStatus.RUNNING
    await session.commit()
    if target.runnable:
        await trial_runs.send_trials(
            session, experiment=experiment, trial_ids=[trial.id], queue=queue
        )
    return await progress.get_trial(session, trial_id=trial.id)


def _measured(responses: Mapping[str, Any]) -> dict[str, float]:
    return {
        name: float(value)
        for name, value in responses.items()
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    }
