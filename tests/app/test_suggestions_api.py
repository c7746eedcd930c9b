"""POST /experiments/{id}/suggestions: what to run next, by strategy, without running it."""

from __future__ import annotations

import itertools

import pytest

FACTORS = [
    {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
    {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
]


async def observed_factorial(api) -> int:
    """A manual experiment with a 2^2 factorial and centre points observed."""
    spec = {"name": "next", "target": "manual", "factors": FACTORS, "design": None,
            "objective": {"response": "tps"}}  # fmt: skip
    experiment = (await api.post("/experiments", json=spec)).json()
    runs = [*itertools.product([1, 9], [4, 64]), (5, 16), (5, 16)]
    tps = [500, 900, 700, 1500, 1100, 1120]
    observations = [
        {"config": {"nodes": n, "threads_per_client": t}, "responses": {"tps": y}}
        for (n, t), y in zip(runs, tps, strict=True)
    ]
    recorded = await api.post(f"/experiments/{experiment['id']}/observations", json=observations)
    assert recorded.status_code == 201, recorded.text
    return int(experiment["id"])


@pytest.mark.parametrize(
    ("strategy", "count", "point_types"),
    [
        ("augment", 4, {"axial", "centre"}),
        ("steepest_ascent", 3, {"path"}),
        ("bayes", 2, {"bayes"}),
        ("replicate", 1, {"replicate"}),
    ],
)
async def test_every_strategy_suggests_valid_configurations(api, strategy, count, point_types):
    experiment_id = await observed_factorial(api)
    before = (await api.get(f"/experiments/{experiment_id}/trials")).json()
    response = await api.post(
        f"/experiments/{experiment_id}/suggestions", json={"strategy": strategy, "count": count}
    )
    assert response.status_code == 200, response.text
    suggestions = response.json()
    assert 1 <= len(suggestions) <= count
    for suggestion in suggestions:
        config = suggestion["config"]
        assert 1 <= config["nodes"] <= 9 and isinstance(config["nodes"], int)
        assert 4 <= config["threads_per_client"] <= 64
        assert suggestion["strategy"] == strategy and suggestion["reason"]
        assert suggestion["point_type"] in point_types
    # Suggesting stores and runs nothing.
    assert (await api.get(f"/experiments/{experiment_id}/trials")).json() == before


async def test_bad_suggestion_requests_are_refused(api):
    experiment_id = await observed_factorial(api)
    path = f"/experiments/{experiment_id}/suggestions"
    assert (await api.post(path, json={"strategy": "magic"})).status_code == 422
    assert (await api.post(path, json={"count": 0})).status_code == 422
    assert (await api.post("/experiments/424242/suggestions", json={})).status_code == 404


@pytest.mark.parametrize("strategy", ["augment", "steepest_ascent", "bayes", "replicate"])
async def test_without_observations_a_strategy_says_what_it_needs(api, strategy):
    spec = {"name": "empty", "target": "manual", "factors": FACTORS, "design": None,
            "objective": {"response": "tps"}}  # fmt: skip
    experiment = (await api.post("/experiments", json=spec)).json()
    response = await api.post(
        f"/experiments/{experiment['id']}/suggestions", json={"strategy": strategy}
    )
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["msg"]
