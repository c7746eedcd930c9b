"""Shapes of data, not shapes of requests: small and degenerate experiments never get a 500.

Hypothesis builds experiments of 2 to 12 runs on 1 to 5 factors (integer, continuous and
categorical), some of them degenerate on purpose: a factor held at one level, only a few points
replicated, a constant response, two factors that always move together, trials that failed.
Every model order goes through the analysis and the surface, and every plot kind is drawn:
each answer is a 200 or a 422 whose first error names a field and says what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import update

from app.db.models import Trial
from app.db.session import Database
from app.services.plots import PLOT_KINDS
from experiments.terms import MODEL_ORDERS

SHAPES = ("random", "single_level", "replicated", "constant", "collinear")


@dataclass(frozen=True)
class SmallExperiment:
    """Factors, observed runs, and which of them failed."""

    factors: list[dict[str, Any]]
    configs: list[dict[str, Any]]
    tps: list[float]
    failed: list[int]
    shape: str


def _factor(i: int, kind: str) -> dict[str, Any]:
    name = f"f{i}"
    if kind == "categorical":
        return {"name": name, "kind": "categorical", "levels": ["a", "b", "c"]}
    return {"name": name, "kind": kind, "low": 1, "high": 9}


def _value(factor: dict[str, Any], draw: st.DrawFn) -> Any:
    if factor["kind"] == "categorical":
        return draw(st.sampled_from(factor["levels"]))
    if factor["kind"] == "integer":
        return draw(st.integers(1, 9))
    return draw(st.sampled_from([1.0, 2.5, 5.0, 7.5, 9.0]))


@st.composite
def small_experiments(draw: st.DrawFn) -> SmallExperiment:
    kinds = draw(
        st.lists(st.sampled_from(["integer", "continuous", "categorical"]), min_size=1, max_size=5)
    )
    factors = [_factor(i, kind) for i, kind in enumerate(kinds)]
    runs = draw(st.integers(2, 12))
    shape = draw(st.sampled_from(SHAPES))
    if shape == "replicated":
        distinct = [
            {f["name"]: _value(f, draw) for f in factors} for _ in range(draw(st.integers(1, 2)))
        ]
        configs = [dict(distinct[i % len(distinct)]) for i in range(runs)]
    else:
        configs = [{f["name"]: _value(f, draw) for f in factors} for _ in range(runs)]
    if shape == "single_level":
        held = factors[draw(st.integers(0, len(factors) - 1))]["name"]
        for config in configs:
            config[held] = configs[0][held]
    if shape == "collinear" and len(factors) >= 2 and factors[0]["kind"] == factors[1]["kind"]:
        for config in configs:
            config["f1"] = config["f0"]
    if shape == "constant":
        tps = [1490.0] * runs
    else:
        tps = draw(st.lists(st.integers(100, 5000).map(float), min_size=runs, max_size=runs))
    failed = draw(st.lists(st.integers(0, runs - 1), max_size=2, unique=True))
    return SmallExperiment(factors, configs, tps, failed, shape)


def _assert_answer(response: Any, what: str) -> None:
    assert response.status_code in (200, 422), f"{what}: {response.status_code} {response.text}"
    if response.status_code == 422:
        detail = response.json()["detail"][0]
        assert detail["loc"] and detail["msg"], f"{what}: {detail}"


async def _observe(api: Any, database: Database, data: SmallExperiment) -> int:
    created = await api.post(
        "/experiments",
        json={
            "name": f"small {data.shape}",
            "target": "manual",
            "factors": data.factors,
            "design": None,
            "objective": {"response": "tps"},
        },
    )
    assert created.status_code == 201, created.text
    experiment_id = created.json()["id"]
    observations = [
        {"config": config, "responses": {"tps": tps}}
        for config, tps in zip(data.configs, data.tps, strict=True)
    ]
    recorded = await api.post(f"/experiments/{experiment_id}/observations", json=observations)
    assert recorded.status_code == 201, recorded.text
    trial_ids = [trial["id"] for trial in recorded.json()]
    if data.failed:
        failed = [trial_ids[i] for i in data.failed]
        async with database.session() as session, session.begin():
            await session.execute(
                update(Trial)
                .where(Trial.id.in_(failed))
                .values(status="failed", error="sysbench exited with status 1")
            )
    return experiment_id


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=small_experiments(), plot_model=st.sampled_from(MODEL_ORDERS))
async def test_small_and_degenerate_data_get_an_answer_or_a_422_never_a_500(
    api: Any, database: Database, data: SmallExperiment, plot_model: str
) -> None:
    experiment_id = await _observe(api, database, data)
    path = f"/experiments/{experiment_id}"
    for model in MODEL_ORDERS:
        analysis = await api.get(f"{path}/analysis", params={"model": model})
        _assert_answer(analysis, f"analysis {model}")
        if analysis.status_code == 200:
            assert analysis.json()["model_label"].startswith(model)
        surface = await api.get(f"{path}/surface", params={"model": model, "points": 5})
        _assert_answer(surface, f"surface {model}")
    for kind in PLOT_KINDS:
        plot = await api.get(
            f"{path}/plots/{kind}.png", params={"model": plot_model, "width": 320, "height": 240}
        )
        _assert_answer(plot, f"plot {kind} ({plot_model})")


async def test_a_two_by_two_gets_the_model_its_four_runs_support(api: Any, database: Database):
    """The report that started this: 2 x 2 lab runs, model=auto and the contour were 500s."""
    factors = [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 3},
        {"name": "threads", "kind": "integer", "low": 1, "high": 8},
    ]
    configs = [{"nodes": n, "threads": t} for n in (1, 3) for t in (1, 8)]
    data = SmallExperiment(factors, configs, [100.0, 300.0, 150.0, 320.0], [], "random")
    experiment_id = await _observe(api, database, data)
    analysis = await api.get(f"/experiments/{experiment_id}/analysis", params={"model": "auto"})
    assert analysis.status_code == 200, analysis.text
    assert (
        analysis.json()["model_label"]
        == "auto (selected from the linear model by AICc): nodes + threads"
    )
    contour = await api.get(f"/experiments/{experiment_id}/plots/contour.png")
    assert contour.status_code == 200, contour.text
    quadratic = await api.get(
        f"/experiments/{experiment_id}/analysis", params={"model": "quadratic"}
    )
    assert quadratic.status_code == 422
    detail = quadratic.json()["detail"][0]
    assert detail["loc"] == ["query", "model"]
    assert "needs at least 5 successful runs" in detail["msg"]
