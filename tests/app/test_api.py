"""The REST API on both backends: create, read, validate, start, cancel, observe, analyse."""

from __future__ import annotations

import copy
import gc
from typing import Any

import pytest
import redis
from httpx import ASGITransport, AsyncClient

from app.main import create_app
from app.queue import trial_queue
from app.services import api_keys
from client.processes import free_port
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.galera.target_spec import TargetSpec

SIMULATED = {
    "name": "three factors",
    "target": "simulated",
    "factors": [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9, "hard_to_change": True},
        {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 32, "scale": "log2"},
        {"name": "wsrep_slave_threads", "kind": "integer", "levels": [1, 4, 8]},
    ],
    "design": {"kind": "full_factorial", "levels": 2, "centre_points": 2, "seed": 3},
    "objective": {"response": "tps", "goal": "maximize"},
}
MANUAL = {
    "name": "published study",
    "target": "manual",
    "factors": [
        {"name": "galera_nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "total_connections", "kind": "integer", "low": 8, "high": 160},
    ],
    "design": None,
    "objective": {"response": "tps"},
}


def with_changes(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    spec = copy.deepcopy(base)
    spec.update(changes)
    return spec


async def assert_factors_refused(
    api, base: dict[str, Any], cases: list[tuple[list[dict[str, Any]], str, str]]
) -> None:
    """Each case's factors on `base` get a 422 at the field named, with the words in its rule."""
    for factors, field, words in cases:
        refused = await api.post("/experiments", json=base | {"factors": factors})
        assert refused.status_code == 422, refused.text
        detail = refused.json()["detail"][0]
        assert ".".join(map(str, detail["loc"][1:])) == field and words in detail["msg"], detail


async def create(api, spec: dict[str, Any]) -> dict[str, Any]:
    response = await api.post("/experiments", json=spec)
    assert response.status_code == 201, response.text
    return response.json()


async def test_create_plans_and_stores_the_design(api):
    created = await create(api, SIMULATED)
    # 2 x 2 x 3 (explicit levels) factorial points and 2 centre points.
    assert len(created["trials"]) == 14
    assert created["status"] == "planned"
    assert sorted(t["run_order"] for t in created["trials"]) == list(range(1, 15))
    assert {t["status"] for t in created["trials"]} == {"pending"}
    assert sum(t["point_type"] == "centre" for t in created["trials"]) == 2
    centre = next(t for t in created["trials"] if t["point_type"] == "centre")
    assert centre["config"]["nodes"] == 5 and centre["config"]["threads_per_client"] == 11
    assert created["progress"] == {
        "pending": 14, "queued": 0, "running": 0, "succeeded": 0,
        "failed": 0, "cancelled": 0, "total": 14,
    }  # fmt: skip

    experiment_id = created["id"]
    fetched = (await api.get(f"/experiments/{experiment_id}")).json()
    assert fetched["name"] == "three factors" and fetched["best"] is None
    listed = (await api.get("/experiments")).json()
    assert experiment_id in [e["id"] for e in listed]
    trials = (await api.get(f"/experiments/{experiment_id}/trials")).json()
    assert [t["id"] for t in trials] == [
        t["id"] for t in sorted(created["trials"], key=lambda t: t["run_order"])
    ]
    one = (await api.get(f"/trials/{trials[0]['id']}")).json()
    assert one["config"] == trials[0]["config"] and one["raw_output"] is None


async def test_unknown_ids_are_404(api):
    assert (await api.get("/experiments/999999")).status_code == 404
    assert (await api.get("/experiments/999999/trials")).status_code == 404
    assert (await api.post("/experiments/999999/start")).status_code == 404
    assert (await api.get("/trials/999999")).status_code == 404


def factor_change(index: int, **changes: Any) -> dict[str, Any]:
    spec = copy.deepcopy(SIMULATED)
    spec["factors"][index].update(changes)
    return spec


BAD_INPUTS = [
    ("unknown kind", factor_change(0, kind="ordinal"), ["factors", 0, "kind"], "continuous"),
    ("low >= high", factor_change(0, low=9, high=1), ["factors", 0, "high"], "greater than low"),
    ("empty levels", factor_change(2, levels=[]), ["factors", 2, "levels"], "empty"),
    ("duplicate levels", factor_change(2, levels=[1, 4, 4]), ["factors", 2, "levels"], "repeat"),
    (
        "duplicate names",
        factor_change(1, name="nodes"),
        ["factors", 1, "name"],
        "duplicate factor name",
    ),
    ("unknown target", with_changes(SIMULATED, target="nowhere"), ["target"], "unknown target"),
    (
        "factor the target cannot set",
        factor_change(0, name="innodb_flush_log_at_trx_commit"),
        ["factors", 0, "name"],
        "cannot set",
    ),
    (
        "design over the limit",
        with_changes(SIMULATED, design={"kind": "full_factorial", "levels": 9, "replicates": 10}),
        ["design"],
        "limit of 2000",
    ),
    (
        "unknown design kind",
        with_changes(SIMULATED, design={"kind": "magic"}),
        ["design", "kind"],
        "full_factorial",
    ),
    (
        "unknown response",
        with_changes(SIMULATED, objective={"response": "happiness"}),
        ["objective", "response"],
        "does not report",
    ),
    (
        "unknown goal",
        with_changes(SIMULATED, objective={"response": "tps", "goal": "up"}),
        ["objective", "goal"],
        "maximize",
    ),
    (
        "unknown scale",
        with_changes(SIMULATED, objective={"response": "tps", "scale": "log2"}),
        ["objective", "scale"],
        "'linear' or 'log'",
    ),
    (
        "log scale of a desirability",
        with_changes(
            SIMULATED,
            objective={
                "response": "tps",
                "scale": "log",
                "desirability": [{"response": "tps", "low": 100, "high": 700}],
            },
        ),
        ["objective", "scale"],
        "must be linear with desirability",
    ),
    ("unknown field", with_changes(SIMULATED, colour="red"), ["colour"], "Extra inputs"),
    ("no factors", with_changes(SIMULATED, factors=[]), ["factors"], "at least 1"),
    ("integer factor with fractions", factor_change(0, low=1.5), ["factors", 0, "low"], "whole"),
    ("log2 scale from 0", factor_change(1, low=0), ["factors", 1, "low"], "above 0"),
]


@pytest.mark.parametrize(
    ("spec", "loc", "words"),
    [case[1:] for case in BAD_INPUTS],
    ids=[case[0] for case in BAD_INPUTS],
)
async def test_bad_experiments_get_422_naming_field_and_rule(api, spec, loc, words):
    before = len((await api.get("/experiments", params={"limit": 500})).json())
    response = await api.post("/experiments", json=spec)
    assert response.status_code == 422, response.text[:500]
    detail = response.json()["detail"]
    assert any(item["loc"][1:] == loc and words in item["msg"] for item in detail), detail
    assert len((await api.get("/experiments", params={"limit": 500})).json()) == before


async def test_start_queues_pending_trials_in_run_order(api, redis_url):
    broker = redis.Redis.from_url(redis_url)
    broker.delete(trial_queue("simulated"))
    created = await create(api, SIMULATED)
    started = await api.post(f"/experiments/{created['id']}/start")
    assert started.status_code == 200, started.text
    assert started.json()["status"] == "running"
    assert started.json()["progress"]["queued"] == 14
    trials = (await api.get(f"/experiments/{created['id']}/trials")).json()
    assert all(t["status"] == "queued" and t["queued_at"] for t in trials)
    assert broker.llen(trial_queue("simulated")) == 14
    # A second start finds nothing pending and sends nothing more.
    await api.post(f"/experiments/{created['id']}/start")
    assert broker.llen(trial_queue("simulated")) == 14
    broker.delete(trial_queue("simulated"))

    cancelled = (await api.post(f"/experiments/{created['id']}/cancel")).json()
    assert cancelled["status"] == "cancelled" and cancelled["progress"]["cancelled"] == 14
    again = await api.post(f"/experiments/{created['id']}/start")
    assert again.status_code == 409


async def test_start_can_measure_every_replicate_in_a_fresh_cluster_state(api, redis_url):
    broker = redis.Redis.from_url(redis_url)
    created = await create(api, SIMULATED)
    started = await api.post(
        f"/experiments/{created['id']}/start", json={"restart_replicates": True}
    )
    assert started.status_code == 200, started.text
    broker.delete(trial_queue("simulated"))
    trials = (await api.get(f"/experiments/{created['id']}/trials")).json()
    # The 12 factorial points differ; the second centre point measures the first one again.
    centre = [t for t in trials if t["point_type"] == "centre"]
    assert [t["restart_first"] for t in centre] == [False, True]
    assert not any(t["restart_first"] for t in trials if t["point_type"] != "centre")

    plain = await create(api, SIMULATED)
    await api.post(f"/experiments/{plain['id']}/start", json={"restart_replicates": False})
    broker.delete(trial_queue("simulated"))
    trials = (await api.get(f"/experiments/{plain['id']}/trials")).json()
    assert len(trials) == 14 and not any(t["restart_first"] for t in trials)


@pytest.mark.targets(
    [{"name": "dc", "kind": "external", "settings": {"nodes": [{"host": "db1"}, {"host": "db2"}]}}]
)
async def test_a_start_with_restarts_is_refused_where_the_nodes_cannot_restart(api):
    created = await create(api, factor_change(0, high=2) | {"target": "dc"})
    refused = await api.post(
        f"/experiments/{created['id']}/start", json={"restart_replicates": True}
    )
    assert refused.status_code == 422, refused.text
    error = refused.json()["detail"][0]
    assert error["loc"] == ["body", "restart_replicates"]
    assert "target 'dc' cannot restart its nodes" in error["msg"]
    trials = (await api.get(f"/experiments/{created['id']}/trials")).json()
    assert all(t["status"] == "pending" and not t["restart_first"] for t in trials)


async def test_cancel_cancels_what_has_not_run(api):
    created = await create(api, SIMULATED)
    cancelled = (await api.post(f"/experiments/{created['id']}/cancel")).json()
    assert cancelled["progress"]["cancelled"] == 14 and cancelled["progress"]["pending"] == 0


async def test_manual_experiments_take_observations_and_are_analysed(api):
    created = await create(api, MANUAL)
    assert created["trials"] == []
    experiment_id = created["id"]
    assert (await api.post(f"/experiments/{experiment_id}/start")).status_code == 409
    early = await api.get(f"/experiments/{experiment_id}/analysis")
    assert early.status_code == 422 and "at least 2" in early.json()["detail"][0]["msg"]

    rows = [(1, 8, 596.3), (3, 8, 531.9), (9, 8, 429.2), (9, 40, 1196.0), (3, 48, 1428.9),
            (9, 160, 1095.7), (5, 40, 1278.6), (4, 40, 1374.1)]  # fmt: skip
    observations = [
        {"config": {"galera_nodes": n, "total_connections": c}, "responses": {"tps": tps}}
        for n, c, tps in rows
    ]
    recorded = await api.post(f"/experiments/{experiment_id}/observations", json=observations)
    assert recorded.status_code == 201, recorded.text
    assert [t["status"] for t in recorded.json()] == ["succeeded"] * len(rows)
    assert recorded.json()[0]["responses"] == {"tps": 596.3}

    experiment = (await api.get(f"/experiments/{experiment_id}")).json()
    assert experiment["best"]["value"] == 1428.9 and experiment["status"] == "completed"
    analysis = await api.get(f"/experiments/{experiment_id}/analysis", params={"response": "tps"})
    assert analysis.status_code == 200, analysis.text
    body = analysis.json()
    assert body["trials_used"] == len(rows) and body["trials_failed"] == 0
    assert body["optimum"]["config"]["total_connections"] in range(8, 161)
    assert {f["factor"] for f in body["ranked_factors"]} == {"galera_nodes", "total_connections"}


async def test_bad_observations_are_refused_whole(api):
    created = await create(api, MANUAL)
    experiment_id = created["id"]
    good = {"config": {"galera_nodes": 3, "total_connections": 40}, "responses": {"tps": 1300}}
    cases = [
        ({"config": {"galera_nodes": 30, "total_connections": 40}, "responses": {"tps": 1}},
         ["observations", 1, "config", "galera_nodes"], "between 1 and 9"),
        ({"config": {"galera_nodes": 3}, "responses": {"tps": 1}},
         ["observations", 1, "config", "total_connections"], "missing"),
        ({"config": {"galera_nodes": 3, "total_connections": 40, "x": 1}, "responses": {"tps": 1}},
         ["observations", 1, "config", "x"], "not a factor"),
        ({"config": {"galera_nodes": 3.5, "total_connections": 40}, "responses": {"tps": 1}},
         ["observations", 1, "config", "galera_nodes"], "whole number"),
        ({"config": {"galera_nodes": 3, "total_connections": 40}, "responses": {}},
         ["observations", 1, "responses"], "non-empty"),
    ]  # fmt: skip
    for bad, loc, words in cases:
        response = await api.post(f"/experiments/{experiment_id}/observations", json=[good, bad])
        assert response.status_code == 422, response.text[:500]
        detail = response.json()["detail"][0]
        assert detail["loc"][1:] == loc and words in detail["msg"], detail
    assert (await api.get(f"/experiments/{experiment_id}/trials")).json() == []
    assert (
        await api.post(f"/experiments/{experiment_id}/observations", json=[])
    ).status_code == 422


async def test_observations_seed_a_runnable_target_and_are_never_run(api):
    created = await create(api, SIMULATED)
    good = {"config": {"nodes": 3, "threads_per_client": 8, "wsrep_slave_threads": 1},
            "responses": {"tps": 1300}, "block": 2, "whole_plot": 5}  # fmt: skip
    response = await api.post(f"/experiments/{created['id']}/observations", json=[good])
    assert response.status_code == 201, response.text
    imported = response.json()[0]
    assert imported["status"] == "succeeded" and imported["source"] == "observation"
    assert (imported["block"], imported["whole_plot"]) == (2, 5)
    experiment = (await api.get(f"/experiments/{created['id']}")).json()
    assert experiment["status"] == created["status"]
    assert experiment["progress"]["queued"] == 0


async def test_a_cancelled_experiment_takes_no_observations(api):
    spec = with_changes(MANUAL, design={"kind": "full_factorial", "randomize": False})
    created = await create(api, spec)
    await api.post(f"/experiments/{created['id']}/cancel")
    observation = {"config": created["trials"][0]["config"], "responses": {"tps": 777.0}}
    response = await api.post(f"/experiments/{created['id']}/observations", json=[observation])
    assert response.status_code == 409 and "cancelled" in response.json()["detail"]
    experiment = (await api.get(f"/experiments/{created['id']}")).json()
    assert experiment["status"] == "cancelled" and experiment["progress"]["succeeded"] == 0


async def test_observation_matching_a_planned_trial_fills_it(api):
    spec = with_changes(MANUAL, design={"kind": "full_factorial", "randomize": False})
    created = await create(api, spec)
    assert len(created["trials"]) == 4
    planned = created["trials"][0]
    observation = {"config": planned["config"], "responses": {"tps": 777.0}}
    recorded = await api.post(f"/experiments/{created['id']}/observations", json=[observation])
    assert recorded.json()[0]["id"] == planned["id"]
    experiment = (await api.get(f"/experiments/{created['id']}")).json()
    assert experiment["progress"]["succeeded"] == 1 and experiment["progress"]["pending"] == 3
    assert experiment["status"] == "running"


async def test_health_reports_database_and_broker(api):
    response = await api.get("/health")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "database": {"ok": True, "error": None},
        "broker": {"ok": True, "error": None},
    }


@pytest.fixture
async def api_without_broker(settings):
    """The app with its broker pointed at a port nothing listens on."""
    unreachable = settings.model_copy(update={"broker_url": f"redis://127.0.0.1:{free_port()}/0"})
    app = create_app(unreachable)
    async with app.router.lifespan_context(app):
        async with app.state.database.session() as session:
            token = (await api_keys.create(session, owner="tester")).token
        transport = ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {token}"}
        async with AsyncClient(transport=transport, base_url="http://test", headers=headers) as c:
            yield c


async def test_health_names_the_unreachable_broker(api_without_broker):
    response = await api_without_broker.get("/health")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "degraded" and body["database"]["ok"]
    assert not body["broker"]["ok"] and "unreachable" in body["broker"]["error"]


async def test_start_without_broker_is_503_and_loses_nothing(api_without_broker):
    created = await create(api_without_broker, SIMULATED)
    response = await api_without_broker.post(f"/experiments/{created['id']}/start")
    assert response.status_code == 503
    assert "unreachable" in response.json()["detail"]
    trials = (await api_without_broker.get(f"/experiments/{created['id']}/trials")).json()
    assert {t["status"] for t in trials} == {"pending"}
    experiment = (await api_without_broker.get(f"/experiments/{created['id']}")).json()
    assert experiment["status"] == "planned"


async def test_ids_beyond_the_database_range_are_422_not_500(api):
    for path in ("/experiments/99999999999999999999", "/trials/0", "/experiments/-1/trials"):
        response = await api.get(path)
        assert response.status_code == 422, (path, response.text)


async def test_targets_are_listed_without_their_settings(api):
    response = await api.get("/targets")
    assert response.status_code == 200
    targets = {t["name"]: t for t in response.json()}
    assert targets["simulated"]["factors"][:2] == ["nodes", "clients"]
    assert targets["manual"]["factors"] is None and not targets["manual"]["runnable"]
    assert all("settings" not in t for t in targets.values())
    assert "noise" not in response.text and "seed" not in response.text


async def test_analysis_refuses_what_the_data_cannot_support_with_422(api):
    created = await create(api, MANUAL)
    rows = [(1, 8, 596.3), (9, 8, 429.2), (9, 40, 1196.0), (3, 48, 1428.9)]
    observations = [
        {"config": {"galera_nodes": n, "total_connections": c}, "responses": {"tps": tps}}
        for n, c, tps in rows
    ]
    await api.post(f"/experiments/{created['id']}/observations", json=observations)
    path = f"/experiments/{created['id']}/analysis"
    cases = [
        ({"response": "latency_p95_ms"}, ["query", "response"], "measured by 0"),
        ({"model": "quadratic"}, ["query", "model"], "needs at least 7 successful runs"),
        ({"model": "cubic"}, ["query", "model"], "one of"),
    ]
    for params, loc, words in cases:
        response = await api.get(path, params=params)
        assert response.status_code == 422, response.text
        detail = response.json()["detail"][0]
        assert detail["loc"] == loc and words in detail["msg"], detail


async def test_the_optimum_respects_limits_on_other_responses(api):
    factors = [
        {"name": "clients", "kind": "integer", "low": 1, "high": 8},
        {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 32, "scale": "log2"},
    ]
    created = await create(
        api,
        {
            "name": "latency-bounded",
            "target": "manual",
            "factors": factors,
            "design": None,
            "objective": {
                "response": "tps",
                "constraints": [{"response": "latency_p95_ms", "max": 40}],
            },
        },
    )
    observations = []
    for clients in (1, 4, 8):
        for threads in (4, 11, 32):
            connections = clients * threads
            observations.append(
                {
                    "config": {"clients": clients, "threads_per_client": threads},
                    "responses": {
                        "tps": 100 + 5 * connections - 0.01 * connections**2,
                        "latency_p95_ms": 5 + 0.25 * connections,
                    },
                }
            )
    await api.post(f"/experiments/{created['id']}/observations", json=observations)
    body = (
        await api.get(f"/experiments/{created['id']}/analysis", params={"model": "quadratic"})
    ).json()
    optimum = body["optimum"]
    assert optimum["limits_met"]["latency_p95_ms <= 40"] <= 40 + 1e-6
    best = optimum["config"]
    assert 5 + 0.25 * best["clients"] * best["threads_per_client"] <= 41
    bad = await api.post(
        "/experiments",
        json={
            **MANUAL,
            "objective": {"response": "tps", "constraints": [{"response": "tps", "max": 1}]},
        },
    )
    assert bad.status_code == 422
    assert bad.json()["detail"][0]["loc"][1:] == ["objective", "constraints", 0, "response"]


async def test_several_responses_are_combined_by_desirability(api):
    factors = [{"name": "threads", "kind": "integer", "low": 1, "high": 64}]
    objective = {
        "response": "tps",
        "desirability": [
            {"response": "tps", "goal": "maximize", "low": 100, "high": 700},
            {"response": "latency_p95_ms", "goal": "minimize", "low": 5, "high": 60},
        ],
    }
    created = await create(
        api,
        {"name": "two goals", "target": "manual", "factors": factors, "design": None,
         "objective": objective},
    )  # fmt: skip
    observations = [
        {
            "config": {"threads": t},
            "responses": {"tps": 100 + 20 * t - 0.2 * t * t, "latency_p95_ms": 5 + 0.9 * t},
        }
        for t in (1, 8, 16, 24, 32, 48, 64)
    ]
    await api.post(f"/experiments/{created['id']}/observations", json=observations)
    body = (
        await api.get(f"/experiments/{created['id']}/analysis", params={"model": "quadratic"})
    ).json()
    optimum = body["optimum"]
    # Throughput alone would want 50 threads; latency pulls the compromise well below.
    assert 5 < optimum["config"]["threads"] < 45, optimum
    assert 0 < optimum["desirability"]["overall"] <= 1
    assert set(optimum["desirability"]) == {"overall", "tps", "latency_p95_ms"}
    bad = {**objective, "desirability": [{"response": "tps", "low": 9, "high": 1}]}
    response = await api.post(
        "/experiments",
        json={"name": "bad", "target": "manual", "factors": factors, "design": None,
              "objective": bad},
    )  # fmt: skip
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"][1:] == ["objective", "desirability", 0]


async def test_the_server_app_hides_what_lives_from_startup_from_the_collector(settings):
    assert gc.get_freeze_count() == 0
    app = create_app(settings, freeze_gc=True)
    try:
        async with app.router.lifespan_context(app):
            # The libraries' objects: a full collection would walk them all otherwise.
            assert gc.get_freeze_count() > 100_000
    finally:
        gc.unfreeze()


async def test_observations_in_blocks_are_analysed_with_a_block_effect(api):
    from tests.experiments.test_analysis_blocks import CHEM

    spec = {
        "name": "chemical reaction, two blocks",
        "target": "manual",
        "factors": [
            {"name": "time", "low": 77.93, "high": 92.07},
            {"name": "temp", "low": 167.93, "high": 182.07},
        ],
        "design": None,
        "objective": {"response": "yield_pct"},
    }
    created = await create(api, spec)
    observations = [
        {"config": {"time": time, "temp": temp}, "responses": {"yield_pct": y}, "block": block}
        for time, temp, y, block in CHEM
    ]
    # The ranges reach the axial points; the block coefficient and R^2 do not depend on coding.
    response = await api.post(f"/experiments/{created['id']}/observations", json=observations)
    assert response.status_code == 201, response.text
    analysis = await api.get(
        f"/experiments/{created['id']}/analysis", params={"model": "quadratic"}
    )
    assert analysis.status_code == 200, analysis.text
    body = analysis.json()
    terms = {t["name"]: t["coefficient"] for t in body["terms"]}
    assert terms["block[2]"] == pytest.approx(-4.457530, abs=5e-7)
    assert body["r_squared"] == pytest.approx(0.9981, abs=5e-5)
    assert body["explanation"]["sentences"][0].startswith("The runs came in 2 blocks")


async def test_a_new_experiment_starts_from_the_compatible_trials_of_an_earlier_one(api, make_key):
    earlier = await create(api, MANUAL)
    rows = [(1, 8, 596.3), (3, 8, 531.9), (9, 8, 429.2), (3, 40, 1100.0), (9, 40, 1196.0),
            (9, 160, 1300.0), (5, 100, 1250.0), (6, 24, 900.0)]  # fmt: skip
    observations = [
        {"config": {"galera_nodes": n, "total_connections": c}, "responses": {"tps": tps}}
        for n, c, tps in rows
    ]
    await api.post(f"/experiments/{earlier['id']}/observations", json=observations)
    narrower = with_changes(
        MANUAL,
        name="follow-up",
        factors=[
            {"name": "galera_nodes", "kind": "integer", "low": 3, "high": 9},
            {"name": "total_connections", "kind": "integer", "low": 8, "high": 100},
        ],
        design={"kind": "full_factorial", "levels": 2, "randomize": False},
        warm_start_from=[earlier["id"]],
    )
    created = await create(api, narrower)
    copied = [t for t in created["trials"] if t["source"] == "warm_start"]
    # Inside 3..9 nodes and 8..100 connections: (3,8) (9,8) (3,40) (9,40) (5,100) (6,24).
    assert sorted(
        (t["config"]["galera_nodes"], t["config"]["total_connections"]) for t in copied
    ) == [(3, 8), (3, 40), (5, 100), (6, 24), (9, 8), (9, 40)]
    assert {t["status"] for t in copied} == {"succeeded"}
    assert [t["run_order"] for t in copied] == [5, 6, 7, 8, 9, 10]
    planned = [t for t in created["trials"] if t["source"] == "design"]
    assert len(planned) == 4 and {t["status"] for t in planned} == {"pending"}
    assert any(
        "warm start: 6 trials copied" in n and "2 left out" in n for n in created["design_notes"]
    )
    analysis = await api.get(f"/experiments/{created['id']}/analysis")
    assert analysis.status_code == 200 and analysis.json()["trials_used"] == 6

    # What cannot seed it, named by field.
    simulated = await create(api, SIMULATED)
    other_key = await make_key("someone-else")
    foreign = await api.post(
        "/experiments", json=MANUAL, headers={"Authorization": f"Bearer {other_key}"}
    )
    cases = [
        ([simulated["id"]], "warm_start_from.0", "ran on a simulated target"),
        ([earlier["id"], foreign.json()["id"]], "warm_start_from.1", "does not exist"),
        ([10**9], "warm_start_from.0", "does not exist"),
    ]
    for sources, field, words in cases:
        refused = await api.post(
            "/experiments", json=with_changes(narrower, warm_start_from=sources)
        )
        assert refused.status_code == 422, refused.text
        detail = refused.json()["detail"][0]
        assert ".".join(map(str, detail["loc"][1:])) == field and words in detail["msg"], detail


async def test_load_nodes_may_not_exceed_the_cluster_size(api):
    base = {
        "name": "load on k of n",
        "target": "lab",
        "design": {"kind": "full_factorial", "levels": 2},
        "objective": {"response": "tps"},
    }
    nodes = {"name": "nodes", "kind": "integer", "low": 1, "high": 3}
    too_many = [nodes, {"name": "load_nodes", "kind": "integer", "low": 1, "high": 4}]
    refused = await api.post("/experiments", json=base | {"factors": too_many})
    assert refused.status_code == 422, refused.text
    detail = refused.json()["detail"][0]
    assert detail["loc"] == ["body", "factors", 1, "high"]
    assert detail["msg"] == "load_nodes cannot exceed nodes: at most 3 on target 'lab'"

    overlapping = [nodes, {"name": "load_nodes", "kind": "integer", "low": 1, "high": 3}]
    refused = await api.post("/experiments", json=base | {"factors": overlapping})
    assert refused.status_code == 422
    detail = refused.json()["detail"][0]
    assert detail["loc"] == ["body", "constraints"]
    assert "add the constraint 'load_nodes <= nodes'" in detail["msg"]

    constrained = base | {"factors": overlapping, "constraints": ["load_nodes <= nodes"]}
    created = await create(api, constrained)
    assert all(t["config"]["load_nodes"] <= t["config"]["nodes"] for t in created["trials"])

    alone = [{"name": "load_nodes", "kind": "integer", "low": 1, "high": 4}]
    refused = await api.post("/experiments", json=base | {"factors": alone})
    assert refused.json()["detail"][0]["msg"] == (
        "load_nodes cannot exceed nodes: at most 3 on target 'lab'"
    )


async def test_rw_mix_options_need_the_rw_mix_workload_and_their_ranges(api):
    base = {"name": "rw mix", "target": "lab", "design": {"kind": "full_factorial", "levels": 2},
            "objective": {"response": "abort_rate", "goal": "minimize"}}  # fmt: skip
    share = {"name": "write_share", "kind": "continuous", "low": 0, "high": 1}
    only_rw_mix = {"name": "workload", "kind": "categorical", "levels": ["rw_mix"]}
    created = await create(api, base | {"factors": [only_rw_mix, share]})
    assert {t["config"]["workload"] for t in created["trials"]} == {"rw_mix"}
    cases = [
        ([share], "factors.0.name", "write_share is an option of the rw_mix workload"),
        ([only_rw_mix, {**share, "high": 2}], "factors.1", "write_share is a number from 0 to 1"),
        ([{"name": "workload", "kind": "categorical", "levels": ["tpcc_like"]}],
         "factors.0.levels", "workload is categorical with levels among"),
    ]  # fmt: skip
    await assert_factors_refused(api, base, cases)


async def test_warehouses_need_the_tpcc_workload_and_at_least_one(api):
    base = {"name": "tpcc", "target": "lab", "design": {"kind": "full_factorial", "levels": 2},
            "objective": {"response": "notpm"}}  # fmt: skip
    tpcc = {"name": "workload", "kind": "categorical", "levels": ["tpcc"]}
    warehouses = {"name": "warehouses", "kind": "integer", "low": 1, "high": 4}
    created = await create(api, base | {"factors": [tpcc, warehouses]})
    assert {t["config"]["warehouses"] for t in created["trials"]} == {1, 4}
    cases = [
        ([tpcc, {**warehouses, "low": 0}], "factors.1", "warehouses is an integer factor from 1"),
        ([warehouses], "factors.0.name", "warehouses is an option of the tpcc workload"),
    ]
    await assert_factors_refused(api, base, cases)


async def test_the_wan_factors_belong_to_the_lab_and_keep_to_their_ranges(api):
    base = {"name": "two sites", "target": "lab", "design": {"kind": "full_factorial", "levels": 2},
            "objective": {"response": "commit_latency_ms", "goal": "minimize"}}  # fmt: skip
    nodes = {"name": "nodes", "kind": "integer", "levels": [2, 3]}
    sites = {"name": "sites", "kind": "integer", "levels": [1, 2]}
    rtt = {"name": "wan_rtt_ms", "kind": "continuous", "low": 0, "high": 100}
    created = await create(api, base | {"factors": [nodes, sites, rtt]})
    assert "sites is treated as hard to change on the lab" in " ".join(created["design_notes"])
    assert all(t["whole_plot"] is not None for t in created["trials"])
    assert {(t["config"]["sites"], t["config"]["wan_rtt_ms"]) for t in created["trials"]} == {
        (1, 0), (1, 100), (2, 0), (2, 100)
    }  # fmt: skip
    cases = [
        ([nodes, sites, {**rtt, "high": 500}], "factors.2", "wan_rtt_ms is a number from 0 to 300"),
        ([nodes, {**sites, "levels": [1, 3]}], "factors.1",
         "sites is an integer factor from 1 to 2"),
        ([{**nodes, "levels": [1, 2]}, sites], "constraints",
         "split fewer nodes than sites (each site needs a node): add the constraint"
         " 'sites <= nodes'"),
        ([{**rtt, "high": 10}, {"name": "wan_jitter_ms", "kind": "continuous", "low": 0,
          "high": 150}], "factors.1", "wan_jitter_ms is a number from 0 to 100"),
    ]  # fmt: skip
    await assert_factors_refused(api, base, cases)
    # A real cluster's nodes stay where they are: only the lab moves them apart.
    external = TargetSpec("dc", "external", {"nodes": [{"host": "db1"}, {"host": "db2"}]})
    with pytest.raises(DomainError) as refused_name:
        external.check_space(FactorSpace.from_dicts([{**nodes, "levels": [1, 2]}, sites]))
    assert refused_name.value.field == "factors.1.name"
    assert "target 'dc' (external) cannot set 'sites'" in refused_name.value.rule


async def test_restart_only_settings_are_hard_to_change_factors_where_nodes_can_restart(api):
    base = {"name": "restarts", "target": "lab", "design": {"kind": "full_factorial"},
            "objective": {"response": "tps"}}  # fmt: skip
    gcache = {"name": "gcache.size", "kind": "categorical", "levels": ["64M", "256M"]}
    flush = {"name": "innodb_flush_method", "kind": "categorical", "levels": ["fsync", "O_DIRECT"]}
    threads = {"name": "threads_per_client", "kind": "integer", "levels": [2, 8]}
    created = await create(api, base | {"factors": [gcache, flush, threads]})
    notes = " ".join(created["design_notes"])
    assert "gcache.size is treated as hard to change on the lab" in notes
    assert "innodb_flush_method is treated as hard to change on the lab" in notes
    # Whole plots hold the restart-only settings: 4 of them, each with both thread counts.
    plots = {}
    for trial in created["trials"]:
        key = (trial["config"]["gcache.size"], trial["config"]["innodb_flush_method"])
        plots.setdefault(trial["whole_plot"], set()).add(key)
    assert len(plots) == 4 and all(len(keys) == 1 for keys in plots.values())
    nodes = [{"host": "db1"}, {"host": "db2"}]
    restarting = [n | {"restart": ["restart-db"]} for n in nodes]
    for settings, refused in [({"nodes": nodes}, True), ({"nodes": restarting}, False)]:
        spec = TargetSpec("dc", "external", settings)
        if refused:
            with pytest.raises(DomainError) as caught:
                spec.check_space(FactorSpace.from_dicts([gcache]))
            assert caught.value.field == "factors.0.name"
            assert "no restart command for every node" in caught.value.rule
        else:
            space, notes = spec.prepared_space(FactorSpace.from_dicts([gcache]))
            assert space["gcache.size"].hard_to_change
            assert notes == [
                "gcache.size is treated as hard to change on target 'dc': its change restarts"
                " every node, one at a time, per whole plot"
            ]


async def test_provider_options_are_factors_of_real_clusters_checked_at_submission(api):
    base = {"name": "flow control", "target": "lab",
            "design": {"kind": "full_factorial", "levels": 2},
            "objective": {"response": "tps"}}  # fmt: skip
    limit = {"name": "gcs.fc_limit", "kind": "integer", "low": 16, "high": 256}
    factor = {"name": "gcs.fc_factor", "kind": "continuous", "low": 0.5, "high": 1.0}
    created = await create(api, base | {"factors": [limit, factor]})
    assert {t["config"]["gcs.fc_limit"] for t in created["trials"]} == {16, 256}
    cases = [
        ([{**limit, "name": "gcs.fc_limt"}], "factors.0.name",
         "unknown Galera provider option gcs.fc_limt"),
        ([{"name": "gcs.fc_limit", "kind": "categorical", "levels": ["16", "many"]}], "factors.0",
         "gcs.fc_limit takes an integer"),
        ([{**factor, "high": 2.0}], "factors.0", "gcs.fc_factor"),
        ([{**limit, "kind": "continuous"}], "factors.0.kind", "make it an integer factor"),
        ([{"name": "innodb_flush_method", "kind": "categorical", "levels": ["fsync", "O DIRECT"]}],
         "factors.0", "innodb_flush_method takes a value of at most 64 letters"),
        ([{"name": "gmcast.listen_addr", "kind": "categorical", "levels": ["tcp://10.0.0.1"]}],
         "factors.0.name", "not a benchmark setting"),
    ]  # fmt: skip
    await assert_factors_refused(api, base, cases)
