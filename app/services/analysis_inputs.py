"""What a fit of one response needs, gathered from an experiment's succeeded trials, and
the analysis built on it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import rows
from app.db.models import Experiment
from app.services.access import experiment_of
from app.services.progress import measured_value
from app.statuses import TrialStatus
from app.target_specs import TargetSpec
from experiments import analysis
from experiments.constraints import parse_constraints
from experiments.errors import DomainError
from experiments.factors import FactorSpace

MIN_TRIALS_TO_FIT = 2


@dataclass(frozen=True)
class AnalysisReport:
    """A fitted model of one response, with what was left out of the fit."""

    response: str
    trials_used: int
    trials_failed: int
    result: dict[str, Any]


@dataclass(frozen=True)
class FitInputs:
    """What a fit of one response needs, gathered from an experiment's succeeded trials."""

    experiment: Experiment
    response: str
    space: FactorSpace
    trials_used: int
    trials_failed: int
    arguments: dict[str, Any]


async def fit_inputs(
    session: AsyncSession,
    *,
    experiment_id: int,
    response: str | None,
    targets: Mapping[str, TargetSpec],
) -> FitInputs:
    """The configurations, values, limits and goals of the trials that measured `response` (the
    objective's by default) and every response its objective constrains; DomainError when fewer
    than two did."""
    experiment = await experiment_of(session, experiment_id)
    objective = experiment.parsed_objective
    name = response or objective.response
    target = targets.get(experiment.target)
    if target is not None:
        target.check_response(name, "response")
    trials = await rows.list_trials(session, experiment_id)
    needed = [name, *objective.responses[1:]]
    used = [
        t
        for t in trials
        if t.status == TrialStatus.SUCCEEDED
        and all(measured_value(t, n) is not None for n in needed)
    ]
    failed = sum(t.status == TrialStatus.FAILED for t in trials)
    if len(used) < MIN_TRIALS_TO_FIT:
        raise DomainError(
            "response",
            f"'{name}' was measured by {len(used)} succeeded trial(s) of experiment "
            f"{experiment_id} ({failed} failed); a fit needs at least {MIN_TRIALS_TO_FIT}",
        )
    space = experiment.factor_space
    arguments = {
        "configs": [t.config for t in used],
        "values": [measured_value(t, name) for t in used],
        "goal": objective.goal,
        "constraints": parse_constraints(experiment.constraints, space),
        "labels": [f"trial {t.id}" for t in used],
        "whole_plots": [t.whole_plot for t in used],
        "blocks": [t.block for t in used],
        "response": name,
        "limits": [
            analysis.ResponseLimit(
                response=bound.response,
                values=[measured_value(t, bound.response) for t in used],  # type: ignore[misc]
                min=bound.min,
                max=bound.max,
            )
            for bound in objective.bounds
        ],
        "desirability": [
            analysis.ResponseGoal(
                values=[measured_value(t, g["response"]) for t in used],  # type: ignore[misc]
                **g,
            )
            for g in objective.desirability
        ],
    }
    return FitInputs(
        experiment=experiment,
        response=name,
        space=space,
        trials_used=len(used),
        trials_failed=failed,
        arguments=arguments,
    )


async def analyze(
    session: AsyncSession,
    *,
    experiment_id: int,
    response: str | None,
    model: str,
    targets: Mapping[str, TargetSpec],
) -> AnalysisReport:
    """Fit a model of one response on the succeeded trials and find its optimum."""
    inputs = await fit_inputs(
        session, experiment_id=experiment_id, response=response, targets=targets
    )
    fitted = analysis.fit(inputs.space, model=model, **inputs.arguments)
    return AnalysisReport(
        response=inputs.response,
        trials_used=inputs.trials_used,
        trials_failed=inputs.trials_failed,
        result=fitted.as_dict(),
    )
