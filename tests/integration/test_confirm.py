"""Decision-ready answers end to end on the simulated cluster (issue 57), through a real API,
worker and Redis: today's configuration read from the nodes and measured first, then the
configuration to deploy confirmed against it in interleaved pairs."""

from __future__ import annotations

import time
from typing import Any

import pytest

from client.http import Client
from tests.integration.test_end_to_end import run_to_completion

pytestmark = pytest.mark.integration


def wait_for_confirmation(
    client: Client, experiment_id: int, confirmation_id: int, timeout: float = 120
) -> dict[str, Any]:
    """The confirmation once it is no longer running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = client.confirmation(experiment_id, confirmation_id)
        if found["status"] != "running":
            return found
        time.sleep(0.2)
    raise AssertionError(f"confirmation {confirmation_id} still running: {found}")


def check_interleaved(confirmation: dict[str, Any]) -> None:
    """Every pair's two runs ran one after the other, pair after pair, each pair's order as
    planned (a pair never waits for another pair's run)."""
    runs = sorted(confirmation["trials"], key=lambda t: t["started_at"])
    assert [t["pair"] for t in runs] == [
        p for p in range(1, confirmation["pairs"] + 1) for _ in "ab"
    ]
    for first, second in zip(runs[::2], runs[1::2], strict=True):
        assert {first["arm"], second["arm"]} == {"candidate", "baseline"}
        assert first["finished_at"] <= second["started_at"]
    assert [t["run_order"] for t in runs] == sorted(t["run_order"] for t in runs)


def test_threads_eight_against_one_confirm_a_gain_with_the_read_baseline(service: Client):
    spec = {
        "name": "confirm: threads",
        "target": "simulated",
        "factors": [
            {"name": "nodes", "kind": "integer", "levels": [1]},
            {"name": "threads_per_client", "kind": "integer", "levels": [1, 8], "scale": "log2"},
            {"name": "wsrep_slave_threads", "kind": "integer", "levels": [1, 4]},
        ],
        "design": {"kind": "full_factorial", "seed": 5},
        "objective": {"response": "tps"},
        "baseline": {"nodes": 1, "threads_per_client": 1, "wsrep_slave_threads": "current"},
    }
    created, done = run_to_completion(service, spec)
    assert done["progress"]["succeeded"] == 5
    first = service.trial(min(created["trials"], key=lambda t: t["run_order"])["id"])
    # The simulated cluster's own applier threads, read before the run and stored with it.
    assert first["source"] == "baseline" and first["config"]["wsrep_slave_threads"] == 1
    assert first["record"]["read_from_nodes"] == {"wsrep_slave_threads": "1"}
    assert service.experiment(created["id"])["baseline"]["current"] == ["wsrep_slave_threads"]
    analysis = service.analysis(created["id"])
    assert analysis["baseline"]["config"] == first["config"]
    assert analysis["baseline"]["gains"][0]["predicted"] > 0

    started = service.confirm(created["id"], max_pairs=6)
    assert started["baseline"] == first["config"]
    assert started["candidate"]["threads_per_client"] == 8
    assert started["plan"]["power"] >= 0.8 and 3 <= started["pairs"] <= 6
    # Every run in a fresh cluster state, where the target can give one (this one always can).
    assert started["plan"]["fresh"] and all(t["restart_first"] for t in started["trials"])
    ended = wait_for_confirmation(service, created["id"], started["id"])
    assert ended["status"] == "finished", ended
    result = ended["result"]
    assert result["significant"] and result["gain_low"] > 0 and result["gain_pct_low"] > 0
    assert ended["sentence"].startswith("The recommended configuration ran ")
    assert "% faster than today's (95 % CI " in ended["sentence"]
    assert f"{ended['pairs']} interleaved pairs" in ended["sentence"]
    assert result["model_check"] is not None
    check_interleaved(ended)
    # The confirmation's runs stay out of the model they test.
    assert service.analysis(created["id"])["trials_used"] == 5
    assert len(service.confirmations(created["id"])) == 1


def test_two_identical_configurations_confirm_no_gain(service: Client):
    """The 95 % interval covers 0 in 19 runs of 20 by construction: the test asks for p > 0.01
    (the 99 % interval covers 0) so that it fails 1 run in 100, not 1 in 20, when nothing is
    wrong."""
    spec = {
        "name": "confirm: identical",
        "target": "simulated",
        "factors": [
            {"name": "threads_per_client", "kind": "integer", "levels": [1, 8], "scale": "log2"}
        ],
        "design": {"kind": "full_factorial", "replicates": 2, "seed": 6},
        "objective": {"response": "tps"},
        "baseline": {"threads_per_client": 8},
    }
    created, _ = run_to_completion(service, spec)
    started = service.confirm(created["id"], pairs=4, fresh=False)
    assert started["candidate"] == started["baseline"] == {"threads_per_client": 8}
    ended = wait_for_confirmation(service, created["id"], started["id"])
    result = ended["result"]
    assert ended["status"] == "finished" and result["p_value"] > 0.01, ended
    assert not all(t["restart_first"] for t in ended["trials"])
    if result["p_value"] >= 0.05:
        assert "did not differ clearly from today's" in ended["sentence"]
    check_interleaved(ended)
