"""The closed loop with a noise factor on real parts: the API plans, a Celery worker process runs
every round on the simulated cluster, and the loop chooses the control factors only: every
control configuration it runs is run at each level of the noise factor (the write share of the
workload), and what it tells the user to deploy holds the control factors alone, judged across
the write shares by the objective's aim.

The module has a SQLite database and a Redis database (7) of its own.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from app.config import Settings
from client.http import Client
from tests.integration.test_optimization_loop import wait_for_loop

pytestmark = pytest.mark.integration

REDIS_URL = "redis://127.0.0.1:6379/7"
WRITE_SHARES = [0.1, 0.5]
FACTORS = [
    {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
    {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
    {"name": "write_share", "kind": "continuous", "levels": WRITE_SHARES, "noise": True},
]


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """A database of the module's own and Redis database 7, flushed before and after."""
    broker = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3)
    broker.flushdb()
    path = tmp_path_factory.mktemp("robust-loop-db") / "loop.sqlite3"
    yield Settings(database_url=f"sqlite+aiosqlite:///{path}", broker_url=REDIS_URL)
    broker.flushdb()
    broker.close()


def test_a_loop_with_a_noise_factor_runs_every_choice_at_every_level_and_deploys_controls(
    service: Client,
):
    spec = {
        "name": "robust loop",
        "target": "simulated",
        "factors": FACTORS,
        "design": None,
        "objective": {"response": "tps", "robust": {"aim": "worst"}},
    }
    created = service.create_experiment(spec)
    service.optimize(created["id"], budget=16, strategy="bayes", batch_size=2)
    loop = wait_for_loop(service, created["id"])["optimization"]
    assert loop["status"] == "stopped", loop
    trials = service.trials(created["id"])
    assert 0 < len(trials) <= 16 and all(t["status"] == "succeeded" for t in trials)
    levels: dict[tuple, list[float]] = {}
    for t in trials:
        control = (t["config"]["nodes"], t["config"]["threads_per_client"])
        levels.setdefault(control, []).append(t["config"]["write_share"])
    # Every control configuration run was run at both write shares, as often at each.
    for control, shares in levels.items():
        assert sorted(set(shares)) == WRITE_SHARES, control
        assert shares.count(0.1) == shares.count(0.5), control
    found = loop["recommendation"]
    assert set(found["config"]) == {"nodes", "threads_per_client"}
    key = (found["config"]["nodes"], found["config"]["threads_per_client"])
    assert found["runs"] == len(levels[key]) and "the worst noise level" in found["reason"]
    deploy = loop["deploy"]
    assert deploy["config"] == found["config"]
    assert "across write_share levels" in deploy["summary"]
    assert [level["config"]["write_share"] for level in deploy["noise_levels"]] == WRITE_SHARES
    assert all(level["measured"] is not None for level in deploy["noise_levels"])
    # A suggestion asked for afterwards is one control configuration at both write shares.
    picked = service.suggest(created["id"], strategy="bayes", count=1)["suggestions"]
    assert sorted(s["config"]["write_share"] for s in picked) == WRITE_SHARES
    assert len({(s["config"]["nodes"], s["config"]["threads_per_client"]) for s in picked}) == 1
