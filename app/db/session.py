"""The async engine and session factory for one event loop."""

from __future__ import annotations

import sqlite3
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite
import pydantic_core
from sqlalchemy import event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, DisconnectionError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

SQLITE_LOCK_TIMEOUT_S = 30


def from_json(text: str | bytes) -> Any:
    """JSON columns as `json.loads` reads them (NaN and infinities included), three times
    faster: a listing of trials reads three JSON columns per trial."""
    return pydantic_core.from_json(text, allow_inf_nan=True)


def create_engine(url: str) -> AsyncEngine:
    """An async engine for a SQLite (aiosqlite) or MariaDB/MySQL (asyncmy) URL."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ":memory:"
        if database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)

        async def connect() -> aiosqlite.Connection:
            # The API and the workers are separate processes writing the same file: wait for
            # locks.
            def connector() -> sqlite3.Connection:
                # What SQLAlchemy's aiosqlite dialect passes, with the lock timeout.
                return sqlite3.connect(
                    database, timeout=SQLITE_LOCK_TIMEOUT_S, check_same_thread=False
                )

            connection = _OneTripConnection(connector, iter_chunk_size=64)
            connection._thread.daemon = True  # as SQLAlchemy does for aiosqlite's own
            return await connection

        engine = create_async_engine(url, async_creator=connect, json_deserializer=from_json)
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    return create_async_engine(
        url, pool_pre_ping=True, pool_recycle=1800, json_deserializer=from_json
    )


class _OneTripCursor:
    """An aiosqlite cursor that executes a statement, fetches its rows and closes in one trip
    to the connection's thread.

    aiosqlite's own cursor makes four trips per statement through SQLAlchemy (open, execute,
    fetch, close), each a hand-over between two threads and the GIL: on the API's reads they
    cost more than the queries. SQLAlchemy fetches every row right after executing anyway
    (it uses no server-side cursors here), so nothing changes but the number of trips."""

    arraysize = 1

    def __init__(self, connection: aiosqlite.Connection) -> None:
        self._connection = connection
        self._rows: deque[Any] = deque()
        self.description: Any = None
        self.rowcount = -1
        self.lastrowid: int | None = None

    async def __aenter__(self) -> _OneTripCursor:
        return self

    async def execute(self, sql: str, parameters: Any = None) -> _OneTripCursor:
        return await self._run(lambda cursor: cursor.execute(sql, parameters or ()))

    async def executemany(self, sql: str, parameters: Any) -> _OneTripCursor:
        return await self._run(lambda cursor: cursor.executemany(sql, parameters))

    async def _run(self, statement: Callable[[sqlite3.Cursor], Any]) -> _OneTripCursor:
        connection = self._connection

        def run() -> tuple[list[Any], Any, int, int | None]:
            cursor = connection._conn.cursor()
            try:
                statement(cursor)
                rows = cursor.fetchall() if cursor.description else []
                return rows, cursor.description, cursor.rowcount, cursor.lastrowid
            finally:
                cursor.close()

        rows, self.description, self.rowcount, self.lastrowid = await connection._execute(run)
        self._rows = deque(rows)
        return self

    async def fetchone(self) -> Any:
        return self._rows.popleft() if self._rows else None

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        count = min(len(self._rows), self.arraysize if size is None else size)
        return [self._rows.popleft() for _ in range(count)]

    async def fetchall(self) -> list[Any]:
        rows, self._rows = list(self._rows), deque()
        return rows

    async def close(self) -> None:
        self._rows.clear()


class _OneTripConnection(aiosqlite.Connection):
    """An aiosqlite connection whose cursors make one trip per statement, and whose commit and
    rollback make none when no transaction is open (sqlite3 opens one before a write only, so
    a session that only read has nothing to end)."""

    def cursor(self) -> _OneTripCursor:  # type: ignore[override]
        return _OneTripCursor(self)

    async def commit(self) -> None:
        if self._connection is None or self._connection.in_transaction:
            await super().commit()

    async def rollback(self) -> None:
        if self._connection is None or self._connection.in_transaction:
            await super().rollback()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


class Database:
    """One engine and its session factory; create it inside the event loop that will use it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = create_engine(url)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session that rolls back on error and is always closed."""
        async with self.sessions() as session:
            yield session

    async def ping(self) -> None:
        """Raise unless the database answers a trivial query."""
        async with self.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))

    async def dispose(self) -> None:
        """Close every pooled connection."""
        await self.engine.dispose()


__all__ = ["AsyncSession", "Database", "create_engine"]


def unreachable(error: BaseException) -> bool:
    """Whether `error` means "the database cannot be reached right now" (down, restarting,
    connection lost, SQLite locked), as opposed to a bug or a refused statement."""
    if isinstance(error, OperationalError | InterfaceError | DisconnectionError):
        return True
    if isinstance(error, DBAPIError) and error.connection_invalidated:
        return True
    return isinstance(error, OSError | TimeoutError)


def describe(error: BaseException) -> str:
    """The driver's short message (without the SQL statement and its parameters)."""
    return str(getattr(error, "orig", None) or error).splitlines()[0][:300]
