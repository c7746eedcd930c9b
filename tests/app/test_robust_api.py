"""A robust experiment over REST (issue 57): the objective's aim reaches the analysis's optimum,
its report at each noise level, and the answer to deploy."""

from __future__ import annotations

import itertools

import pytest

SPEC = {
    "name": "robust",
    "target": "manual",
    "factors": [
        {"name": "threads_per_client", "kind": "integer", "levels": [2, 8]},
        {"name": "workload", "kind": "categorical", "levels": ["rw", "ro"], "noise": True},
    ],
    "design": None,
    "objective": {"response": "tps", "robust": {"aim": "worst"}},
}
# 8 threads win on read-only by far and lose on read-write: the mean prefers 8, the worst 2.
TPS = {(2, "rw"): 900.0, (8, "rw"): 700.0, (2, "ro"): 1000.0, (8, "ro"): 2000.0}


async def test_the_worst_aim_chooses_the_best_worst_case(api):
    created = await api.post("/experiments", json=SPEC)
    assert created.status_code == 201, created.text
    experiment_id = created.json()["id"]
    observations = [
        {"config": {"threads_per_client": t, "workload": w}, "responses": {"tps": TPS[t, w] + e}}
        for (t, w), e in itertools.product(TPS, (-5.0, 5.0))
    ]
    recorded = await api.post(f"/experiments/{experiment_id}/observations", json=observations)
    assert recorded.status_code == 201, recorded.text
    analysis = (await api.get(f"/experiments/{experiment_id}/analysis")).json()
    optimum = analysis["optimum"]
    assert optimum["config"] == {"threads_per_client": 2}
    assert optimum["robust"]["aim"] == "the worst noise level"
    assert optimum["robust"]["aim_value"] == pytest.approx(900.0, abs=1e-6)
    levels = {
        level["scenario"]["workload"]: level["predicted"] for level in optimum["robust"]["levels"]
    }
    assert levels == pytest.approx({"rw": 900.0, "ro": 1000.0})
    deploy = analysis["deploy"]
    assert deploy["config"] == {"threads_per_client": 2}
    assert "judged by the worst noise level" in deploy["summary"]
