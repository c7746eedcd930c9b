"""API keys, ownership and idempotency keys, against the app on both database backends."""

from __future__ import annotations

import asyncio
import copy
import uuid

import redis
from fastapi import FastAPI
from httpx import ASGITransport, AsyncClient

from app.queue import trial_queue
from app.services.api_keys import Role, create_key, hash_token, list_keys, revoke_key
from tests.conftest import KeyMaker

SIMULATED = {
    "name": "owned",
    "target": "simulated",
    "factors": [{"name": "nodes", "kind": "integer", "low": 1, "high": 5}],
    "design": {"kind": "full_factorial", "levels": 3},
    "objective": {"response": "tps"},
}
OPEN_PATHS = {"/health", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"}


def client_of(app: FastAPI, token: str | None) -> AsyncClient:
    """A client of the app sending `token` as its bearer key (none if None)."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return AsyncClient(transport=ASGITransport(app=app), base_url="http://test", headers=headers)


def concrete(path: str) -> str:
    """A route path with every parameter filled with 1 (and a plot kind)."""
    return path.replace("{kind}", "contour").replace("{", "").replace("}", "").replace(
        "experiment_id", "1").replace("suggestion_id", "1").replace("trial_id", "1")  # fmt: skip


async def test_every_route_but_health_and_docs_refuses_a_request_without_a_valid_key(
    app_under_test: FastAPI,
):
    paths = app_under_test.openapi()["paths"]
    keyed = [(method, path) for path in paths if path not in OPEN_PATHS for method in paths[path]]
    assert len(keyed) >= 18, keyed
    for token in (None, "gdoe_not-a-key", "not even the prefix"):
        async with client_of(app_under_test, token) as client:
            for method, path in keyed:
                response = await client.request(method, concrete(path))
                assert response.status_code == 401, (method, path, response.text)
                assert response.headers["www-authenticate"] == "Bearer"
                assert "API key" in response.json()["detail"]
    async with client_of(app_under_test, None) as client:
        assert (await client.get("/health")).status_code == 200
        assert (await client.get("/docs")).status_code == 200
        schema = (await client.get("/openapi.json")).json()
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"


async def test_experiments_belong_to_the_key_owner_and_are_404_to_others(
    app_under_test: FastAPI, make_key: KeyMaker
):
    alice, alice_again, bob = (
        await make_key("alice"),
        await make_key("alice"),
        await make_key("bob"),
    )
    admin = await make_key("root", Role.ADMIN)
    async with (
        client_of(app_under_test, alice) as as_alice,
        client_of(app_under_test, alice_again) as as_alice_again,
        client_of(app_under_test, bob) as as_bob,
        client_of(app_under_test, admin) as as_admin,
    ):
        created = (await as_alice.post("/experiments", json=SIMULATED)).json()
        experiment_id, trial_id = created["id"], created["trials"][0]["id"]
        mine = [
            f"/experiments/{experiment_id}",
            f"/experiments/{experiment_id}/trials",
            f"/experiments/{experiment_id}/design",
            f"/experiments/{experiment_id}/suggestions",
            f"/trials/{trial_id}",
        ]
        for path in mine:
            assert (await as_alice.get(path)).status_code == 200, path
            assert (await as_alice_again.get(path)).status_code == 200, path  # same owner
            assert (await as_admin.get(path)).status_code == 200, path
            refused = await as_bob.get(path)
            assert refused.status_code == 404, path
            missing = await as_bob.get(path.replace(str(experiment_id), "999999").replace(
                str(trial_id), "999999"))  # fmt: skip
            # Another owner's experiment is answered exactly like one that does not exist.
            assert refused.json()["detail"].split()[0] == missing.json()["detail"].split()[0]
        for path in ("start", "cancel", "optimize"):
            response = await as_bob.post(f"/experiments/{experiment_id}/{path}", json={"budget": 2})
            assert response.status_code == 404, path
        assert (await as_alice.get(f"/experiments/{experiment_id}")).json()["status"] == "planned"
        bobs = (await as_bob.post("/experiments", json=SIMULATED | {"name": "bob's"})).json()
        listed = {
            who: {e["id"] for e in (await client.get("/experiments")).json()}
            for who, client in (("alice", as_alice), ("bob", as_bob), ("admin", as_admin))
        }
    assert experiment_id in listed["alice"] and bobs["id"] not in listed["alice"]
    assert bobs["id"] in listed["bob"] and experiment_id not in listed["bob"]
    assert {experiment_id, bobs["id"]} <= listed["admin"]


async def test_a_revoked_key_is_refused_at_once(
    app_under_test: FastAPI, make_key: KeyMaker, settings
):
    token = await make_key("carol")
    async with client_of(app_under_test, token) as client:
        assert (await client.get("/experiments")).status_code == 200
        key = next(k for k in await asyncio.to_thread(list_keys, settings.database_url)
                   if k.secret_hash == hash_token(token))  # fmt: skip
        await asyncio.to_thread(revoke_key, settings.database_url, str(key.id))
        response = await client.get("/experiments")
    assert response.status_code == 401
    assert response.json()["detail"] == "the API key is not valid or was revoked"


def test_keys_are_stored_hashed_and_listed_without_their_token(settings):
    made = create_key(settings.database_url, "dave", admin=True)
    assert made.token.startswith("gdoe_") and len(made.token) > 40
    stored = next(k for k in list_keys(settings.database_url) if k.id == made.key.id)
    assert stored.role == "admin" and stored.owner == "dave"
    assert stored.secret_hash == hash_token(made.token) and made.token not in stored.secret_hash
    assert made.token.startswith(stored.prefix) and len(stored.prefix) < len(made.token) / 3


async def test_a_retried_create_with_an_idempotency_key_makes_one_experiment(api: AsyncClient):
    key = str(uuid.uuid4())
    headers = {"Idempotency-Key": key}
    first = await api.post("/experiments", json=SIMULATED, headers=headers)
    again = await api.post("/experiments", json=SIMULATED, headers=headers)
    assert first.status_code == again.status_code == 201
    assert "idempotent-replayed" not in first.headers
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["trials"] == first.json()["trials"]
    other = await api.post("/experiments", json=SIMULATED, headers={"Idempotency-Key": "other"})
    assert other.json()["id"] != first.json()["id"]
    changed = copy.deepcopy(SIMULATED) | {"name": "changed"}
    reused = await api.post("/experiments", json=changed, headers=headers)
    assert reused.status_code == 422
    assert reused.json()["detail"][0]["loc"] == ["header", "Idempotency-Key"]
    assert "different request" in reused.json()["detail"][0]["msg"]


async def test_concurrent_creates_with_one_idempotency_key_make_one_experiment(api: AsyncClient):
    headers = {"Idempotency-Key": f"race-{uuid.uuid4()}"}
    before = len((await api.get("/experiments", params={"limit": 500})).json())
    answers = await asyncio.gather(
        *(api.post("/experiments", json=SIMULATED, headers=headers) for _ in range(5))
    )
    assert {a.status_code for a in answers} == {201}
    assert len({a.json()["id"] for a in answers}) == 1
    after = len((await api.get("/experiments", params={"limit": 500})).json())
    assert after == before + 1


async def test_idempotency_keys_are_per_owner(app_under_test: FastAPI, make_key: KeyMaker):
    headers = {"Idempotency-Key": "shared-by-chance"}
    ids = []
    for owner in ("erin", "frank"):
        async with client_of(app_under_test, await make_key(owner)) as client:
            response = await client.post("/experiments", json=SIMULATED, headers=headers)
            assert response.status_code == 201 and "idempotent-replayed" not in response.headers
            ids.append(response.json()["id"])
    assert ids[0] != ids[1]


async def test_a_retried_start_with_an_idempotency_key_sends_nothing_twice(
    api: AsyncClient, redis_url: str
):
    broker = redis.Redis.from_url(redis_url)
    broker.delete(trial_queue("simulated"))
    created = (await api.post("/experiments", json=SIMULATED)).json()
    path = f"/experiments/{created['id']}/start"
    headers = {"Idempotency-Key": "start-once"}
    first = await api.post(path, headers=headers)
    again = await api.post(path, headers=headers)
    assert first.status_code == again.status_code == 200
    assert again.headers["idempotent-replayed"] == "true"
    assert first.json()["progress"]["queued"] == 3
    assert broker.llen(trial_queue("simulated")) == 3
    broker.delete(trial_queue("simulated"))


async def test_a_bad_idempotency_key_is_422_naming_the_header(api: AsyncClient):
    for bad in (b"", b"x" * 201, b"with space", "naïve".encode()):
        headers = {"Idempotency-Key": bad}
        response = await api.post("/experiments", json=SIMULATED, headers=headers)
        assert response.status_code == 422, bad
        assert response.json()["detail"][0]["loc"] == ["header", "Idempotency-Key"], bad
