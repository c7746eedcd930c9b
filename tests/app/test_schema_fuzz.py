"""Bad input, systematically: schemathesis runs over the whole OpenAPI schema of the app.

Every operation is called in process (ASGI) on a real database, migrated like the suite's,
once with a valid API key and once with none. With the key, no answer may be a server error,
and every answer must be documented: its status code, its content type, its headers and its
body must match the schema. Without a key, every operation but /health is 401. Generation is
derandomized and bounded (the schema's examples, the coverage phase's boundary values, then a
fixed number of fuzzed cases per operation), so the run is the same every time.

One experiment is seeded first (a manual target, a 3 x 3 factorial, six runs observed, two
suggestions made), and about half of the generated ids are replaced by its ids, so the analysis,
plot, suggestion and trial paths run on real data and not only into 404.

The module has a SQLite database and a Redis database of its own: the hundreds of experiments
the fuzzer makes (some started, their trials queued) must not reach the suite's database, whose
other apps run reapers that would send those trials again into the queue the suite's workers
read; and a database of its own gives the same ids, hence the same run, whatever ran before.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import os
import zlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis
import schemathesis
import yaml
from fastapi import FastAPI
from httpx import ASGITransport, AsyncClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.python import asgi
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from app.config import Settings
from app.db.migrate import upgrade_to_head
from app.main import create_app
from app.services import api_keys
from app.target_specs import load_targets
from experiments.galera.kinds import KIND_FACTORS
from worker.targets import build_target
from worker.targets.base import Target, TargetError
from worker.targets.cluster import ClusterTarget
from worker.targets.lab import LabTarget

FUZZ_REDIS_URL = os.environ.get("GALERA_DOE_TEST_FUZZ_REDIS_URL", "redis://127.0.0.1:6379/14")
# Fixed so the suite is the same every run; raise them by hand to search deeper.
MAX_EXAMPLES = int(os.environ.get("GALERA_DOE_FUZZ_EXAMPLES", "25"))
SPACE_EXAMPLES = int(os.environ.get("GALERA_DOE_FUZZ_SPACE_EXAMPLES", "200"))
SEED = int(os.environ.get("GALERA_DOE_FUZZ_SEED", "20240806"))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
OWNER = "fuzzer"
MAX_ID = 2**31 - 1
FACTORS = [
    {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
    {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
]


@dataclass(frozen=True)
class Seeded:
    """The key and the ids the fuzzer aims at."""

    token: str
    experiment_id: int
    spare_experiment_id: int
    runnable_experiment_id: int
    trial_id: int
    suggestion_id: int


def tps(nodes: int, threads: int) -> float:
    """A bowl with a little deterministic wobble, so the fits have residual degrees of freedom."""
    return 1500.0 - 40.0 * (nodes - 5) ** 2 - 0.4 * (threads - 16) ** 2 + (nodes * threads) % 7


@pytest.fixture(scope="module")
def fuzz_broker(redis_url: str) -> Iterator[str]:
    """A Redis database of the module's own (the suite's Redis must answer), flushed."""
    client = redis.Redis.from_url(FUZZ_REDIS_URL, socket_connect_timeout=3)
    client.flushdb()
    yield FUZZ_REDIS_URL
    client.flushdb()
    client.close()


@pytest.fixture(scope="module")
async def fuzz_settings(fuzz_broker: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """A migrated SQLite database of the module's own (SQLite only: the run is about the API's
    answers, and MariaDB would double its time), the module's broker, and no reaper."""
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('fuzz') / 'galera_doe_fuzz.sqlite3'}"
    await asyncio.to_thread(upgrade_to_head, url)
    return Settings(database_url=url, broker_url=fuzz_broker, reaper_interval_seconds=0)


@pytest.fixture(scope="module")
async def seeded(fuzz_settings: Settings) -> AsyncIterator[Seeded]:
    """A key of its own and an observed experiment, made through the API on the test's loop."""
    app = create_app(fuzz_settings)
    async with app.router.lifespan_context(app):
        async with app.state.database.session() as session:
            token = (await api_keys.create(session, owner=OWNER)).token
        headers = {"Authorization": f"Bearer {token}"}
        async with AsyncClient(
            transport=ASGITransport(app=app), base_url="http://test", headers=headers
        ) as api:
            spec = {
                "name": "fuzzed",
                "target": "manual",
                "factors": FACTORS,
                "design": {"kind": "full_factorial", "levels": 3},
                "objective": {
                    "response": "tps",
                    "constraints": [{"response": "latency_p95_ms", "max": 60}],
                },
            }
            created = await api.post("/experiments", json=spec)
            assert created.status_code == 201, created.text
            experiment_id = created.json()["id"]
            # Six of the nine planned runs observed: some trials succeeded, three still pending.
            runs = list(itertools.product((1, 5, 9), (4, 16, 64)))[:6]
            observations = [
                {
                    "config": {"nodes": n, "threads_per_client": t},
                    "responses": {"tps": tps(n, t), "latency_p95_ms": 2.0 * n + t / 4},
                }
                for n, t in runs
            ]
            recorded = await api.post(
                f"/experiments/{experiment_id}/observations", json=observations
            )
            assert recorded.status_code == 201, recorded.text
            suggested = await api.post(
                f"/experiments/{experiment_id}/suggestions",
                json={"strategy": "steepest_ascent", "count": 2},
            )
            assert suggested.status_code == 200, suggested.text
            spare = await api.post("/experiments", json=spec | {"name": "spare"})
            assert spare.status_code == 201, spare.text
            runnable = await api.post(
                "/experiments", json=spec | {"name": "runnable", "target": "simulated"}
            )
            assert runnable.status_code == 201, runnable.text
        yield Seeded(
            token=token,
            experiment_id=experiment_id,
            spare_experiment_id=spare.json()["id"],
            runnable_experiment_id=runnable.json()["id"],
            trial_id=recorded.json()[0]["id"],
            suggestion_id=suggested.json()["suggestions"][0]["id"],
        )


@pytest.fixture(scope="module")
def fuzz_app(fuzz_settings: Settings, seeded: Seeded) -> Iterator[FastAPI]:
    """The app on the test database; schemathesis runs its lifespan in its own event loop
    thread at the first call, and it is ended there after the module."""
    yield create_app(fuzz_settings)
    asgi.shutdown_lifespans()


def app_schema(
    seed: int, max_examples: int, phases: dict[str, Any], checks: dict[str, Any] | None = None
) -> Any:
    """The app's OpenAPI document as schemathesis tests it, generating `max_examples` cases per
    operation deterministically from `seed`. The document does not depend on the settings: the
    default app gives it."""
    return schemathesis.openapi.from_dict(
        create_app().openapi(),
        config=schemathesis.Config.from_dict(
            {
                "seed": seed,
                "generation": {
                    "mode": "all",
                    "max-examples": max_examples,
                    "deterministic": True,
                    "database": "none",
                    # The key is sent by the test, never generated.
                    "with-security-parameters": False,
                },
                "phases": phases,
                "checks": checks or {},
            }
        ),
    )


schema = app_schema(SEED, MAX_EXAMPLES, {"stateful": {"enabled": False}})


def aim(case: schemathesis.Case, seeded: Seeded) -> None:
    """Point about half of the cases at the seeded ids (which half is fixed by the case).

    Cancelling and observations go to the spare experiment, so the seeded one stays open and
    small for the rest (observations come up to 1000 a request: after a few such requests
    Bayesian suggestions on it take minutes, the Gaussian process's cost growing with the cube
    of the runs); starting goes to the experiment on the simulated target, the one kind that
    can be started."""
    parameters = case.path_parameters
    if not parameters:
        return
    experiment_id = seeded.experiment_id
    if case.path.endswith(("/cancel", "/observations")):
        experiment_id = seeded.spare_experiment_id
    elif case.path.endswith("/start"):
        experiment_id = seeded.runnable_experiment_id
    if str(parameters.get("experiment_id")) == str(seeded.experiment_id):
        parameters["experiment_id"] = experiment_id  # the coverage phase sends "1" too
    if zlib.crc32(repr(sorted(parameters.items())).encode()) % 2:
        return
    real = {
        "experiment_id": experiment_id,
        "trial_id": seeded.trial_id,
        "suggestion_id": seeded.suggestion_id,
    }
    for name, value in parameters.items():
        # Only valid ids are replaced: an id the case made invalid on purpose stays invalid.
        if name in real and str(value).isdigit() and 1 <= int(value) <= MAX_ID:
            parameters[name] = real[name]


@schema.parametrize()
def test_every_operation_answers_within_its_schema_with_a_key(
    case: schemathesis.Case, seeded: Seeded, fuzz_app: FastAPI
):
    aim(case, seeded)
    headers = {"Authorization": f"Bearer {seeded.token}"}
    case.call_and_validate(headers=headers, checks=CHECKS, app=fuzz_app)


@schema.parametrize()
def test_every_operation_but_health_is_401_without_a_key(
    case: schemathesis.Case, fuzz_app: FastAPI
):
    response = case.call(app=fuzz_app)
    case.validate_response(response, checks=CHECKS)
    if case.method.upper() != case.operation.method.upper():
        return  # the coverage phase's probe of a method the path does not have: 405
    if case.path == "/health":
        assert response.status_code == 200, response.text
        return
    assert response.status_code == 401, (case.method, case.path, response.text)
    assert response.headers["www-authenticate"] == ["Bearer"]


SPEC = '{"name": "n", "target": "manual", "factors": [%s], "design": null, "objective": %s}'
FACTOR = '{"name": "nodes", "kind": "integer", "low": 1, "high": 9}'
TPS = '{"response": "tps"}'


@pytest.mark.parametrize(
    ("path", "body", "loc"),
    [
        # Python's JSON reader takes NaN, Infinity and 1e400 (infinity); the schema refuses them,
        # and the 422 that echoes them must still be JSON.
        ("/experiments", SPEC % ('{"name": "x", "low": 0, "high": 1e400}', TPS),
         ["body", "factors", 0, "high"]),
        ("/experiments", SPEC % ('{"name": "x", "low": 0, "high": 1e308}', TPS),
         ["body", "factors", 0, "high"]),
        ("/experiments", SPEC % (FACTOR, '{"response": "tps", "constraints": '
                                 '[{"response": "latency_p95_ms", "max": NaN}]}'),
         ["body", "objective", "constraints", 0, "max"]),
        ("/experiments", SPEC % (FACTOR, '{"response": "tps", "desirability": [{"response": '
                                 '"tps", "low": 0, "high": 10, "importance": -1}]}'),
         ["body", "objective", "desirability", 0, "importance"]),
        ("/experiments", SPEC.replace('"design": null', '"design": {"seed": Infinity}')
         % (FACTOR, TPS), ["body", "design", "seed"]),
        ("/experiments/{id}/observations",
         '[{"config": {"nodes": 1, "threads_per_client": 4}, "responses": {"tps": 1e308}}]',
         ["body", 0, "responses", "tps"]),
        ("/experiments/{id}/observations",
         '[{"config": {"nodes": NaN, "threads_per_client": 4}, "responses": {"tps": 1}}]',
         ["body", 0, "config", "nodes"]),
        # The trials' whole_plot column is a 32-bit INTEGER (2**63 was a 500).
        ("/experiments/{id}/observations",
         '[{"config": {"nodes": 1, "threads_per_client": 4}, "responses": {"tps": 1},'
         ' "whole_plot": 9223372036854775808}]', ["body", 0, "whole_plot"]),
        ("/experiments/{id}/observations",
         '[{"config": {"nodes": 1, "threads_per_client": 4}, "responses": {"tps": 1},'
         ' "whole_plot": 2147483648}]', ["body", 0, "whole_plot"]),
        ("/experiments/{id}/optimize", '{"stop_when_expected_improvement_below": Infinity}',
         ["body", "stop_when_expected_improvement_below"]),
        ("/designs/preview", '{"factors": [{"name": "x", "levels": [1, -Infinity]}]}',
         ["body", "factors", 0, "levels", 1]),
    ],
)  # fmt: skip
def test_numbers_json_cannot_carry_or_too_large_are_422_naming_the_field(
    fuzz_app: FastAPI, seeded: Seeded, path: str, body: str, loc: list
):
    headers = {"Authorization": f"Bearer {seeded.token}", "Content-Type": "application/json"}
    with asgi.get_client(fuzz_app) as client:
        response = client.post(path.format(id=seeded.experiment_id), data=body, headers=headers)
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"][: len(loc)] == loc
    schema[path.replace("{id}", "{experiment_id}")]["POST"].validate_response(response)


# Factor spaces, systematically: every built-in factor of every kind of target, as every kind of
# factor, over ranges and levels at and beyond the target's bounds (negative, huge, 2**63, NaN
# and Infinity, which Python's JSON writer sends). Each answer is a 201 or a 4xx naming a field;
# whatever is accepted, the target's own checks (the worker's) must accept every planned run.
SPACE_TARGETS = {"simulated": "simulated", "lab": "lab", "dc": "external", "manual": "manual"}
BOUNDS = [-(2**63), -1e15, -1.0, 0, 0.5, 1, 2, 3, 9, 10, 16, 17, 40, 256, 512, 3600, 3601,
          1e15, 2**63, 1e308, math.nan, math.inf]  # fmt: skip
LEVEL_WORDS = ["oltp_read_write", "rw_mix", "tpcc", "1", "ON", "x"]
DESIGNS = [
    {"kind": "full_factorial", "levels": 2},
    {"kind": "ccd"},
    {"kind": "latin_hypercube", "runs": 6, "seed": 1},
]


@dataclass(frozen=True)
class SpaceApp:
    """An app whose targets include an external cluster of two nodes, its key, the targets
    as the worker builds them."""

    app: FastAPI
    token: str
    workers: dict[str, Target]


@pytest.fixture(scope="module")
async def space_app(
    fuzz_broker: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[SpaceApp]:
    """A database of its own (the schemathesis run's ids stay the same), the four kinds of
    target, and the worker's targets built from the same file (the lab in a directory of the
    test's, never started)."""
    root = tmp_path_factory.mktemp("spaces")
    url = f"sqlite+aiosqlite:///{root / 'spaces.sqlite3'}"
    await asyncio.to_thread(upgrade_to_head, url)
    two_nodes = {"nodes": [{"host": "db1"}, {"host": "db2"}]}
    targets = [
        {"name": "simulated", "kind": "simulated", "settings": {"seed": 0, "noise": 0.03}},
        {"name": "manual", "kind": "manual"},
        {"name": "lab", "kind": "lab", "settings": {"base_dir": str(root / "lab")}},
        {"name": "dc", "kind": "external", "settings": two_nodes},
    ]
    path = root / "targets.yaml"
    path.write_text(yaml.safe_dump({"targets": targets}))
    app_settings = Settings(
        database_url=url, broker_url=fuzz_broker, reaper_interval_seconds=0, targets_file=path
    )
    keys = create_app(app_settings)
    async with keys.router.lifespan_context(keys), keys.state.database.session() as session:
        token = (await api_keys.create(session, owner=OWNER)).token
    specs = load_targets(path)
    workers = {name: build_target(spec) for name, spec in specs.items() if spec.runnable}
    # schemathesis runs the app's lifespan in its own event loop thread, as for fuzz_app.
    yield SpaceApp(create_app(app_settings), token, workers)
    asgi.shutdown_lifespans()


@st.composite
def factor_spaces(draw: st.DrawFn) -> dict[str, Any]:
    """An experiment on one target over one to three of its built-in factors (the lab's for
    the manual target), each of any kind, with any bounds or levels."""
    target = draw(st.sampled_from(sorted(SPACE_TARGETS)))
    names = KIND_FACTORS[SPACE_TARGETS[target]] or KIND_FACTORS["lab"] or ()
    chosen = draw(st.lists(st.sampled_from(sorted(names)), min_size=1, max_size=3, unique=True))
    factors = []
    for name in chosen:
        kind = draw(st.sampled_from(["continuous", "integer", "categorical"]))
        factor: dict[str, Any] = {"name": name, "kind": kind}
        if kind == "categorical":
            factor["levels"] = draw(st.lists(st.sampled_from(LEVEL_WORDS), min_size=1,
                                             max_size=3, unique=True))  # fmt: skip
        elif draw(st.booleans()):
            factor["levels"] = draw(st.lists(st.sampled_from(BOUNDS), min_size=1, max_size=3))
        else:
            factor["low"] = draw(st.sampled_from(BOUNDS))
            factor["high"] = draw(st.sampled_from(BOUNDS))
        factors.append(factor)
    return {"name": "space", "target": target, "factors": factors,
            "design": draw(st.sampled_from(DESIGNS)), "objective": {"response": "tps"}}  # fmt: skip


def run_checks(target: Target, config: dict[str, Any]) -> None:
    """What the worker checks before it runs `config` on `target`, without running anything on
    a real cluster: the simulated target runs it; a cluster plans it and takes its nodes."""
    if isinstance(target, ClusterTarget):
        plan = target.plan(config)
        if isinstance(target, LabTarget):
            assert plan.nodes <= target.cluster.layout.max_nodes, config
        else:
            target.nodes_for(plan.nodes)
    else:
        target.run(config, run_key=1)


@given(spec=factor_spaces())
@settings(max_examples=SPACE_EXAMPLES, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
def test_any_factor_space_is_accepted_and_runnable_or_refused_naming_a_field(
    space_app: SpaceApp, spec: dict[str, Any]
):
    headers = {"Authorization": f"Bearer {space_app.token}", "Content-Type": "application/json"}
    with asgi.get_client(space_app.app) as client:
        # json.dumps writes NaN and Infinity as Python's reader takes them: the API must refuse.
        response = client.post("/experiments", data=json.dumps(spec), headers=headers)
    assert response.status_code in (201, 422), (spec, response.text)
    if response.status_code == 422:
        detail = response.json()["detail"]
        assert detail and detail[0]["loc"][0] == "body" and detail[0]["msg"], (spec, detail)
        return
    target = space_app.workers.get(spec["target"])
    for trial in response.json()["trials"] if target is not None else []:
        try:
            run_checks(target, trial["config"])
        except TargetError as error:
            raise AssertionError(f"accepted but not runnable: {spec}: {error}") from error
