"""The API documents itself offline and completely: /docs and /redoc load every script, style
and image from the app itself; every schema field has a description and a type; every 422 is
documented with the one model of field errors."""

from __future__ import annotations

import dataclasses
import re

import pytest

from app.api.field_docs import undescribed
from experiments.analysis import Analysis

REFERENCES = re.compile(r"""(?:src|href|url)\s*[=:(]\s*['"]?([^'")\s>]+)""")


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_the_docs_reference_no_external_host(api, page: str) -> None:
    response = await api.get(page)
    assert response.status_code == 200
    html = response.text
    references = [r for r in REFERENCES.findall(html) if not r.startswith(("#", "data:"))]
    assert references, html
    external = [r for r in references if "://" in r or r.startswith("//")]
    assert external == [], external
    assert "cdn." not in html and "fonts.googleapis" not in html
    for reference in references:
        asset = await api.get(reference)
        assert asset.status_code == 200, reference
        assert len(asset.content) > 100, reference


async def test_every_schema_field_has_a_description_and_a_type(api) -> None:
    schema = (await api.get("/openapi.json")).json()
    assert undescribed(schema) == []
    untyped = [
        f"{name}.{field}"
        for name, component in schema["components"]["schemas"].items()
        for field, prop in (component.get("properties") or {}).items()
        if not ({"type", "$ref", "anyOf", "allOf", "oneOf", "enum", "const"} & set(prop))
    ]
    assert untyped == []
    analysis = schema["components"]["schemas"]["AnalysisOut"]
    engine = {field.name for field in dataclasses.fields(Analysis)}
    assert set(analysis["properties"]) == engine | {
        "response",
        "trials_used",
        "trials_failed",
        "baseline",
    }


async def test_every_422_is_documented_with_the_field_errors_model(api) -> None:
    schema = (await api.get("/openapi.json")).json()
    refusals = [
        (path, method, operation["responses"]["422"])
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if "422" in operation["responses"]
    ]
    keyed = [
        (path, method)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if "401" in operation["responses"]
    ]
    assert [(path, method) for path, method, _ in refusals] == keyed and len(keyed) > 10
    for path, method, answer in refusals:
        reference = answer["content"]["application/json"]["schema"]["$ref"]
        assert reference.endswith("/FieldErrorsOut"), (path, method)


OPERATION_IDS = {
    ("post", "/experiments"): "create_experiment",
    ("get", "/experiments"): "list_experiments",
    ("get", "/experiments/{experiment_id}"): "get_experiment",
    ("get", "/experiments/{experiment_id}/trials"): "list_trials",
    ("post", "/experiments/{experiment_id}/start"): "start_experiment",
    ("post", "/experiments/{experiment_id}/cancel"): "cancel_experiment",
    ("post", "/experiments/{experiment_id}/observations"): "record_observations",
    ("get", "/experiments/{experiment_id}/analysis"): "get_analysis",
    ("post", "/experiments/{experiment_id}/suggestions"): "suggest",
    ("get", "/experiments/{experiment_id}/suggestions"): "list_suggestions",
    (
        "post",
        "/experiments/{experiment_id}/suggestions/{suggestion_id}/accept",
    ): "accept_suggestion",
    ("post", "/experiments/{experiment_id}/optimize"): "start_optimization",
    ("post", "/experiments/{experiment_id}/confirm"): "confirm",
    ("get", "/experiments/{experiment_id}/confirmations"): "list_confirmations",
    ("get", "/experiments/{experiment_id}/confirmations/{confirmation_id}"): "get_confirmation",
    ("get", "/experiments/{experiment_id}/surface"): "get_surface",
    ("get", "/experiments/{experiment_id}/plots/{kind}.png"): "get_plot",
    ("get", "/experiments/{experiment_id}/design"): "get_design",
    ("get", "/trials/{trial_id}"): "get_trial",
    ("post", "/designs/preview"): "preview_design",
    ("get", "/targets"): "list_targets",
    ("get", "/strategies"): "list_strategies",
    ("get", "/health"): "get_health",
}


def operations(schema: dict) -> dict[tuple[str, str], dict]:
    return {
        (method, path): operation
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
    }


async def test_operation_ids_are_short_names_of_what_they_do(api) -> None:
    schema = (await api.get("/openapi.json")).json()
    ids = {key: operation["operationId"] for key, operation in operations(schema).items()}
    assert ids == OPERATION_IDS


async def test_png_and_csv_answers_have_a_schema(api) -> None:
    paths = (await api.get("/openapi.json")).json()["paths"]
    png = paths["/experiments/{experiment_id}/plots/{kind}.png"]["get"]["responses"]["200"]
    assert png["content"] == {"image/png": {"schema": {"type": "string", "format": "binary"}}}
    design = paths["/experiments/{experiment_id}/design"]["get"]["responses"]["200"]["content"]
    assert design["text/csv"] == {"schema": {"type": "string"}}
    assert design["application/json"]["schema"] == {"$ref": "#/components/schemas/DesignOut"}


async def test_an_experiment_answers_its_factors_objective_and_design_typed(api) -> None:
    components = (await api.get("/openapi.json")).json()["components"]["schemas"]
    out = components["ExperimentOut"]["properties"]
    assert out["factors"]["items"] == {"$ref": "#/components/schemas/FactorOut"}
    assert out["objective"]["$ref"] == "#/components/schemas/ObjectiveOut"
    assert out["design"]["anyOf"] == [
        {"$ref": "#/components/schemas/DesignSpecOut"},
        {"type": "null"},
    ]
    assert components["SurfaceOut"]["properties"]["optimum"]["$ref"].endswith("/Optimum")
    for name, model in (("FactorOut", "FactorIn"), ("ObjectiveOut", "ObjectiveIn")):
        assert set(components[name]["required"]) == set(components[model]["properties"]), name


async def test_start_takes_an_optional_start_in_body_never_null(api) -> None:
    schema = (await api.get("/openapi.json")).json()
    body = schema["paths"]["/experiments/{experiment_id}/start"]["post"]["requestBody"]
    assert body.get("required", False) is False
    assert body["content"]["application/json"]["schema"]["$ref"].endswith("/StartIn")
    spec = {
        "name": "start",
        "target": "simulated",
        "factors": [{"name": "nodes", "kind": "integer", "low": 1, "high": 3}],
        "objective": {"response": "tps"},
    }
    first = (await api.post("/experiments", json=spec)).json()["id"]
    second = (await api.post("/experiments", json=spec)).json()["id"]
    assert (await api.post(f"/experiments/{first}/start")).status_code == 200
    null = await api.post(
        f"/experiments/{second}/start",
        content=b"null",
        headers={"Content-Type": "application/json"},
    )
    assert null.status_code == 422 and null.json()["detail"][0]["loc"] == ["body"]


async def test_what_a_body_may_be_refused_for_is_documented_where_bodies_are_read(api) -> None:
    schema = (await api.get("/openapi.json")).json()
    for (method, path), operation in operations(schema).items():
        codes = set(operation["responses"])
        assert "400" not in codes, (method, path)
        assert ({"413", "415"} <= codes) == ("requestBody" in operation), (method, path)
    path = "/designs/preview"
    not_utf8 = await api.post(
        path, content=b'{"factors": "\xff"}', headers={"Content-Type": "application/json"}
    )
    assert not_utf8.status_code == 422, not_utf8.text
    assert not_utf8.json()["detail"][0]["loc"] == ["body", 13]
    assert not_utf8.json()["detail"][0]["type"] == "json_invalid"
    for content_type in ("text/plain", None):
        headers = {"Content-Type": content_type} if content_type else {}
        other = await api.post(path, content=b'{"factors": []}', headers=headers)
        assert other.status_code == 415, (content_type, other.text)
        assert "application/json" in other.json()["detail"]
    plus_json = await api.post(
        path, content=b'{"factors": []}', headers={"Content-Type": "application/problem+json"}
    )
    assert plus_json.status_code == 422  # read as JSON: the empty factor list is refused


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/experiments", "GET, POST"),
        ("DELETE", "/experiments/1", "GET"),
        ("GET", "/experiments/1/start", "POST"),
        ("PATCH", "/experiments/1/suggestions", "GET, POST"),
        ("POST", "/health", "GET"),
    ],
)
async def test_a_405_allows_every_method_the_path_has(api, method: str, path: str, allow: str):
    response = await api.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allow
