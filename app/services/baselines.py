"""Today's configuration (the baseline): checked and stored with a new experiment, measured by
its first runs, and read back from the nodes where the client asked for "current"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.db.models import Experiment, Trial
from app.statuses import TrialSource, TrialStatus
from experiments.baseline import Baseline, parse_baseline
from experiments.errors import DomainError
from experiments.factors import Config, FactorSpace
from experiments.galera.target_spec import TargetSpec
from experiments.robust import noise_scenarios

BASELINE_POINT = "baseline"


def parsed(raw: object, space: FactorSpace, target: TargetSpec) -> Baseline | None:
    """The baseline a client sent, checked against the space and what the target can read."""
    return parse_baseline(raw, space, target.reads_setting)


def stored(experiment: Experiment) -> Baseline | None:
    """The experiment's baseline as stored; None when it names none."""
    return None if experiment.baseline is None else Baseline.from_stored(experiment.baseline)


def trial_rows(baseline: Baseline, space: FactorSpace, experiment_id: int) -> list[dict[str, Any]]:
    """The baseline's runs, first in run order: one per noise scenario (one without noise
    factors). A run that reads settings from the nodes holds only the given values until it
    ran."""
    rows = []
    for order, scenario in enumerate(noise_scenarios(space), start=1):
        config = {**baseline.given, **scenario}
        coded = None if baseline.current else space.coded(config)
        rows.append(
            {
                "experiment_id": experiment_id,
                "run_order": order,
                "block": 1,
                "replicate": 1,
                "point_type": BASELINE_POINT,
                "rounded": False,
                "source": TrialSource.BASELINE,
                "config": config,
                "coded": coded,
                "reads_current": list(baseline.current) or None,
                "status": "pending",
                "attempts": 0,
            }
        )
    return rows


def baseline_config(experiment: Experiment, trials: Sequence[Trial]) -> Config | None:
    """The baseline's control configuration: as given, or with the values its first run
    read from the nodes; None while they are still to be read (or no baseline is named)."""
    baseline = stored(experiment)
    if baseline is None:
        return None
    if baseline.complete:
        return dict(baseline.given)
    space = experiment.factor_space
    for trial in trials:
        if trial.source == TrialSource.BASELINE and trial.status == TrialStatus.SUCCEEDED:
            return {f.name: trial.config[f.name] for f in space.factors if not f.noise}
    return None


def required(experiment: Experiment, trials: Sequence[Trial]) -> Config:
    """The baseline's configuration, or DomainError saying why there is none yet."""
    baseline = stored(experiment)
    if baseline is None:
        raise DomainError(
            "baseline",
            f"experiment {experiment.id} names no baseline: create it with baseline (today's"
            ' configuration, or "current" to read it from the nodes) to confirm against',
        )
    config = baseline_config(experiment, trials)
    if config is None:
        raise DomainError(
            "baseline",
            "today's configuration is still to be read from the nodes: its run (run 1) has not"
            " succeeded yet",
        )
    return config


def view(experiment: Experiment, trials: Sequence[Trial] | None = None) -> dict[str, Any] | None:
    """The baseline as the API shows it: given, read, and the whole configuration once known."""
    baseline = stored(experiment)
    if baseline is None:
        return None
    config = baseline_config(experiment, trials or ()) if trials is not None else None
    if config is None and baseline.complete:
        config = dict(baseline.given)
    return {"given": baseline.given, "current": list(baseline.current), "config": config}


def check_noise_varies(space: FactorSpace, configs: Sequence[Mapping[str, Any]]) -> None:
    """Raise naming a noise factor the planned runs hold at one level (the design or a
    constraint pins it): a noise factor must vary."""
    for i, factor in enumerate(space.factors):
        if factor.noise and configs and len({str(c[factor.name]) for c in configs}) < 2:
            raise DomainError(
                f"factors.{i}.noise",
                f"the planned runs hold noise factor {factor.name} at one level (a constraint"
                " or the design pins it): a noise factor must vary",
            )
