"""Real services for the suite: MariaDB and SQLite databases, Redis. A missing service fails.

Database tests run on SQLite, and those of what the backend changes on MariaDB too
(`BOTH_BACKENDS`). Each backend gets a database of its own, created and migrated here and
dropped at the end; Redis gets a database number of its own, flushed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import asyncmy
import pytest
import redis
import yaml
from fastapi import FastAPI
from httpx import ASGITransport, AsyncClient
from xdist.scheduler import LoadScopeScheduling

from app.config import Settings
from app.db.migrate import upgrade_to_head
from app.db.session import Database
from app.main import create_app
from app.queue import TRIALS_QUEUE_PREFIX
from app.services import api_keys
from app.services.api_keys import Role
from app.target_specs import DEFAULT_TARGETS
from client.http import Client
from client.processes import running_service
from tests import leaks
from worker.lab.layout import LabLayout, free_layout
from worker.lab.supervisor import LabCluster

MARIADB = {"host": "127.0.0.1", "port": 3306, "user": "root", "password": ""}
# The suite's Redis database; an xdist worker gwN takes this number plus 4 N (gw1: 15), beside
# the modules' own (10 the lab demo's, 12 the CLI's, 13 the simulated demos', 14 the schema
# fuzzer's).
_REDIS_SERVER, _REDIS_DB = os.environ.get(
    "GALERA_DOE_TEST_REDIS_URL", "redis://127.0.0.1:6379/11"
).rsplit("/", 1)
_XDIST_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:])
TEST_REDIS_URL = f"{_REDIS_SERVER}/{int(_REDIS_DB) + 4 * _XDIST_WORKER}"
BACKENDS = ("sqlite", "mariadb")


RUN_MARK = leaks.mark_this_run()
_NAMESPACES_BEFORE = pytest.StashKey[set[str]]()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Note the lab namespaces there before the suite (another lab's)."""
    session.stash[_NAMESPACES_BEFORE] = leaks.namespaces()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fail the run when a lab node, sysbench, delay proxy or namespace it started is left
    running (then stop it by pid): a node that outlives the suite runs on after `make test`."""
    if hasattr(session.config, "workerinput"):
        return  # an xdist worker: the run that started it checks once, at its end
    found = leaks.leftovers(RUN_MARK, session.stash.get(_NAMESPACES_BEFORE, set()))
    if not found:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = ["the suite left these running (now stopped):", *map(str, found)]
    if reporter is not None:
        reporter.write_sep("=", "leak check failed", red=True)
        reporter.write_line("\n".join(lines))
    leaks.remove(found)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


# `make test-fast` (-m fast): the pure and API tests, for the inner loop. Not in it: lab
# clusters, worker and API processes, browsers, notebooks, benchmarks.
FAST_PATHS = ("tests/experiments/", "tests/app/", "tests/client/", "tests/worker/", "tests/test_")
PROCESS_FIXTURES = frozenset({"service", "worker", "stack", "ui_service"})
# Also left to `make test`: what starts processes, and the slowest sweeps (schema fuzzing,
# every plot rendered, searches of many rounds), several seconds of CPU each.
NOT_FAST = (
    "tests/test_readme_quickstart.py::",
    "tests/app/test_compose.py::",
    "tests/app/test_openapi_contract.py::",
    "tests/app/test_schema_fuzz.py::",
    "tests/app/test_plots_api.py::",
    "tests/app/test_small_data.py::test_small_and_degenerate_data_get_an_answer_or_a_422",
    "tests/experiments/test_plots.py::test_residual_standouts_are_labelled_with_their_trial",
    "tests/experiments/test_suggest_bayes.py::test_a_leader_passed_over_for_its_uncertainty",
    "tests/experiments/test_suggest_bayes.py::test_a_noisy_shape_is_never_fitted_as_all_noise",
    "tests/experiments/test_suggest_bayes.py::test_minimize_finds_the_exact_integer_minimum",
    "tests/experiments/test_suggest_bayes.py::test_a_latency_that_grows_by_factors_is_",
    "tests/experiments/test_suggest_fidelity.py::test_where_the_length_changes_nothing_short",
)


# The modules that run the suite's lab cluster (`suite_lab_layout`), first and in this order: the
# demo's first trial bootstraps it; test_galera ends by wiping it (its own bootstrap test).
# test_confirm_lab runs beside them, on the other worker's lab cluster (each xdist worker's
# session has a `suite_lab_layout` of its own): its assertions hold whatever else runs.
LAB_MODULES = (
    "tests/integration/test_demo_lab.py",
    "tests/integration/test_lab.py",
    "tests/integration/test_lab_cancel.py",
    "tests/worker/test_wan_lab.py",
    "tests/worker/test_galera.py",
)


def _lab_rank(item: pytest.Item) -> int:
    path = item.nodeid.split("::", 1)[0]
    return LAB_MODULES.index(path) if path in LAB_MODULES else len(LAB_MODULES)


class LabInOneUnit(LoadScopeScheduling):
    """xdist's schedule for `make test` (`--dist=loadscope`): the lab modules are one unit of
    work, run in order by one worker while the others run the rest, each module a unit (its
    fixtures set up once). A scheduler, not xdist_group marks: pytest 9.2 ignores the node ids
    that loadgroup rewrites (pytest-dev/pytest-xdist#1386)."""

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        return "lab" if path in LAB_MODULES else path


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LabInOneUnit | None:
    """The lab in one unit of work under `--dist=loadscope`; xdist's own schedule otherwise."""
    return LabInOneUnit(config, log) if config.getvalue("dist") == "loadscope" else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the fast tests (`make test-fast`); run the lab modules first, one after the other."""
    items.sort(key=_lab_rank)
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        fixtures = set(getattr(item, "fixturenames", ()))
        if (
            path.startswith(FAST_PATHS)
            and not item.nodeid.startswith(NOT_FAST)
            and item.get_closest_marker("integration") is None
            and not fixtures & PROCESS_FIXTURES
        ):
            item.add_marker(pytest.mark.fast)


class ServiceMissingError(RuntimeError):
    """A service the suite needs is not reachable: the suite fails, it never skips."""


async def mariadb(statement: str) -> None:
    """Run one statement on the test MariaDB server as root."""
    try:
        connection = await asyncmy.connect(**MARIADB)
    except Exception as error:
        raise ServiceMissingError(
            f"MariaDB is not reachable at {MARIADB['host']}:{MARIADB['port']} as root "
            f"({error}); run `make setup`"
        ) from error
    try:
        async with connection.cursor() as cursor:
            await cursor.execute(statement)
    finally:
        connection.close()


def clear_trial_queues(broker_url: str) -> None:
    """Drop every message waiting in a target's queue (another module's leftovers)."""
    client = redis.Redis.from_url(broker_url)
    for queue in client.scan_iter(match=f"{TRIALS_QUEUE_PREFIX}*"):
        client.delete(queue)
    client.close()


def service_env(
    settings: Settings, root: Path, targets: list[dict] | None = None
) -> dict[str, str]:
    """The environment of the API and worker child processes on the test database and Redis,
    serving `targets` (written to a file in `root`) instead of the built-in ones when given;
    the trial queues are cleared of another module's leftovers first."""
    clear_trial_queues(settings.broker_url)
    env = os.environ | {
        "GALERA_DOE_DATABASE_URL": settings.database_url,
        "GALERA_DOE_BROKER_URL": settings.broker_url,
    }
    if targets is not None:
        path = root / "targets.yaml"
        path.write_text(yaml.safe_dump({"targets": targets}))
        env["GALERA_DOE_TARGETS_FILE"] = str(path)
    return env


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A Redis database of the suite's own, flushed before and after."""
    client = redis.Redis.from_url(TEST_REDIS_URL, socket_connect_timeout=3)
    try:
        client.ping()
    except redis.RedisError as error:
        raise ServiceMissingError(
            f"Redis is not reachable at {TEST_REDIS_URL} ({error}); run `make setup`"
        ) from error
    client.flushdb()
    yield TEST_REDIS_URL
    client.flushdb()
    client.close()


# What the backend changes runs on MariaDB too: migrations, claims and leases under
# concurrency, revision counters, unique keys (idempotency), integer ranges, JSON and float round
# trips, trial order, and a trial delivered twice through the real worker. Everything else runs
# on SQLite alone: the same SQLAlchemy statements, and the API's answers do not depend on it.
BOTH_BACKENDS = (
    "tests/app/test_persistence.py::",
    "tests/worker/test_trial_lifecycle.py::",
    "tests/app/test_tallies.py::",
    "tests/app/test_auth.py::",
    "tests/app/test_api.py::test_create_plans_and_stores_the_design",
    "tests/app/test_api.py::test_start_queues_pending_trials_in_run_order",
    "tests/app/test_api.py::test_ids_beyond_the_database_range_are_422_not_500",
    "tests/integration/test_end_to_end.py::test_quickstart_runs_to_completion_through_the_worker",
    "tests/integration/test_end_to_end.py::test_a_trial_delivered_twice_runs_once",
)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Each test that needs the database gets SQLite, and MariaDB too if in `BOTH_BACKENDS`."""
    if "database_url" not in metafunc.fixturenames or _parametrizes_database(metafunc):
        return
    nodeid = metafunc.definition.nodeid
    both = any(nodeid.startswith(prefix) for prefix in BOTH_BACKENDS)
    backends = BACKENDS if both else BACKENDS[:1]
    metafunc.parametrize("database_url", backends, indirect=True, scope="session")


def _parametrizes_database(metafunc: pytest.Metafunc) -> bool:
    """Whether the test names its backends itself (`parametrize("database_url", ...)`)."""
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0]
        if "database_url" in (names.split(",") if isinstance(names, str) else names):
            return True
    return False


@pytest.fixture(scope="session")
async def database_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A freshly migrated database on the test's backend (SQLite file, MariaDB via asyncmy)."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("sqlite") / "galera_doe_test.sqlite3"
        url = f"sqlite+aiosqlite:///{path}"
        await asyncio.to_thread(upgrade_to_head, url)
        yield url
        return
    name = f"galera_doe_test_{uuid.uuid4().hex[:10]}"
    await mariadb(f"CREATE DATABASE {name} CHARACTER SET utf8mb4")
    url = f"mysql+asyncmy://root@127.0.0.1:3306/{name}?charset=utf8mb4"
    try:
        await asyncio.to_thread(upgrade_to_head, url)
        yield url
    finally:
        await mariadb(f"DROP DATABASE IF EXISTS {name}")


@pytest.fixture(scope="session")
def settings(database_url: str, redis_url: str) -> Settings:
    """Settings pointing at the test database and the test Redis."""
    return Settings(database_url=database_url, broker_url=redis_url)


@pytest.fixture
async def database(settings: Settings) -> AsyncIterator[Database]:
    """A database handle bound to the test's event loop."""
    handle = Database(settings.database_url)
    yield handle
    await handle.dispose()


KeyMaker = Callable[..., Awaitable[str]]


@pytest.fixture
async def app_under_test(
    settings: Settings, request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[FastAPI]:
    """The app, in process, with its lifespan run; a test marked `targets([...])` has it serve
    those targets instead of the built-in ones."""
    marker = request.node.get_closest_marker("targets")
    if marker is not None:
        targets_file = tmp_path / "targets.yaml"
        targets_file.write_text(yaml.safe_dump({"targets": marker.args[0]}))
        settings = settings.model_copy(update={"targets_file": targets_file})
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
def make_key(app_under_test: FastAPI) -> KeyMaker:
    """Make an API key on the app's database: `await make_key(owner, role=Role.ADMIN)`."""

    async def make(owner: str, role: Role = Role.USER) -> str:
        async with app_under_test.state.database.session() as session:
            return (await api_keys.create(session, owner=owner, role=role)).token

    return make


@pytest.fixture
async def api(app_under_test: FastAPI, make_key: KeyMaker) -> AsyncIterator[AsyncClient]:
    """An HTTP client of the app, in process, with a key of the owner `tester`."""
    headers = {"Authorization": f"Bearer {await make_key('tester')}"}
    transport = ASGITransport(app=app_under_test)
    async with AsyncClient(transport=transport, base_url="http://test", headers=headers) as client:
        yield client


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository's top directory."""
    return Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def suite_lab_layout() -> Iterator[LabLayout]:
    """The suite's one lab cluster directory and ports, shared by the lab modules (`LAB_MODULES`)
    so that its datadirs (the lab's credentials, the sysbench schemas) are made once: each module
    brings the cluster to the size it needs and stops it at its end (`stopped_at_the_end`). Under
    /var/tmp, since the mysql user must traverse every parent of a datadir, on free ports."""
    base = Path("/var/tmp") / f"galera-doe-suite-{uuid.uuid4().hex[:8]}"
    base.mkdir(mode=0o755)
    shutil.chown(base, "mysql", "mysql")
    layout = free_layout(base / "lab", max_nodes=4, gcache_size="32M")
    yield layout
    LabCluster(layout).reset()
    shutil.rmtree(base, ignore_errors=True)


def stopped_at_the_end(layout: LabLayout) -> Iterator[LabLayout]:
    """A lab module's layout, the cluster stopped after it: the next module starts with no node
    running, one site, no restart-only setting (the nodes start from the layout's own options)
    and no dynamic variable a trial set; the datadirs and their schemas are kept."""
    yield layout
    LabCluster(layout).stop()


# A simulated cluster whose nodes take at most 32 connections: trials beyond fail as
# infeasible on the target, as a real node's 'Too many connections' does.
CAPPED_SIMULATED = {
    "name": "simulated-32",
    "kind": "simulated",
    "settings": {"max_connections": 32},
}


@pytest.fixture(scope="module")
def service(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    """The API and one worker as child processes, on the test database and the test Redis,
    serving the built-in targets but the lab, and `CAPPED_SIMULATED`. The built-in lab is the
    developer's cluster: a lab trial another module left queued in the session's database
    must not start it (the lab modules bring clusters of their own)."""
    root = tmp_path_factory.mktemp("service")
    targets = [*(t for t in DEFAULT_TARGETS if t["kind"] != "lab"), CAPPED_SIMULATED]
    with running_service(service_env(settings, root, targets), root) as running:
        yield running.client
