"""Today's configuration, the baseline every optimum and recommendation is compared with.

A client names it (`baseline: {"wsrep_slave_threads": 4, "threads_per_client": 16}`) or asks the
target to read a setting from the nodes (`"current"` as the value, or `baseline: "current"` for
every factor). Only settings the nodes hold can be read: server variables and provider options.
The load (clients, threads, runtime, workload) and the cluster's shape (nodes) are the client's
to give. Noise factors are varied, never chosen, so a baseline leaves them out: it is a
configuration of the control factors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from experiments.errors import DomainError
from experiments.factors import Config, Factor, FactorSpace, Value

CURRENT = "current"
# The spellings servers and the Galera provider use for a switch, by what they mean.
_SWITCH = {
    **dict.fromkeys(("on", "yes", "true", "1"), True),
    **dict.fromkeys(("off", "no", "false", "0"), False),
}

__all__ = ["CURRENT", "Baseline", "parse_baseline", "read_value"]


@dataclass(frozen=True)
class Baseline:
    """The baseline as given: `given` the values the client named, `current` the factors whose
    values are read from the nodes (in factor order)."""

    given: dict[str, Value]
    current: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        """The stored form."""
        return {"given": dict(self.given), "current": list(self.current)}

    @classmethod
    def from_stored(cls, raw: Mapping[str, object]) -> Baseline:
        """The baseline as `as_dict` stored it (checked when it was parsed)."""
        given = raw.get("given") or {}
        current = raw.get("current") or []
        return cls(given=dict(given), current=tuple(current))  # type: ignore[call-overload,arg-type]

    @property
    def complete(self) -> bool:
        """Whether every value is known without reading the nodes."""
        return not self.current

    def resolved(self, space: FactorSpace, raw: Mapping[str, str]) -> Config:
        """The full baseline configuration, with the nodes' `raw` values (text, as SHOW GLOBAL
        VARIABLES and the provider options give them) of the factors read; DomainError names
        a value the nodes run that is not one of the factor's."""
        config: Config = dict(self.given)
        for name in self.current:
            if name not in raw:
                raise DomainError(f"baseline.{name}", "the nodes did not report its value")
            config[name] = read_value(space[name], raw[name])
        return {f.name: config[f.name] for f in space.factors if f.name in config}


def parse_baseline(
    raw: object, space: FactorSpace, readable: Callable[[str], bool]
) -> Baseline | None:
    """The baseline a client sent, checked against the factor space; `readable(name)` says
    whether the target can read that factor from its nodes. DomainError names the field."""
    if raw is None:
        return None
    control = [f for f in space.factors if not f.noise]
    if raw == CURRENT:
        raw = {f.name: CURRENT for f in control}
    if not isinstance(raw, Mapping):
        raise DomainError(
            "baseline", 'must be "current" or a mapping of factor names to values or "current"'
        )
    for name in raw:
        if name not in space.names:
            raise DomainError(
                f"baseline.{name}", f"is not a factor of this experiment {space.names}"
            )
        if space[name].noise:
            raise DomainError(
                f"baseline.{name}", "is a noise factor: it is varied, not chosen; leave it out"
            )
    given: dict[str, Value] = {}
    current: list[str] = []
    for factor in control:
        if factor.name not in raw:
            raise DomainError(
                f"baseline.{factor.name}", 'is missing: give its value, or "current" to read it'
            )
        value = raw[factor.name]
        if value == CURRENT:
            if not readable(factor.name):
                raise DomainError(
                    f"baseline.{factor.name}",
                    "cannot be read from the nodes (only server variables and provider options"
                    " can): give its value",
                )
            current.append(factor.name)
        else:
            given[factor.name] = _checked(factor, value)
    return Baseline(given=given, current=tuple(current))


def _checked(factor: Factor, value: object) -> Value:
    try:
        checked = factor.check_value(value)
        factor.check_in_region(checked)
    except DomainError as error:
        raise DomainError(
            f"baseline.{factor.name}", f"{error.rule} (a baseline lies in the factor space)"
        ) from None
    return checked


def read_value(factor: Factor, raw: str) -> Value:
    """A factor's value from the text a node reports (e.g. "4", "ON", "16.0"), checked to lie in
    the factor's range or levels; DomainError says what the nodes run."""
    where = f"baseline.{factor.name}"
    text = str(raw).strip()
    if factor.kind == "categorical":
        levels = [str(level) for level in factor.levels or ()]
        matches = [level for level in levels if level.lower() == text.lower()]
        if not matches and text.lower() in _SWITCH:
            # The nodes may spell a switch another way than the levels do (ON for yes).
            meant = _SWITCH[text.lower()]
            matches = [level for level in levels if _SWITCH.get(level.lower()) is meant]
        if not matches:
            raise DomainError(
                where, f"the nodes run {factor.name} = {text!r}, which is not one of {levels}"
            )
        return matches[0]
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise DomainError(where, f"the nodes run {factor.name} = {text!r}, which is not a number")
    value: Value = int(number) if factor.kind == "integer" and number.is_integer() else number
    try:
        return _checked(factor, value)
    except DomainError as error:
        raise DomainError(where, f"the nodes run {factor.name} = {text}; {error.rule}") from None
