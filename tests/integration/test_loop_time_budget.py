"""A closed loop with a budget of trial time, on real parts: a Celery worker runs every trial on
a simulated cluster paced like a real benchmark, and the loop stops once its trials' wall time
has spent the budget, long before its budget of trials."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest

from app.config import Settings
from client.http import Client
from client.processes import running_service
from tests.conftest import service_env
from tests.integration.test_optimization_loop import wait_for_loop

pytestmark = pytest.mark.integration

PACED_SECONDS = 0.4
BUDGET_SECONDS = 3.0
TARGETS = [{"name": "paced", "kind": "simulated", "settings": {"seconds_per_trial": PACED_SECONDS}}]


@pytest.fixture(scope="module")
def paced(settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    """The API and one worker as child processes, serving the paced simulated target."""
    root = tmp_path_factory.mktemp("paced-service")
    with running_service(service_env(settings, root, TARGETS), root) as service:
        yield service.client


def _seconds(trial: dict) -> float:
    started, finished = (datetime.fromisoformat(trial[k]) for k in ("started_at", "finished_at"))
    return (finished - started).total_seconds()


def test_the_loop_stops_when_its_trials_have_spent_the_budget_of_time(paced: Client):
    factors = [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
    ]
    spec = {"name": "timed", "target": "paced", "factors": factors, "design": None,
            "objective": {"response": "tps"}}  # fmt: skip
    created = paced.create_experiment(spec)
    started = paced.optimize(
        created["id"], budget=100, budget_seconds=BUDGET_SECONDS, strategy="bayes"
    )
    assert started["budget_seconds"] == BUDGET_SECONDS
    loop = wait_for_loop(paced, created["id"], timeout=120)["optimization"]
    assert loop["status"] == "stopped", loop
    assert loop["stop_reason"] == "the budget of trial time is used up"
    trials = sorted(paced.trials(created["id"]), key=lambda t: t["run_order"])
    assert loop["trials_used"] == len(trials) and 3 <= len(trials) < 100
    spent = [_seconds(t) for t in trials]
    assert all(s >= PACED_SECONDS for s in spent)
    # One trial at a time: the last one started with time left, and ended the budget.
    assert sum(spent[:-1]) < BUDGET_SECONDS <= sum(spent)
    assert loop["seconds_used"] == pytest.approx(sum(spent), abs=1e-3)
    assert loop["recommendation"]["config"] in [t["config"] for t in trials]
