"""/docs and /redoc work without the internet: every script, style and image they reference is
served by the app itself, and each of those answers 200."""

from __future__ import annotations

import re

import pytest

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
