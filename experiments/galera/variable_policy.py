"""An operator's changes to the catalogue of server variables on one target, and the values a
benchmark may set: the operator may narrow the list of a target (`settings.server_variables.deny`)
or widen it (`allow`) in the targets file, but never to a class marked dangerous
(`Refusal.widenable` False).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from experiments.galera.refusals import refusal
from experiments.galera.server_variables import NAME, SERVER_VARIABLES, ServerVariable

SettingValue = int | float | str

SETTINGS_KEY = "server_variables"


@dataclass(frozen=True)
class Policy:
    """What one target's operator changed in the catalogue: names allowed beyond it (never a
    dangerous class) and names denied although it has them."""

    allow: frozenset[str] = frozenset()
    deny: frozenset[str] = frozenset()

    def variable(self, name: str) -> ServerVariable | None:
        """The catalogue's entry for `name`, None for a name only the operator allowed;
        ValueError saying why a benchmark may not set it otherwise."""
        if name in self.deny:
            raise ValueError(
                f"{name} is denied on this target by its operator"
                f" (settings.{SETTINGS_KEY}.deny): a benchmark may not set it"
            )
        rule = refusal(name)
        if rule is not None and not rule.widenable:
            raise ValueError(f"{name} {rule.reason}: a benchmark may not set it")
        if name in SERVER_VARIABLES:
            return SERVER_VARIABLES[name]
        if name in self.allow:
            return None
        if rule is not None:
            raise ValueError(
                f"{name} {rule.reason}: a benchmark may not set it unless the target's operator"
                f" allows it (settings.{SETTINGS_KEY}.allow)"
            )
        known = [*SERVER_VARIABLES, *self.allow]
        close = difflib.get_close_matches(name, known, n=3)
        hint = f"close: {', '.join(close)}" if close else "none is close"
        raise ValueError(
            f"{name} is not in the catalogue of server variables a benchmark may set ({hint});"
            f" the target's operator may allow it (settings.{SETTINGS_KEY}.allow)"
        )

    def value(self, name: str, value: object) -> SettingValue:
        """`value` as `SET GLOBAL name` takes it (an integer of a whole number, ON/OFF words
        as given); ValueError naming the variable and its rule otherwise."""
        variable = self.variable(name)
        if variable is None:
            return _free_value(name, value)
        return _catalogued_value(variable, value)


DEFAULT_POLICY = Policy()

# A value for a variable the operator allowed beyond the catalogue: a number, or a word or a
# list of flags (optimizer_switch's a=on,b=off), never a path or a quoted string.
_FREE_WORD = re.compile(r"[A-Za-z0-9_.,=+-]{1,200}\Z")
_BOOLEAN_WORDS = {"ON": 1, "TRUE": 1, "1": 1, "OFF": 0, "FALSE": 0, "0": 0}


def _free_value(name: str, value: object) -> SettingValue:
    number = _number(value)
    if number is not None:
        return number
    if isinstance(value, str) and _FREE_WORD.match(value):
        return value
    raise ValueError(
        f"{name} takes a finite number or a word of letters, digits and _ . , = + -, got {value!r}"
    )


def _catalogued_value(variable: ServerVariable, value: object) -> SettingValue:
    name = variable.name
    if variable.kind == "enum":
        words = {level.casefold() for level in variable.levels}
        if isinstance(value, str) and value.casefold() in words:
            return value
        raise ValueError(f"{name} takes one of {', '.join(variable.levels)}, got {value!r}")
    number = _number(value)
    if variable.kind == "boolean":
        if isinstance(value, str) and value.upper() in _BOOLEAN_WORDS:
            return value
        if number is not None and number in (0, 1):
            return int(number)
        raise ValueError(f"{name} takes ON or OFF (also 1 or 0), got {value!r}")
    whole = variable.kind == "integer"
    if whole and isinstance(number, float):
        number = int(number) if number.is_integer() else None
    low, high = variable.bounds
    if number is None or not low <= number <= high or (whole and int(number) % variable.step):
        rule = "an integer" if whole else "a number"
        rule += f" from {_plain(low)} to {_plain(high)}"
        if variable.step > 1:
            rule += f", a multiple of {variable.step}"
        raise ValueError(f"{name} takes {rule}, got {value!r}")
    return number


def _number(value: object) -> int | float | None:
    """The finite number `value` is, None if it is none (booleans are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


def _plain(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else repr(number)


def policy_from_settings(settings: Mapping[str, Any]) -> Policy:
    """The policy a target's settings give (`server_variables: {allow: [...], deny: [...]}`);
    ValueError naming the place in the settings and the rule a malformed one breaks."""
    raw = settings.get(SETTINGS_KEY)
    if raw is None:
        return DEFAULT_POLICY
    if not isinstance(raw, Mapping):
        raise ValueError(f"{SETTINGS_KEY}: expected a mapping with allow and/or deny lists")
    unknown = sorted(str(key) for key in raw if key not in ("allow", "deny"))
    if unknown:
        raise ValueError(f"{SETTINGS_KEY}.{unknown[0]}: only allow and deny lists are read")
    allow = _names(raw.get("allow"), "allow")
    deny = _names(raw.get("deny"), "deny")
    for j, name in enumerate(allow):
        where = f"{SETTINGS_KEY}.allow[{j}]"
        rule = refusal(name)
        if rule is not None and not rule.widenable:
            raise ValueError(f"{where}: {name} {rule.reason}, a class no targets file may allow")
        if name in deny:
            raise ValueError(f"{where}: {name} is in the deny list too")
    return Policy(allow=frozenset(allow), deny=frozenset(deny))


def _names(raw: object, key: str) -> list[str]:
    where = f"{SETTINGS_KEY}.{key}"
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValueError(f"{where}: expected a list of server variable names")
    for j, name in enumerate(raw):
        if not isinstance(name, str) or not NAME.match(name):
            raise ValueError(
                f"{where}[{j}]: {name!r} is not a server variable name (a lower-case letter or"
                " _, then letters, digits or _, at most 64; provider options have their own"
                " catalogue)"
            )
    return list(raw)


def check_settings(
    values: Mapping[str, object], settings: Mapping[str, Any]
) -> dict[str, SettingValue]:
    """Every variable a trial sets with `SET GLOBAL`, checked against the catalogue and the
    target's policy (from its `settings`) and written as the server takes it; ValueError naming
    the first refused."""
    policy = policy_from_settings(settings)
    return {name: policy.value(name, value) for name, value in values.items()}
