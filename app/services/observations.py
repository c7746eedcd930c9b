"""Results measured elsewhere, recorded all or none, on any target.

On a manual target they are how trials get results at all; on a runnable target (simulated,
lab, external) they are imported runs that seed the experiment (a warm start): stored as
succeeded trials from source "observation", never queued, never run again.

An observation reports only responses the experiment can use (`accepted_responses`): on a
runnable target those it reports; on a manual target, which takes any name, the objective's
responses and the names a cluster reports (KNOWN_RESPONSES), so a typo (tpz for tps) is
refused instead of stored as a run without its result.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import rows
from app.db.models import Experiment, Trial, utcnow
from app.services.access import experiment_of, target_of
from app.services.errors import ConflictError
from app.services.trial_runs import new_trial
from app.statuses import ExperimentStatus, TrialSource, TrialStatus
from experiments.analysis.split_plot import varying_hard_to_change
from experiments.errors import DomainError
from experiments.factors import NAME_PATTERN, Config, FactorSpace
from experiments.galera.kinds import KIND_RESPONSES
from experiments.galera.target_spec import TargetSpec
from experiments.objective import Objective

MAX_OBSERVATIONS = 1000
# Every response a simulated or real cluster reports, in the targets' order.
KNOWN_RESPONSES: tuple[str, ...] = tuple(
    dict.fromkeys(name for names in KIND_RESPONSES.values() if names for name in names)
)


async def record_observations(
    session: AsyncSession,
    *,
    experiment_id: int,
    observations: Sequence[Mapping[str, Any]],
    targets: Mapping[str, TargetSpec],
) -> list[Trial]:
    """Store results measured elsewhere: all of them or, on any error, none.

    An observation whose configuration matches a pending planned trial fills that trial (it
    will not be run); any other becomes a new trial. `block` and `whole_plot`, when given,
    say which block and whole plot the run belongs to, for the analysis. On a manual target
    the experiment is completed once no planned trial is left; on a runnable target its
    status stays what starting and running it make it.
    """
    experiment = await experiment_of(session, experiment_id)
    target = target_of(targets, experiment.target)
    _check_takes(experiment, observations)
    space = experiment.factor_space
    accepted = accepted_responses(target, experiment.parsed_objective)
    checked = [
        (
            _observed_config(space, item, i),
            _observed_responses(item, i, target, accepted),
            _layout(item, i),
        )
        for i, item in enumerate(observations)
    ]
    _check_whole_plots(space, checked, await rows.list_trials(session, experiment_id))
    pending = list(await rows.list_trials(session, experiment_id, status=TrialStatus.PENDING))
    next_order = await rows.max_run_order(session, experiment_id)
    now = utcnow()
    recorded: list[Trial] = []
    for config, responses, layout in checked:
        trial = next((t for t in pending if t.config == config), None)
        if trial is None:
            next_order += 1
            trial = _observed_trial(space, experiment_id, next_order, config)
            session.add(trial)
        else:
            pending.remove(trial)
        _measured(trial, responses, layout, now)
        recorded.append(trial)
    if not target.runnable:
        looping = await rows.running_optimization(session, experiment_id) is not None
        done = not pending and not looping
        experiment.status = ExperimentStatus.COMPLETED if done else ExperimentStatus.RUNNING
    await session.commit()
    return recorded


def _check_takes(experiment: Experiment, observations: Sequence[Mapping[str, Any]]) -> None:
    """The experiment takes observations (it was not cancelled), one to MAX_OBSERVATIONS."""
    if experiment.status == ExperimentStatus.CANCELLED:
        raise ConflictError(
            f"experiment {experiment.id} was cancelled: it takes no more observations"
        )
    if not observations:
        raise DomainError("observations", "must hold at least one observation")
    if len(observations) > MAX_OBSERVATIONS:
        raise DomainError("observations", f"at most {MAX_OBSERVATIONS} per request")


def _observed_trial(
    space: FactorSpace, experiment_id: int, run_order: int, config: Config
) -> Trial:
    """A new trial for an observation that fills no planned trial."""
    return new_trial(
        space,
        experiment_id=experiment_id,
        run_order=run_order,
        config=config,
        point_type="observed",
        source=TrialSource.OBSERVATION,
    )


def _measured(
    trial: Trial, responses: dict[str, float], layout: dict[str, int], now: datetime
) -> None:
    """The trial succeeded with the observed responses, in its block and whole plot."""
    trial.status = TrialStatus.SUCCEEDED
    trial.responses = responses
    for name, value in layout.items():
        setattr(trial, name, value)
    trial.started_at = trial.finished_at = now


def _observed_config(space: FactorSpace, item: Mapping[str, Any], i: int) -> dict[str, Any]:
    config = item.get("config")
    if not isinstance(config, Mapping):
        raise DomainError(f"observations.{i}.config", "must be an object of factor values")
    try:
        return space.check_config(config)
    except DomainError as error:
        raise DomainError(f"observations.{i}.config.{error.field}", error.rule) from None


def _check_whole_plots(
    space: FactorSpace,
    checked: Sequence[tuple[Config, Any, dict[str, int]]],
    trials: Sequence[Trial],
) -> None:
    """A hard-to-change factor keeps one setting in a whole plot: an observation's whole plot
    must agree with the experiment's trials of that whole plot and with the other
    observations."""
    stored: dict[int, Trial] = {}
    for trial in trials:
        if trial.whole_plot is not None:
            stored.setdefault(trial.whole_plot, trial)
    configs = [*(t.config for t in stored.values()), *(config for config, _, _ in checked)]
    plots = [*stored, *(layout.get("whole_plot") for _, _, layout in checked)]
    found = varying_hard_to_change(space, configs, plots)
    if found is None:
        return
    i, name, j = found
    earlier = (
        f"trial {list(stored.values())[j].id}"
        if j < len(stored)
        else f"observation {j - len(stored)}"
    )
    raise DomainError(
        f"observations.{i - len(stored)}.whole_plot",
        f"whole plot {plots[i]} holds {name}={configs[j][name]} ({earlier}), this run"
        f" {name}={configs[i][name]}: a hard-to-change factor keeps one setting within a whole"
        " plot; give the run another whole plot or none",
    )


def _layout(item: Mapping[str, Any], i: int) -> dict[str, int]:
    """The block and whole plot an observation names (whole numbers of at least 1)."""
    layout = {}
    for name in ("block", "whole_plot"):
        value = item.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise DomainError(f"observations.{i}.{name}", "must be a whole number of at least 1")
        layout[name] = value
    return layout


def accepted_responses(target: TargetSpec, objective: Objective) -> tuple[str, ...]:
    """The response names an observation may report (module doc)."""
    if target.responses is not None:
        return target.responses
    return tuple(dict.fromkeys((*objective.responses, *KNOWN_RESPONSES)))


def _observed_responses(
    item: Mapping[str, Any], i: int, target: TargetSpec, accepted: tuple[str, ...]
) -> dict[str, float]:
    responses = item.get("responses")
    if not isinstance(responses, Mapping) or not responses:
        raise DomainError(f"observations.{i}.responses", "must be a non-empty object")
    checked: dict[str, float] = {}
    for name, value in responses.items():
        field_name = f"observations.{i}.responses.{name}"
        if not isinstance(name, str) or not NAME_PATTERN.match(name):
            raise DomainError(field_name, "a response name must match [A-Za-z_][A-Za-z0-9_]*")
        if name not in accepted:
            where = (
                f"target '{target.name}' ({target.kind}) reports"
                if target.responses is not None
                else f"on manual target '{target.name}' an observation reports the objective's"
                " responses or one a cluster reports:"
            )
            raise DomainError(
                field_name,
                f"'{name}' is not a response of this experiment; {where} " + ", ".join(accepted),
            )
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise DomainError(field_name, "must be a number")
        if not math.isfinite(value):
            raise DomainError(field_name, "must be finite")
        checked[name] = float(value)
    return checked
