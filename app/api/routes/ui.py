"""The dashboard under /ui: a page of plain JavaScript that calls this API with the key the user
enters. Its files ship in the package (app/ui/static) and Plotly is the copy inside the `plotly`
package, so the page loads nothing from another host. The page and its assets need no key;
every data call it makes does."""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from fastapi import APIRouter, HTTPException, status
from fastapi.responses import FileResponse, RedirectResponse

STATIC = Path(__file__).resolve().parents[2] / "ui" / "static"
# The file names the page may load: a fixed list read once, so no path from a request ever
# reaches the file system.
ASSETS = frozenset(path.name for path in STATIC.iterdir() if path.is_file())
# The browser checks every load against this: scripts, styles and data from this origin only
# (Plotly sets inline styles and draws data: and blob: images; the traces the page draws,
# WebGL 3-D surfaces included, need no eval).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; connect-src 'self'; worker-src 'self' blob:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
# The page's own files change with each release of the package: revalidate every time.
FRESH = {"Cache-Control": "no-cache"}

router = APIRouter(prefix="/ui", include_in_schema=False)


def plotly_bundle() -> Path:
    """plotly.min.js inside the installed `plotly` package (found without importing it)."""
    spec = find_spec("plotly")
    if spec is None or spec.origin is None:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "the plotly package is not installed: reinstall galera-doe",
        )
    return Path(spec.origin).parent / "package_data" / "plotly.min.js"


@router.get("")
async def ui_root() -> RedirectResponse:
    """/ui -> /ui/, so the page's relative links resolve under /ui/."""
    return RedirectResponse("ui/", status_code=status.HTTP_308_PERMANENT_REDIRECT)


@router.get("/")
async def page() -> FileResponse:
    """The dashboard's one HTML page."""
    headers = FRESH | {"Content-Security-Policy": CONTENT_SECURITY_POLICY}
    return FileResponse(STATIC / "index.html", headers=headers)


@router.get("/vendor/plotly.min.js")
async def plotly() -> FileResponse:
    """The plotting library, from the installed plotly package."""
    return FileResponse(plotly_bundle(), media_type="text/javascript", headers=FRESH)


@router.get("/{name}")
async def asset(name: str) -> FileResponse:
    """One of the page's scripts or styles."""
    if name not in ASSETS:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no file {name} in the dashboard")
    media = "text/javascript" if name.endswith(".js") else None
    return FileResponse(STATIC / name, media_type=media, headers=FRESH)
