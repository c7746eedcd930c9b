"""The ASGI application `app.main:app`: routers, error mapping, and the service handles."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request, status
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from sqlalchemy.exc import InterfaceError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount

from app.api import field_docs
from app.api.body_limit import BodySizeLimit
from app.api.deps import current_principal
from app.api.docs import install_docs
from app.api.errors import install_error_handlers
from app.api.routes import (
    confirmations,
    designs,
    experiments,
    health,
    optimization_loop,
    plots,
    strategies,
    suggestions,
    targets,
    trials,
    ui,
)
from app.config import Settings, get_settings
from app.db.migrate import ensure_schema
from app.db.session import Database
from app.queue import TaskQueue
from app.services.tallies import TallyCache
from app.services.trial_runs.reaping import reap_forever
from app.target_specs import load_targets

log = logging.getLogger(__name__)


async def _database_unavailable(_request: Request, error: Exception) -> JSONResponse:
    log.warning("database error: %s", error)
    return JSONResponse(
        {"detail": "the database is unavailable; retry shortly"},
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
    )


def _operation_id(route: APIRoute) -> str:
    """The route function's name (create_experiment, get_analysis): FastAPI's default appends
    the path and the method, which a generated client then carries in every function name."""
    return route.name


HTTP_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def allowed_methods(app: FastAPI, request: Request) -> list[str]:
    """Every method some route of the app answers on the request's path (asked of the router,
    which alone knows the routes of the routers it includes). The mounted static files answer
    any method their path is asked with and are left out."""
    routes = [route for route in app.router.routes if not isinstance(route, Mount)]
    return [
        method
        for method in HTTP_METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes
        )
    ]


async def _http_error(request: Request, error: Exception) -> Response:
    """FastAPI's answer, except that a 405's `Allow` lists the methods of every route on the
    path: Starlette lists only those of the first route whose path matched (PUT /experiments
    said `Allow: POST` though GET answers there too)."""
    assert isinstance(error, StarletteHTTPException)
    if error.status_code == status.HTTP_405_METHOD_NOT_ALLOWED:
        allow = ", ".join(allowed_methods(request.app, request))
        error = StarletteHTTPException(
            error.status_code, error.detail, headers={**(error.headers or {}), "Allow": allow}
        )
    return await http_exception_handler(request, error)


# The routers whose every route needs an API key.
KEYED_ROUTERS = (
    experiments,
    suggestions,
    strategies,
    optimization_loop,
    confirmations,
    plots,
    trials,
    designs,
    targets,
)


def create_app(settings: Settings | None = None, *, freeze_gc: bool = False) -> FastAPI:
    """Build the app; the database schema is migrated at start when the database is empty.

    With `freeze_gc` (the server process's app) everything alive once the app has started is
    moved out of the garbage collector's sight: a full collection then looks at what requests
    made, not at the 300 000 objects of the imported libraries (170 ms on the 2-core machine,
    during which the process answers nothing)."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.settings = settings
        app.state.targets = load_targets(settings.targets_file)
        app.state.database = Database(settings.database_url)
        app.state.queue = TaskQueue(settings.broker_url)
        app.state.tallies = TallyCache()
        await ensure_schema(app.state.database)
        reaper = (
            asyncio.create_task(reap_forever(app.state.database, app.state.queue, settings))
            if settings.reaper_interval_seconds > 0
            else None
        )
        if freeze_gc:
            gc.collect()
            gc.freeze()
        try:
            yield
        finally:
            if reaper is not None:
                reaper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await reaper
            await app.state.database.dispose()

    app = FastAPI(
        title="galera-doe",
        summary="Design-of-experiments optimizer for Galera cluster benchmarks",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        generate_unique_id_function=_operation_id,
    )
    install_docs(app)
    field_docs.install(app)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    _install_error_handlers(app)
    _include_routers(app)
    return app


def _include_routers(app: FastAPI) -> None:
    # Every route needs an API key but the health check, the documentation and the dashboard's
    # page and assets (the page asks for the key and sends it with every data call).
    keyed = [Depends(current_principal)]
    for router in KEYED_ROUTERS:
        app.include_router(router.router, dependencies=keyed)
    app.include_router(health.router)
    app.include_router(ui.router)


def _install_error_handlers(app: FastAPI) -> None:
    install_error_handlers(app)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    for unavailable in (OperationalError, InterfaceError, ConnectionError):
        app.add_exception_handler(unavailable, _database_unavailable)


app = create_app(freeze_gc=True)
