"""Today's configuration over REST (issue 57): a baseline given or read from the nodes is
measured first; bad baselines, noise factors and confirmations are 422s naming the field."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.app.test_suggestions_api import manual_spec, observe, tps

SPACE = [
    {"name": "nodes", "kind": "integer", "levels": [1, 3], "hard_to_change": True},
    {"name": "threads_per_client", "kind": "integer", "levels": [2, 8], "scale": "log2"},
    {"name": "wsrep_slave_threads", "kind": "integer", "levels": [1, 4]},
]


def spec(**changes: Any) -> dict[str, Any]:
    """A 2^3 factorial on the simulated cluster, changed by `changes`."""
    return {
        "name": "baseline",
        "target": "simulated",
        "factors": SPACE,
        "design": {"kind": "full_factorial", "seed": 3},
        "objective": {"response": "tps"},
    } | changes


def located(response: Any) -> tuple[list[Any], str]:
    assert response.status_code == 422, response.text
    detail = response.json()["detail"][0]
    return detail["loc"], detail["msg"]


async def test_a_given_baseline_is_measured_first(api):
    baseline = {"nodes": 1, "threads_per_client": 2, "wsrep_slave_threads": 1}
    created = await api.post("/experiments", json=spec(baseline=baseline))
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["baseline"] == {"given": baseline, "current": [], "config": baseline}
    first, *design = sorted(body["trials"], key=lambda t: t["run_order"])
    assert first["run_order"] == 1 and first["source"] == "baseline"
    assert first["config"] == baseline and first["reads_current"] is None
    assert [t["run_order"] for t in design] == list(range(2, 10))
    assert all(t["source"] == "design" for t in design)


async def test_current_reads_the_settings_the_nodes_hold(api):
    baseline = {"nodes": 3, "threads_per_client": 8, "wsrep_slave_threads": "current"}
    body = (await api.post("/experiments", json=spec(baseline=baseline))).json()
    assert body["baseline"]["current"] == ["wsrep_slave_threads"]
    assert body["baseline"]["config"] is None  # until its run read the nodes
    first = min(body["trials"], key=lambda t: t["run_order"])
    assert first["reads_current"] == ["wsrep_slave_threads"]
    assert first["config"] == {"nodes": 3, "threads_per_client": 8}


@pytest.mark.parametrize(
    ("baseline", "where", "words"),
    [
        (
            {"nodes": 1, "threads_per_client": 64, "wsrep_slave_threads": 1},
            "threads_per_client",
            "between 2 and 8",
        ),
        ({"nodes": 1, "threads_per_client": 2}, "wsrep_slave_threads", "missing"),
        (
            {"nodes": 1, "threads_per_client": "current", "wsrep_slave_threads": 1},
            "threads_per_client",
            "cannot be read",
        ),
        (
            {"nodes": 1, "threads_per_client": 2, "wsrep_slave_threads": 1, "clients": 2},
            "clients",
            "not a factor",
        ),
        ("current", "nodes", "cannot be read"),
    ],
)
async def test_a_bad_baseline_is_a_422_naming_its_factor(api, baseline, where, words):
    loc, message = located(await api.post("/experiments", json=spec(baseline=baseline)))
    assert loc == ["body", "baseline", where] and words in message


async def test_a_baseline_leaves_noise_factors_out(api):
    factors = [*SPACE[:2], {"name": "write_share", "levels": [0.2, 0.8], "noise": True}]
    baseline = {"nodes": 1, "threads_per_client": 2, "write_share": 0.2}
    loc, message = located(
        await api.post("/experiments", json=spec(factors=factors, baseline=baseline))
    )
    assert loc == ["body", "baseline", "write_share"] and "noise factor" in message


async def test_a_noise_factor_must_vary(api):
    pinned = [*SPACE[:2], {"name": "write_share", "low": 0.2, "high": 0.8, "noise": True}]
    loc, message = located(
        await api.post(
            "/experiments", json=spec(factors=pinned, constraints=["write_share <= 0.2"])
        )
    )
    assert loc == ["body", "factors", 2, "noise"] and "one level" in message
    one = [*SPACE[:2], {"name": "write_share", "levels": [0.5], "noise": True}]
    loc, message = located(await api.post("/experiments", json=spec(factors=one)))
    assert loc == ["body", "factors", 2, "noise"] and "two levels" in message


async def test_a_robust_aim_needs_a_noise_factor(api):
    objective = {"response": "tps", "robust": {"aim": "worst"}}
    loc, _ = located(await api.post("/experiments", json=spec(objective=objective)))
    assert loc == ["body", "objective", "robust"]
    quantile = {"response": "tps", "robust": {"aim": "quantile"}}
    noisy = [*SPACE[:2], {"name": "write_share", "levels": [0.2, 0.8], "noise": True}]
    loc, _ = located(await api.post("/experiments", json=spec(factors=noisy, objective=quantile)))
    assert loc == ["body", "objective", "robust", "quantile"]


async def test_confirm_needs_a_baseline_and_a_model(api):
    without = (await api.post("/experiments", json=spec())).json()
    loc, message = located(await api.post(f"/experiments/{without['id']}/confirm"))
    assert loc == ["body", "baseline"] and "names no baseline" in message
    baseline = {"nodes": 1, "threads_per_client": 2, "wsrep_slave_threads": 1}
    planned = (await api.post("/experiments", json=spec(baseline=baseline))).json()
    loc, message = located(await api.post(f"/experiments/{planned['id']}/confirm"))
    assert loc == ["body", "model"] and "no model" in message


async def test_the_analysis_shows_the_baseline_beside_the_optimum_and_the_answer(api):
    """A manual experiment whose baseline (1 node, 4 threads) sits far below the bowl's top:
    the analysis measures it, predicts it, and predicts the gain of the optimum and of the
    configuration to deploy over it."""
    baseline = {"nodes": 1, "threads_per_client": 4}
    created = await api.post("/experiments", json=manual_spec() | {"baseline": baseline})
    assert created.status_code == 201, created.text
    experiment = created.json()
    assert [t["source"] for t in experiment["trials"]] == ["baseline"]
    runs = [*itertools.product([1, 9], [4, 64]), (5, 16), (5, 16)]
    await observe(api, experiment["id"], [{"nodes": n, "threads_per_client": t} for n, t in runs])
    analysis = (await api.get(f"/experiments/{experiment['id']}/analysis")).json()
    view = analysis["baseline"]
    assert view["config"] == baseline and view["runs"] == 1
    assert view["measured_mean"] == pytest.approx(tps(baseline))
    assert view["ci_low"] <= view["predicted"] <= view["ci_high"]
    gains = {g["of"]: g for g in view["gains"]}
    assert set(gains) == {"the predicted optimum", "the configuration to deploy"}
    optimum = gains["the predicted optimum"]
    assert optimum["predicted"] == pytest.approx(
        analysis["optimum"]["predicted"] - view["predicted"]
    )
    assert optimum["percent"] == pytest.approx(100 * optimum["predicted"] / view["predicted"])
    assert view["summary"].startswith("Today's configuration (nodes=1, threads_per_client=4)")
    assert "% better" in view["summary"]
