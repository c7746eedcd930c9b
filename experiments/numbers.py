"""Numbers and configurations as the engine writes them into sentences and labels."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

# Measurements keep their precision in tables: sysbench prints tps to two decimals.
MEASURED_DIGITS = 6


def format_value(value: object) -> str:
    """A factor or response value as people read it.

    Whole numbers print without a decimal point (3, not 3.0), other numbers to four significant
    digits without an exponent (1490, 12.25, 0.0123), anything else (a categorical level) as it is.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        return str(value)
    number = float(value)
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return significant(number, 4)


def significant(number: float, digits: int = 3) -> str:
    """`number` rounded to `digits` significant digits, written out in full (1490, not 1.49e+03)."""
    if not math.isfinite(number):
        return str(number)
    if number == 0:
        return "0"
    exponent = math.floor(math.log10(abs(number)))
    decimals = digits - 1 - exponent
    rounded = round(number, decimals)
    if rounded != 0 and math.floor(math.log10(abs(rounded))) > exponent:
        decimals -= 1  # 999.6 rounds up to 1000: one digit fewer after the point
    text = f"{rounded:.{max(decimals, 0)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def measured(value: float) -> str:
    """A measured value as it was measured: up to six significant digits (1428.9, 0.0012)."""
    return significant(float(value), MEASURED_DIGITS)


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
