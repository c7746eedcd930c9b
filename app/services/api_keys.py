"""API keys: create, list, revoke, and authenticate a bearer token.

`create_key`, `list_keys` and `revoke_key` do the same straight on the metadata database, for
the operator (the `keys` command, the demo and the tests): making the first key cannot need a key.

Tokens carry 256 random bits, so a plain SHA-256 of the token is enough to store (nobody can
guess a preimage) and lets a request find its key with one indexed lookup.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import rows
from app.db.migrate import ensure_schema
from app.db.models import ApiKey, utcnow
from app.db.session import Database
from app.services.errors import ConflictError, NotFoundError
from experiments.errors import DomainError

TOKEN_PREFIX = "gdoe_"
PREFIX_LENGTH = len(TOKEN_PREFIX) + 8
OWNER_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$")


class Role(StrEnum):
    """A user sees their own experiments; an admin sees everybody's."""

    USER = "user"
    ADMIN = "admin"


@dataclass(frozen=True)
class Principal:
    """Who a request comes from."""

    owner: str
    admin: bool
    key_id: int

    def sees(self, owner: str | None) -> bool:
        """Whether this principal may see what `owner` made."""
        return self.admin or owner == self.owner


@dataclass(frozen=True)
class NewKey:
    """A key just made, with its token: the only time the token exists outside the client."""

    key: ApiKey
    token: str


def hash_token(token: str) -> str:
    """The stored form of a token."""
    return hashlib.sha256(token.encode()).hexdigest()


async def create(session: AsyncSession, *, owner: str, role: Role = Role.USER) -> NewKey:
    """Make a key for `owner`; the token is returned once and stored only hashed."""
    if not OWNER_PATTERN.fullmatch(owner):
        raise DomainError(
            "owner",
            "must be 1 to 100 letters, digits or . _ @ -, starting with a letter or digit",
        )
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey(
        owner=owner, role=role, prefix=token[:PREFIX_LENGTH], secret_hash=hash_token(token)
    )
    session.add(key)
    await session.commit()
    return NewKey(key=key, token=token)


async def get_all(session: AsyncSession) -> Sequence[ApiKey]:
    """Every key, revoked ones included (their tokens are not kept)."""
    return await rows.list_keys(session)


async def revoke(session: AsyncSession, *, ident: str) -> ApiKey:
    """Revoke the key with this id or prefix; requests with it get 401 from now on."""
    found = await rows.find_keys(session, ident)
    if not found:
        raise NotFoundError("API key", ident)
    if len(found) > 1:
        raise ConflictError(f"'{ident}' names {len(found)} keys; revoke by id")
    key = found[0]
    if key.revoked_at is None:
        key.revoked_at = utcnow()
        await session.commit()
    return key


async def authenticate(session: AsyncSession, *, token: str) -> Principal | None:
    """The principal of an unrevoked key, None for any other token."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    key = await rows.active_key(session, hash_token(token))
    if key is None:
        return None
    return Principal(owner=key.owner, admin=key.role == Role.ADMIN, key_id=key.id)


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
    return _on_database(database_url, lambda s: create(s, owner=owner, role=role))


def list_keys(database_url: str) -> Sequence[ApiKey]:
    """Every key, revoked ones included."""
    return _on_database(database_url, get_all)


def revoke_key(database_url: str, ident: str) -> ApiKey:
    """Revoke the key with this id or prefix."""
    return _on_database(database_url, lambda s: revoke(s, ident=ident))
