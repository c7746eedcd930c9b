"""The observed runs as the sequential steps read them: checked against the factor space,
compared in coded units, decoded back to runnable configurations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from experiments.constraints import Constraint
from experiments.errors import DomainError
from experiments.factors import Config, Factor, FactorSpace, Value
from experiments.numbers import format_value

# Two coded positions closer than this are the same point (float noise through log2 scales).
TOLERANCE = 1e-6


def checked_runs(space: FactorSpace, configs: Sequence[Mapping[str, object]]) -> list[Config]:
    if not configs:
        raise DomainError("configs", "at least one observed run is needed")
    checked = []
    for i, config in enumerate(configs):
        try:
            checked.append(space.check_config(config, in_region=False))
        except DomainError as error:
            raise DomainError(f"configs.{i}.{error.field}", error.rule) from None
    return checked


def checked_data(
    space: FactorSpace, configs: Sequence[Mapping[str, object]], values: Sequence[float]
) -> tuple[list[Config], np.ndarray]:
    runs = checked_runs(space, configs)
    if len(values) != len(runs):
        raise DomainError("values", f"needs one value per run: {len(runs)} runs, {len(values)}")
    try:
        y = np.array([float(v) for v in values])
    except (TypeError, ValueError):
        raise DomainError("values", "must be numbers") from None
    if not np.all(np.isfinite(y)):
        raise DomainError("values", "must be finite numbers")
    return runs, y


def natural(space: FactorSpace, coded: np.ndarray) -> Config:
    """Natural values of a coded point: integers rounded, explicit levels snapped to nearest."""
    config: Config = {}
    for factor, c in zip(space.factors, coded, strict=True):
        if factor.is_numeric and factor.levels is not None:
            nearest = min(factor.levels, key=lambda v, f=factor: abs(f.encode(v) - float(c)))
            config[factor.name] = factor.check_value(nearest)
        else:
            config[factor.name] = factor.decode(float(c))
    return config


def same(space: FactorSpace, a: Mapping[str, Value], b: Mapping[str, Value]) -> bool:
    return all(
        abs(f.encode(a[f.name]) - f.encode(b[f.name])) < TOLERANCE
        if f.is_numeric
        else a[f.name] == b[f.name]
        for f in space.factors
    )


def broken_constraint(constraints: Sequence[Constraint], config: Mapping[str, Value]) -> str:
    """The text of the first constraint the configuration breaks, or ''."""
    return next((c.text for c in constraints if not c.satisfied(config)), "")


def with_unit(factor: Factor, value: Value) -> str:
    return f"{format_value(value)} {factor.unit}".strip()
