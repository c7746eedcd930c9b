"""API keys managed by the operator straight on the metadata database (the `keys` command, the
demo and the tests): making the first key cannot need a key."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from app.db.migrate import ensure_schema
from app.db.models import ApiKey
from app.db.session import AsyncSession, Database
from app.services import api_keys
from app.services.api_keys import NewKey, Role

T = TypeVar("T")


def _on_database(database_url: str, use: Callable[[AsyncSession], Awaitable[T]]) -> T:
    async def run() -> T:
        database = Database(database_url)
        try:
            await ensure_schema(database)
            async with database.session() as session:
                return await use(session)
        finally:
            await database.dispose()

    return asyncio.run(run())


def create_key(database_url: str, owner: str, *, admin: bool = False) -> NewKey:
    """A new key of `owner` (an admin key with `admin`), its token shown this once."""
    role = Role.ADMIN if admin else Role.USER
    return _on_database(database_url, lambda s: api_keys.create(s, owner=owner, role=role))


def list_keys(database_url: str) -> Sequence[ApiKey]:
    """Every key, revoked ones included."""
    return _on_database(database_url, api_keys.get_all)


def revoke_key(database_url: str, ident: str) -> ApiKey:
    """Revoke the key with this id or prefix."""
    return _on_database(database_url, lambda s: api_keys.revoke(s, ident=ident))
