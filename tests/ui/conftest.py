"""The dashboard in a real browser: Debian's Chromium driven headless by Playwright, against a
live API and worker (the suite's `settings`: each backend, the test Redis).

No browser is downloaded: Playwright launches /usr/bin/chromium (`make setup` installs it). A
missing browser fails the tests, it never skips them. Every page's requests are recorded, and
each test saves screenshots of its pages outside the repository (GALERA_DOE_UI_SCREENS, default
/tmp/galera-doe-ui-screens) for a person to look at.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import pytest

from app.config import Settings
from client.http import Client
from client.processes import Service, running_service
from tests.conftest import ServiceMissingError, service_env

CHROMIUM = Path(os.environ.get("GALERA_DOE_CHROMIUM", "/usr/bin/chromium"))
SCREENS = Path(os.environ.get("GALERA_DOE_UI_SCREENS", "/tmp/galera-doe-ui-screens"))
KEY_STORAGE = "galera-doe.api-key"
T = TypeVar("T")
# A pace a real benchmark trial would have in minutes, shrunk so a test can watch trials finish.
PACED_SECONDS = 2.0
# Noise-free: the simulated noise is keyed by trial ids, which depend on what ran before on the
# suite's database, and the surfaces these tests look at must not.
TARGETS = [
    {"name": "simulated", "kind": "simulated", "settings": {"noise": 0}},
    {"name": "paced", "kind": "simulated", "settings": {"seconds_per_trial": PACED_SECONDS}},
    {"name": "manual", "kind": "manual"},
]

try:
    from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, sync_playwright
except ImportError as missing:  # the dev extra was not installed
    raise ServiceMissingError(
        f"Playwright is not installed ({missing}): run `make setup` (pip install -e '.[dev]')"
    ) from missing


@pytest.fixture(scope="module")
def ui_service(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    """The API and one worker as child processes, with a paced simulated target and a manual
    one beside the instant simulated target."""
    root = tmp_path_factory.mktemp("ui-service")
    env = service_env(settings, root, TARGETS)
    with running_service(env, root, loglevel="WARNING", owner="ui-tester") as service:
        yield service


@pytest.fixture(scope="module")
def client(ui_service: Service) -> Client:
    """A REST client of the live API with the key the browser uses."""
    return ui_service.client


@pytest.fixture(scope="module")
def browser(ui_service: Service) -> Iterator[Browser]:
    """Debian's Chromium, headless; software WebGL so the 3-D surfaces draw without a GPU.

    Started after the service and stopped before it: Playwright's sync API runs an event loop
    in this thread, and the service's key admin (asyncio.run) needs none to be running."""
    if not CHROMIUM.exists():
        raise ServiceMissingError(
            f"Chromium is not installed at {CHROMIUM}: run `make setup` "
            "(apt-get install chromium chromium-driver)"
        )
    playwright: Playwright = sync_playwright().start()
    try:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--enable-unsafe-swiftshader"]
        )
    except Exception as error:
        playwright.stop()
        raise ServiceMissingError(f"Chromium at {CHROMIUM} did not start: {error}") from error
    yield launched
    launched.close()
    playwright.stop()


def off_the_loop(function: Callable[..., T], *args: object) -> T:
    """Call `function` in another thread: one that uses asyncio.run (the key admin) cannot run
    in this one while Playwright's event loop does."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(function, *args).result()


@dataclass
class Browse:
    """One browser page on the dashboard, and what it did: every URL it requested, its
    console errors and uncaught exceptions."""

    page: Page
    base_url: str
    shots: Path
    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)

    def open(self, hash_path: str = "#/") -> None:
        """Load the dashboard at a view (#/, #/experiments/ID, #/compare?ids=...)."""
        self.page.goto(f"{self.base_url}/ui/{hash_path}")

    def resize(self, width: int, height: int) -> None:
        """A new window size, once every plot has been laid out again to fit it."""
        self.page.set_viewport_size({"width": width, "height": height})
        self.page.wait_for_function(
            "() => [...document.querySelectorAll('.js-plotly-plot')].every("
            "p => !p._fullLayout || p.offsetParent === null"
            " || Math.abs(p._fullLayout.width - p.clientWidth) <= 2)"
        )

    def shot(self, name: str) -> Path:
        """Save a screenshot of the whole page."""
        path = self.shots / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def wait_for_plot(self, element_id: str) -> None:
        """Wait until Plotly has drawn in the element."""
        self.page.wait_for_function(
            "(id) => { const node = document.getElementById(id);"
            " return Boolean(node && node.data && node.data.length); }",
            arg=element_id,
        )

    def plot_data(self, element_id: str) -> list[dict]:
        """The traces Plotly drew in an element."""
        return self.page.evaluate(
            "(id) => (document.getElementById(id).data || []).map("
            "t => ({type: t.type, name: t.name, x: t.x, y: t.y, z: t.z}))",
            element_id,
        )

    def assert_stayed_home(self) -> None:
        """Every request went to the API's own host and port; nothing failed in the page
        (an error the API answered on purpose shows as a failed load and is allowed)."""
        home = urlsplit(self.base_url).netloc
        assert self.requests, "the page made no request"
        away = [url for url in self.requests if urlsplit(url).netloc != home]
        assert away == [], away
        assert self.page_errors == [], self.page_errors
        unexpected = [
            text for text in self.console_errors if not text.startswith("Failed to load resource")
        ]
        assert unexpected == [], unexpected


BrowseAs = Callable[[str], "Browse"]


def _backend(settings: Settings) -> str:
    return "sqlite" if settings.database_url.startswith("sqlite") else "mariadb"


@contextmanager
def _browsing(
    browser: Browser, service: Service, shots: Path, *, key: str | None
) -> Iterator[Browse]:
    """A fresh browser context at 1280x800 recording every request; with `key`, the API key
    is in its session storage already (as if entered once in this tab)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    if key is not None:
        context.add_init_script(
            f"window.sessionStorage.setItem({json.dumps(KEY_STORAGE)}, {json.dumps(key)})"
        )
    page = context.new_page()
    page.set_default_timeout(20_000)
    shots.mkdir(parents=True, exist_ok=True)
    session = Browse(page=page, base_url=service.client.base_url, shots=shots)
    page.on("request", lambda r: session.requests.append(r.url))
    page.on("pageerror", lambda error: session.page_errors.append(str(error)))

    def console(message: ConsoleMessage) -> None:
        if message.type == "error":
            session.console_errors.append(message.text)

    page.on("console", console)
    try:
        yield session
    finally:
        context.close()


@pytest.fixture
def shots(settings: Settings, request: pytest.FixtureRequest) -> Path:
    """Where this test's screenshots go: one folder per backend and test."""
    test = re.sub(r"[^A-Za-z0-9_-]+", "_", request.node.originalname)
    folder = SCREENS / f"{_backend(settings)}-{test}"
    shutil.rmtree(folder, ignore_errors=True)  # only this run's pictures
    return folder


@pytest.fixture
def browse(browser: Browser, ui_service: Service, shots: Path) -> Iterator[Browse]:
    """The dashboard in a fresh tab that has the API key already."""
    with _browsing(browser, ui_service, shots, key=ui_service.api_key) as session:
        yield session


@pytest.fixture
def browse_without_key(browser: Browser, ui_service: Service, shots: Path) -> Iterator[Browse]:
    """The dashboard in a fresh tab that has no key yet."""
    with _browsing(browser, ui_service, shots, key=None) as session:
        yield session


@pytest.fixture
def browse_as(browser: Browser, ui_service: Service, shots: Path) -> Iterator[BrowseAs]:
    """`browse_as(key)`: the dashboard in another fresh tab with another key."""
    with ExitStack() as stack:

        def open_as(key: str) -> Browse:
            return stack.enter_context(_browsing(browser, ui_service, shots, key=key))

        yield open_as
