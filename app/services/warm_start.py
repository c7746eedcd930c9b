"""A new experiment seeded with the trials of earlier ones (`warm_start_from`).

A trial is copied when its experiment ran on a target of the same kind (a lab result says
nothing about the simulated cluster), it succeeded, and its configuration sets exactly the new
experiment's factors to values inside the new ranges. Copies are succeeded trials from source
"warm_start" with the measured responses: the analysis and the suggestions use them, nothing
runs them again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import rows
from app.db.models import Trial
from app.services.access import visible_experiment
from app.services.api_keys import Principal
from app.services.errors import NotFoundError
from app.services.trial_runs import new_trial
from app.statuses import TrialSource, TrialStatus
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.galera.target_spec import TargetSpec

MAX_SOURCES = 20


@dataclass(frozen=True)
class WarmStart:
    """The copied trials (not yet added to a session) and a note of what was left out."""

    trials: list[Trial]
    note: str


async def copied_trials(
    session: AsyncSession,
    *,
    sources: Sequence[int],
    viewer: Principal,
    space: FactorSpace,
    target: TargetSpec,
    targets: Mapping[str, TargetSpec],
    experiment_id: int,
    first_run_order: int,
) -> WarmStart:
    """The compatible trials of the `sources` experiments, copied for a new experiment on
    `target`; DomainError naming the source that cannot be used, or when none is compatible."""
    if len(sources) > MAX_SOURCES:
        raise DomainError("warm_start_from", f"at most {MAX_SOURCES} experiments")
    copies: list[Trial] = []
    left_out = 0
    for i, source_id in enumerate(dict.fromkeys(sources)):
        field = f"warm_start_from.{i}"
        try:
            source = await visible_experiment(session, experiment_id=source_id, viewer=viewer)
        except NotFoundError:
            raise DomainError(field, f"experiment {source_id} does not exist") from None
        kind = targets[source.target].kind if source.target in targets else None
        if kind != target.kind:
            raise DomainError(
                field,
                f"experiment {source_id} ran on a {kind or 'removed'} target; this experiment's"
                f" target '{target.name}' is {target.kind}: results do not carry over",
            )
        succeeded = await rows.list_trials(session, source_id, status=TrialStatus.SUCCEEDED)
        for trial in succeeded:
            if trial.source == TrialSource.CONFIRMATION:
                continue  # a confirmation's runs test a model; they never enter one
            config = _compatible(space, trial.config)
            if config is None:
                left_out += 1
                continue
            copy = new_trial(
                space,
                experiment_id=experiment_id,
                run_order=first_run_order + len(copies),
                config=config,
                point_type="warm start",
                source=TrialSource.WARM_START,
            )
            copy.status = TrialStatus.SUCCEEDED
            copy.responses = dict(trial.responses or {})
            copy.raw_output = trial.raw_output
            copy.block, copy.whole_plot = trial.block, trial.whole_plot
            copy.started_at, copy.finished_at = trial.started_at, trial.finished_at
            copies.append(copy)
    if not copies:
        raise DomainError(
            "warm_start_from",
            f"no succeeded trial of experiments {', '.join(map(str, sources))} sets exactly the"
            f" factors {', '.join(space.names)} inside the new ranges",
        )
    note = f"warm start: {len(copies)} trials copied from experiment(s) {_listed(sources)}"
    if left_out:
        note += f"; {left_out} left out (other factors or outside the new ranges)"
    return WarmStart(trials=copies, note=note)


def _compatible(space: FactorSpace, config: Mapping[str, object]) -> dict[str, object] | None:
    """The configuration checked against the new space, or None when it does not fit it."""
    if set(config) != set(space.names):
        return None
    try:
        return dict(space.check_config(config))
    except DomainError:
        return None


def _listed(ids: Sequence[int]) -> str:
    return ", ".join(str(i) for i in dict.fromkeys(ids))
