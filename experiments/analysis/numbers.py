"""Numbers as the JSON report carries them."""

from __future__ import annotations

import math

import numpy as np


def finite_or_none(value: object) -> float | None:
    """A finite float, or None for a statistic that is undefined (None, NaN or infinite)."""
    if value is None:
        return None
    number = float(np.squeeze(value))  # type: ignore[arg-type]
    return number if math.isfinite(number) else None
