"""A factor that names a server setting of a real cluster (a provider option, a server variable,
a restart-only setting): every value it takes checked against the catalogue of its kind, with a
`DomainError` naming the factor's field that breaks the rule."""

from __future__ import annotations

from experiments.errors import DomainError
from experiments.factors import Factor
from experiments.galera.provider_options import provider_option, provider_value
from experiments.galera.restart_settings import config_value
from experiments.galera.variable_policy import Policy


def check_provider_factor(i: int, factor: Factor) -> None:
    """Raise unless `factor` names a Galera provider option a benchmark may set, one the
    provider changes at run time, and every value the factor takes is one the option accepts."""
    try:
        option = provider_option(factor.name)
    except ValueError as error:
        raise DomainError(f"factors.{i}.name", str(error)) from None
    if option.kind == "integer" and factor.kind == "continuous":
        raise DomainError(
            f"factors.{i}.kind", f"{factor.name} takes whole numbers: make it an integer factor"
        )
    for value in factor.levels if factor.levels is not None else factor.bounds:
        try:
            provider_value(option, value)
        except ValueError as error:
            field_name = f"factors.{i}" if option.tunable else f"factors.{i}.name"
            raise DomainError(field_name, str(error)) from None


def check_variable_factor(i: int, factor: Factor, policy: Policy) -> None:
    """Raise unless `factor` names a server variable a benchmark may set on a target of this
    `policy` (`experiments.galera.variable_policy`), and every value it takes is one the
    variable accepts."""
    try:
        variable = policy.variable(factor.name)
    except ValueError as error:
        raise DomainError(f"factors.{i}.name", str(error)) from None
    whole = variable is not None and variable.kind in ("integer", "boolean")
    if whole and factor.kind == "continuous" and factor.levels is None:
        raise DomainError(
            f"factors.{i}.kind", f"{factor.name} takes whole numbers: make it an integer factor"
        )
    if factor.levels is not None:
        ends: list[tuple[str, object]] = [("levels", level) for level in factor.levels]
    else:
        ends = [("low", factor.low), ("high", factor.high)]
    for where, value in ends:
        try:
            policy.value(factor.name, value)
        except ValueError as error:
            raise DomainError(f"factors.{i}.{where}", str(error)) from None


def check_config_values(i: int, factor: Factor) -> None:
    """Raise unless every value `factor` takes can stand in an option file."""
    for value in factor.levels if factor.levels is not None else factor.bounds:
        try:
            config_value(factor.name, value)
        except ValueError as error:
            raise DomainError(f"factors.{i}", str(error)) from None
