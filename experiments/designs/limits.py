"""Hard ranges: the values of a factor that can run at all, which no planned run may leave.

A factor's low..high is the region the user wants to study; a circumscribed central composite
design puts its axial points beyond it, which suits a continuous setting but not a count. A
factor has a hard range when
- it is an integer factor given by low..high: its ends are whole numbers that exist (nodes 1..9),
  the values beyond may not (-1 nodes), and rounding moves an axial point off its distance
  anyway (an integer factor with explicit levels is snapped to them, so it never leaves);
- the target bounds it (`limits`: the range the target accepts, e.g. a built-in factor's
  physical range such as write_share 0..1).
A continuous factor the target does not bound has none: its axial points run where the
textbook design puts them, beyond low..high, and the design notes say so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from experiments.factors import Config, Factor, FactorSpace, Value

# The range a target accepts for a factor it bounds, in natural units: name -> (low, high).
Limits = Mapping[str, tuple[float, float]]
# Coded distance from an end of the range that is float noise, not a position.
_END_TOLERANCE = 1e-9


@dataclass(frozen=True)
class HardRange:
    """The natural values `low..high` factor `name` must stay in, and why (for the user)."""

    name: str
    low: float
    high: float
    why: str

    def outside(self, values: Iterable[Value]) -> list[float]:
        """The distinct values beyond low..high, in increasing order."""
        numbers = {float(v) for v in values}
        return sorted(v for v in numbers if not self.low <= v <= self.high)


def hard_ranges(space: FactorSpace, limits: Limits | None = None) -> tuple[HardRange, ...]:
    """Every hard range of the space's numeric factors (module doc); a factor may have two."""
    found = []
    for factor in space.factors:
        if not factor.is_numeric:
            continue
        if factor.kind == "integer" and factor.levels is None:
            low, high = factor.bounds
            why = f"{factor.name} is an integer factor bounded {low:g}..{high:g}"
            found.append(HardRange(factor.name, low, high, why))
        if limits and factor.name in limits:
            low, high = (float(end) for end in limits[factor.name])
            why = f"the target accepts {factor.name} from {low:g} to {high:g}"
            found.append(HardRange(factor.name, low, high, why))
    return tuple(found)


def natural(factor: Factor, coded: float) -> Value:
    """The value a run of `factor` takes at a coded position: decoded (integers rounded), or
    the nearest of its explicit levels."""
    if factor.is_numeric and factor.levels is not None:
        nearest = min(factor.levels, key=lambda v: abs(factor.encode(v) - coded))
        return factor.check_value(nearest)
    if abs(abs(coded) - 1.0) <= _END_TOLERANCE:
        # A family's end of the range, re-encoded through a log2 scale (-0.9999999999999998),
        # decodes to the exact bound, not just beyond it (17.999999999999996 for low 18).
        coded = math.copysign(1.0, coded)
    return factor.decode(coded)


def breaches(ranges: Iterable[HardRange], configs: Iterable[Config]) -> list[str]:
    """One phrase per hard range that a configuration leaves, e.g. "nodes = -1 and 11 (nodes
    is an integer factor bounded 1..9)"; empty when every configuration stays inside."""
    configs = list(configs)
    found = []
    for hard in ranges:
        beyond = hard.outside(c[hard.name] for c in configs if hard.name in c)
        if beyond:
            shown = [f"{v:g}" for v in beyond]
            values = " and ".join([", ".join(shown[:-1]), shown[-1]] if len(shown) > 1 else shown)
            found.append(f"{hard.name} = {values} ({hard.why})")
    return found
