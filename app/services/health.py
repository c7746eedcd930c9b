"""Reachability of the services the API depends on."""

from __future__ import annotations

from dataclasses import dataclass

from app.db.session import Database
from app.queue import BrokerUnavailableError, TaskQueue


@dataclass(frozen=True)
class Health:
    """Whether the database and the broker answer, with the error when one does not."""

    database_ok: bool
    database_error: str | None
    broker_ok: bool
    broker_error: str | None

    @property
    def ok(self) -> bool:
        """Both answer."""
        return self.database_ok and self.broker_ok


async def check(*, database: Database, queue: TaskQueue) -> Health:
    """Ping the database and the broker."""
    database_error = broker_error = None
    try:
        await database.ping()
    except Exception as error:  # any driver error means "unreachable" to a health check
        database_error = type(error).__name__
    try:
        await queue.ping()
    except BrokerUnavailableError as error:
        broker_error = str(error)
    return Health(
        database_ok=database_error is None,
        database_error=database_error,
        broker_ok=broker_error is None,
        broker_error=broker_error,
    )
