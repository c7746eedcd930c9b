"""Idempotency keys of POST requests: a retried request finds what the first one did."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from app.db import rows
from app.db.models import IdempotentRequest
from app.services.errors import HeaderError


@dataclass(frozen=True)
class Idempotency:
    """The client's key for one request, and a digest of what the request asked."""

    key: str
    fingerprint: str

    @classmethod
    def of(cls, key: str, body: str = "") -> Idempotency:
        """The key with the SHA-256 of the request's canonical body."""
        return cls(key=key, fingerprint=hashlib.sha256(body.encode()).hexdigest())


async def earlier(
    session: AsyncSession, *, owner: str, operation: str, idempotency: Idempotency
) -> int | None:
    """The experiment an earlier request with this key made or started, None if there was none.
    The same key with another body is an error: the client reused a key by mistake."""
    found = await rows.find_request(session, owner=owner, operation=operation, key=idempotency.key)
    if found is None:
        return None
    if found.fingerprint != idempotency.fingerprint:
        raise HeaderError(
            "Idempotency-Key",
            f"was already used with a different request to {operation}; use a new key",
        )
    return found.experiment_id


def remember(
    session: AsyncSession,
    *,
    owner: str,
    operation: str,
    idempotency: Idempotency,
    experiment_id: int,
) -> None:
    """Record the request in the session's transaction, so it commits with what it did."""
    session.add(
        IdempotentRequest(
            owner=owner,
            operation=operation,
            key=idempotency.key,
            fingerprint=idempotency.fingerprint,
            experiment_id=experiment_id,
        )
    )
