"""The whole path on real parts: uvicorn API, Celery worker process, Redis, SQLite and MariaDB."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
import redis
import yaml
from celery import Celery

from app.config import Settings
from app.queue import RUN_TRIAL_TASK, trial_queue
from client.http import Client
from client.processes import wait_until
from tests.conftest import CAPPED_SIMULATED

pytestmark = pytest.mark.integration

QUICKSTART = Path(__file__).resolve().parents[2] / "experiments" / "catalog" / "quickstart.yaml"


def quickstart_on_simulated() -> dict:
    """The quickstart experiment, on the simulated cluster."""
    return yaml.safe_load(QUICKSTART.read_text()) | {"target": "simulated"}


def wait_for_status(client: Client, experiment_id: int, status: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        experiment = client.experiment(experiment_id)
        if experiment["status"] == status:
            return experiment
        time.sleep(0.2)
    raise AssertionError(f"experiment {experiment_id} still {experiment['status']}: {experiment}")


def run_to_completion(client: Client, spec: dict, timeout: float = 120) -> tuple[dict, dict]:
    """Create and start an experiment, wait until it completes: (as created, as completed)."""
    created = client.create_experiment(spec)
    client.start(created["id"])
    return created, wait_for_status(client, created["id"], "completed", timeout)


def test_quickstart_runs_to_completion_through_the_worker(service: Client):
    spec = quickstart_on_simulated()
    created, done = run_to_completion(service, spec)
    total = len(created["trials"])
    assert done["progress"]["succeeded"] == total and done["progress"]["failed"] == 0

    trials = service.trials(created["id"])
    assert all(t["attempts"] == 1 and t["worker"] for t in trials)
    assert all(set(t["responses"]) >= {"tps", "latency_p95_ms", "abort_rate"} for t in trials)
    # The worker ran them in the planned run order.
    started = [t["started_at"] for t in sorted(trials, key=lambda t: t["run_order"])]
    assert started == sorted(started)
    detail = service.trial(trials[0]["id"])
    assert detail["raw_output"]

    analysis = service.analysis(created["id"])
    assert analysis["trials_used"] == total
    assert set(analysis["optimum"]["config"]) == {f["name"] for f in spec["factors"]}
    assert done["best"]["value"] == max(t["responses"]["tps"] for t in trials)


def test_a_trial_delivered_twice_runs_once(service: Client, settings: Settings):
    spec = quickstart_on_simulated()
    created = service.create_experiment(spec)
    service.start(created["id"])
    # Deliver two trials' messages again, as a broker redelivery would: whether a duplicate
    # arrives while its trial is queued or after it finished, the trial runs once.
    order = sorted(created["trials"], key=lambda t: t["run_order"])
    sender = Celery(broker=settings.broker_url)
    for trial in (order[0], order[-1], order[0]):
        sender.send_task(RUN_TRIAL_TASK, args=[trial["id"]], queue=trial_queue("simulated"))
    done = wait_for_status(service, created["id"], "completed")
    broker = redis.Redis.from_url(settings.broker_url)
    assert wait_until(lambda: broker.llen(trial_queue("simulated")) == 0, timeout=30)
    time.sleep(0.5)
    trials = service.trials(created["id"])
    assert [t["attempts"] for t in trials] == [1] * len(trials)
    assert service.experiment(created["id"])["progress"] == done["progress"]


def test_cancel_stops_what_has_not_run(service: Client):
    spec = quickstart_on_simulated()
    created = service.create_experiment(spec)
    cancelled = service.cancel(created["id"])
    assert cancelled["progress"]["cancelled"] == len(created["trials"])


def test_failed_trials_keep_their_error_and_are_left_out_of_the_fit(service: Client):
    # One client on a node that takes at most 32 connections: the runs at 64 threads fail.
    spec = {
        "name": "beyond max_connections",
        "target": CAPPED_SIMULATED["name"],
        "factors": [
            {"name": "nodes", "kind": "integer", "levels": [1, 3, 9]},
            {"name": "threads_per_client", "kind": "integer", "levels": [4, 8, 16, 64]},
        ],
        "design": {"kind": "full_factorial", "levels": 3, "seed": 5},
        "objective": {"response": "tps"},
    }
    created, done = run_to_completion(service, spec)
    assert done["progress"]["failed"] == 3 and done["progress"]["succeeded"] == 9
    failed = [t for t in service.trials(created["id"]) if t["status"] == "failed"]
    assert all(t["config"]["threads_per_client"] == 64 for t in failed)
    assert all("Too many connections" in t["error"] for t in failed)
    assert all(t["responses"] is None and t["finished_at"] for t in failed)
    analysis = service.analysis(created["id"])
    assert analysis["trials_used"] == 9 and analysis["trials_failed"] == 3


def test_a_split_plot_ccd_runs_with_nodes_changed_as_rarely_as_planned(service: Client):
    spec = {
        "name": "face-centred CCD, nodes hard to change",
        "target": "simulated",
        "factors": [
            {"name": "nodes", "kind": "integer", "low": 1, "high": 9, "hard_to_change": True},
            {"name": "clients", "kind": "integer", "low": 1, "high": 8},
            {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 32,
             "scale": "log2"},
        ],
        "design": {"kind": "ccd", "ccd_type": "face_centred", "centre_points": 3, "seed": 11},
        "constraints": ["clients * threads_per_client <= 200"],
        "objective": {"response": "tps"},
    }  # fmt: skip
    created = service.create_experiment(spec)
    design = service.design(created["id"])
    assert design["family"]["alpha"] == 1.0 and design["removed_by_constraints"] > 0
    service.start(created["id"])
    wait_for_status(service, created["id"], "completed")
    trials = sorted(service.trials(created["id"]), key=lambda t: t["started_at"])
    assert [t["run_order"] for t in trials] == sorted(t["run_order"] for t in trials)
    nodes = [t["config"]["nodes"] for t in trials]
    changes = sum(a != b for a, b in itertools.pairwise(nodes))
    assert changes == len(set(nodes)) - 1 == 2
    assert all(t["config"]["clients"] * t["config"]["threads_per_client"] <= 200 for t in trials)
    analysis = service.analysis(created["id"], model="quadratic")
    best = analysis["optimum"]["config"]
    assert best["clients"] * best["threads_per_client"] <= 200
