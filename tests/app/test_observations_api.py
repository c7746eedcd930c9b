"""Observations name only responses the experiment can use, all or none stored (issue 54,
item 6): a typo such as `tpz` is a 422 naming it, never a succeeded trial without its result."""

from __future__ import annotations

from typing import Any

from app.services.observations import KNOWN_RESPONSES
from experiments.galera.responses import GALERA_RESPONSES
from tests.app.test_api import MANUAL, create, with_changes

GOOD = {"config": {"galera_nodes": 3, "total_connections": 40}, "responses": {"tps": 1300.0}}
SIMULATED = {
    "name": "imported runs",
    "target": "simulated",
    "factors": [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 32, "scale": "log2"},
    ],
    "design": None,
    "objective": {"response": "tps"},
}


async def stored(api: Any, experiment_id: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The experiment's trials, and its progress and timing."""
    trials = (await api.get(f"/experiments/{experiment_id}/trials")).json()
    experiment = (await api.get(f"/experiments/{experiment_id}")).json()
    return trials, {"progress": experiment["progress"], "timing": experiment["timing"]}


async def test_an_unknown_response_on_a_manual_target_is_refused_and_nothing_is_stored(api):
    created = await create(api, MANUAL)
    before = await stored(api, created["id"])
    typo = {"config": GOOD["config"], "responses": {"tps": 1.0, "tpz": 1200.0}}
    response = await api.post(f"/experiments/{created['id']}/observations", json=[GOOD, typo])
    assert response.status_code == 422, response.text
    detail = response.json()["detail"][0]
    assert detail["loc"][1:] == ["observations", 1, "responses", "tpz"]
    assert detail["msg"].startswith(
        "'tpz' is not a response of this experiment; on manual target 'manual' an observation"
        " reports the objective's responses or one a cluster reports: tps, qps, latency_avg_ms,"
    )
    # All or none: the good observation is not stored either, and the clock does not move.
    assert await stored(api, created["id"]) == before
    assert before[0] == [] and before[1]["timing"]["elapsed_s"] is None


async def test_a_manual_target_takes_the_objectives_responses_and_the_known_ones(api):
    spec = with_changes(
        MANUAL,
        objective={"response": "yield_pct", "constraints": [{"response": "cost_eur", "max": 9}]},
    )
    created = await create(api, spec)
    observation = {
        "config": GOOD["config"],
        "responses": {"yield_pct": 81.0, "cost_eur": 7.5, "qps": 20000.0, "tpmc": 900.0},
    }
    response = await api.post(f"/experiments/{created['id']}/observations", json=[observation])
    assert response.status_code == 201, response.text
    assert response.json()[0]["responses"] == observation["responses"]
    assert {"tps", "latency_p95_ms", "notpm", "tps_steady", "restart_s"} <= set(KNOWN_RESPONSES)


async def test_on_a_runnable_target_an_observation_reports_what_the_target_reports(api):
    created = await create(api, SIMULATED)
    imported = {"config": {"nodes": 3, "threads_per_client": 8}, "responses": {"tps": 900.0}}
    first = await api.post(f"/experiments/{created['id']}/observations", json=[imported])
    assert first.status_code == 201, first.text
    before = await stored(api, created["id"])
    # The simulated cluster reports no steady-state figures: tps_steady is a lab's response.
    for name in ("tpz", "tps_steady"):
        bad = {"config": {"nodes": 5, "threads_per_client": 16}, "responses": {name: 1.0}}
        response = await api.post(f"/experiments/{created['id']}/observations", json=[bad])
        assert response.status_code == 422, response.text
        detail = response.json()["detail"][0]
        assert detail["loc"][1:] == ["observations", 0, "responses", name]
        assert detail["msg"] == (
            f"'{name}' is not a response of this experiment; target 'simulated' (simulated)"
            f" reports {', '.join(GALERA_RESPONSES)}"
        )
    assert await stored(api, created["id"]) == before
    assert len(before[0]) == 1
