"""One event loop per worker process, the database engine bound to it, and retries of database
steps while the database is unreachable.

Celery tasks are synchronous while the data layer is async; `asyncio.run` per task would leave
a module-level engine "attached to a different loop", so every task of a process runs on the
same loop, created lazily in the process that runs the tasks (after any fork).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from app.config import get_settings
from app.db.session import AsyncSession, Database, describe, unreachable

T = TypeVar("T")

log = logging.getLogger(__name__)

# Backoff between retries: quick at first (a blink), then every few seconds (a restart).
FIRST_RETRY_DELAY_S = 0.5
MAX_RETRY_DELAY_S = 5.0

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


async def retrying(what: str, operation: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Run `operation` in a session of its own, again and again with backoff while the database
    is unreachable, for up to `db_retry_seconds`; the last error is raised after that.

    `operation` must be safe to run twice: its commit may have gone through on the try whose
    connection broke.
    """
    budget = get_settings().db_retry_seconds
    clock = asyncio.get_running_loop()
    deadline = clock.time() + budget
    delay = FIRST_RETRY_DELAY_S
    failures = 0
    while True:
        try:
            async with database().session() as session:
                result = await operation(session)
        except Exception as error:
            if not unreachable(error):
                raise
            remaining = deadline - clock.time()
            if remaining <= 0:
                log.error(
                    "database unreachable while %s; gave up after %g s: %s",
                    what,
                    budget,
                    describe(error),
                )
                raise
            failures += 1
            # One line when it starts, then one every ten tries: a long outage stays readable.
            if failures % 10 == 1:
                log.warning(
                    "database unreachable while %s (try %d; retrying for %.0f s more): %s",
                    what,
                    failures,
                    remaining,
                    describe(error),
                )
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, MAX_RETRY_DELAY_S)
            continue
        if failures:
            log.warning("database reachable again: %s done after %d failed tries", what, failures)
        return result
