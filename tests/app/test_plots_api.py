"""Plots from the API: response slices as JSON and review plots as PNG, on both backends."""

from __future__ import annotations

import io
import itertools
import math

import pytest
from PIL import Image

from app.services.plots import PLOT_KINDS

FACTORS = [
    {"name": "clients", "kind": "integer", "low": 1, "high": 8, "unit": "machines"},
    {
        "name": "threads_per_client",
        "kind": "integer",
        "low": 2,
        "high": 32,
        "scale": "log2",
        "unit": "threads",
    },
    {"name": "workload", "kind": "categorical", "levels": ["read_write", "read_only"]},
]


def tps(clients: int, threads: int, workload: str) -> float:
    t = math.log2(threads)
    return (
        500
        + 40 * clients
        - 3 * clients**2
        + 90 * t
        - 12 * t**2
        + 2 * clients * t
        + (150 if workload == "read_only" else 0)
    )


async def surface_experiment(api) -> int:
    created = await api.post(
        "/experiments",
        json={
            "name": "plots",
            "target": "manual",
            "factors": FACTORS,
            "design": None,
            "objective": {
                "response": "tps",
                "constraints": [{"response": "latency_p95_ms", "max": 60}],
            },
        },
    )
    assert created.status_code == 201, created.text
    observations = [
        {
            "config": {"clients": c, "threads_per_client": t, "workload": w},
            "responses": {
                # A small deterministic wobble keeps residual degrees of freedom honest.
                "tps": tps(c, t, w) + ((i * 37) % 7 - 3),
                "latency_p95_ms": 3 * c * math.log2(t) + (5 if w == "read_write" else 0),
            },
        }
        for i, (c, t, w) in enumerate(
            itertools.product((1, 4, 8), (2, 8, 32), ("read_write", "read_only"))
        )
    ]
    recorded = await api.post(
        f"/experiments/{created.json()['id']}/observations", json=observations
    )
    assert recorded.status_code == 201, recorded.text
    return int(created.json()["id"])


def image(response) -> Image.Image:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    picture = Image.open(io.BytesIO(response.content))
    picture.verify()
    return Image.open(io.BytesIO(response.content))


@pytest.mark.parametrize("kind", [k for k in PLOT_KINDS if k != "half_normal"])
async def test_every_plot_is_a_png_of_the_asked_size(api, kind):
    experiment = await surface_experiment(api)
    url = f"/experiments/{experiment}/plots/{kind}.png"
    default = image(await api.get(url, params={"model": "quadratic"}))
    assert default.size == (800, 600)
    wide = image(await api.get(url, params={"model": "quadratic", "width": 1000, "height": 400}))
    assert wide.size == (1000, 400)
    # Not a blank canvas: a real plot has many colours.
    assert len(default.convert("RGB").getcolors(maxcolors=1 << 20) or []) > 50


@pytest.mark.parametrize("kind", ["contour", "surface", "interaction"])
async def test_two_factor_plots_differ_with_their_factors(api, kind):
    experiment = await surface_experiment(api)
    url = f"/experiments/{experiment}/plots/{kind}.png"
    first = await api.get(url, params={"x": "clients", "y": "threads_per_client"})
    second = await api.get(url, params={"x": "threads_per_client", "y": "workload"})
    other_response = await api.get(
        url, params={"x": "clients", "y": "threads_per_client", "response": "latency_p95_ms"}
    )
    assert image(first).size == image(second).size == (800, 600)
    assert first.content != second.content
    assert first.content != image(other_response).tobytes() and first.content != (
        other_response.content
    )


async def test_surface_slice_predicts_over_the_grid_with_the_constraint(api):
    experiment = await surface_experiment(api)
    response = await api.get(
        f"/experiments/{experiment}/surface",
        params={"x": "clients", "y": "threads_per_client", "model": "quadratic", "points": 8},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["x_values"] == list(range(1, 9))
    assert body["y_values"][0] == 2 and body["y_values"][-1] == 32
    assert len(body["predicted"]) == len(body["y_values"])
    assert all(len(row) == 8 for row in body["predicted"])
    assert (
        body["held"]
        == {"workload": body["optimum"]["config"]["workload"]}
        == {"workload": "read_only"}
    )
    # The quadratic model reproduces the quadratic truth up to the wobble.
    j, i = 3, body["x_values"].index(4)
    threads = body["y_values"][j]
    assert body["predicted"][j][i] == pytest.approx(tps(4, threads, "read_only"), abs=8)
    assert all(
        lo <= p <= hi
        for lo, p, hi in zip(
            body["ci_low"][j], body["predicted"][j], body["ci_high"][j], strict=True
        )
    )
    # The latency limit cuts the high-clients, high-threads corner.
    assert body["feasible"][0][0] and not body["feasible"][-1][-1]
    assert len(body["runs"]) == 18


async def test_a_surface_holds_the_other_factors_where_asked_and_can_be_smooth(api):
    experiment = await surface_experiment(api)
    url = f"/experiments/{experiment}/surface"
    params = {"x": "clients", "y": "workload", "model": "quadratic", "points": 8}
    at_optimum = (await api.get(url, params=params)).json()
    moved = await api.get(url, params=params | {"held": "threads_per_client:2"})
    assert moved.status_code == 200, moved.text
    body = moved.json()
    assert body["held"] == {"threads_per_client": 2}
    assert body["optimum"] == at_optimum["optimum"]
    i = body["x_values"].index(4)
    assert body["predicted"][1][i] == pytest.approx(tps(4, 2, "read_only"), abs=8)
    assert body["predicted"] != at_optimum["predicted"]
    smooth = await api.get(
        url,
        params={"x": "clients", "y": "threads_per_client", "points": 15, "continuous": "true"},
    )
    assert smooth.status_code == 200, smooth.text
    assert smooth.json()["continuous"] and len(smooth.json()["x_values"]) == 15
    assert smooth.json()["held"] == {"workload": at_optimum["optimum"]["config"]["workload"]}
    for held, loc in [
        ("threads_per_client:64", ["query", "held", "threads_per_client"]),
        ("workload:write_only", ["query", "held", "workload"]),
        ("nodes:3", ["query", "held", "nodes"]),
        ("threads", ["query", "held"]),
    ]:
        refused = await api.get(url, params=params | {"held": held})
        assert refused.status_code == 422, (held, refused.text)
        assert refused.json()["detail"][0]["loc"] == loc, (held, refused.text)


async def test_bad_plot_requests_are_422_naming_the_field(api):
    experiment = await surface_experiment(api)
    base = f"/experiments/{experiment}"
    cases = [
        (f"{base}/plots/contour.png", {"x": "nodes"}, ["query", "x"]),
        (f"{base}/plots/contour.png", {"x": "clients", "y": "clients"}, ["query", "y"]),
        (f"{base}/plots/contour.png", {"width": 10}, ["query", "width"]),
        (f"{base}/plots/half_normal.png", {}, ["query", "kind"]),
        (f"{base}/plots/pie.png", {}, ["path", "kind"]),
        (f"{base}/surface", {"points": 1}, ["query", "points"]),
        (f"{base}/plots/progress.png", {"response": "qps"}, ["query", "response"]),
    ]
    for url, params, loc in cases:
        response = await api.get(url, params=params)
        assert response.status_code == 422, (url, params, response.text)
        assert response.json()["detail"][0]["loc"] == loc, (url, params, response.text)
    assert (await api.get("/experiments/999999/plots/contour.png")).status_code == 404


async def test_half_normal_plot_of_an_unreplicated_two_level_design(api):
    factors = [{"name": name, "kind": "continuous", "low": -1, "high": 1} for name in "ABCD"]
    created = await api.post(
        "/experiments",
        json={
            "name": "two-level",
            "target": "manual",
            "factors": factors,
            "design": None,
            "objective": {"response": "tps"},
        },
    )
    observations = [
        {
            "config": dict(zip("ABCD", signs, strict=True)),
            "responses": {"tps": 70 + 10 * signs[0] + 5 * signs[2] + 4 * signs[0] * signs[2]
                          + 0.3 * signs[1] * signs[3] - 0.2 * signs[1]},
        }
        for signs in itertools.product((-1, 1), repeat=4)
    ]  # fmt: skip
    await api.post(f"/experiments/{created.json()['id']}/observations", json=observations)
    url = f"/experiments/{created.json()['id']}/plots/half_normal.png"
    assert image(await api.get(url, params={"model": "linear"})).size == (800, 600)
