"""What every request and response body shares: the bounded number and name types, the strict
request base (`Strict`), the plain and per-field error bodies, and the query parameter of the
model order."""

from __future__ import annotations

import functools
import typing
from typing import Annotated, Any

from fastapi import Query
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

ModelOrder = Annotated[
    str,
    Query(
        max_length=20,
        description="model order: linear, interaction, quadratic, or auto (the default: the"
        " terms the runs support, selected from the quadratic model by AICc)",
    ),
]


Value = int | float | str


# Numbers a client sends are finite and at most 1e15 in size: far beyond any benchmark setting
# or result, and small enough that fits, plots and suggestions never overflow.
MAX_MAGNITUDE = 10**15


Number = Annotated[float, Field(ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE, allow_inf_nan=False)]


Positive = Annotated[float, Field(gt=0, le=MAX_MAGNITUDE, allow_inf_nan=False)]


Name = Annotated[str, Field(max_length=64)]


# A factor value as sent: a bounded whole number, a bounded number, or a category name.
ValueIn = Annotated[int, Field(ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE)] | Number | Name


class ErrorOut(BaseModel):
    """An error answered in one sentence that names what was wrong."""

    detail: str


_ERRORS: dict[int, str] = {
    401: "no API key, or one that is not valid or was revoked (`WWW-Authenticate: Bearer`)",
    404: "no such experiment, trial or suggestion, or one the key's owner may not see",
    409: "the experiment's state forbids it (e.g. cancelled, a manual target, already running)",
    413: "the request body is larger than GALERA_DOE_MAX_BODY_BYTES (default 1 MiB)",
    415: "the body is not JSON: its Content-Type is not application/json",
    503: "the database or the broker is unreachable; retry shortly",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` documenting the plain errors (`{"detail": "..."}`) a route answers;
    422 (`detail` a list naming `loc` and `msg`) is documented by FastAPI itself."""
    documented: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        documented[code] = {"model": ErrorOut, "description": _ERRORS[code]}
        if code == 401:
            documented[code]["headers"] = {
                "WWW-Authenticate": {"description": "Bearer", "schema": {"type": "string"}}
            }
    return documented


class FieldErrorOut(BaseModel):
    """One field that broke a rule."""

    loc: list[str | int] = Field(
        description="where: body, query, path or header, then the field's path (list indexes"
        ' as numbers), e.g. ["body", "factors", 0, "high"]'
    )
    msg: str = Field(description="the rule it broke, in one sentence")
    type: str = Field(description="the kind of rule (domain_rule for the service's own)")


class FieldErrorsOut(BaseModel):
    """The request was refused: every field that broke a rule, and the rule."""

    detail: list[FieldErrorOut] = Field(description="one entry per field refused")


# What every route behind an API key may answer besides its own outcomes.
KEYED_RESPONSES = error_responses(401, 503) | {
    422: {
        "model": FieldErrorsOut,
        "description": "a field broke a rule: `loc` names it, `msg` says the rule; `type`"
        " domain_rule for a rule of the service's that a schema cannot state (low below high,"
        " the responses a target reports, a design's size)",
    }
}


def _integer_if_whole(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _number_types(annotation: Any) -> set[Any]:
    if annotation in (int, float):
        return {annotation}
    return set().union(*(_number_types(arg) for arg in typing.get_args(annotation)))


@functools.cache
def _takes_integers(model: type[BaseModel], field: str) -> bool:
    """Whether the field holds integers, or a list of them, and no other numbers."""
    return _number_types(model.model_fields[field].annotation) == {int}


class Strict(BaseModel):
    """Unknown fields are an error, so a typo never passes silently; every value must have
    its documented JSON type (no `true` for a number, no `"3"` for an integer); NaN and
    Infinity (which Python's JSON reader accepts) are refused in every number."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

    @field_validator("*", mode="before")
    @classmethod
    def _whole_numbers_are_integers(cls, value: Any, info: ValidationInfo) -> Any:
        """89.0 for an integer field is 89: JSON has one kind of number, and JSON Schema's
        `integer` (what the schema says) is any number without a fraction, however written."""
        if info.field_name is None or not _takes_integers(cls, info.field_name):
            return value
        if isinstance(value, list):
            return [_integer_if_whole(item) for item in value]
        return _integer_if_whole(value)


RESTART_REPLICATES = "restart every node before a trial that measures a configuration again"
