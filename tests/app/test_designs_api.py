"""The planner through the API: preview, stored run table as JSON and CSV, constraints, errors."""

from __future__ import annotations

import csv
import io
import itertools

import pytest

from experiments.errors import DomainError
from experiments.galera.target_spec import TargetSpec

FACTORS = [
    {"name": "nodes", "kind": "integer", "low": 1, "high": 9, "hard_to_change": True},
    {"name": "clients", "kind": "integer", "low": 1, "high": 8},
    {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
]
CONSTRAINT = "clients * threads_per_client <= 256"


async def test_preview_plans_without_storing(api):
    async def stored() -> list[tuple[int, dict]]:
        # Elapsed time moves on for running experiments: compare what is stored, not the clock.
        listed = (await api.get("/experiments", params={"limit": 500})).json()
        return [(e["id"], e["progress"]) for e in listed]

    before = await stored()
    response = await api.post(
        "/designs/preview",
        json={
            "factors": FACTORS,
            "design": {"kind": "full_factorial", "levels": 3, "centre_points": 2},
            "constraints": [CONSTRAINT],
            "target": "simulated",
        },
    )
    assert response.status_code == 200, response.text
    design = response.json()
    assert design["kind"] == "full_factorial" and design["model"] == "interaction"
    assert design["runs"] == len(design["points"]) == 27 + 2 - design["removed_by_constraints"]
    assert design["removed_by_constraints"] > 0
    assert all(
        p["config"]["clients"] * p["config"]["threads_per_client"] <= 256 for p in design["points"]
    )
    assert design["quality"]["runs"] == design["runs"]
    assert {p["whole_plot"] for p in design["points"]} == {1, 2, 3}
    assert await stored() == before


async def test_the_stored_run_table_as_json_and_csv(api):
    spec = {
        "name": "run by hand",
        "target": "manual",
        "factors": FACTORS,
        "design": {"kind": "full_factorial", "levels": 2, "centre_points": 1, "seed": 9},
        "constraints": [CONSTRAINT],
        "objective": {"response": "tps"},
    }
    created = await api.post("/experiments", json=spec)
    assert created.status_code == 201, created.text
    experiment = created.json()
    assert experiment["constraints"] == [CONSTRAINT]
    experiment_id = experiment["id"]

    table = (await api.get(f"/experiments/{experiment_id}/design")).json()
    assert table["runs"] == len(experiment["trials"]) == 8 + 1 - table["removed_by_constraints"]
    assert [p["run_order"] for p in table["points"]] == sorted(
        p["run_order"] for p in table["points"]
    )
    assert {p["status"] for p in table["points"]} == {"pending"}
    assert table["quality"]["d_efficiency"] is not None

    response = await api.get(f"/experiments/{experiment_id}/design", params={"format": "csv"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert len(rows) == table["runs"]
    assert [int(r["run_order"]) for r in rows] == [p["run_order"] for p in table["points"]]
    assert [int(r["nodes"]) for r in rows] == [p["config"]["nodes"] for p in table["points"]]
    assert {"whole_plot", "threads_per_client", "threads_per_client_coded"} <= set(rows[0])


@pytest.mark.parametrize(
    ("constraint", "words"),
    [
        ("clients * threads_per_client * nodes <= 9", "more than two"),
        ("colour <= 3", "unknown factor"),
        ("clients + 3", "<="),
        ("__import__('os').system('true') <= 1", ""),
    ],
)
async def test_bad_constraints_are_422_naming_the_constraint(api, constraint, words):
    response = await api.post(
        "/designs/preview", json={"factors": FACTORS, "constraints": ["nodes >= 1", constraint]}
    )
    assert response.status_code == 422, response.text
    detail = response.json()["detail"][0]
    assert detail["loc"][1:] == ["constraints", 1] and words in detail["msg"], detail


async def test_unknown_experiment_design_is_404(api):
    assert (await api.get("/experiments/424242/design")).status_code == 404


async def test_design_format_must_be_json_or_csv(api):
    # Its own experiment: with "/experiments/1" the answer hung on whether an earlier test of
    # the session had made experiment 1 (404 before the format is checked, else 422).
    spec = {"name": "format", "target": "manual", "factors": FACTORS, "design": None}
    created = await api.post("/experiments", json=spec | {"objective": {"response": "tps"}})
    assert created.status_code == 201, created.text
    path = f"/experiments/{created.json()['id']}/design"
    response = await api.get(path, params={"format": "xml"})
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"] == ["query", "format"]


TWO_NUMERIC = [
    {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
    {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
]
WITH_WORKLOAD = [
    *TWO_NUMERIC,
    {"name": "workload", "kind": "categorical", "levels": ["oltp_read_write", "oltp_read_only"]},
]
ELEVEN = [{"name": f"v{i}", "low": 0, "high": 1} for i in range(11)]
SIX = [{"name": f"v{i}", "low": 0, "high": 1} for i in range(6)]


@pytest.mark.parametrize(
    ("factors", "design", "loc", "words"),
    [
        (
            ELEVEN,
            {"kind": "fractional_factorial", "resolution": 6},
            ["design", "resolution"],
            "128 runs",
        ),
        (TWO_NUMERIC, {"kind": "box_behnken"}, ["design", "kind"], "at least 3"),
        (WITH_WORKLOAD, {"kind": "ccd"}, ["design", "kind"], "categorical"),
        (ELEVEN, {"kind": "full_factorial", "levels": 3}, ["design"], "limit of 2000"),
        (SIX, {"kind": "d_optimal", "model": "quadratic", "runs": 20}, ["design", "runs"], "28"),
        (
            [{"name": "nodes", "kind": "integer", "levels": [1, 3, 9]}, *SIX],
            {"kind": "fractional_factorial"},
            ["factors", 0, "levels"],
            "two-level",
        ),
        (SIX, {"kind": "plackett_burman", "runs": 10}, ["design", "runs"], "multiple of 4"),
        (SIX, {"kind": "fractional_factorial", "blocks": 3}, ["design", "blocks"], "power-of-two"),
    ],
)
async def test_impossible_designs_are_422_naming_the_rule(api, factors, design, loc, words):
    response = await api.post("/designs/preview", json={"factors": factors, "design": design})
    assert response.status_code == 422, response.text
    detail = response.json()["detail"][0]
    assert detail["loc"][1:] == loc and words in detail["msg"], detail


@pytest.mark.parametrize(
    ("factors", "design"),
    [
        (SIX, {"kind": "fractional_factorial", "resolution": 4}),
        (SIX, {"kind": "plackett_burman"}),
        (TWO_NUMERIC, {"kind": "ccd", "ccd_type": "face_centred"}),
        (SIX[:4], {"kind": "box_behnken", "blocks": 3}),
        (WITH_WORKLOAD, {"kind": "latin_hypercube", "runs": 12}),
        (WITH_WORKLOAD, {"kind": "d_optimal", "model": "interaction"}),
    ],
)
async def test_every_kind_previews_with_its_report(api, factors, design):
    response = await api.post("/designs/preview", json={"factors": factors, "design": design})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["kind"] == design["kind"] and body["runs"] == len(body["points"]) > 0
    assert body["quality"]["runs"] == body["runs"] and body["family"]


async def test_on_the_lab_nodes_is_hard_to_change(api):
    factors = [
        {"name": "nodes", "kind": "integer", "levels": [1, 2, 3]},
        {"name": "threads_per_client", "kind": "integer", "levels": [2, 4, 8]},
    ]
    response = await api.post(
        "/designs/preview", json={"factors": factors, "target": "lab", "design": {"seed": 3}}
    )
    design = response.json()
    nodes = [p["config"]["nodes"] for p in design["points"]]
    assert sum(a != b for a, b in itertools.pairwise(nodes)) == 2
    assert any("hard to change on the lab" in note for note in design["notes"])


# --- hard ranges (issue 54, item 5) -----------------------------------------------------------


async def test_a_ccd_over_integer_factors_is_face_centred_and_the_notes_say_why(api):
    # The circumscribed design planned nodes = -1 and 11: trials that failed at run time.
    response = await api.post(
        "/designs/preview", json={"factors": TWO_NUMERIC, "design": {"kind": "ccd"}}
    )
    assert response.status_code == 200, response.text
    design = response.json()
    assert {p["config"]["nodes"] for p in design["points"]} == {1, 5, 9}
    assert design["family"]["ccd_type"] == "face_centred"
    assert design["notes"][0].startswith("face-centred central composite design (alpha = 1)")
    assert "nodes = -1 and 11 (nodes is an integer factor bounded 1..9)" in design["notes"][0]


async def test_an_explicit_circumscribed_ccd_beyond_an_integer_range_is_422(api):
    response = await api.post(
        "/designs/preview",
        json={"factors": TWO_NUMERIC, "design": {"kind": "ccd", "ccd_type": "circumscribed"}},
    )
    assert response.status_code == 422, response.text
    detail = response.json()["detail"][0]
    assert detail["loc"][1:] == ["design", "ccd_type"]
    assert "nodes = -1 and 11" in detail["msg"] and "no planned run may leave" in detail["msg"]


async def test_the_targets_range_bounds_a_continuous_factors_axial_points(api):
    factors = [
        {"name": "write_share", "low": 0, "high": 1},
        {"name": "runtime_s", "low": 20, "high": 60},
    ]
    body = {"factors": factors, "design": {"kind": "ccd"}}
    anywhere = (await api.post("/designs/preview", json=body)).json()
    assert anywhere["family"]["ccd_type"] == "circumscribed"
    on_target = (await api.post("/designs/preview", json=body | {"target": "simulated"})).json()
    assert on_target["family"]["ccd_type"] == "face_centred"
    assert "the target accepts write_share from 0 to 1" in on_target["notes"][0]
    assert all(0 <= p["config"]["write_share"] <= 1 for p in on_target["points"])


async def test_a_stored_ccd_plans_only_runs_the_target_can_run(api):
    spec = {
        "name": "ccd on the simulated cluster",
        "target": "simulated",
        "factors": TWO_NUMERIC,
        "design": {"kind": "ccd", "seed": 2},
        "objective": {"response": "tps"},
    }
    created = await api.post("/experiments", json=spec)
    assert created.status_code == 201, created.text
    experiment = created.json()
    assert {t["config"]["nodes"] for t in experiment["trials"]} == {1, 5, 9}
    assert experiment["design_notes"][0].startswith("face-centred central composite design")


def test_storing_a_plan_checks_every_run_against_the_targets_ranges():
    simulated = TargetSpec(name="simulated", kind="simulated")
    simulated.check_plan([{"nodes": 16, "write_share": 0.0}])
    with pytest.raises(DomainError) as error:
        simulated.check_plan([{"nodes": 3, "write_share": 1.2}, {"nodes": 17, "write_share": 0.5}])
    assert error.value.field == "design"
    assert error.value.rule == "planned runs set nodes to 17: target 'simulated' accepts 1 to 16"
