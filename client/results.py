"""The engine's results rebuilt from the API's JSON, so a notebook draws with `experiments.plots`
the same pictures the server draws: the one adapter between the wire format and the engine's
value types.

The API sends each result as the engine's own JSON form (`as_dict()`, plus a few fields of its
own, which are ignored here); pydantic validates it back into the dataclasses, nested types,
integers and categorical levels included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter

from experiments.analysis import Analysis, Optimum
from experiments.analysis.slices import Slice
from experiments.factors import FactorSpace

_ANALYSIS = TypeAdapter(Analysis)
_OPTIMUM = TypeAdapter(Optimum)
_SLICE = TypeAdapter(Slice)


def analysis(data: Mapping[str, Any]) -> Analysis:
    """The `Analysis` of `GET /experiments/{id}/analysis`."""
    return _ANALYSIS.validate_python(data)


def optimum(data: Mapping[str, Any]) -> Optimum:
    """An `Optimum`: the `optimum` of an analysis or of a surface."""
    return _OPTIMUM.validate_python(data)


def surface(data: Mapping[str, Any]) -> Slice:
    """The `Slice` of `GET /experiments/{id}/surface`."""
    return _SLICE.validate_python(data)


def factor_space(experiment: Mapping[str, Any]) -> FactorSpace:
    """The factor space of an experiment as `GET /experiments/{id}` returns it."""
    return FactorSpace.from_dicts(experiment["factors"])
