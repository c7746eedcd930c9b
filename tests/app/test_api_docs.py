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
    assert set(analysis["properties"]) == engine | {"response", "trials_used", "trials_failed"}


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
