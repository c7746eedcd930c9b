"""The dashboard's files as the API serves them: no key needed, nothing from another host,
Plotly from the installed plotly package, and only the files the page is made of."""

from __future__ import annotations

import re

from app.api.routes.ui import ASSETS, STATIC

IMPORTS = re.compile(r"""from\s+["']\./([\w.-]+)["']""")
REFERENCES = re.compile(r"""(?:src|href)\s*=\s*["']([^"'#]+)["']""")


async def test_the_page_and_its_assets_need_no_key_and_come_from_the_api(api):
    api.headers.pop("Authorization")
    assert (await api.get("/ui")).headers["location"] == "ui/"
    page = await api.get("/ui/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "connect-src 'self'" in policy
    references = [r for r in REFERENCES.findall(page.text) if not r.startswith("data:")]
    assert references and not [r for r in references if "://" in r or r.startswith("//")]
    for reference in references:
        asset = await api.get(f"/ui/{reference}")
        assert asset.status_code == 200, reference
    plotly = await api.get("/ui/vendor/plotly.min.js")
    assert plotly.headers["content-type"].startswith("text/javascript")
    assert len(plotly.content) > 1_000_000 and b"plotly.js" in plotly.content[:2000]
    # The data calls are the ones that need the key.
    assert (await api.get("/experiments")).status_code == 401


async def test_every_module_the_scripts_import_is_served_as_javascript(api):
    scripts = sorted(name for name in ASSETS if name.endswith(".js"))
    assert "app.js" in scripts
    for name in scripts:
        text = (STATIC / name).read_text()
        assert "http://" not in text and "https://" not in text, name
        for imported in IMPORTS.findall(text):
            served = await api.get(f"/ui/{imported}")
            assert served.status_code == 200, (name, imported)
            assert served.headers["content-type"].startswith("text/javascript"), imported


async def test_nothing_but_the_dashboards_files_is_served(api):
    for path in ("/ui/../main.py", "/ui/%2e%2e%2fmain.py", "/ui/ui.py", "/ui/vendor/other.js"):
        assert (await api.get(path)).status_code == 404, path
