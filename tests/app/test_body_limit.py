"""The request body cap: a declared or a streamed body over it gets 413 and nothing is stored."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from httpx import AsyncClient

BIG_NAME = "x" * 1_100_000  # over the default cap of 1 MiB


async def experiment_count(api: AsyncClient) -> int:
    return len((await api.get("/experiments", params={"limit": 500})).json())


async def test_a_declared_body_over_the_cap_is_413_naming_the_limit(api: AsyncClient):
    before = await experiment_count(api)
    body = {"name": BIG_NAME, "target": "simulated", "factors": [], "objective": {}}
    response = await api.post("/experiments", json=body)
    assert response.status_code == 413
    assert response.json()["detail"] == (
        "the request body is larger than 1048576 bytes (GALERA_DOE_MAX_BODY_BYTES)"
    )
    assert await experiment_count(api) == before


async def test_a_streamed_body_without_a_length_is_counted_and_cut_at_the_cap(api: AsyncClient):
    before = await experiment_count(api)
    chunk = json.dumps({"name": BIG_NAME})[:65536].encode()

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(40):  # 2.6 MB, never declared
            yield chunk

    response = await api.post(
        "/experiments", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert "GALERA_DOE_MAX_BODY_BYTES" in response.json()["detail"]
    assert await experiment_count(api) == before


async def test_a_body_under_the_cap_is_read_as_usual(api: AsyncClient):
    observations = [{"config": {"nodes": 1}, "responses": {"tps": 1.0}}] * 900  # ~ 50 kB
    response = await api.post("/experiments/999999/observations", json=observations)
    assert response.status_code == 404  # read, parsed and routed: the experiment is unknown


async def test_a_bad_content_length_is_refused(api: AsyncClient):
    response = await api.post(
        "/experiments", content=b"{}", headers={"Content-Length": "-5", "Content-Type": "x"}
    )
    assert response.status_code == 413
