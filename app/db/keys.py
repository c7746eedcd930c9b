"""Queries on API keys and on the idempotency keys of POST requests."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import ApiKey, IdempotentRequest


async def active_key(session: AsyncSession, secret_hash: str) -> ApiKey | None:
    """The unrevoked key with this hash."""
    query = select(ApiKey).where(ApiKey.secret_hash == secret_hash, ApiKey.revoked_at.is_(None))
    return (await session.scalars(query)).first()


async def list_keys(session: AsyncSession) -> Sequence[ApiKey]:
    """Every key, oldest first, revoked ones included."""
    return (await session.scalars(select(ApiKey).order_by(ApiKey.id))).all()


async def find_keys(session: AsyncSession, ident: str) -> Sequence[ApiKey]:
    """Keys whose id or prefix is `ident`."""
    by_id = ApiKey.id == int(ident) if ident.isdigit() else ApiKey.prefix == ident
    query = select(ApiKey).where(or_(by_id, ApiKey.prefix == ident)).order_by(ApiKey.id)
    return (await session.scalars(query)).all()


async def find_request(
    session: AsyncSession, *, owner: str, operation: str, key: str
) -> IdempotentRequest | None:
    """The request an owner already made under this idempotency key."""
    query = select(IdempotentRequest).where(
        IdempotentRequest.owner == owner,
        IdempotentRequest.operation == operation,
        IdempotentRequest.key == key,
    )
    return (await session.scalars(query)).first()
