"""An experiment cancelled while a lab trial runs: the worker stops the trial's sysbench
processes by pid, records the trial `cancelled` with no result, and leaves the cluster usable
for the next experiment (test_faults_cancel has the same on the simulated target)."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from app.config import Settings
from client.http import Client
from client.processes import ChildProcess, free_port, wait_until
from tests.integration import test_lab
from tests.integration.test_faults_cancel import target_leases
from worker.lab import layout as lab_layout
from worker.lab import supervisor as lab_supervisor

pytestmark = pytest.mark.integration

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
