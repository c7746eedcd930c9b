"""Run the Alembic migrations programmatically (setup, service start, tests)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection

import migrations
from app.db.session import Database

MIGRATIONS_DIR = Path(migrations.__file__).parent


class SchemaOutOfDateError(RuntimeError):
    """The database has a schema, but not the one this code expects."""


def alembic_config(url: str) -> Config:
    """An Alembic configuration for the project's migrations against `url`."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade_to_head(url: str) -> None:
    """Apply every migration not yet applied (blocking; call it from a thread in async code)."""
    command.upgrade(alembic_config(url), "head")


def head_revision() -> str | None:
    """The newest revision of the migration scripts."""
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def current_revision(connection: Connection) -> str | None:
    """The revision the connected database is at, None when it has no schema yet."""
    return MigrationContext.configure(connection).get_current_revision()


async def ensure_schema(database: Database) -> None:
    """Create the schema by migrating an empty database; refuse one at another revision."""
    async with database.engine.connect() as connection:
        revision = await connection.run_sync(current_revision)
    if revision is None:
        await asyncio.to_thread(upgrade_to_head, database.url)
        return
    head = head_revision()
    if revision != head:
        raise SchemaOutOfDateError(
            f"database is at revision {revision}, this code needs {head}: "
            "run `alembic upgrade head`"
        )
