"""Faults, for real: a worker killed with SIGKILL in the middle of a trial, a broker that
restarts (losing its messages) while trials are queued, and one trial delivered twice to two
workers. Every trial still ends `succeeded`, once, and a lost attempt is recorded.

`Stack` (own Redis, API and workers, stopped by pid) serves the other test_faults_* modules."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
import redis
import yaml

from app.queue import TaskQueue, trial_queue
from app.services.api_keys import create_key
from client.http import Client
from client.processes import ChildProcess, api_command, free_port, wait_until, worker_command

pytestmark = pytest.mark.integration

SLOW = {"name": "slow", "kind": "simulated", "settings": {"seed": 1, "seconds_per_trial": 3}}
SPEC = {
    "name": "fault test",
    "target": "slow",
    "factors": [
        {"name": "nodes", "kind": "integer", "levels": [1, 3]},
        {"name": "threads_per_client", "kind": "integer", "levels": [4, 16]},
    ],
    "design": {"kind": "full_factorial", "seed": 5},
    "objective": {"response": "tps", "goal": "maximize"},
}


class Stack:
    """A Redis server, an API with a fast reaper and short leases, and workers: all children
    of the test, stopped by pid (`stop`, also after a `start` that failed half-way).

    `database_url` (default: a SQLite file of its own), `env` (more GALERA_DOE_ settings) and
    `targets` (the targets file) let a test change what the children run on.
    """

    def __init__(
        self,
        root: Path,
        *,
        database_url: str | None = None,
        env: Mapping[str, str] | None = None,
        targets: Sequence[dict] = (SLOW,),
    ) -> None:
        self.root = root
        self.redis_port = free_port()
        self.redis: ChildProcess | None = None
        self.api: ChildProcess | None = None
        self.workers: list[ChildProcess] = []
        self.database_url = database_url or f"sqlite+aiosqlite:///{root / 'faults.sqlite3'}"
        targets_file = root / "targets.yaml"
        targets_file.write_text(yaml.safe_dump({"targets": list(targets)}))
        self.env = os.environ | {
            "GALERA_DOE_DATABASE_URL": self.database_url,
            "GALERA_DOE_BROKER_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "GALERA_DOE_TARGETS_FILE": str(targets_file),
            "GALERA_DOE_TRIAL_LEASE_SECONDS": "10",
            "GALERA_DOE_REAPER_INTERVAL_SECONDS": "1",
            "GALERA_DOE_RESEND_AFTER_SECONDS": "2",
            "GALERA_DOE_MAX_TRIAL_ATTEMPTS": "3",
            **(env or {}),
        }
        self.api_port = free_port()
        self.api_key: str | None = None
        self._workers_started = 0
        self._api_log_start = 0
        self.client = Client(f"http://127.0.0.1:{self.api_port}")

    def start(self) -> None:
        """Redis, then the API (with a key of its database for the client), healthy."""
        self.start_redis()
        # Every route but /health needs a key: one made on the stack's own database.
        self.api_key = create_key(self.database_url, "faults").token
        self.client.close()
        self.client = Client(f"http://127.0.0.1:{self.api_port}", api_key=self.api_key)
        argv = api_command("127.0.0.1", self.api_port)
        self.api = ChildProcess("api", argv, env=self.env, log_dir=self.root)
        api = self.api

        def healthy() -> bool:
            assert api.alive(), api.tail()
            try:
                return bool(self.client.health()["status"] == "ok")
            except Exception:
                return False

        assert wait_until(healthy, timeout=60), api.tail()

    def start_redis(self) -> None:
        server = shutil.which("redis-server")
        assert server, "redis-server is not installed: run `make setup`"
        argv = [server, "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no"]  # fmt: skip
        self.redis = ChildProcess("redis", argv, env=os.environ, log_dir=self.root)
        broker = redis.Redis(port=self.redis_port)
        assert wait_until(lambda: _pings(broker), timeout=10), self.redis.tail()

    def start_worker(self, env: Mapping[str, str] | None = None) -> ChildProcess:
        """One more worker; `env` overrides the stack's settings for it alone."""
        self._workers_started += 1
        name = f"worker{self._workers_started}"
        child = ChildProcess(
            name, worker_command("INFO"), env=self.env | dict(env or {}), log_dir=self.root
        )
        self.workers.append(child)
        return child

    def worker_logs(self) -> str:
        """Everything the workers printed."""
        return "\n".join(w.log_path.read_text(errors="replace") for w in self.workers)

    def api_log(self) -> str:
        """What the API printed since the stack was last `reset`."""
        assert self.api is not None
        self.api.tail()  # flushes
        return self.api.log_path.read_bytes()[self._api_log_start :].decode(errors="replace")

    def reset(self) -> None:
        """Ready for the next test of a module sharing the stack: its workers stopped, the
        broker emptied (a killed worker's unacked message, a queue left behind), the API's
        log read from here on."""
        for worker in self.workers:
            worker.stop(timeout=15)
        self.workers = []
        redis.Redis(port=self.redis_port).flushall()
        if self.api is not None:
            self._api_log_start = self.api.log_path.stat().st_size

    def stop(self) -> None:
        for child in [*self.workers, self.api, self.redis]:
            if child is not None:
                child.stop(timeout=15)
        self.client.close()


def _pings(broker: redis.Redis) -> bool:
    try:
        return bool(broker.ping())
    except redis.RedisError:
        return False


def ready(worker: ChildProcess) -> bool:
    """Whether the worker is connected to the broker and takes tasks."""
    assert worker.alive(), worker.tail()
    return " ready." in worker.log_path.read_text(errors="replace")


@contextlib.contextmanager
def started(stack: Stack) -> Iterator[Stack]:
    """`stack` started, and stopped at the end even after a start that failed half-way."""
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def module_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One Redis and API for the module: starting them is most of a short test's time."""
    with started(Stack(tmp_path_factory.mktemp("faults"))) as stack:
        yield stack


@pytest.fixture
def stack(module_stack: Stack) -> Iterator[Stack]:
    """The module's stack, with no worker and an empty broker when each test starts."""
    module_stack.reset()
    yield module_stack
    module_stack.reset()


def wait_completed(client: Client, experiment_id: int, timeout: float) -> dict:
    assert wait_until(
        lambda: client.experiment(experiment_id)["status"] == "completed", timeout=timeout
    ), client.experiment(experiment_id)
    return client.experiment(experiment_id)


def test_a_worker_killed_mid_trial_loses_nothing(stack: Stack):
    first = stack.start_worker()
    created = stack.client.create_experiment(SPEC)
    stack.client.start(created["id"])

    def running() -> list[dict]:
        return [t for t in stack.client.trials(created["id"]) if t["status"] == "running"]

    assert wait_until(lambda: bool(running()), timeout=60), first.tail()
    victim = running()[0]
    first.kill()  # SIGKILL by pid, in the middle of a 3 s trial
    stack.start_worker()

    done = wait_completed(stack.client, created["id"], timeout=120)
    trials = stack.client.trials(created["id"])
    assert done["progress"]["succeeded"] == 4 and done["progress"]["running"] == 0
    lost = next(t for t in trials if t["id"] == victim["id"])
    assert lost["attempts"] == 2 and lost["status"] == "succeeded"
    assert "attempt 1 (lost): worker" in lost["error"] and "stopped renewing" in lost["error"]
    assert lost["worker"] != victim["worker"]
    # Every result recorded once: one set of responses per trial, nothing duplicated.
    assert all(t["responses"] and t["finished_at"] for t in trials)
    assert all(t["attempts"] == 1 for t in trials if t["id"] != victim["id"])


def test_queued_trials_survive_a_broker_restart(stack: Stack):
    created = stack.client.create_experiment(SPEC)
    stack.client.start(created["id"])
    broker = redis.Redis(port=stack.redis_port)
    assert broker.llen(trial_queue("slow")) == 4
    assert stack.redis is not None
    stack.redis.kill()  # no persistence: the messages die with it
    stack.start_redis()
    assert broker.llen(trial_queue("slow")) == 0
    # The reaper finds queued trials without a message and sends them again.
    assert wait_until(lambda: broker.llen(trial_queue("slow")) == 4, timeout=30), stack.api.tail()
    stack.start_worker()
    done = wait_completed(stack.client, created["id"], timeout=120)
    assert done["progress"]["succeeded"] == 4
    assert all(t["attempts"] == 1 for t in stack.client.trials(created["id"]))


def test_a_trial_delivered_twice_runs_once(stack: Stack):
    workers = [stack.start_worker(), stack.start_worker()]
    assert wait_until(lambda: all(ready(w) for w in workers), timeout=60), stack.worker_logs()
    spec = SPEC | {"factors": [{"name": "nodes", "kind": "integer", "levels": [3]}]}
    created = stack.client.create_experiment(spec)
    (trial_id,) = [t["id"] for t in created["trials"]]
    stack.client.start(created["id"])
    # The same trial a second time, while the first message is still there or running: each
    # idle worker takes one of the two.
    queue = TaskQueue(stack.env["GALERA_DOE_BROKER_URL"])
    asyncio.run(queue.enqueue_trials([trial_id], target="slow"))

    wait_completed(stack.client, created["id"], timeout=60)
    outcome = re.compile(rf"trial {trial_id} outcome: (\w+)")

    def outcomes() -> list[str]:
        return outcome.findall(stack.worker_logs())

    assert wait_until(lambda: len(outcomes()) == 2, timeout=30), stack.worker_logs()
    assert sorted(outcomes()) == ["skipped", "succeeded"], stack.worker_logs()
    # Each worker had one of the two deliveries: they ran side by side.
    assert all(outcome.search(w.log_path.read_text()) for w in workers), stack.worker_logs()
    trial = stack.client.trial(trial_id)
    assert trial["status"] == "succeeded" and trial["attempts"] == 1 and trial["error"] is None
    assert trial["responses"]["tps"] > 0


def test_a_message_held_by_a_killed_worker_is_sent_again(stack: Stack):
    # Two idle workers take one message each: one runs its trial, the other holds the second
    # trial's message while it waits for the target, and is killed before it claims it. The
    # message stays in the broker's unacked set, which kombu restores only after its visibility
    # timeout (hours): the reaper must send the trial again after resend_after_seconds.
    workers = [stack.start_worker(), stack.start_worker()]
    assert wait_until(lambda: all(ready(w) for w in workers), timeout=60), stack.worker_logs()
    spec = SPEC | {"factors": [{"name": "nodes", "kind": "integer", "levels": [1, 3]}]}
    created = stack.client.create_experiment(spec)
    stack.client.start(created["id"])
    broker = redis.Redis(port=stack.redis_port)

    def running() -> list[dict]:
        return [t for t in stack.client.trials(created["id"]) if t["status"] == "running"]

    assert wait_until(lambda: broker.hlen("unacked") == 2 and len(running()) == 1, timeout=30), (
        stack.worker_logs()
    )
    (runner,) = running()
    holder = next(w for w in workers if not runner["worker"].endswith(f":{w.pid}"))
    held = next(t["id"] for t in created["trials"] if t["id"] != runner["id"])
    assert stack.client.trial(held)["status"] == "queued"
    holder.kill()
    killed_at = time.monotonic()

    # The runner's 3 s trial, the resend after 2 s (a reaper pass every second), the held
    # trial's 3 s, and a margin for a loaded machine: seconds, not kombu's hour.
    done = wait_completed(stack.client, created["id"], timeout=20)
    assert time.monotonic() - killed_at < 20
    assert done["progress"]["succeeded"] == 2
    trial = stack.client.trial(held)
    assert trial["attempts"] == 1 and trial["error"] is None, trial
    assert not trial["worker"].endswith(f":{holder.pid}")
    # Run once: one success in the logs, whoever else received a copy skipped it.
    outcomes = re.findall(rf"trial {held} outcome: (\w+)", stack.worker_logs())
    assert outcomes.count("succeeded") == 1 and set(outcomes) <= {"succeeded", "skipped"}
    assert "had lost their message and were sent again" in stack.api_log()
