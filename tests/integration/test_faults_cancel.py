"""An experiment cancelled while a trial runs, for real: the worker stops the run (the simulated
target's wait; on the lab, the trial's sysbench processes, by pid), records the trial
`cancelled` with no result, and gives the target back for the next experiment. A trial whose
worker died is cancelled by the reaper once its lease expires."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from app.config import Settings
from client.http import Client
from client.processes import ChildProcess, free_port, wait_until
from tests.integration import test_faults, test_lab
from tests.integration.test_faults import SPEC, Stack, ready, started
from worker.lab import layout as lab_layout
from worker.lab import supervisor as lab_supervisor
from worker.tasks import STOPPED_MID_TRIAL

pytestmark = pytest.mark.integration

# Trials far longer than the test: only a cancellation ends them in time.
LONG = {"name": "long", "kind": "simulated", "settings": {"seconds_per_trial": 60}}
FOUR_TRIALS = {key: value for key, value in SPEC.items() if key != "name"} | {"target": "long"}
# The worker polls every second and stops at once; the rest is API and database round trips.
STOPPED_WITHIN_S = 6


@pytest.fixture(scope="module")
def module_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Redis and the API on a SQLite file, for the module; 10 s leases, a reaper every second.
    `stack` gives each test this stack with no worker and an empty broker."""
    with started(Stack(tmp_path_factory.mktemp("cancel"), targets=[LONG])) as running:
        yield running


stack = test_faults.stack


def _database_path(database_url: str) -> str:
    return database_url.split(":///", 1)[1]


def target_leases(database_url: str) -> list[tuple[str, str]]:
    """(target, holder) of every target lease in a SQLite database."""
    with sqlite3.connect(_database_path(database_url)) as connection:
        return connection.execute("SELECT target, holder FROM target_leases").fetchall()


def running_trials(client: Client, experiment_id: int) -> list[dict]:
    return [t for t in client.trials(experiment_id) if t["status"] == "running"]


def test_cancel_stops_a_running_trial_and_frees_the_target(stack: Stack):
    worker = stack.start_worker()
    assert wait_until(lambda: ready(worker), timeout=60), worker.tail()
    first = stack.client.create_experiment(FOUR_TRIALS | {"name": "cancelled"})
    stack.client.start(first["id"])
    assert wait_until(lambda: bool(running_trials(stack.client, first["id"])), timeout=30)
    (victim,) = running_trials(stack.client, first["id"])
    assert target_leases(stack.database_url) == [("long", victim["worker"])]

    began = time.monotonic()
    assert stack.client.cancel(first["id"])["status"] == "cancelled"
    assert wait_until(
        lambda: not running_trials(stack.client, first["id"]), timeout=STOPPED_WITHIN_S
    ), worker.tail()
    assert time.monotonic() - began < STOPPED_WITHIN_S
    stopped = stack.client.trial(victim["id"])
    assert stopped["status"] == "cancelled" and stopped["attempts"] == 1
    assert stopped["responses"] is None and stopped["failure"] is None
    assert stopped["error"] is None and stopped["finished_at"]
    assert wait_until(lambda: not target_leases(stack.database_url), timeout=5)
    assert f"trial {victim['id']} outcome: cancelled" in stack.worker_logs()
    trials = stack.client.trials(first["id"])
    assert [t["status"] for t in trials] == ["cancelled"] * 4
    assert sorted(t["attempts"] for t in trials) == [0, 0, 0, 1]

    # The target is free: the next experiment's trial starts on it at once. Its worker is
    # then killed (SIGKILL) and the experiment cancelled: the reaper cancels the trial when
    # its lease expires, and does not send it again.
    second = stack.client.create_experiment(FOUR_TRIALS | {"name": "next"})
    stack.client.start(second["id"])
    assert wait_until(lambda: bool(running_trials(stack.client, second["id"])), timeout=10)
    (orphan,) = running_trials(stack.client, second["id"])
    worker.kill()
    stack.client.cancel(second["id"])
    assert wait_until(lambda: not running_trials(stack.client, second["id"]), timeout=30)
    reaped = stack.client.trial(orphan["id"])
    assert reaped["status"] == "cancelled" and reaped["attempts"] == 1
    assert reaped["responses"] is None and reaped["failure"] is None


def test_a_worker_stopped_mid_trial_exits_at_once_and_the_trial_runs_again(stack: Stack):
    worker = stack.start_worker()
    assert wait_until(lambda: ready(worker), timeout=60), worker.tail()
    created = stack.client.create_experiment(FOUR_TRIALS | {"name": "worker stopped"})
    stack.client.start(created["id"])
    assert wait_until(lambda: bool(running_trials(stack.client, created["id"])), timeout=30)
    (trial,) = running_trials(stack.client, created["id"])
    # SIGTERM: the worker stops the trial, releases its targets and exits by itself, long
    # before the trial's 60 s and the SIGKILL that would follow (leaving a lab running on).
    began = time.monotonic()
    worker.stop(timeout=30)
    log = worker.log_path.read_text(errors="replace")
    assert time.monotonic() - began < STOPPED_WITHIN_S, log
    assert worker.process.returncode == 0, log
    assert f"trial {trial['id']} outcome: requeued" in log
    again = stack.client.trial(trial["id"])
    assert again["status"] == "queued" and again["attempts"] == 1, again
    assert STOPPED_MID_TRIAL in again["error"]
    assert not target_leases(stack.database_url)
    stack.client.cancel(created["id"])


# The lab: the cluster fixtures of test_lab (a 2-node cluster of this module's own, and the API
# and a worker on it), with a Redis server of this module's own instead of the shared one.
layout = test_lab.layout
cluster = test_lab.cluster
service_dir = test_lab.service_dir
service = test_lab.service


@pytest.fixture(scope="module")
def own_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server child of this module, stopped by pid at the end."""
    server = shutil.which("redis-server")
    assert server, "redis-server is not installed: run `make setup`"
    port = free_port()
    argv = [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no"]  # fmt: skip
    child = ChildProcess("redis", argv, env=os.environ, log_dir=tmp_path_factory.mktemp("redis"))
    try:
        broker = redis.Redis(port=port)
        assert wait_until(lambda: _pings(broker), timeout=10), child.tail()
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        child.stop()


def _pings(broker: redis.Redis) -> bool:
    try:
        return bool(broker.ping())
    except redis.RedisError:
        return False


@pytest.fixture(scope="module")
def settings(own_redis: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """One SQLite file and this module's Redis."""
    path = tmp_path_factory.mktemp("lab-cancel-db") / "lab.sqlite3"
    return Settings(database_url=f"sqlite+aiosqlite:///{path}", broker_url=own_redis)


def sysbench_runs(layout: lab_layout.LabLayout) -> list[int]:
    """Pids of the `sysbench ... run` processes that load this lab's nodes."""
    ports = {f"--mysql-port={layout.client_port(i)}" for i in range(1, layout.max_nodes + 1)}
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue  # it exited meanwhile
        if Path(argv[0]).name == "sysbench" and "run" in argv and ports & set(argv):
            pids.append(int(entry.name))
    return pids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_cancel_stops_the_sysbench_processes_of_a_lab_trial(
    service: Client,
    cluster: lab_supervisor.LabCluster,
    layout: lab_layout.LabLayout,
    settings: Settings,
):
    nodes = cluster.size()
    spec = {
        "name": "lab: cancelled mid-run",
        "target": "lab-it",
        "factors": [
            {"name": "nodes", "kind": "integer", "levels": [nodes]},
            {"name": "clients", "kind": "integer", "levels": [2]},
            {"name": "runtime_s", "kind": "integer", "levels": [600]},
        ],
        "design": {"kind": "full_factorial"},
        "objective": {"response": "tps"},
    }
    created = service.create_experiment(spec)
    service.start(created["id"])
    # Both clients' sysbench runs are under way (after any schema prepare).
    assert wait_until(lambda: len(sysbench_runs(layout)) == 2, timeout=300, interval=0.5)
    pids = sysbench_runs(layout)
    (trial,) = service.trials(created["id"])
    assert trial["status"] == "running"

    began = time.monotonic()
    service.cancel(created["id"])
    assert wait_until(lambda: service.trial(trial["id"])["status"] != "running", timeout=30)
    assert time.monotonic() - began < 15
    stopped = service.trial(trial["id"])
    assert stopped["status"] == "cancelled" and stopped["attempts"] == 1, stopped
    assert stopped["responses"] is None and stopped["failure"] is None
    assert not any(_alive(pid) for pid in pids), pids
    assert wait_until(lambda: not target_leases(settings.database_url), timeout=10)

    # The cluster is left usable: the next experiment runs a real trial on it.
    short = spec | {
        "name": "lab: after a cancel",
        "factors": [{"name": "nodes", "kind": "integer", "levels": [nodes]}],
    }
    again = service.create_experiment(short)
    service.start(again["id"])
    assert wait_until(lambda: service.experiment(again["id"])["status"] == "completed", timeout=300)
    (after,) = service.trials(again["id"])
    assert after["status"] == "succeeded", after["error"]
    assert after["responses"]["tps"] > 0
