"""The metadata database restarted or locked in the middle of an experiment, for real.

The restart test runs a MariaDB server of its own (datadir, socket and port of its own; never
the system server), points the API and the workers at it, kills it with SIGKILL by pid while a
trial runs, and starts it again on the same datadir and port. While it is down the API answers
503 at once and /health names the database; the worker whose trial finished holds the result
and retries recording it, a worker that receives a trial then waits for the database, and one
whose retries run out drops the delivery (the trial stays queued in the database, and the
reaper sends it again). Once it is back, the same API (not restarted) answers again and every
trial ends `succeeded`, once, at its first attempt.

The lock test holds a write transaction on the stack's SQLite file while a trial runs, until
the trial's lease has run out: the worker cannot renew it, the reaper cannot take the trial
back. Whichever writes first once the lock is gone decides, and the trial ends one way or the
other, never both: succeeded at attempt 1 with no error (the worker renewed its lease first),
or attempt 1 lost and run again (the reaper took it back first; the worker stops its run).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import secrets
import shutil
import socket
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pymysql
import pytest

from client.http import ApiError, Client
from client.processes import ChildProcess, free_port, wait_until
from tests.integration.test_faults import SPEC, Stack, ready, started, wait_completed

pytestmark = pytest.mark.integration

MARIADBD = "/usr/sbin/mariadbd"
INSTALL_DB = "/usr/bin/mariadb-install-db"
SERVER_USER = "mysql"  # who runs the server when the test runs as root
TRIAL_S = 2
PACED = {"name": "paced", "kind": "simulated", "settings": {"seconds_per_trial": TRIAL_S}}


class MetadataServer:
    """A mariadbd child of the test on 127.0.0.1:`port`, killed and restarted by pid."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.datadir = base / "data"
        self.socket = base / "mariadbd.sock"
        self.port = free_port()
        self.process: ChildProcess | None = None
        self.password = secrets.token_urlsafe(16)
        self.as_root = os.geteuid() == 0
        self._starts = 0

    @property
    def url(self) -> str:
        """The service's SQLAlchemy URL (a user of its own over TCP)."""
        return (
            f"mysql+asyncmy://galera_doe:{self.password}@127.0.0.1:{self.port}/galera_doe"
            "?charset=utf8mb4"
        )

    def install(self) -> None:
        """A fresh datadir, and the service's database and user."""
        argv = [INSTALL_DB, "--no-defaults", f"--datadir={self.datadir}", "--skip-test-db"]
        if self.as_root:
            argv.append(f"--user={SERVER_USER}")
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        self.start()
        with self.admin() as cursor:
            cursor.execute("CREATE DATABASE galera_doe CHARACTER SET utf8mb4")
            user = "'galera_doe'@'127.0.0.1'"
            cursor.execute(f"CREATE USER {user} IDENTIFIED BY %s", (self.password,))
            cursor.execute(f"GRANT ALL PRIVILEGES ON galera_doe.* TO {user}")

    def start(self) -> None:
        """Start mariadbd on the datadir and port; wait until it answers over TCP."""
        argv = [
            MARIADBD, "--no-defaults", f"--datadir={self.datadir}", f"--socket={self.socket}",
            f"--port={self.port}", "--bind-address=127.0.0.1", "--skip-name-resolve",
            f"--pid-file={self.base / 'mariadbd.pid'}", "--innodb-buffer-pool-size=64M",
            "--innodb-log-file-size=16M", "--max-connections=200",
        ]  # fmt: skip
        if self.as_root:
            argv.append(f"--user={SERVER_USER}")
        self._starts += 1
        self.process = ChildProcess(
            f"mariadbd{self._starts}", argv, env=os.environ, log_dir=self.base
        )
        process = self.process
        assert wait_until(lambda: self._answers(process), timeout=60), process.tail()

    def _answers(self, process: ChildProcess) -> bool:
        """Whether the server sends its greeting on the TCP port."""
        assert process.alive(), process.tail()
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as probe:
                return bool(probe.recv(4))
        except OSError:
            return False

    @contextlib.contextmanager
    def admin(self) -> Iterator[pymysql.cursors.Cursor]:
        """root (the OS user running the test) over the server's socket."""
        user = "root" if self.as_root else getpass.getuser()
        connection = pymysql.connect(unix_socket=str(self.socket), user=user, autocommit=True)
        try:
            with connection.cursor() as cursor:
                yield cursor
        finally:
            connection.close()

    def kill(self) -> None:
        """SIGKILL by pid: a crash, not a shutdown."""
        assert self.process is not None
        self.process.kill()

    def stop(self) -> None:
        """A clean shutdown (SIGTERM by pid)."""
        if self.process is not None:
            self.process.stop(timeout=30)


@pytest.fixture
def metadata_server() -> Iterator[MetadataServer]:
    """A MariaDB server of the test's own, in a directory its server user can reach."""
    base = Path("/var/tmp") / f"galera-doe-meta-{secrets.token_hex(4)}"
    base.mkdir(mode=0o755)
    if os.geteuid() == 0:
        shutil.chown(base, SERVER_USER, SERVER_USER)
    server = MetadataServer(base)
    try:
        server.install()
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def stack(tmp_path: Path, metadata_server: MetadataServer) -> Iterator[Stack]:
    """Redis, the API and (later) workers on the test's MariaDB; leases long enough that the
    outage expires none, so any duplicate run would show as a second attempt."""
    running = Stack(
        tmp_path,
        database_url=metadata_server.url,
        targets=[PACED],
        env={"GALERA_DOE_TRIAL_LEASE_SECONDS": "60", "GALERA_DOE_DB_RETRY_SECONDS": "120"},
    )
    with started(running) as stack:
        yield stack


def test_a_database_restart_loses_no_result(stack: Stack, metadata_server: MetadataServer):
    first = stack.start_worker()
    assert wait_until(lambda: ready(first), timeout=60), first.tail()
    spec = SPEC | {"name": "database restart", "target": "paced"}
    created = stack.client.create_experiment(spec)
    experiment_id = created["id"]
    trial_ids = sorted(t["id"] for t in created["trials"])
    stack.client.start(experiment_id)

    def running() -> list[dict]:
        return [t for t in stack.client.trials(experiment_id) if t["status"] == "running"]

    assert wait_until(lambda: bool(running()), timeout=30), first.tail()
    metadata_server.kill()

    # The API answers at once, and 503, not 500 and not a hang.
    impatient = Client(stack.client.base_url, api_key=stack.api_key, timeout=10)
    try:
        began = time.monotonic()
        with pytest.raises(ApiError) as refused:
            impatient.experiment(experiment_id)
        assert refused.value.status_code == 503, refused.value
        assert time.monotonic() - began < 5
    finally:
        impatient.close()
    health = httpx.get(f"{stack.client.base_url}/health", timeout=10)
    assert health.status_code == 503
    assert health.json()["database"]["ok"] is False and health.json()["broker"]["ok"] is True

    # A worker started now receives a queued trial while the database is down: it waits.
    second = stack.start_worker()
    assert wait_until(
        lambda: logged(second, "database unreachable while reading trial"), timeout=60
    ), second.tail()
    # One that gives up at once (db_retry_seconds 1) drops the deliveries it receives: the
    # trials stay queued in the database, and the reaper sends them again once it is back.
    impatient_worker = stack.start_worker({"GALERA_DOE_DB_RETRY_SECONDS": "1"})
    assert wait_until(lambda: logged(impatient_worker, "gave up after 1 s"), timeout=60), (
        impatient_worker.tail()
    )
    # The running trial finished meanwhile: its worker holds the result and keeps trying.
    assert wait_until(
        lambda: logged(first, "database unreachable while recording the result of trial"),
        timeout=30,
    ), first.tail()

    metadata_server.start()  # same datadir, same port
    assert wait_until(lambda: _answers(stack.client, experiment_id), timeout=30), stack.api.tail()
    assert stack.client.health()["database"]["ok"] is True

    done = wait_completed(stack.client, experiment_id, timeout=90)
    assert done["progress"]["succeeded"] == len(trial_ids) == 4, done["progress"]
    trials = stack.client.trials(experiment_id)
    assert all(t["attempts"] == 1 and t["error"] is None for t in trials), trials
    assert all(t["responses"] and t["responses"]["tps"] > 0 for t in trials)
    # Every trial ran once, in one worker or the other. The messages the waiting worker held
    # through the outage were sent again (their holder might have died): those copies skip.
    outcomes = re.findall(r"trial (\d+) outcome: (\w+)", stack.worker_logs())
    successes = sorted(trial for trial, outcome in outcomes if outcome == "succeeded")
    assert successes == sorted(str(i) for i in trial_ids), outcomes
    assert {outcome for _, outcome in outcomes} <= {"succeeded", "skipped"}, outcomes
    assert logged(first, "database reachable again: recording the result of trial")
    assert stack.api is not None and "had lost their message and were sent again" in (
        stack.api.tail(400)
    )


def logged(child: ChildProcess, text: str) -> bool:
    """Whether the child printed `text` (anywhere: tracebacks make tails short)."""
    return text in child.log_path.read_text(errors="replace")


def _answers(client: Client, experiment_id: int) -> bool:
    try:
        client.experiment(experiment_id)
    except (ApiError, httpx.TransportError):
        return False
    return True


# Longer than the lock (the lease's 10 s at most, and 3 s for a reaper pass to read the expired
# lease and wait behind the lock): the run is still going when the lock is gone.
LOCKED_TRIAL_S = 16


@pytest.fixture
def sqlite_stack(tmp_path: Path) -> Iterator[Stack]:
    """Redis, the API and (later) a worker on a SQLite file; 10 s leases, a reaper every second."""
    target = {
        "name": "locked",
        "kind": "simulated",
        "settings": {"seconds_per_trial": LOCKED_TRIAL_S},
    }
    with started(Stack(tmp_path, targets=[target])) as stack:
        yield stack


def test_a_lease_run_out_under_a_sqlite_lock_ends_the_trial_one_way(sqlite_stack: Stack):
    stack = sqlite_stack
    worker = stack.start_worker()
    assert wait_until(lambda: ready(worker), timeout=60), worker.tail()
    spec = SPEC | {
        "name": "locked",
        "target": "locked",
        "factors": [{"name": "nodes", "kind": "integer", "levels": [3]}],
    }
    created = stack.client.create_experiment(spec)
    (trial_id,) = [t["id"] for t in created["trials"]]
    stack.client.start(created["id"])
    assert wait_until(lambda: stack.client.trial(trial_id)["status"] == "running", timeout=30), (
        worker.tail()
    )

    database = stack.database_url.removeprefix("sqlite+aiosqlite:///")
    lock = sqlite3.connect(database, isolation_level=None)
    try:
        lock.execute("BEGIN IMMEDIATE")  # the write lock; readers go on (WAL)
        expires = datetime.fromisoformat(stack.client.trial(trial_id)["lease_expires_at"])
        wait = (expires.astimezone(UTC) - datetime.now(UTC)).total_seconds()
        assert 0 < wait <= 10
        time.sleep(wait + 3)  # expired, and read so by a reaper pass now waiting to write
        assert stack.client.trial(trial_id)["status"] == "running"
    finally:
        lock.execute("ROLLBACK")
        lock.close()

    done = wait_completed(stack.client, created["id"], timeout=2 * LOCKED_TRIAL_S + 15)
    assert done["progress"]["succeeded"] == 1, done["progress"]
    trial = stack.client.trial(trial_id)
    assert trial["responses"] and trial["responses"]["tps"] > 0
    lost = "attempt 1 (lost): worker"
    if trial["attempts"] == 1:
        assert trial["error"] is None, trial
    else:
        assert trial["attempts"] == 2, trial
        assert trial["error"].startswith(lost) and "\n" not in trial["error"], trial
        assert logged(worker, f"trial {trial_id}: stopping the run")
    # One success recorded, in one delivery.
    outcomes = re.findall(rf"trial {trial_id} outcome: (\w+)", stack.worker_logs())
    assert outcomes.count("succeeded") == 1, outcomes
