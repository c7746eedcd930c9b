"""An experiment cancelled while a trial runs, for real: the worker stops the run (the simulated
target's wait), records the trial `cancelled` with no result, and gives the target back for the
next experiment. A trial whose worker died is cancelled by the reaper once its lease expires.
The same on the lab (its sysbench processes stopped by pid): test_lab_cancel."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator

import pytest

from client.http import Client
from client.processes import wait_until
from tests.integration import test_faults
from tests.integration.test_faults import SPEC, Stack, ready, started
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
