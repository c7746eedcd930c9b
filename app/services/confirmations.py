"""Confirm the configuration to deploy against today's on the cluster itself.

A confirmation runs the deploy answer (the candidate) and the baseline in interleaved pairs, each
pair's order random, every run in a fresh cluster state where the target can restart its nodes.
The pair count comes from the measured noise: enough pairs for a paired t-test to detect the
gain the model predicts (`experiments.analysis.confirmation.planned_pairs`), re-estimated once
from the pairs' own spread (`confirmation_runs`). With noise factors, pair i runs at noise
scenario i (cycling), so the pairs measure the mean gain across the noise levels. Its runs are
held out of every model: they test it. Once every run ended, the result is the paired gain with
its 95 % interval, the paired p, and whether the model's prediction held.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import rows
from app.db.models import Confirmation, Experiment, Trial
from app.queue import TaskQueue
from app.services import analysis_inputs, baselines, confirmation_runs
from app.services.access import experiment_of, target_of
from app.services.errors import ConflictError, NotFoundError
from app.services.trial_runs import send_trials
from app.statuses import ConfirmationStatus, ExperimentStatus
from experiments.analysis.aim_prediction import AimPrediction, aim_prediction
from experiments.analysis.confirmation import planned_pairs
from experiments.analysis.model import FittedModel, fit_model
from experiments.errors import DomainError
from experiments.factors import Config
from experiments.galera.target_spec import TargetSpec
from experiments.robust import RobustAim
from experiments.terms import DEFAULT_MODEL

# The fewest pairs a planned confirmation runs: a paired t-test on two has one degree of freedom.
MIN_PAIRS = 3


@dataclass(frozen=True)
class ConfirmRequest:
    """How to confirm: `pairs` fixed, or chosen up to `max_pairs` for `power`; `fresh` restarts
    every node before each run (None: wherever the target can); `seed` orders the pairs."""

    pairs: int | None = None
    max_pairs: int = 10
    power: float = 0.8
    fresh: bool | None = None
    seed: int = 0


@dataclass(frozen=True)
class ConfirmationDetail:
    """A confirmation row with its runs in run order."""

    confirmation: Confirmation
    trials: list[Trial]


async def start(
    session: AsyncSession,
    *,
    experiment_id: int,
    request: ConfirmRequest,
    queue: TaskQueue,
    targets: Mapping[str, TargetSpec],
) -> ConfirmationDetail:
    """Plan the pairs, store the confirmation and its runs, and send them to the workers."""
    experiment = await experiment_of(session, experiment_id)
    if experiment.status == ExperimentStatus.CANCELLED:
        raise ConflictError(f"experiment {experiment_id} was cancelled; it cannot be confirmed")
    target = target_of(targets, experiment.target)
    if not target.runnable:
        raise ConflictError(f"target '{target.name}' is {target.kind}: it runs nothing")
    fresh = _fresh(request.fresh, target)
    trials = list(await rows.list_trials(session, experiment_id, raw_output=False))
    baseline = baselines.required(experiment, trials)
    candidate, fitted = _candidate(experiment, trials)
    objective = experiment.parsed_objective
    sign = 1.0 if objective.goal == "maximize" else -1.0
    at_candidate, at_baseline = (
        _prediction(fitted, c, objective.goal) for c in (candidate, baseline)
    )
    gain = sign * (at_candidate.predicted - at_baseline.predicted)
    run_sd = at_candidate.residual_sd
    fewest = min(MIN_PAIRS, request.max_pairs)
    plan = planned_pairs(
        gain,
        run_sd,
        response=objective.response,
        power=request.power,
        max_pairs=request.max_pairs,
        min_pairs=fewest,
    )
    if candidate == baseline:
        # No gain to detect, however many pairs: the fewest show the two measure alike.
        plan = dataclasses.replace(
            plan,
            pairs=fewest,
            reason=f"{fewest} pairs: the configuration to deploy is today's, so there is no"
            " gain to detect; the pairs show whether the two measure alike.",
        )
    pairs = plan.pairs
    if request.pairs is not None:
        pairs = request.pairs
        plan = dataclasses.replace(
            plan, reason=f"{pairs} pairs, as asked. Planned from the noise: {plan.reason}"
        )
    row = Confirmation(
        experiment_id=experiment_id,
        status=ConfirmationStatus.RUNNING,
        response=objective.response,
        goal=objective.goal,
        candidate=candidate,
        baseline=baseline,
        pairs=pairs,
        seed=request.seed,
        plan={
            **plan.as_dict(),
            "pairs": pairs,
            "fresh": fresh,
            "max_pairs": request.max_pairs,
            "fixed": request.pairs is not None,
        },
        prediction=_stored_prediction(at_candidate),
    )
    session.add(row)
    await session.flush()
    runs = await confirmation_runs.planned_runs(
        session, experiment, row, first_pair=1, count=pairs, seed=request.seed
    )
    session.add_all(runs)
    await session.flush()
    await send_trials(session, experiment=experiment, trial_ids=[t.id for t in runs], queue=queue)
    return ConfirmationDetail(row, runs)


def _fresh(asked: bool | None, target: TargetSpec) -> bool:
    if asked is None:
        return target.starts_fresh
    if asked:
        target.check_starts_fresh()
    return asked


def _candidate(experiment: Experiment, trials: Sequence[Trial]) -> tuple[Config, FittedModel]:
    """The deploy answer's control configuration and the model fitted to the runs; DomainError
    naming `model` while there is none."""
    modelled = analysis_inputs.modelled(trials)
    response = experiment.parsed_objective.response
    try:
        used, arguments = analysis_inputs.fit_arguments(experiment, modelled, response)
        fitted = fit_model(
            experiment.factor_space, arguments["configs"], arguments["values"], DEFAULT_MODEL
        )
        answer = analysis_inputs.deploy_of(experiment, modelled, DEFAULT_MODEL, None)
    except DomainError as error:
        raise DomainError(
            "model",
            f"no model of {response} can be fitted yet ({error.rule}): confirm after the"
            " experiment's runs succeeded",
        ) from None
    if answer is None or not used:
        raise DomainError(
            "model", f"no run measured {response} yet: confirm after the experiment's runs"
        )
    space = experiment.factor_space
    return {f.name: answer.config[f.name] for f in space.factors if not f.noise}, fitted


def _prediction(fitted: FittedModel, control: Config, goal: str) -> AimPrediction:
    """What the model predicts for the mean of runs of `control` across the noise levels."""
    return aim_prediction(fitted, control, RobustAim(), goal)


def _stored_prediction(at: AimPrediction) -> dict[str, float] | None:
    if at.df <= 0 or at.se_mean is None or at.residual_sd is None:
        return None
    return {"mean": at.predicted, "se_mean": at.se_mean, "residual_sd": at.residual_sd, "df": at.df}


async def get(
    session: AsyncSession, *, experiment_id: int, confirmation_id: int, queue: TaskQueue
) -> ConfirmationDetail:
    """One confirmation with its runs; once every run ended, its next pairs are sent or its
    result worked out (if the worker that ran the last one has not done it yet)."""
    row = await session.get(Confirmation, confirmation_id, populate_existing=True)
    if row is None or row.experiment_id != experiment_id:
        raise NotFoundError("confirmation", confirmation_id)
    return ConfirmationDetail(row, await confirmation_runs.advance(session, row=row, queue=queue))


async def advance(session: AsyncSession, *, confirmation_id: int, queue: TaskQueue) -> None:
    """Move a confirmation on after one of its runs ended (`confirmation_runs.advance`)."""
    row = await session.get(Confirmation, confirmation_id, populate_existing=True)
    if row is not None:
        await confirmation_runs.advance(session, row=row, queue=queue)


async def get_all(
    session: AsyncSession, *, experiment_id: int, queue: TaskQueue
) -> list[ConfirmationDetail]:
    """An experiment's confirmations, newest first (each as `get` answers it)."""
    await experiment_of(session, experiment_id)
    query = (
        select(Confirmation)
        .where(Confirmation.experiment_id == experiment_id)
        .order_by(Confirmation.id.desc())
        .execution_options(populate_existing=True)
    )
    return [
        ConfirmationDetail(row, await confirmation_runs.advance(session, row=row, queue=queue))
        for row in (await session.scalars(query)).all()
    ]
