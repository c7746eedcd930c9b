"""Factors, the factor space, and coding between natural units and -1..+1.

A coded value of -1 is the factor's low end and +1 its high end, measured after the factor's
scale (``log2`` for thread and connection counts, whose effects are multiplicative). Integer
factors are rounded after decoding; categorical factors are coded by level index spread evenly
over -1..+1 (the analysis uses treatment dummies for them instead).

At most one numeric factor may be the space's `fidelity`: the length of a trial (runtime_s),
whose short values buy cheap, less faithful runs. Its high end is the measurement that counts:
Bayesian optimization may run short trials and recommends at the high end
(`experiments.suggest.fidelity`), and the analysis's optimum holds it there; designs and the
models treat it as any other factor.

A factor marked `noise` (a workload, a write share, a table size) is varied by the design but
never chosen: the optimum is the best configuration of the other factors (the control factors)
across its levels (`experiments.robust`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from experiments.errors import DomainError

FactorKind = Literal["continuous", "integer", "categorical"]
Scale = Literal["linear", "log2"]
Value = float | int | str
Config = dict[str, Value]

FACTOR_KINDS: tuple[str, ...] = ("continuous", "integer", "categorical")
SCALES: tuple[str, ...] = ("linear", "log2")
# A name of letters, digits and underscores; dots join such parts, as in Galera's provider
# options (gcs.fc_limit), which are factors of a real cluster. \Z, not $: "$" also matches
# before a trailing newline, which would let "nodes\n" pass as a name.
NAME_PATTERN = re.compile(r"(?=.{1,64}\Z)[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
MAX_FACTORS = 30
MAX_LEVELS = 50


@dataclass(frozen=True)
class Factor:
    """One factor of an experiment, validated on construction."""

    name: str
    kind: FactorKind
    low: float | None = None
    high: float | None = None
    levels: tuple[Value, ...] | None = None
    unit: str = ""
    scale: Scale = "linear"
    hard_to_change: bool = False
    fidelity: bool = False
    noise: bool = False

    def __post_init__(self) -> None:
        if not NAME_PATTERN.match(self.name):
            raise DomainError(
                "name",
                "must be at most 64 letters, digits and underscores, starting with a letter or"
                " an underscore; dots may join such parts, as in gcs.fc_limit",
            )
        if self.kind not in FACTOR_KINDS:
            raise DomainError("kind", f"must be one of {', '.join(FACTOR_KINDS)}")
        if self.scale not in SCALES:
            raise DomainError("scale", f"must be one of {', '.join(SCALES)}")
        if self.levels is not None:
            self._check_levels()
        elif self.kind == "categorical":
            raise DomainError("levels", "a categorical factor needs a non-empty list of levels")
        else:
            self._check_range()
        if self.fidelity and (self.kind == "categorical" or self.bounds[0] <= 0):
            raise DomainError(
                "fidelity",
                "only a numeric factor above 0 can be the fidelity (a trial's length, such as"
                " runtime_s)",
            )
        if self.noise:
            self._check_noise()

    def _check_noise(self) -> None:
        if self.fidelity:
            raise DomainError("noise", "the fidelity (a trial's length) cannot be a noise factor")
        if self.levels is not None and len(self.levels) < 2:
            raise DomainError(
                "noise", "a noise factor needs at least two levels: it is varied, not chosen"
            )

    def _check_levels(self) -> None:
        levels = self.levels or ()
        if len(levels) == 0:
            raise DomainError("levels", "must not be empty")
        if len(levels) > MAX_LEVELS:
            raise DomainError("levels", f"at most {MAX_LEVELS} levels")
        if len(set(levels)) != len(levels):
            raise DomainError("levels", "must not repeat a level")
        if self.kind == "categorical":
            if not all(isinstance(v, str) and v for v in levels):
                raise DomainError("levels", "levels of a categorical factor are non-empty strings")
            if self.scale != "linear":
                raise DomainError("scale", "a categorical factor has no scale")
            return
        if self.low is not None or self.high is not None:
            raise DomainError("levels", "give either levels or low/high, not both")
        if not all(_is_number(v) for v in levels):
            raise DomainError("levels", f"levels of a {self.kind} factor must be numbers")
        if self.kind == "integer" and not all(float(v).is_integer() for v in levels):
            raise DomainError("levels", "levels of an integer factor must be whole numbers")
        if self.scale == "log2" and min(float(v) for v in levels) <= 0:
            raise DomainError("levels", "a log2-scaled factor needs levels above 0")

    def _check_range(self) -> None:
        if self.low is None or self.high is None:
            raise DomainError("low", "a numeric factor needs low and high, or levels")
        if not (_is_number(self.low) and _is_number(self.high)):
            raise DomainError("low", "low and high must be finite numbers")
        if self.low >= self.high:
            raise DomainError("high", "must be greater than low")
        if self.kind == "integer" and not (
            float(self.low).is_integer() and float(self.high).is_integer()
        ):
            raise DomainError("low", "low and high of an integer factor must be whole numbers")
        if self.scale == "log2" and self.low <= 0:
            raise DomainError("low", "a log2-scaled factor needs low above 0")

    @property
    def is_numeric(self) -> bool:
        """True for continuous and integer factors."""
        return self.kind != "categorical"

    @property
    def bounds(self) -> tuple[float, float]:
        """The natural low and high end of a numeric factor."""
        if self.levels is not None:
            numbers = [float(v) for v in self.levels]
            return min(numbers), max(numbers)
        assert self.low is not None and self.high is not None
        return float(self.low), float(self.high)

    def _transform(self, value: float) -> float:
        return math.log2(value) if self.scale == "log2" else value

    def _untransform(self, value: float) -> float:
        return 2.0**value if self.scale == "log2" else value

    def encode(self, value: Value) -> float:
        """Natural value -> coded value (-1 at the low end, +1 at the high end)."""
        if self.kind == "categorical":
            assert self.levels is not None
            index = self.levels.index(value)
            return 0.0 if len(self.levels) == 1 else -1.0 + 2.0 * index / (len(self.levels) - 1)
        low, high = (self._transform(b) for b in self.bounds)
        if low == high:
            return 0.0
        centre, half = (low + high) / 2.0, (high - low) / 2.0
        return (self._transform(float(value)) - centre) / half

    def decode(self, coded: float) -> Value:
        """Coded value -> natural value; integers are rounded, categories take the nearest."""
        if self.kind == "categorical":
            assert self.levels is not None
            if len(self.levels) == 1:
                return self.levels[0]
            index = round((coded + 1.0) / 2.0 * (len(self.levels) - 1))
            return self.levels[min(max(index, 0), len(self.levels) - 1)]
        natural = self.unrounded(coded)
        if self.kind == "integer":
            # Half up, not half to even: a centre of 2.5 is always 3, whatever the range.
            return math.floor(natural + 0.5)
        return float(natural)

    def unrounded(self, coded: float) -> float:
        """Coded value -> natural value of a numeric factor, never rounded (an integer factor's
        smooth model is a function of real numbers too)."""
        if coded in (-1.0, 1.0):
            # Exact ends: the round trip through the scale must not step outside the range.
            return self.bounds[0] if coded < 0 else self.bounds[1]
        low, high = (self._transform(b) for b in self.bounds)
        return self._untransform((low + high) / 2.0 + coded * (high - low) / 2.0)

    def check_value(self, value: object) -> Value:
        """Return the value normalized to the factor's type, or raise naming the rule broken."""
        if self.kind == "categorical":
            assert self.levels is not None
            if value not in self.levels:
                raise DomainError(self.name, f"must be one of {list(self.levels)}")
            return value  # type: ignore[return-value]
        if not _is_number(value):
            raise DomainError(self.name, "must be a finite number")
        number = float(value)  # type: ignore[arg-type]
        if self.kind == "integer":
            if not number.is_integer():
                raise DomainError(self.name, "must be a whole number")
            return int(number)
        return number

    def check_in_region(self, value: Value) -> None:
        """Raise unless a normalized value lies in the factor's region (range or levels)."""
        if self.kind == "categorical":
            return
        low, high = self.bounds
        if not low <= float(value) <= high:
            raise DomainError(self.name, f"must lie between {_fmt(low)} and {_fmt(high)}")
        if self.levels is not None and float(value) not in {float(v) for v in self.levels}:
            raise DomainError(self.name, f"must be one of {list(self.levels)}")


@dataclass(frozen=True)
class FactorSpace:
    """An ordered set of factors with unique names."""

    factors: tuple[Factor, ...]
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.factors:
            raise DomainError("factors", "at least one factor is needed")
        if len(self.factors) > MAX_FACTORS:
            raise DomainError("factors", f"at most {MAX_FACTORS} factors")
        index: dict[str, int] = {}
        for i, factor in enumerate(self.factors):
            if factor.name in index:
                raise DomainError(f"factors.{i}.name", f"duplicate factor name '{factor.name}'")
            if factor.fidelity and any(f.fidelity for f in self.factors[:i]):
                raise DomainError(f"factors.{i}.fidelity", "only one factor can be the fidelity")
            index[factor.name] = i
        if all(f.noise for f in self.factors):
            raise DomainError(
                "factors", "every factor is a noise factor: at least one must be chosen"
            )
        object.__setattr__(self, "_index", index)

    @classmethod
    def from_dicts(cls, raw: Iterable[Mapping[str, object]]) -> FactorSpace:
        """Build from plain dicts (JSON), naming the offending factor in any error."""
        factors = []
        for i, item in enumerate(raw):
            try:
                factors.append(factor_from_dict(item))
            except DomainError as error:
                raise DomainError(f"factors.{i}.{error.field}", error.rule) from None
        return cls(tuple(factors))

    @property
    def names(self) -> list[str]:
        """Factor names in order."""
        return [f.name for f in self.factors]

    @property
    def fidelity(self) -> Factor | None:
        """The factor that is the trial's length, if one is (module docstring)."""
        return next((f for f in self.factors if f.fidelity), None)

    @property
    def units(self) -> dict[str, str]:
        """The unit of every factor that has one, by name."""
        return {f.name: f.unit for f in self.factors if f.unit}

    def __getitem__(self, name: str) -> Factor:
        return self.factors[self._index[name]]

    def __len__(self) -> int:
        return len(self.factors)

    def check_config(self, config: Mapping[str, object], *, in_region: bool = True) -> Config:
        """Validate a configuration: every factor present, no others, values typed and in range."""
        unknown = sorted(set(config) - set(self._index))
        if unknown:
            raise DomainError(unknown[0], f"is not a factor of this experiment ({self.names})")
        checked: Config = {}
        for factor in self.factors:
            if factor.name not in config:
                raise DomainError(factor.name, "is missing: every factor needs a value")
            value = factor.check_value(config[factor.name])
            if in_region:
                factor.check_in_region(value)
            checked[factor.name] = value
        return checked

    def key(self, config: Mapping[str, Value]) -> tuple[Value, ...]:
        """A configuration's values in factor order: hashable, equal for equal configurations."""
        return tuple(config[name] for name in self.names)

    def encode(self, config: Mapping[str, Value]) -> np.ndarray:
        """One configuration -> coded vector in factor order."""
        return np.array([f.encode(config[f.name]) for f in self.factors], dtype=float)

    def coded(self, config: Mapping[str, Value]) -> dict[str, float]:
        """One configuration -> its coded value per factor name (as trials store them)."""
        return dict(zip(self.names, self.encode(config).tolist(), strict=True))

    def decode(self, coded: Iterable[float]) -> Config:
        """Coded vector in factor order -> natural configuration."""
        return {f.name: f.decode(float(c)) for f, c in zip(self.factors, coded, strict=True)}

    def to_dicts(self) -> list[dict[str, object]]:
        """Plain dicts, the inverse of `from_dicts`."""
        return [factor_to_dict(f) for f in self.factors]


def factor_from_dict(raw: Mapping[str, object]) -> Factor:
    """Build one factor from a plain dict (JSON)."""
    levels = raw.get("levels")
    return Factor(
        name=str(raw.get("name", "")),
        kind=raw.get("kind", "continuous"),  # type: ignore[arg-type]
        low=raw.get("low"),  # type: ignore[arg-type]
        high=raw.get("high"),  # type: ignore[arg-type]
        levels=tuple(levels) if levels is not None else None,  # type: ignore[call-overload]
        unit=str(raw.get("unit") or ""),
        scale=raw.get("scale", "linear"),  # type: ignore[arg-type]
        hard_to_change=bool(raw.get("hard_to_change", False)),
        fidelity=bool(raw.get("fidelity", False)),
        noise=bool(raw.get("noise", False)),
    )


def factor_to_dict(factor: Factor) -> dict[str, object]:
    """One factor as a plain dict."""
    return {
        "name": factor.name,
        "kind": factor.kind,
        "low": factor.low,
        "high": factor.high,
        "levels": list(factor.levels) if factor.levels is not None else None,
        "unit": factor.unit,
        "scale": factor.scale,
        "hard_to_change": factor.hard_to_change,
        "fidelity": factor.fidelity,
        "noise": factor.noise,
    }


def _is_number(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def _fmt(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else f"{number:g}"
