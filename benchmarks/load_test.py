"""Load on the REST API: 50 concurrent clients against 100 experiments of 200 trials each.

Run `python -m benchmarks.load_test [--backend sqlite|mariadb|both] [--seconds 30] [--clients 50]`.
For each database backend it makes a fresh database (a SQLite file in a temporary directory, or a
MariaDB database of its own on root@127.0.0.1:3306, dropped at the end), one API key, and starts
the API as a child process (uvicorn, stopped by its pid). It seeds 100 experiments through
`POST /experiments` (a 200-run Latin hypercube on the simulated target, 6 factors) and then
writes what a campaign would have left in the database: most trials finished with the simulated
cluster's responses, a sysbench-like output, start and finish times one trial after the other,
a few failed; 70 % of the experiments completed, 20 % still running (one trial running, the
rest queued), 10 % cancelled half-way. Every experiment is read back once and checked
(progress, best, timing) before the load starts.

The load: `--clients` asyncio clients, each with a keep-alive HTTP/1.1 connection of its own on
loopback (a small raw client by default, `--http-client httpx` for httpx.AsyncClient), sending
together `--rate` requests per second (each client paced at clients / rate seconds per
request; a late client sends at once and never bursts to catch up), for `--seconds`, at most
`--max-requests` requests in all, every request with a 30 s timeout. The mix is dominated by
reads: GET /experiments/{id} (89 %), GET /experiments/{id}/trials (5 %), GET /experiments (the
newest 50, 3 %), POST /experiments with an Idempotency-Key (1 %; one in four is a retry of an
earlier request and must be answered from it) and GET /targets (2 %), the baseline: the
floor of a request with a key (routing, the key's lookup, a constant answer). An error is any
exception or any answer but 2xx. A second, unpaced phase (`--saturation-seconds`, every client
sending as fast as answers come back) measures the capacity. The CPU time of the API's
processes (from /proc) and of the clients is reported per request.

Goals (issue 8): no errors, at least 200 requests/s sustained, p95 of GET /experiments/{id} at
most 50 ms, p95 of POST /experiments at most 300 ms. Needs MariaDB for the mariadb backend;
Redis is not used (nothing is queued).
"""

from __future__ import annotations

import argparse
import asyncio
import json as jsonlib
import os
import random
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import asyncmy
import httpx
import numpy as np
from rich.console import Console
from rich.table import Table
from sqlalchemy import select, update

from app.db.migrate import upgrade_to_head
from app.db.models import Experiment, Trial, utcnow
from app.db.session import Database
from app.services.api_keys import create_key
from app.statuses import ExperimentStatus, Failure, TrialStatus
from client.processes import ChildProcess, api_command, free_port, wait_until
from worker.targets.simulated_model import response_surface

MARIADB = {"host": "127.0.0.1", "port": 3306, "user": "root", "password": ""}
BROKER_URL = "redis://127.0.0.1:6379/13"  # nothing is ever sent
CORES = os.cpu_count() or 1
# One uvicorn worker per core. The API is CPU-bound Python (routing, pydantic, the ORM, JSON):
# one process uses at most one core, a second one doubles the capacity on a 2-core machine,
# and more processes than cores only add context switches (the load clients share the cores;
# 4 workers on the 2-core machine measured the same as 2 within the noise).
DEFAULT_WORKERS = CORES
REQUEST_TIMEOUT = 30.0

GET_ONE = "GET /experiments/{id}"
GET_TRIALS = "GET /experiments/{id}/trials"
GET_LIST = "GET /experiments"
POST = "POST /experiments"
BASELINE = "GET /targets"
# Status polls dominate: each client is a user or a script watching experiments; about one
# request in 20 fetches an experiment's trials for a fit, one in 33 lists the newest 50
# experiments, one in 100 submits an experiment (planning 200 runs is the heaviest request).
MIX: dict[str, float] = {GET_ONE: 89, GET_TRIALS: 5, GET_LIST: 3, POST: 1, BASELINE: 2}
RETRY_SHARE = 0.25  # of the POSTs: a retry of an earlier request with its key

# What the goals ask (issue 8).
MIN_RATE = 200.0
MAX_P95_GET_S = 0.050
MAX_P95_POST_S = 0.300

FACTORS: list[dict[str, Any]] = [
    {"name": "nodes", "kind": "integer", "low": 1, "high": 9, "hard_to_change": True},
    {"name": "clients", "kind": "integer", "low": 1, "high": 8},
    {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
    {"name": "wsrep_slave_threads", "kind": "integer", "low": 1, "high": 16, "scale": "log2"},
    {"name": "runtime_s", "kind": "continuous", "low": 30, "high": 180, "unit": "s"},
    {"name": "write_share", "kind": "continuous", "low": 0.05, "high": 0.5},
]
FAILING = 17  # trials i with i % 50 == FAILING fail
SETUP_S = 6.0  # a real trial's overhead before its runtime: configure, prepare, read counters


def experiment_spec(name: str, *, runs: int, seed: int) -> dict[str, Any]:
    """A Latin hypercube of `runs` runs on the simulated target, maximizing tps."""
    return {
        "name": name,
        "target": "simulated",
        "factors": FACTORS,
        "design": {"kind": "latin_hypercube", "runs": runs, "seed": seed},
        "objective": {
            "response": "tps",
            "goal": "maximize",
            "constraints": [{"response": "latency_p95_ms", "max": 250}],
        },
    }


# --- the database and the API ------------------------------------------------------------


async def _mariadb(statement: str) -> None:
    connection = await asyncmy.connect(**MARIADB)
    try:
        async with connection.cursor() as cursor:
            await cursor.execute(statement)
    finally:
        connection.close()


@contextmanager
def fresh_database(backend: str, directory: Path) -> Iterator[str]:
    """The URL of a new, migrated database of `backend`; a MariaDB one is dropped at the end."""
    if backend == "sqlite":
        url = f"sqlite+aiosqlite:///{directory / 'load.sqlite3'}"
        upgrade_to_head(url)
        yield url
        return
    name = f"galera_doe_load_{uuid.uuid4().hex[:10]}"
    asyncio.run(_mariadb(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
    try:
        url = f"mysql+asyncmy://root@127.0.0.1:3306/{name}?charset=utf8mb4"
        upgrade_to_head(url)
        yield url
    finally:
        asyncio.run(_mariadb(f"DROP DATABASE IF EXISTS {name}"))


def process_tree_cpu(pid: int) -> float | None:
    """CPU seconds used so far by a process and its descendants (Linux /proc; None elsewhere)."""
    try:
        tick = os.sysconf("SC_CLK_TCK")
        total, todo = 0.0, [pid]
        while todo:
            current = todo.pop()
            fields = Path(f"/proc/{current}/stat").read_text().rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(child) for child in (task / "children").read_text().split()]
        return total
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class Api:
    """A running API: where it listens and the pid of its uvicorn process."""

    base_url: str
    pid: int


@contextmanager
def running_api(database_url: str, log_dir: Path, *, workers: int) -> Iterator[Api]:
    """The API (uvicorn with `workers` processes) on a free loopback port.

    The database is migrated before (several workers must not race to migrate an empty one).
    Queued trials of the seeded experiments have no broker message: the reaper is told to
    resend only after a day, so nothing is ever sent."""
    port = free_port()
    env = os.environ | {
        "GALERA_DOE_DATABASE_URL": database_url,
        "GALERA_DOE_BROKER_URL": BROKER_URL,
        "GALERA_DOE_RESEND_AFTER_SECONDS": "86400",
    }
    argv = [*api_command("127.0.0.1", port), "--workers", str(workers)]
    api = ChildProcess("api", argv, env=env, log_dir=log_dir)
    base_url = f"http://127.0.0.1:{port}"

    def answering() -> bool:
        if not api.alive():
            raise RuntimeError(f"the API exited:\n{api.tail()}")
        try:
            # 503 is an answer too: a broker outage does not matter to this benchmark.
            return httpx.get(f"{base_url}/health", timeout=2).status_code in (200, 503)
        except httpx.TransportError:
            return False

    try:
        if not wait_until(answering, timeout=90, interval=0.2):
            raise RuntimeError(f"the API did not answer:\n{api.tail()}")
        yield Api(base_url=base_url, pid=api.pid)
    finally:
        api.stop()


# --- seeding: what a campaign leaves behind ---------------------------------------------


def _sysbench_text(config: dict[str, Any], responses: dict[str, float]) -> str:
    runtime = float(config["runtime_s"])
    transactions = responses["tps"] * runtime
    return "\n".join(
        [
            f"sysbench 1.0.20 oltp_read_write: {config['clients']} clients on "
            f"{config['nodes']} nodes, {config['threads_per_client']} threads each, "
            f"wsrep_slave_threads={config['wsrep_slave_threads']}, time={runtime:.0f}",
            "SQL statistics:",
            f"    transactions:     {transactions:12.0f}  ({responses['tps']:.2f} per sec.)",
            f"    queries:          {transactions * 20:12.0f}  ({responses['qps']:.2f} per sec.)",
            f"    ignored errors:   {responses['errors_per_s'] * runtime:12.0f}  "
            f"({responses['errors_per_s']:.2f} per sec.)",
            "    reconnects:                  0  (0.00 per sec.)",
            "Latency (ms):",
            f"    avg:              {responses['latency_avg_ms']:12.2f}",
            f"    95th percentile:  {responses['latency_p95_ms']:12.2f}",
            "Galera (all nodes, after - before):",
            f"    wsrep_local_cert_failures: {responses['cert_failures']:.0f}",
            f"    wsrep_local_bf_aborts:     {responses['bf_aborts']:.0f}",
            f"    wsrep_flow_control_paused: {responses['flow_control_paused']:.4f}",
            f"    wsrep_local_recv_queue_avg: {responses['recv_queue_avg']:.3f}",
        ]
    )


def _responses(configs: list[dict[str, Any]], rng: np.random.Generator) -> list[dict[str, float]]:
    """The simulated cluster's responses for every configuration at once, with 3 % noise."""
    columns = [
        np.array([c[name] for c in configs], dtype=float) for name in (f["name"] for f in FACTORS)
    ]
    surface = response_surface(*columns)
    scale = rng.lognormal(0.0, 0.03, len(configs))
    for name in ("tps", "qps"):
        surface[name] = surface[name] * scale
    for name in ("latency_avg_ms", "latency_p95_ms"):
        surface[name] = surface[name] / scale
    return [
        {name: float(values[i]) for name, values in surface.items()} for i in range(len(configs))
    ]


def _scenario(index: int) -> tuple[str, float]:
    """The experiment's state and the share of its trials finished: 7 in 10 completed, 2
    running, 1 cancelled half-way."""
    kind = index % 10
    if kind < 7:
        return ExperimentStatus.COMPLETED, 1.0
    if kind < 9:
        return ExperimentStatus.RUNNING, 0.55 + 0.2 * (kind - 7) + 0.01 * (index % 7)
    return ExperimentStatus.CANCELLED, 0.5


def _campaign_rows(
    trials: Sequence[Any], index: int, now: datetime, rng: np.random.Generator
) -> tuple[str, list[dict[str, Any]]]:
    """The experiment's status and the column values of each of its trials after a campaign."""
    status, share = _scenario(index)
    configs = [dict(t.config) for t in trials]
    responses = _responses(configs, rng)
    finished = round(share * len(trials))
    durations = [float(c["runtime_s"]) + SETUP_S + float(rng.uniform(0, 2)) for c in configs]
    # Completed and cancelled campaigns ended a while ago; running ones run now.
    end = now - timedelta(hours=1 + index) if status != ExperimentStatus.RUNNING else now
    clock = end - timedelta(seconds=sum(durations[: finished + 1]))
    queued_at = clock - timedelta(seconds=1)
    rows: list[dict[str, Any]] = []
    for i, (trial, config) in enumerate(zip(trials, configs, strict=True)):
        row: dict[str, Any] = {
            "id": trial.id,
            "status": TrialStatus.QUEUED,
            "attempts": 0,
            "worker": None,
            "queued_at": queued_at,
            "started_at": None,
            "finished_at": None,
            "lease_expires_at": None,
            "responses": None,
            "raw_output": None,
            "error": None,
            "failure": None,
        }
        if i < finished:
            started, clock = clock, clock + timedelta(seconds=durations[i])
            row |= {"attempts": 1, "worker": f"celery@worker{index % 3}", "started_at": started}
            row |= {"finished_at": clock, "raw_output": _sysbench_text(config, responses[i])}
            if i % 50 == FAILING:  # 2 % fail, as real runs do
                row |= {
                    "status": TrialStatus.FAILED,
                    "failure": Failure.ERROR,
                    "error": "attempt 1: sysbench client 2 exited with status 1: FATAL: "
                    "mysql_drv_query() returned error 2013 (Lost connection to server)",
                }
            else:
                row |= {"status": TrialStatus.SUCCEEDED, "responses": responses[i]}
        elif i == finished and status == ExperimentStatus.RUNNING:
            row |= {"status": TrialStatus.RUNNING, "attempts": 1, "started_at": clock}
            row |= {"worker": "celery@worker0", "lease_expires_at": now + timedelta(hours=1)}
        elif status == ExperimentStatus.CANCELLED:
            row |= {"status": TrialStatus.CANCELLED, "finished_at": clock}
        rows.append(row)
    return status, rows


async def finish_campaigns(database_url: str, experiment_ids: Sequence[int], seed: int) -> int:
    """Write the trials' statuses, times, responses and outputs as after a campaign (one bulk
    UPDATE by primary key per experiment); returns how many trials finished."""
    rng = np.random.default_rng(seed)
    database = Database(database_url)
    finished = 0
    try:
        async with database.session() as session:
            now = utcnow()
            for index, experiment_id in enumerate(experiment_ids):
                query = (
                    select(Trial.id, Trial.config)
                    .where(Trial.experiment_id == experiment_id)
                    .order_by(Trial.run_order, Trial.id)
                )
                trials = (await session.execute(query)).all()
                status, rows = _campaign_rows(trials, index, now, rng)
                await session.execute(update(Trial), rows)
                await session.execute(
                    update(Experiment)
                    .where(Experiment.id == experiment_id)
                    .values(status=status, updated_at=now)
                )
                finished += sum(
                    r["status"] in (TrialStatus.SUCCEEDED, TrialStatus.FAILED) for r in rows
                )
            await session.commit()
    finally:
        await database.dispose()
    return finished


async def _create_experiments(
    base_url: str, token: str, count: int, runs: int, concurrency: int = 4
) -> list[int]:
    headers = {"Authorization": f"Bearer {token}"}
    ids: list[int] = []
    names = iter(range(count))

    async def creator() -> None:
        async with httpx.AsyncClient(
            base_url=base_url, headers=headers, timeout=REQUEST_TIMEOUT
        ) as http:
            for i in names:
                spec = experiment_spec(f"campaign {i}", runs=runs, seed=i)
                answer = await http.post("/experiments", json=spec)
                answer.raise_for_status()
                ids.append(answer.json()["id"])

    await asyncio.gather(*(creator() for _ in range(concurrency)))
    return sorted(ids)


def _check_seeded(base_url: str, token: str, ids: Sequence[int], runs: int) -> None:
    """Every experiment reads back as after a real campaign: progress, best and timing."""
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=REQUEST_TIMEOUT) as http:
        for index, experiment_id in enumerate(ids):
            answer = http.get(f"/experiments/{experiment_id}")
            answer.raise_for_status()
            got = answer.json()
            status, share = _scenario(index)
            progress, timing = got["progress"], got["timing"]
            assert got["status"] == status and progress["total"] == runs, got
            done = round(share * runs)
            failed = sum(i % 50 == FAILING for i in range(done))
            assert progress["succeeded"] + progress["failed"] == done, progress
            assert progress["failed"] == failed, progress
            assert got["best"] is not None and got["best"]["value"] > 0, got["best"]
            assert timing["elapsed_s"] > 0 and timing["mean_trial_s"] > SETUP_S, timing
            if status == ExperimentStatus.RUNNING:
                assert progress["running"] == 1 and timing["remaining_s"] > 0, got
            else:
                assert timing["remaining_s"] == 0, timing


def seed(
    base_url: str, token: str, database_url: str, *, experiments: int, runs: int
) -> tuple[list[int], int, float]:
    """Create and finish the experiments; their ids, the finished trials and the seconds taken."""
    started = time.perf_counter()
    ids = asyncio.run(_create_experiments(base_url, token, experiments, runs))
    finished = asyncio.run(finish_campaigns(database_url, ids, seed=len(ids)))
    _check_seeded(base_url, token, ids, runs)
    return ids, finished, time.perf_counter() - started


# --- the load -----------------------------------------------------------------------------


@dataclass
class Outcome:
    """What the clients saw: latencies per endpoint and the errors."""

    seconds: float = 0.0
    latencies: dict[str, list[float]] = field(default_factory=lambda: {e: [] for e in MIX})
    errors: Counter[str] = field(default_factory=Counter)
    error_kinds: Counter[str] = field(default_factory=Counter)
    replays: int = 0
    client_cpu_s: float = 0.0  # CPU time of the load generator itself
    server_cpu_s: float | None = None  # CPU time of the API's processes

    @property
    def requests(self) -> int:
        """Every request answered or failed."""
        return sum(len(v) for v in self.latencies.values())

    @property
    def rate(self) -> float:
        """Requests per second over the phase."""
        return self.requests / self.seconds if self.seconds else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), linear interpolation; nan for no values."""
    return float(np.percentile(values, q)) if values else float("nan")


class _Budget:
    def __init__(self, limit: int) -> None:
        self.left = limit

    def take(self) -> bool:
        self.left -= 1
        return self.left >= 0


class RawConnection:
    """One keep-alive HTTP/1.1 connection to the API on loopback, with the key's header.

    The load's default client: light, so that the clients take little of the cores they share
    with the API (httpx spends about 3 ms of CPU per request on this machine, a quarter of what
    the API spends on a read). Answers carry a Content-Length or are chunked; the connection is
    opened again after an error or when the server closes it."""

    def __init__(self, base_url: str, token: str) -> None:
        url = httpx.URL(base_url)
        self.host, self.port = url.host, url.port or 80
        self._head = f"Host: {self.host}:{self.port}\r\nAuthorization: Bearer {token}\r\n"
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def request(
        self, method: str, path: str, *, json: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str]]:
        """The status and headers of the answer (its body is read and dropped)."""
        body = b"" if json is None else jsonlib.dumps(json).encode()
        lines = [f"{method} {path} HTTP/1.1\r\n", self._head]
        lines += [f"{name}: {value}\r\n" for name, value in (headers or {}).items()]
        if json is not None:
            lines.append(f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n")
        try:
            if self._streams is None:
                self._streams = await asyncio.open_connection(self.host, self.port)
            reader, writer = self._streams
            writer.write("".join(lines).encode() + b"\r\n" + body)
            await writer.drain()
            status = int((await reader.readline()).split(b" ", 2)[1])
            answer: dict[str, str] = {}
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                answer[name.strip().lower()] = value.strip()
            if "content-length" in answer:
                await reader.readexactly(int(answer["content-length"]))
            elif answer.get("transfer-encoding") == "chunked":
                while size := int((await reader.readline()).strip(), 16):
                    await reader.readexactly(size + 2)
                await reader.readline()
            if answer.get("connection") == "close":
                self.close()
            return status, answer
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the connection; the next request opens another."""
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None


class _HttpxConnection:
    """The same, through httpx (`--http-client httpx`)."""

    def __init__(self, base_url: str, token: str) -> None:
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        self._client = httpx.AsyncClient(
            base_url=base_url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=REQUEST_TIMEOUT,
            limits=limits,
        )

    async def request(
        self, method: str, path: str, *, json: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str]]:
        answer = await self._client.request(method, path, json=json, headers=headers)
        return answer.status_code, {k.lower(): v for k, v in answer.headers.items()}

    def close(self) -> None:
        asyncio.get_running_loop().create_task(self._client.aclose())


HTTP_CLIENTS = {"raw": RawConnection, "httpx": _HttpxConnection}


async def _client(
    index: int,
    *,
    base_url: str,
    token: str,
    ids: Sequence[int],
    runs: int,
    interval: float,
    deadline: float,
    budget: _Budget,
    outcome: Outcome,
    http_client: str,
) -> None:
    rng = random.Random(index)
    endpoints, weights = list(MIX), list(MIX.values())
    posted: list[tuple[str, dict[str, Any]]] = []
    clock = asyncio.get_running_loop()
    next_at = clock.time() + rng.uniform(0, interval)
    http = HTTP_CLIENTS[http_client](base_url, token)
    try:
        while True:
            if next_at > clock.time():
                await asyncio.sleep(next_at - clock.time())
            if clock.time() >= deadline or not budget.take():
                return
            # Paced: the next request is due one interval later, or now if this one is late.
            next_at = max(next_at + interval, clock.time())
            endpoint = rng.choices(endpoints, weights)[0]
            body: dict[str, Any] | None = None
            headers: dict[str, str] | None = None
            if endpoint == GET_ONE:
                method, path = "GET", f"/experiments/{rng.choice(ids)}"
            elif endpoint == GET_TRIALS:
                method, path = "GET", f"/experiments/{rng.choice(ids)}/trials"
            elif endpoint == GET_LIST:
                method, path = "GET", "/experiments"
            elif endpoint == BASELINE:
                method, path = "GET", "/targets"
            else:
                method, path = "POST", "/experiments"
                if posted and rng.random() < RETRY_SHARE:
                    key, body = rng.choice(posted)
                else:
                    key = str(uuid.uuid4())
                    body = experiment_spec(f"load {index}", runs=runs, seed=rng.randrange(2**16))
                    posted.append((key, body))
                headers = {"Idempotency-Key": key}
            started = time.perf_counter()
            try:
                status, answer = await asyncio.wait_for(
                    http.request(method, path, json=body, headers=headers), REQUEST_TIMEOUT
                )
                failed = None if 200 <= status < 300 else f"HTTP {status}"
                if answer.get("idempotent-replayed") == "true":
                    outcome.replays += 1
            except Exception as error:  # any exception is an error of the run, counted
                failed = type(error).__name__
            outcome.latencies[endpoint].append(time.perf_counter() - started)
            if failed is not None:
                outcome.errors[endpoint] += 1
                outcome.error_kinds[f"{endpoint}: {failed}"] += 1
    finally:
        http.close()


async def load(
    base_url: str,
    token: str,
    ids: Sequence[int],
    *,
    clients: int,
    seconds: float,
    rate: float,
    runs: int,
    max_requests: int,
    http_client: str = "raw",
) -> Outcome:
    """`clients` concurrent clients for `seconds` (at most `max_requests` requests), sending
    `rate` requests per second together, or as fast as they are answered when `rate` is 0."""
    outcome = Outcome()
    interval = clients / rate if rate > 0 else 0.0
    clock = asyncio.get_running_loop()
    started, cpu = time.perf_counter(), time.process_time()
    deadline = clock.time() + seconds
    budget = _Budget(max_requests)
    await asyncio.wait_for(
        asyncio.gather(
            *(
                _client(
                    i,
                    base_url=base_url,
                    token=token,
                    ids=ids,
                    runs=runs,
                    interval=interval,
                    deadline=deadline,
                    budget=budget,
                    outcome=outcome,
                    http_client=http_client,
                )
                for i in range(clients)
            )
        ),
        timeout=seconds + REQUEST_TIMEOUT + 10,
    )
    outcome.seconds = time.perf_counter() - started
    outcome.client_cpu_s = time.process_time() - cpu
    return outcome


# --- one backend, and the tables ----------------------------------------------------------


@dataclass
class Run:
    """One backend's measurements."""

    backend: str
    workers: int
    clients: int
    rate: float
    experiments: int
    runs: int
    finished_trials: int
    seed_seconds: float
    paced: Outcome
    saturated: Outcome | None
    load_average: tuple[float, float] = (0.0, 0.0)  # 1-min load average before and after

    def goals(self) -> list[tuple[str, str, bool]]:
        """(goal, measured, met) for each goal of issue 8, on the paced phase."""
        paced = self.paced
        errors = sum(paced.errors.values())
        get95 = percentile(paced.latencies[GET_ONE], 95)
        post95 = percentile(paced.latencies[POST], 95)
        return [
            ("no errors", f"{errors} of {paced.requests}", errors == 0 and paced.requests > 0),
            (f"≥ {MIN_RATE:.0f} requests/s", f"{paced.rate:.0f}", paced.rate >= MIN_RATE),
            (
                f"p95 {GET_ONE} ≤ {MAX_P95_GET_S * 1e3:.0f} ms",
                f"{get95 * 1e3:.1f} ms",
                get95 <= MAX_P95_GET_S,
            ),
            (
                f"p95 {POST} ≤ {MAX_P95_POST_S * 1e3:.0f} ms",
                f"{post95 * 1e3:.1f} ms",
                post95 <= MAX_P95_POST_S,
            ),
        ]

    @property
    def met(self) -> bool:
        """Whether every goal is met."""
        return all(ok for _, _, ok in self.goals())


BACKEND_NAMES = {"sqlite": "SQLite (aiosqlite)", "mariadb": "MariaDB (asyncmy)"}


def run_backend(
    backend: str,
    *,
    experiments: int = 100,
    runs: int = 200,
    clients: int = 50,
    seconds: float = 30.0,
    rate: float = 250.0,
    saturation_seconds: float = 10.0,
    workers: int = DEFAULT_WORKERS,
    warmup_seconds: float = 2.0,
    max_requests: int = 200_000,
    http_client: str = "raw",
) -> Run:
    """Seed a fresh database of `backend`, start the API on it and measure."""
    load_before = os.getloadavg()[0]
    with (
        tempfile.TemporaryDirectory(prefix="galera-doe-load-") as tmp,
        fresh_database(backend, Path(tmp)) as database_url,
    ):
        token = create_key(database_url, "load").token
        with running_api(database_url, Path(tmp), workers=workers) as api:
            ids, finished, seed_seconds = seed(
                api.base_url, token, database_url, experiments=experiments, runs=runs
            )

            def phase(seconds: float, rate: float) -> Outcome:
                cpu = process_tree_cpu(api.pid)
                outcome = asyncio.run(
                    load(
                        api.base_url,
                        token,
                        ids,
                        clients=clients,
                        seconds=seconds,
                        rate=rate,
                        runs=runs,
                        max_requests=max_requests,
                        http_client=http_client,
                    )
                )
                if cpu is not None and (after := process_tree_cpu(api.pid)) is not None:
                    outcome.server_cpu_s = after - cpu
                return outcome

            if warmup_seconds > 0:  # connection pools, caches, first imports: not measured
                phase(warmup_seconds, rate)
            paced = phase(seconds, rate)
            saturated = phase(saturation_seconds, 0.0) if saturation_seconds > 0 else None
    return Run(
        backend=backend,
        workers=workers,
        clients=clients,
        rate=rate,
        experiments=experiments,
        runs=runs,
        finished_trials=finished,
        seed_seconds=seed_seconds,
        paced=paced,
        saturated=saturated,
        load_average=(load_before, os.getloadavg()[0]),
    )


def _ms(seconds: float) -> str:
    return "-" if seconds != seconds else f"{seconds * 1e3:.1f}"  # nan: no request


def _cpu(seconds: float | None, outcome: Outcome) -> str:
    if seconds is None or not outcome.requests:
        return "-"
    per_request = seconds / outcome.requests * 1e3
    return f"{per_request:.1f} ms ({seconds / outcome.seconds:.2f} cores)"


def latency_table(run: Run) -> Table:
    """Requests, errors and latency percentiles per endpoint, and the ratio of each median to
    the baseline's (GET /targets) measured in the same run."""
    outcome = run.paced
    table = Table(
        title=f"{BACKEND_NAMES[run.backend]}: {run.clients} clients, {run.rate:.0f} requests/s "
        f"offered for {outcome.seconds:.0f} s; {run.workers} uvicorn worker(s) on {CORES} "
        f"cores; {run.experiments} experiments x {run.runs} trials ({run.finished_trials} "
        f"finished), seeded in {run.seed_seconds:.0f} s",
        caption=f"CPU per request: the API {_cpu(outcome.server_cpu_s, outcome)}, the clients "
        f"{_cpu(outcome.client_cpu_s, outcome)}; machine load average (1 min) "
        f"{run.load_average[0]:.1f} before, {run.load_average[1]:.1f} after: anything above the "
        f"API and the clients takes from the {CORES} cores",
    )
    for column in ("endpoint", "requests", "errors", "p50 ms", "p95 ms", "p99 ms", "max ms",
                   "p50 / baseline p50"):  # fmt: skip
        table.add_column(column, justify="left" if column == "endpoint" else "right")
    base = percentile(outcome.latencies[BASELINE], 50)
    for endpoint in MIX:
        values = outcome.latencies[endpoint]
        name = f"{endpoint} (baseline)" if endpoint == BASELINE else endpoint
        median = percentile(values, 50)
        ratio = f"{median / base:.1f}" if values and base == base else "-"
        table.add_row(
            name, str(len(values)), str(outcome.errors[endpoint]), _ms(median),
            _ms(percentile(values, 95)), _ms(percentile(values, 99)),
            _ms(max(values, default=float("nan"))), ratio,
        )  # fmt: skip
    every = [v for values in outcome.latencies.values() for v in values]
    table.add_row(
        f"all ({outcome.rate:.0f} requests/s; {outcome.replays} idempotent replays)",
        str(outcome.requests), str(sum(outcome.errors.values())), _ms(percentile(every, 50)),
        _ms(percentile(every, 95)), _ms(percentile(every, 99)),
        _ms(max(every, default=float("nan"))), "",
    )  # fmt: skip
    return table


def goals_table(runs: Sequence[Run]) -> Table:
    """Each goal of issue 8 per backend: what was measured and whether it is met."""
    table = Table(title="Goals (issue 8), paced phase")
    table.add_column("goal")
    for run in runs:
        table.add_column(BACKEND_NAMES[run.backend], justify="right")
    for i, (goal, _, _) in enumerate(runs[0].goals()):
        cells = []
        for run in runs:
            _, measured, ok = run.goals()[i]
            cells.append(f"{measured} {'met' if ok else 'NOT MET'}")
        table.add_row(goal, *cells)
    return table


def saturation_table(runs: Sequence[Run]) -> Table:
    """The capacity: every client sending as soon as its last answer came back."""
    table = Table(title="Capacity: the same clients unpaced")
    for column in ("backend", "seconds", "requests", "errors", "requests/s",
                   f"p50 {GET_ONE} ms", f"p95 {GET_ONE} ms", f"p95 {POST} ms",
                   "API CPU per request"):  # fmt: skip
        table.add_column(column, justify="left" if column == "backend" else "right")
    for run in runs:
        s = run.saturated
        if s is None:
            continue
        table.add_row(
            BACKEND_NAMES[run.backend], f"{s.seconds:.0f}", str(s.requests),
            str(sum(s.errors.values())), f"{s.rate:.0f}",
            _ms(percentile(s.latencies[GET_ONE], 50)), _ms(percentile(s.latencies[GET_ONE], 95)),
            _ms(percentile(s.latencies[POST], 95)), _cpu(s.server_cpu_s, s),
        )  # fmt: skip
    return table


def print_report(runs: Sequence[Run], console: Console | None = None) -> None:
    """Every table of the runs, and the kinds of errors seen."""
    console = console or Console(width=150)
    for run in runs:
        console.print(latency_table(run))
        for kind, count in sorted(run.paced.error_kinds.items()):
            console.print(f"  error: {kind} x {count}")
    console.print(goals_table(runs))
    if any(run.saturated for run in runs):
        console.print(saturation_table(runs))


def main(argv: Sequence[str] | None = None) -> int:
    """Measure each backend asked for and print the tables; exit 1 unless every goal is met."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "mariadb", "both"), default="both")
    parser.add_argument("--seconds", type=float, default=30.0, help="paced phase per backend")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rate", type=float, default=250.0, help="requests/s offered in all")
    parser.add_argument("--saturation-seconds", type=float, default=10.0, help="0: skip")
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS, help="uvicorn workers")
    parser.add_argument("--experiments", type=int, default=100)
    parser.add_argument("--trials", type=int, default=200, help="trials per experiment")
    parser.add_argument("--max-requests", type=int, default=200_000, help="per phase")
    parser.add_argument("--http-client", choices=sorted(HTTP_CLIENTS), default="raw")
    args = parser.parse_args(argv)
    if not (1 <= args.clients <= 500 and 0 < args.seconds <= 3600 and args.rate >= 0):
        parser.error("--clients 1-500, --seconds up to 3600, --rate >= 0")
    backends = ("sqlite", "mariadb") if args.backend == "both" else (args.backend,)
    console = Console(width=150)
    console.print(
        f"{CORES} cores; API: uvicorn with {args.workers} worker process(es) "
        f"(one per core: the API is CPU-bound Python, and the load clients share the cores)"
    )
    runs = [
        run_backend(
            backend,
            experiments=args.experiments,
            runs=args.trials,
            clients=args.clients,
            seconds=args.seconds,
            rate=args.rate,
            saturation_seconds=args.saturation_seconds,
            workers=args.workers,
            max_requests=args.max_requests,
            http_client=args.http_client,
        )
        for backend in backends
    ]
    print_report(runs, console)
    return 0 if all(run.met for run in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
