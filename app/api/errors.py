"""Turns the errors of the use cases into HTTP answers that name the field and the rule."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from app.services.errors import ConflictError, HeaderError, NotFoundError, UnavailableError
from experiments.errors import DomainError


def _location(request: Request, field: str) -> list[str | int]:
    where = "body" if request.method in {"POST", "PUT", "PATCH"} else "query"
    return [where, *(int(part) if part.isdigit() else part for part in field.split("."))]


async def _domain_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, DomainError)
    detail = [
        {
            "loc": _location(request, error.field),
            "msg": error.rule,
            "type": "domain_rule",
        }
    ]
    return JSONResponse({"detail": detail}, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)


def _json_safe(value: Any) -> Any:
    """The value with every NaN or infinity as text: JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_safe(item) for item in value]
    return value


async def _validation_error(_request: Request, error: Exception) -> JSONResponse:
    """FastAPI's own 422, except that an echoed NaN or Infinity (which Python's JSON reader
    accepts, e.g. `1e400`) cannot turn the answer into a 500."""
    assert isinstance(error, RequestValidationError)
    detail = _json_safe(jsonable_encoder(error.errors()))
    return JSONResponse({"detail": detail}, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)


async def _header_error(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, HeaderError)
    detail = [{"loc": ["header", error.header], "msg": error.rule, "type": "header_rule"}]
    return JSONResponse({"detail": detail}, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)


def _plain(code: int) -> Callable[[Request, Exception], Awaitable[JSONResponse]]:
    async def handler(_request: Request, error: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(error)}, status_code=code)

    return handler


def install_error_handlers(app: FastAPI) -> None:
    """Register the mapping: request validation, DomainError and HeaderError 422, NotFound 404,
    Conflict 409, Unavailable 503."""
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(DomainError, _domain_error)
    app.add_exception_handler(HeaderError, _header_error)
    app.add_exception_handler(NotFoundError, _plain(status.HTTP_404_NOT_FOUND))
    app.add_exception_handler(ConflictError, _plain(status.HTTP_409_CONFLICT))
    app.add_exception_handler(UnavailableError, _plain(status.HTTP_503_SERVICE_UNAVAILABLE))
