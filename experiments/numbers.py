"""Numbers and configurations as the engine writes them into sentences and labels."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np


def format_value(value: object) -> str:
    """A factor or response value as people read it.

    Whole numbers print without a decimal point (3, not 3.0), other numbers to four significant
    digits, anything else (a categorical level) as it is.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        return str(value)
    number = float(value)
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return f"{number:.4g}"


def format_optional(value: float | None, spec: str) -> str:
    """`value` in the format `spec`, or "n/a" for a statistic that is undefined."""
    return "n/a" if value is None else format(value, spec)


def describe_config(config: Mapping[str, object], units: Mapping[str, str] | None = None) -> str:
    """A configuration as one phrase: "nodes=3, threads=16 threads"."""
    units = units or {}
    return ", ".join(
        f"{name}={format_value(value)}{' ' + units[name] if units.get(name) else ''}"
        for name, value in config.items()
    )


def finite_or_none(value: object) -> float | None:
    """A finite float, or None for a statistic that is undefined (None, NaN or infinite)."""
    if value is None:
        return None
    number = float(np.squeeze(value))  # type: ignore[arg-type]
    return number if math.isfinite(number) else None
