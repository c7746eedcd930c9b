"""What a fit of one response needs, gathered from an experiment's succeeded trials, and
the analysis built on it: with the one configuration to deploy (the same answer the closed loop
gives) and what the runs cover of the experiment planned."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import rows
from app.db.models import Experiment, Optimization, Trial
from app.services import baselines, suggestions
from app.services.access import experiment_of
from app.services.progress import measured_value
from app.statuses import TrialSource, TrialStatus
from experiments import analysis
from experiments.analysis.baseline_view import baseline_view
from experiments.analysis.coverage import coverage
from experiments.analysis.deploy import DeployAnswer, deploy_answer
from experiments.analysis.model import fit_model
from experiments.constraints import parse_constraints
from experiments.designs.request import DesignRequest
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.galera.target_spec import TargetSpec
from experiments.suggest import Recommendation, recommendation

MIN_TRIALS_TO_FIT = 2


@dataclass(frozen=True)
class AnalysisReport:
    """A fitted model of one response, with what was left out of the fit."""

    response: str
    trials_used: int
    trials_failed: int
    result: dict[str, Any]
    baseline: dict[str, Any] | None = None


@dataclass(frozen=True)
class FitInputs:
    """What a fit of one response needs, gathered from an experiment's succeeded trials."""

    experiment: Experiment
    response: str
    space: FactorSpace
    trials_used: int
    trials_failed: int
    arguments: dict[str, Any]
    trials: list[Trial]


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
    name = response or experiment.parsed_objective.response
    target = targets.get(experiment.target)
    if target is not None:
        target.check_response(name, "response")
    trials = modelled(await rows.list_trials(session, experiment_id))
    used, arguments = fit_arguments(experiment, trials, name)
    failed = sum(t.status == TrialStatus.FAILED for t in trials)
    if len(used) < MIN_TRIALS_TO_FIT:
        raise DomainError(
            "response",
            f"'{name}' was measured by {len(used)} succeeded trial(s) of experiment "
            f"{experiment_id} ({failed} failed); a fit needs at least {MIN_TRIALS_TO_FIT}",
        )
    return FitInputs(
        experiment=experiment,
        response=name,
        space=experiment.factor_space,
        trials_used=len(used),
        trials_failed=failed,
        arguments=arguments,
        trials=trials,
    )


def modelled(trials: Sequence[Trial]) -> list[Trial]:
    """The trials every model is fitted to: all but a confirmation's runs, which test it."""
    return [t for t in trials if t.source != TrialSource.CONFIRMATION]


def fit_arguments(
    experiment: Experiment, trials: Sequence[Trial], name: str
) -> tuple[list[Trial], dict[str, Any]]:
    """The succeeded trials that measured `name` and every response the objective needs, and
    the arguments of `analysis.fit` for them. Runs are named by their run numbers, as the run
    table shows them."""
    objective = experiment.parsed_objective
    needed = [name, *objective.responses[1:]]
    used = [
        t
        for t in trials
        if t.status == TrialStatus.SUCCEEDED
        and all(measured_value(t, n) is not None for n in needed)
    ]
    space = experiment.factor_space
    arguments = {
        "configs": [t.config for t in used],
        "values": [measured_value(t, name) for t in used],
        "goal": objective.goal,
        "constraints": parse_constraints(experiment.constraints, space),
        "labels": [f"run {t.run_order}" for t in used],
        "whole_plots": [t.whole_plot for t in used],
        "blocks": [t.block for t in used],
        "response": name,
        "robust": objective.robust,
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
    return used, arguments


async def analyze(
    session: AsyncSession,
    *,
    experiment_id: int,
    response: str | None,
    model: str,
    targets: Mapping[str, TargetSpec],
) -> AnalysisReport:
    """Fit a model of one response on the succeeded trials and find its optimum, with the one
    configuration to deploy and what the runs cover of the experiment planned."""
    inputs = await fit_inputs(
        session, experiment_id=experiment_id, response=response, targets=targets
    )
    loop = await rows.latest_optimization(session, experiment_id)
    experiment, trials = inputs.experiment, inputs.trials

    def fitted() -> analysis.Analysis:
        found = analysis.fit(inputs.space, model=model, **inputs.arguments)
        own = inputs.response == experiment.parsed_objective.response
        covered = coverage(
            inputs.space,
            inputs.arguments["configs"],
            planned=len(trials) if experiment.design is not None else None,
            model=_planned_order(experiment, found),
            residual_df=found.residual_df,
        )
        runs, _ = suggestions.runs_of(experiment, trials)
        answer = deploy_of(
            experiment,
            trials,
            model,
            _current(loop, len(runs)),
            objective_fit=found if own else None,
        )
        return found.reviewed(covered, answer)

    # Fitting takes a while on a large experiment: off the API's event loop.
    result = await asyncio.to_thread(fitted)
    return AnalysisReport(
        response=inputs.response,
        trials_used=inputs.trials_used,
        trials_failed=inputs.trials_failed,
        result=result.as_dict(),
        baseline=_baseline(inputs, model, result),
    )


def _baseline(inputs: FitInputs, model: str, found: analysis.Analysis) -> dict[str, Any] | None:
    """Today's configuration beside the optimum and the configuration to deploy, once its
    values are known; None when the experiment names none."""
    experiment, arguments = inputs.experiment, inputs.arguments
    config = baselines.baseline_config(experiment, inputs.trials)
    if config is None:
        return None
    space = inputs.space
    try:
        fitted = fit_model(
            space, arguments["configs"], arguments["values"], model, arguments["blocks"]
        )
    except DomainError:
        fitted = None
    control = [f.name for f in space.factors if not f.noise]
    against = [("the predicted optimum", found.optimum.config)]
    if found.deploy is not None:
        against.append(("the configuration to deploy", found.deploy.config))
    view = baseline_view(
        space,
        config,
        configs=arguments["configs"],
        values=arguments["values"],
        goal=arguments["goal"],
        response=inputs.response,
        model=fitted,
        aim=experiment.parsed_objective.robust,
        against=[(label, {n: c[n] for n in control}) for label, c in against],
    )
    return view.as_dict()


def deploy_of(
    experiment: Experiment,
    trials: Sequence[Trial],
    model: str,
    recommended: Recommendation | None,
    *,
    objective_fit: analysis.Analysis | None = None,
) -> DeployAnswer | None:
    """The one configuration to deploy, with its evidence and the other candidates labelled;
    None before a run measured the objective. `recommended` is the strategy's recommendation
    when the caller has it (the loop's), else it is made here as the loop makes it. The
    evidence is a `model` fit of the objective's response (`objective_fit`, when the caller
    has fitted it), none when the runs cannot support one."""
    objective = experiment.parsed_objective
    space = experiment.factor_space
    runs, problem = suggestions.runs_of(experiment, trials)
    if recommended is None:
        recommended = recommendation(problem, runs)
    if recommended is None:
        return None
    used, arguments = fit_arguments(experiment, trials, objective.response)
    try:
        fitted = fit_model(
            space, arguments["configs"], arguments["values"], model, arguments["blocks"]
        )
        if objective_fit is None:
            objective_fit = analysis.fit(space, model=model, **arguments)
    except DomainError:  # too few runs for any model: the measurements are the evidence
        objective_fit, fitted = None, None
    # The succeeded runs that measured everything the objective needs, as the strategy sees
    # them (the objective's value or overall desirability), named by their run numbers.
    measured, _ = suggestions.runs_of(experiment, used)
    return deploy_answer(
        space,
        measured.configs,
        measured.values,
        goal=problem.goal,
        recommendation=recommended,
        measure="overall desirability" if objective.desirability else objective.response,
        response=objective.response,
        labels=arguments["labels"],
        analysis=objective_fit,
        model=fitted,
        limits=problem.limits,
        responses=measured.responses,
        robust=problem.robust,
    )


def _current(loop: Optimization | None, runs: int) -> Recommendation | None:
    """The latest loop's recommendation while it rests on the `runs` measured now (none has
    been measured since its round): the answer the loop gave then is the answer now."""
    if loop is None or loop.recommendation is None or loop.deploy is None:
        return None
    if loop.deploy.get("runs_used") != runs:
        return None
    return Recommendation(**loop.recommendation)


def _planned_order(experiment: Experiment, found: analysis.Analysis) -> str:
    """The model the runs are checked against: the design's, else the one the analysis
    started from."""
    if experiment.design is not None:
        return DesignRequest.from_dict(experiment.design).model_order
    return found.selection.start if found.selection is not None else found.model
