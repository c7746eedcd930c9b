"""One event loop per worker process, and the database engine bound to it.

Celery tasks are synchronous while the data layer is async; `asyncio.run` per task would leave
a module-level engine "attached to a different loop", so every task of a process runs on the
same loop, created lazily in the process that runs the tasks (after any fork).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from app.config import get_settings
from app.db.session import Database

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_database: Database | None = None


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion on this process's loop."""
    global _loop
    if _loop is None or _loop.is_closed():
        _loop = asyncio.new_event_loop()
    return _loop.run_until_complete(coroutine)


def database() -> Database:
    """This process's database handle (call it from inside `run`)."""
    global _database
    if _database is None:
        _database = Database(get_settings().database_url)
    return _database


def close() -> None:
    """Dispose of the database pool and close the loop (at worker shutdown)."""
    global _database, _loop
    if _database is not None and _loop is not None and not _loop.is_closed():
        _loop.run_until_complete(_database.dispose())
    _database = None
    if _loop is not None:
        _loop.close()
        _loop = None
