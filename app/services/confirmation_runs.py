"""A confirmation's runs: made pair by pair, and when every run of them ended, either more pairs
or the result.

The planned pairs are an internal pilot (Wittes and Brittain 1990, "The role of internal pilot
studies in increasing the efficiency of clinical trials", Statistics in Medicine 9, 65-72): the
pair count was chosen from the model's residual standard deviation, which a few runs of a
design may well underestimate. Once they ended, the spread of their differences is measured;
when it calls for more pairs to reach the power asked (at most `max_pairs`), those are run too,
once, and the result comes from every pair. A confirmation whose count was fixed never grows.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import rows
from app.db.models import Confirmation, Experiment, Trial, utcnow
from app.queue import TaskQueue
from app.services.progress import measured_value
from app.services.trial_runs.sending import new_trial, send_trials
from app.statuses import FINAL_TRIAL_STATUSES, ConfirmationStatus, TrialSource, TrialStatus
from experiments.analysis.confirmation import (
    ARMS,
    PredictionAt,
    confirmation,
    pair_orders,
    planned_pairs,
)
from experiments.errors import DomainError
from experiments.robust import noise_scenarios

CONFIRMATION_POINT = "confirmation"


async def planned_runs(
    session: AsyncSession,
    experiment: Experiment,
    row: Confirmation,
    *,
    first_pair: int,
    count: int,
    seed: int,
) -> list[Trial]:
    """`count` pairs from pair `first_pair` on, each pair's two runs in a random order (balanced
    over the pairs), numbered after the experiment's last run; pair i at noise scenario i
    (cycling). Every run restarts the nodes first when the plan says `fresh`."""
    space = experiment.factor_space
    scenarios = noise_scenarios(space)
    arms = {"candidate": row.candidate, "baseline": row.baseline}
    order = await rows.max_run_order(session, experiment.id)
    runs = []
    for pair, arm_order in enumerate(pair_orders(count, seed), start=first_pair):
        scenario = scenarios[(pair - 1) % len(scenarios)]
        for arm in arm_order:
            order += 1
            trial = new_trial(
                space,
                experiment_id=experiment.id,
                run_order=order,
                config={**arms[arm], **scenario},
                point_type=CONFIRMATION_POINT,
                source=TrialSource.CONFIRMATION,
            )
            trial.confirmation_id, trial.arm, trial.pair = row.id, arm, pair
            trial.restart_first = bool(row.plan.get("fresh"))
            runs.append(trial)
    return runs


async def runs_of(session: AsyncSession, confirmation_id: int) -> list[Trial]:
    """A confirmation's runs in run order, read afresh."""
    query = (
        select(Trial)
        .where(Trial.confirmation_id == confirmation_id)
        .order_by(Trial.run_order)
        .execution_options(populate_existing=True)
    )
    return list((await session.scalars(query)).all())


async def advance(session: AsyncSession, *, row: Confirmation, queue: TaskQueue) -> list[Trial]:
    """Once every run ended: send the pairs the measured spread calls for, or work out the
    result. Harmless to call again (the worker calls it after each run, a GET when it reads).
    Returns the confirmation's runs as they are now."""
    trials = await runs_of(session, row.id)
    if row.status != ConfirmationStatus.RUNNING or not all(
        t.status in FINAL_TRIAL_STATUSES for t in trials
    ):
        return trials
    pairs = _measured_pairs(row, trials)
    more = _more_pairs(row, pairs)
    if more:
        experiment = await rows.get_experiment(session, row.experiment_id)
        assert experiment is not None  # a confirmation is deleted only with its experiment
        extra = await planned_runs(
            session, experiment, row, first_pair=row.pairs + 1, count=more, seed=row.seed + 1
        )
        row.plan = {**row.plan, "stage": 2, "reason": _grown(row, pairs, more)}
        row.pairs += more
        session.add_all(extra)
        await session.flush()
        await send_trials(
            session, experiment=experiment, trial_ids=[t.id for t in extra], queue=queue
        )
        return [*trials, *extra]
    _finish(row, pairs)
    await session.commit()
    return trials


def _measured_pairs(row: Confirmation, trials: Sequence[Trial]) -> dict[int, dict[str, float]]:
    """The pairs whose two runs measured the response: pair -> arm -> value."""
    measured: dict[int, dict[str, float]] = {}
    for trial in trials:
        value = (
            measured_value(trial, row.response) if trial.status == TrialStatus.SUCCEEDED else None
        )
        if value is not None and trial.pair is not None and trial.arm is not None:
            measured.setdefault(trial.pair, {})[trial.arm] = value
    return {p: arms for p, arms in sorted(measured.items()) if set(arms) == set(ARMS)}


def _more_pairs(row: Confirmation, pairs: dict[int, dict[str, float]]) -> int:
    """How many pairs to add after the first stage: those the measured spread of the
    differences needs for the power asked, up to `max_pairs`; 0 once grown, for a fixed count,
    or when the spread cannot be measured."""
    plan = row.plan
    if plan.get("fixed") or plan.get("stage", 1) > 1 or len(pairs) < 2:
        return 0
    spread = _spread(pairs)
    gain = plan.get("predicted_gain") or 0.0
    if spread <= 0.0 or gain == 0.0:
        return 0
    replanned = planned_pairs(
        gain,
        spread / math.sqrt(2.0),
        power=plan.get("target_power", 0.8),
        alpha=plan.get("alpha", 0.05),
        min_pairs=row.pairs,
        max_pairs=max(row.pairs, plan.get("max_pairs", row.pairs)),
    )
    return replanned.pairs - row.pairs


def _spread(pairs: dict[int, dict[str, float]]) -> float:
    """The sample standard deviation of the pairs' differences (candidate - baseline)."""
    return statistics.stdev(arms["candidate"] - arms["baseline"] for arms in pairs.values())


def _grown(row: Confirmation, pairs: dict[int, dict[str, float]], more: int) -> str:
    return (
        f"{row.plan.get('reason', '')} After {row.pairs} pairs the spread of their differences"
        f" (sd {_spread(pairs):.4g} {row.response}) called for more: {more} more pairs were"
        " run (an internal pilot: the count re-estimated once from the pairs themselves)."
    ).strip()


def _finish(row: Confirmation, pairs: dict[int, dict[str, float]]) -> None:
    """The result from the pairs whose two runs measured the response."""
    row.finished_at = utcnow()
    if len(pairs) < 2:
        row.status = ConfirmationStatus.FAILED
        row.error = (
            f"only {len(pairs)} of {row.pairs} pairs measured {row.response} in both runs:"
            " a paired comparison needs at least 2"
        )
        return
    prediction = None if row.prediction is None else PredictionAt(**row.prediction)
    try:
        result = confirmation(
            [arms["candidate"] for arms in pairs.values()],
            [arms["baseline"] for arms in pairs.values()],
            response=row.response,
            goal=row.goal,
            prediction=prediction,
        )
    except DomainError as error:  # e.g. every pair differed by exactly the same amount
        row.status, row.error = ConfirmationStatus.FAILED, f"{error.field}: {error.rule}"
        return
    row.result = {**result.as_dict(), "pairs_planned": row.pairs}
    row.status = ConfirmationStatus.FINISHED
