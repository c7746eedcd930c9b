"""Use cases of the planner: plan a design (to store or to preview) and export a run table."""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import rows
from app.db.models import Experiment, Trial
from app.services.errors import NotFoundError
from app.statuses import TrialSource, TrialStatus
from experiments.constraints import parse_constraints
from experiments.designs import Design, DesignRequest, Limits, design_size, plan
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.galera.target_spec import TargetSpec

RUN_TABLE_COLUMNS = ("run_order", "std_order", "block", "whole_plot", "replicate", "point_type")


def target_limits(target: TargetSpec, space: FactorSpace) -> Limits:
    """The ranges `target` accepts for the factors of `space` it bounds (its built-in numeric
    factors): with the integer factors' own ranges, where no planned run may go beyond."""
    ranges = {name: target.factor_range(name) for name in space.names}
    return {name: accepted for name, accepted in ranges.items() if accepted is not None}


def planned(
    space: FactorSpace,
    *,
    design: Mapping[str, Any],
    constraints: Sequence[str],
    max_design_runs: int,
    limits: Limits | None = None,
) -> Design:
    """Check the request and its size against the limit, then plan the design inside the hard
    ranges (`limits`: the target's, `target_limits`)."""
    request = DesignRequest.from_dict(design)
    parsed = parse_constraints(constraints, space)
    size = design_size(space, request)
    if size > max_design_runs:
        raise DomainError(
            "design",
            f"the design needs {size} runs, more than the limit of {max_design_runs} "
            "(GALERA_DOE_MAX_DESIGN_RUNS)",
        )
    return plan(space, request, parsed, limits)


def preview(
    *,
    factors: list[dict[str, Any]],
    design: Mapping[str, Any],
    constraints: Sequence[str],
    target: str | None,
    targets: Mapping[str, TargetSpec],
    max_design_runs: int,
) -> Design:
    """Plan a design without storing anything; a named target checks (and prepares) the factors."""
    space, notes, limits = FactorSpace.from_dicts(factors), [], {}
    if target is not None:
        if target not in targets:
            raise DomainError(
                "target", f"unknown target '{target}'; known: {', '.join(sorted(targets))}"
            )
        space, notes = targets[target].prepared_space(space)
        limits = target_limits(targets[target], space)
    design = planned(
        space,
        design=design,
        constraints=constraints,
        max_design_runs=max_design_runs,
        limits=limits,
    )
    return dataclasses.replace(design, notes=(*notes, *design.notes))


def trial_rows(
    design: Design, experiment_id: int, first_run_order: int = 1
) -> list[dict[str, Any]]:
    """One pending trial per run of a planned design, numbered from `first_run_order`, as the
    rows of one bulk INSERT of `Trial`: hundreds of ORM objects would each be inserted on
    their own."""
    return [
        {
            "experiment_id": experiment_id,
            "run_order": point.run_order + first_run_order - 1,
            "std_order": point.std_order,
            "block": point.block,
            "whole_plot": point.whole_plot,
            "replicate": point.replicate,
            "point_type": point.point_type,
            "rounded": point.rounded,
            "duplicate_of": point.duplicate_of,
            "source": TrialSource.DESIGN,
            "config": dict(point.config),
            "coded": dict(point.coded),
            "status": TrialStatus.PENDING,
            "attempts": 0,
        }
        for point in design.points
    ]


def report_of(design: Design) -> dict[str, Any]:
    """What is stored with an experiment about its design (beyond the runs themselves)."""
    return {
        "kind": design.kind,
        "model": design.model,
        "runs": len(design.points),
        "family": design.family,
        "quality": design.quality.as_dict(),
        "removed_by_constraints": design.removed_by_constraints,
    }


async def run_table(session: AsyncSession, *, experiment_id: int) -> tuple[Experiment, list[Trial]]:
    """An experiment and its planned runs (observations and suggestions excluded), in run order."""
    experiment = await rows.get_experiment(session, experiment_id)
    if experiment is None:
        raise NotFoundError("experiment", experiment_id)
    trials = await rows.list_trials(session, experiment_id)
    return experiment, [t for t in trials if t.source == TrialSource.DESIGN]


def run_table_csv(experiment: Experiment, trials: Sequence[Trial]) -> str:
    """The run table as CSV: run columns, then natural values, then coded values."""
    names = [f["name"] for f in experiment.factors]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*RUN_TABLE_COLUMNS, "rounded", *names, *(f"{n}_coded" for n in names)])
    for trial in trials:
        coded = trial.coded or {}
        writer.writerow(
            [
                *(getattr(trial, column) for column in RUN_TABLE_COLUMNS),
                trial.rounded,
                *(trial.config[name] for name in names),
                *(_round(coded.get(name)) for name in names),
            ]
        )
    return out.getvalue()


def _round(value: float | None) -> float | str:
    return "" if value is None else round(value, 6)
