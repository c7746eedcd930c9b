"""Suggestions over REST: stored with ids and reasons, accepted into trials, and the closed loop
on a manual target, where each round waits for its observations (both database backends)."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from app.services import optimization_loop
from experiments.factors import FactorSpace
from experiments.suggest import STRATEGIES, Problem, Runs, suggest
from tests.toy_responses import saturating_latency

FACTORS = [
    {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
    {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
]


def manual_spec(**objective) -> dict:
    return {
        "name": "next",
        "target": "manual",
        "factors": FACTORS,
        "design": None,
        "objective": {"response": "tps", **objective},
    }


def tps(config: dict) -> float:
    """A bowl with its top at 5 nodes and 16 threads per client."""
    return (
        1500.0 - 40.0 * (config["nodes"] - 5) ** 2 - 0.4 * (config["threads_per_client"] - 16) ** 2
    )


async def observe(api, experiment_id: int, configs: list[dict], noise: float = 0.0) -> None:
    """Record each configuration's tps, the last one `noise` above the bowl."""
    values = [tps(c) for c in configs]
    values[-1] += noise
    observations = [
        {"config": c, "responses": {"tps": y}} for c, y in zip(configs, values, strict=True)
    ]
    recorded = await api.post(f"/experiments/{experiment_id}/observations", json=observations)
    assert recorded.status_code == 201, recorded.text


async def observed_factorial(api) -> int:
    """A manual experiment with a 2^2 factorial and two centre points observed."""
    experiment = (await api.post("/experiments", json=manual_spec())).json()
    runs = [*itertools.product([1, 9], [4, 64]), (5, 16), (5, 16)]
    configs = [{"nodes": n, "threads_per_client": t} for n, t in runs]
    await observe(api, experiment["id"], configs, noise=12.0)
    return int(experiment["id"])


@pytest.mark.parametrize(
    ("strategy", "count", "point_types"),
    [
        ("augment", 4, {"axial", "centre"}),
        ("steepest_ascent", 3, {"path"}),
        ("bayes", 2, {"bayes", "replicate"}),
        ("replicate", 1, {"replicate"}),
        ("auto", 1, {"axial", "centre"}),
    ],
)
async def test_every_strategy_suggests_valid_configurations(api, strategy, count, point_types):
    experiment_id = await observed_factorial(api)
    before = (await api.get(f"/experiments/{experiment_id}/trials")).json()
    response = await api.post(
        f"/experiments/{experiment_id}/suggestions", json={"strategy": strategy, "count": count}
    )
    assert response.status_code == 200, response.text
    plan = response.json()
    assert plan["strategy"] == strategy and plan["explanation"] and plan["stop_reason"] is None
    suggestions = plan["suggestions"]
    assert suggestions
    if strategy != "auto":  # auto's design steps come whole
        assert len(suggestions) <= count
    for suggestion in suggestions:
        config = suggestion["config"]
        assert 1 <= config["nodes"] <= 9 and isinstance(config["nodes"], int)
        assert 4 <= config["threads_per_client"] <= 64
        assert suggestion["strategy"] == strategy and suggestion["reason"]
        assert suggestion["point_type"] in point_types
        assert suggestion["status"] == "open" and suggestion["trial_id"] is None
        # Every suggestion comes with a prediction and its uncertainty, and says whose.
        assert suggestion["predicted"] is not None and suggestion["uncertainty"] is not None
        assert suggestion["predicted_by"]
        assert suggestion["based_on_trials"] == 6
    # Suggesting stores the suggestions and runs nothing.
    assert (await api.get(f"/experiments/{experiment_id}/trials")).json() == before
    listed = (await api.get(f"/experiments/{experiment_id}/suggestions")).json()
    assert [s["id"] for s in listed] == [s["id"] for s in suggestions]


def latency(config: dict) -> float:
    return round(saturating_latency(config["nodes"], config["threads_per_client"]), 2)


async def test_a_latency_objective_is_searched_on_its_logarithm(api):
    spec = manual_spec(response="latency_p95_ms", goal="minimize")
    experiment = (await api.post("/experiments", json=spec)).json()
    assert experiment["objective"]["scale"] == "log"
    runs = [*itertools.product([1, 9], [4, 64]), (5, 16), (5, 16), (3, 8), (7, 32)]
    configs = [{"nodes": n, "threads_per_client": t} for n, t in runs]
    observations = [{"config": c, "responses": {"latency_p95_ms": latency(c)}} for c in configs]
    await api.post(f"/experiments/{experiment['id']}/observations", json=observations)
    plan = (
        await api.post(
            f"/experiments/{experiment['id']}/suggestions", json={"strategy": "bayes", "count": 1}
        )
    ).json()
    found = {}
    for scale in ("linear", "log"):
        found[scale] = (
            suggest(
                "bayes",
                Problem(
                    FactorSpace.from_dicts(FACTORS),
                    goal="minimize",
                    scale=scale,
                    seed=experiment["id"],
                ),
                Runs(configs=configs, values=[latency(c) for c in configs]),
            )
            .suggestions[0]
            .config
        )
    # The raw latency sends the search to 2 nodes and 28 threads (112 ms), its logarithm to
    # 1 node and 6 threads (16 ms).
    assert found["log"] != found["linear"]
    assert plan["suggestions"][0]["config"] == found["log"]


async def test_auto_explains_its_stage(api):
    experiment_id = await observed_factorial(api)
    plan = (await api.post(f"/experiments/{experiment_id}/suggestions", json={})).json()
    assert plan["strategy"] == "auto" and plan["stage"] == "augment"
    assert "curvature test p = " in plan["explanation"]


async def test_an_accepted_suggestion_becomes_a_trial_once(api):
    experiment_id = await observed_factorial(api)
    plan = (
        await api.post(f"/experiments/{experiment_id}/suggestions", json={"strategy": "bayes"})
    ).json()
    (suggestion,) = plan["suggestions"]
    path = f"/experiments/{experiment_id}/suggestions/{suggestion['id']}/accept"
    accepted = await api.post(path)
    assert accepted.status_code == 201, accepted.text
    trial = accepted.json()
    assert trial["config"] == suggestion["config"] and trial["source"] == "suggestion"
    assert trial["point_type"] == suggestion["point_type"]
    assert trial["status"] == "pending"  # a manual target: it waits for its observation
    again = await api.post(path)
    assert again.status_code == 409 and str(trial["id"]) in again.json()["detail"]
    listed = (await api.get(f"/experiments/{experiment_id}/suggestions")).json()
    assert listed[-1]["status"] == "accepted" and listed[-1]["trial_id"] == trial["id"]
    # The observation of that configuration fills the trial.
    await observe(api, experiment_id, [suggestion["config"]])
    filled = (await api.get(f"/trials/{trial['id']}")).json()
    assert filled["status"] == "succeeded" and filled["responses"]["tps"] == tps(trial["config"])


async def test_accepting_a_suggestion_of_another_experiment_or_none_is_404(api):
    first = await observed_factorial(api)
    second = await observed_factorial(api)
    plan = (await api.post(f"/experiments/{first}/suggestions", json={"strategy": "bayes"})).json()
    sid = plan["suggestions"][0]["id"]
    assert (await api.post(f"/experiments/{second}/suggestions/{sid}/accept")).status_code == 404
    assert (await api.post(f"/experiments/{first}/suggestions/99999/accept")).status_code == 404
    assert (await api.get("/experiments/424242/suggestions")).status_code == 404


async def test_bad_suggestion_requests_are_refused(api):
    experiment_id = await observed_factorial(api)
    path = f"/experiments/{experiment_id}/suggestions"
    wrong = await api.post(path, json={"strategy": "magic"})
    assert wrong.status_code == 422 and wrong.json()["detail"][0]["loc"][-1] == "strategy"
    assert (await api.post(path, json={"count": 0})).status_code == 422
    assert (await api.post("/experiments/424242/suggestions", json={})).status_code == 404


async def test_the_strategies_come_from_the_engine_registry(api):
    listed = (await api.get("/strategies")).json()
    assert [s["name"] for s in listed] == list(STRATEGIES)
    assert {s["name"] for s in listed if s["closes_loop"]} == {"auto", "bayes"}
    assert all(s["summary"] == STRATEGIES[s["name"]].summary for s in listed)
    schemas = (await api.get("/openapi.json")).json()["components"]["schemas"]
    assert schemas["SuggestionsIn"]["properties"]["strategy"]["enum"] == list(STRATEGIES)
    assert schemas["OptimizeIn"]["properties"]["strategy"]["enum"] == ["auto", "bayes"]
    described = schemas["SuggestionsIn"]["properties"]["strategy"]["description"]
    assert all(f"{name}, {kind.summary}" in described for name, kind in STRATEGIES.items())


@pytest.mark.parametrize("strategy", ["augment", "steepest_ascent", "replicate"])
async def test_without_observations_a_step_strategy_says_what_it_needs(api, strategy):
    experiment = (await api.post("/experiments", json=manual_spec())).json()
    response = await api.post(
        f"/experiments/{experiment['id']}/suggestions", json={"strategy": strategy}
    )
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["msg"]


@pytest.mark.parametrize(
    ("strategy", "stage", "point_type"),
    [("auto", "screening", {"factorial", "centre"}), ("bayes", "initial", {"space_filling"})],
)
async def test_without_observations_auto_screens_and_bayes_fills_the_space(
    api, strategy, stage, point_type
):
    experiment = (await api.post("/experiments", json=manual_spec())).json()
    plan = (
        await api.post(f"/experiments/{experiment['id']}/suggestions", json={"strategy": strategy})
    ).json()
    assert plan["stage"] == stage
    assert {s["point_type"] for s in plan["suggestions"]} == point_type
    assert all(s["predicted"] is None for s in plan["suggestions"])  # nothing to model yet


async def test_closed_loop_on_a_manual_target_waits_for_each_rounds_observations(api):
    experiment = (await api.post("/experiments", json=manual_spec())).json()
    experiment_id = experiment["id"]
    started = await api.post(
        f"/experiments/{experiment_id}/optimize", json={"strategy": "bayes", "budget": 9}
    )
    assert started.status_code == 202, started.text
    loop = started.json()
    assert loop["status"] == "running" and loop["rounds"] == 1 and loop["stage"] == "initial"
    for _ in range(20):
        detail = (await api.get(f"/experiments/{experiment_id}")).json()
        if detail["optimization"]["status"] != "running":
            break
        pending = [
            t
            for t in (await api.get(f"/experiments/{experiment_id}/trials")).json()
            if t["status"] == "pending"
        ]
        assert pending, detail
        assert all(t["source"] == "suggestion" for t in pending)
        await observe(api, experiment_id, [t["config"] for t in pending])
    loop = detail["optimization"]
    assert loop["status"] == "stopped" and loop["trials_used"] == 9
    assert loop["stop_reason"] == "the budget of trials is used up"
    assert detail["status"] == "completed" and detail["progress"]["succeeded"] == 9
    # Every trial the loop ran keeps the reason it was chosen.
    reasons = (await api.get(f"/experiments/{experiment_id}/suggestions")).json()
    assert len(reasons) == 9 and all(s["status"] == "accepted" and s["trial_id"] for s in reasons)
    assert {s["optimization_id"] for s in reasons} == {loop["id"]}


async def test_closed_loop_stops_when_the_expected_improvement_is_small(api):
    experiment_id = await observed_factorial(api)
    started = await api.post(
        f"/experiments/{experiment_id}/optimize",
        json={"strategy": "bayes", "budget": 30, "stop_when_expected_improvement_below": 1e9},
    )
    assert started.status_code == 202, started.text
    loop = started.json()
    assert loop["status"] == "stopped" and loop["trials_used"] == 0
    assert "below the threshold" in loop["stop_reason"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"strategy": "augment"}, "strategy"),
        ({"budget": 0}, "budget"),
        ({"budget": 501}, "budget"),
        ({"budget_seconds": 0}, "budget_seconds"),
        ({"budget_seconds": 31 * 24 * 3600}, "budget_seconds"),
        ({"budget_seconds": "an hour"}, "budget_seconds"),
        ({"batch_size": 21}, "batch_size"),
        ({"stop_when_expected_improvement_below": -1}, "stop_when_expected_improvement_below"),
        ({"rounds": 3}, "rounds"),
    ],
)
async def test_bad_optimize_requests_name_the_field(api, body, field):
    experiment_id = await observed_factorial(api)
    response = await api.post(f"/experiments/{experiment_id}/optimize", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"][-1] == field


async def test_a_budget_of_trial_time_is_refused_where_the_service_does_not_time_the_trials(api):
    experiment_id = await observed_factorial(api)
    path = f"/experiments/{experiment_id}/optimize"
    response = await api.post(path, json={"budget": 5, "budget_seconds": 600})
    assert response.status_code == 422, response.text
    error = response.json()["detail"][0]
    assert error["loc"][-1] == "budget_seconds" and "target 'manual'" in error["msg"]
    # Nothing was started: a loop with a budget of trials alone still may.
    started = await api.post(path, json={"budget": 5})
    assert started.status_code == 202 and started.json()["budget_seconds"] is None


async def test_one_loop_at_a_time_and_none_on_a_cancelled_experiment(api):
    experiment_id = await observed_factorial(api)
    path = f"/experiments/{experiment_id}/optimize"
    assert (await api.post(path, json={"strategy": "bayes", "budget": 5})).status_code == 202
    second = await api.post(path, json={"strategy": "bayes"})
    assert second.status_code == 409 and "already runs" in second.json()["detail"]
    cancelled = (await api.post(f"/experiments/{experiment_id}/cancel")).json()
    assert cancelled["optimization"]["status"] == "cancelled"
    assert cancelled["progress"]["pending"] == 0
    assert (await api.post(path, json={})).status_code == 409
    plan = (
        await api.post(f"/experiments/{experiment_id}/suggestions", json={"strategy": "bayes"})
    ).json()
    accept = f"/experiments/{experiment_id}/suggestions/{plan['suggestions'][0]['id']}/accept"
    assert (await api.post(accept)).status_code == 409


async def test_a_loop_that_breaks_is_marked_failed_with_its_error(api, database):
    experiment_id = await observed_factorial(api)
    path = f"/experiments/{experiment_id}/optimize"
    loop = (await api.post(path, json={"strategy": "bayes", "budget": 5})).json()
    async with database.session() as session:
        await optimization_loop.fail(session, optimization_id=loop["id"], error="Traceback: boom")
    detail = (await api.get(f"/experiments/{experiment_id}")).json()
    assert detail["optimization"]["status"] == "failed"
    assert detail["optimization"]["error"] == "Traceback: boom"
    assert detail["optimization"]["finished_at"] is not None
    # A failed loop runs nothing more, and a new one may start.
    assert (await api.post(path, json={"strategy": "bayes", "budget": 1})).status_code == 202


async def test_concurrent_optimize_requests_start_one_loop(api):
    experiment_id = await observed_factorial(api)
    path = f"/experiments/{experiment_id}/optimize"
    answers = await asyncio.gather(
        *(api.post(path, json={"strategy": "bayes", "budget": 4}) for _ in range(4))
    )
    assert sorted(a.status_code for a in answers) == [202, 409, 409, 409], [a.text for a in answers]
    assert all("already runs" in a.json()["detail"] for a in answers if a.status_code == 409)


async def test_a_loop_that_restarts_replicates_marks_the_trials_that_measure_again(api):
    # The observed 2^2 factorial with centre points leads auto on to its composite design.
    experiment_id = await observed_factorial(api)
    path = f"/experiments/{experiment_id}/optimize"
    body = {"strategy": "auto", "budget": 100, "restart_replicates": True}
    started = await api.post(path, json=body)
    assert started.status_code == 202, started.text
    assert started.json()["restart_replicates"] is True
    trials = (await api.get(f"/experiments/{experiment_id}/trials")).json()
    composite = [t for t in trials if t["status"] == "pending"]
    assert {t["point_type"] for t in composite} == {"axial", "centre"}
    # A centre point repeats runs already measured; an axial point is new.
    assert all(t["restart_first"] == (t["point_type"] == "centre") for t in composite)


async def test_without_restart_replicates_no_trial_restarts(api):
    experiment_id = await observed_factorial(api)
    started = await api.post(
        f"/experiments/{experiment_id}/optimize", json={"strategy": "auto", "budget": 100}
    )
    assert started.json()["restart_replicates"] is False
    trials = (await api.get(f"/experiments/{experiment_id}/trials")).json()
    composite = [t for t in trials if t["status"] == "pending"]
    assert "centre" in {t["point_type"] for t in composite}  # a repeat, measured as it comes
    assert not any(t["restart_first"] for t in trials)


@pytest.mark.targets(
    [{"name": "dc", "kind": "external", "settings": {"nodes": [{"host": "db1"}, {"host": "db2"}]}}]
)
async def test_restart_replicates_is_refused_where_the_nodes_cannot_restart(api):
    spec = manual_spec() | {"target": "dc"}
    spec["factors"] = [FACTORS[1]]
    created = await api.post("/experiments", json=spec)
    assert created.status_code == 201, created.text
    response = await api.post(
        f"/experiments/{created.json()['id']}/optimize",
        json={"budget": 5, "restart_replicates": True},
    )
    assert response.status_code == 422, response.text
    error = response.json()["detail"][0]
    assert error["loc"][-1] == "restart_replicates"
    assert "target 'dc' cannot restart its nodes" in error["msg"]


async def test_a_loop_runs_short_trials_of_a_fidelity_and_recommends_at_its_full_length(api):
    runtime = {"name": "runtime_s", "kind": "integer", "low": 10, "high": 120, "fidelity": True}
    spec = manual_spec() | {"factors": [*FACTORS, runtime]}
    experiment = (await api.post("/experiments", json=spec)).json()
    assert [f["fidelity"] for f in experiment["factors"]] == [False, False, True]
    experiment_id = experiment["id"]
    started = await api.post(
        f"/experiments/{experiment_id}/optimize", json={"strategy": "auto", "budget": 16}
    )
    assert started.status_code == 202, started.text
    assert "runtime_s is the trials' length" in started.json()["explanation"]
    for _ in range(20):
        detail = (await api.get(f"/experiments/{experiment_id}")).json()
        if detail["optimization"]["status"] != "running":
            break
        trials = (await api.get(f"/experiments/{experiment_id}/trials")).json()
        await observe(api, experiment_id, [t["config"] for t in trials if t["status"] == "pending"])
    loop = detail["optimization"]
    assert loop["status"] == "stopped" and loop["trials_used"] == 16
    trials = (await api.get(f"/experiments/{experiment_id}/trials")).json()
    lengths = [t["config"]["runtime_s"] for t in trials]
    assert min(lengths) < 120 and sum(lengths) < 16 * 120
    recommended = loop["recommendation"]
    assert (
        recommended["config"]["runtime_s"] == 120
        and "the full measurement" in (recommended["reason"])
    )
    run = [t["config"] | {"runtime_s": 120} for t in trials]
    assert recommended["config"] in run  # a configuration the loop ran, judged at full length


async def test_a_second_fidelity_or_a_categorical_one_is_refused(api):
    runtime = {"name": "runtime_s", "kind": "integer", "low": 10, "high": 120, "fidelity": True}
    for factors, field in [
        ([*FACTORS, runtime, runtime | {"name": "warmup_s"}], ["factors", 3, "fidelity"]),
        (
            [{"name": "mode", "kind": "categorical", "levels": ["a"], "fidelity": True}],
            ["factors", 0, "fidelity"],
        ),
    ]:
        refused = await api.post("/experiments", json=manual_spec() | {"factors": factors})
        assert refused.status_code == 422, refused.text
        assert refused.json()["detail"][0]["loc"][1:] == field
