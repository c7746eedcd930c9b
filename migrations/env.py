"""Alembic environment: async engine, URL from the Alembic config or the service settings."""

import asyncio

from alembic import context
from sqlalchemy import Connection

from app.config import get_settings
from app.db.models import Base
from app.db.session import create_engine

target_metadata = Base.metadata


def _url() -> str:
    return context.config.get_main_option("sqlalchemy.url") or get_settings().database_url


def _run(connection: Connection) -> None:
    if connection.dialect.name == "sqlite":
        # Batch mode rebuilds a table by dropping it: with foreign keys on, the drop would cascade
        # into the child rows. SQLite ignores this pragma inside a transaction, so it goes first.
        connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
        connection.commit()
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_online() -> None:
    engine = create_engine(_url())
    async with engine.connect() as connection:
        await connection.run_sync(_run)
    await engine.dispose()


if context.is_offline_mode():
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    asyncio.run(_run_online())
