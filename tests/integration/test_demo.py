"""`galera-doe demo`, the main job, end to end as a user runs it (on the test Redis)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import yaml

from app.services.api_keys import list_keys
from worker.lab.layout import LabLayout
from worker.lab.supervisor import LabCluster
from worker.targets.lab import settings_of

pytestmark = pytest.mark.integration


@pytest.fixture
def demo_broker(redis_url: str) -> Iterator[str]:
    """A Redis database of the demo's own: an interrupted demo leaves messages for trial ids of
    its database, which no other test's worker may take."""
    url = redis_url.rsplit("/", 1)[0] + "/13"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()


def test_demo_prints_the_optimum_and_stops_what_it_started(demo_broker: str, tmp_path: Path):
    env = os.environ | {
        # An empty database: the demo's API creates the schema by migrating it at start.
        "GALERA_DOE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'demo.sqlite3'}",
        "GALERA_DOE_BROKER_URL": demo_broker,
        "COLUMNS": "120",
    }
    galera_doe = Path(sys.executable).with_name("galera-doe")
    started = time.monotonic()
    result = subprocess.run(
        [str(galera_doe), "demo", "--target", "simulated"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.monotonic() - started
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "Factors ranked by effect" in out, out
    # One answer to deploy, with its evidence (the console wraps it).
    assert re.search(r"^Deploy ", out, re.M) and "the model predicts tps" in " ".join(out.split())
    assert elapsed < 60, f"the demo took {elapsed:.0f} s"
    pids = [int(pid) for pid in re.findall(r"pid (\d+)", out)]
    assert len(pids) == 2, out
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists(), f"process {pid} outlived the demo"
    keys = list_keys(env["GALERA_DOE_DATABASE_URL"])
    assert [k.owner for k in keys] == ["demo"] and keys[0].revoked_at is not None


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_demo_stops_its_children(demo_broker: str, tmp_path: Path, signum: int):
    spec = tmp_path / "large.yaml"
    spec.write_text(
        "name: large\ntarget: simulated\n"
        "factors:\n"
        "  - {name: nodes, kind: integer, low: 1, high: 9}\n"
        "  - {name: clients, kind: integer, low: 1, high: 8}\n"
        "  - {name: threads_per_client, kind: integer, low: 4, high: 32}\n"
        "design: {kind: full_factorial, levels: 9}\n"
        "objective: {response: tps}\n"
    )
    env = os.environ | {
        "GALERA_DOE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'demo.sqlite3'}",
        "GALERA_DOE_BROKER_URL": demo_broker,
    }
    galera_doe = Path(sys.executable).with_name("galera-doe")
    demo = subprocess.Popen(
        [str(galera_doe), "demo", str(spec)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []
    assert demo.stdout is not None
    for line in demo.stdout:
        lines.append(line)
        if "planned trials" in line:
            break
    demo.send_signal(signum)
    assert demo.wait(timeout=30) == 130
    assert "interrupted" in demo.stderr.read()  # type: ignore[union-attr]
    pids = [int(pid) for pid in re.findall(r"pid (\d+)", "".join(lines))]
    assert len(pids) == 2, lines
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists(), f"process {pid} outlived the demo"


def test_the_demo_runs_on_a_real_lab_cluster(
    demo_broker: str, tmp_path: Path, suite_lab_layout: LabLayout
):
    # The quickstart's shape at half its size (the simulated demo above runs the quickstart
    # file itself): nodes in whole plots, so the demo starts the cluster and resizes it once.
    spec = tmp_path / "small.yaml"
    spec.write_text(
        "name: lab demo\ntarget: lab\n"
        "factors:\n"
        "  - {name: nodes, kind: integer, levels: [1, 2], hard_to_change: true}\n"
        "  - {name: threads_per_client, kind: integer, levels: [2, 8], scale: log2}\n"
        "design: {kind: full_factorial, seed: 2026}\n"
        "objective: {response: tps}\n"
    )
    # The suite's lab, with no node running (tests/conftest.py runs this module first).
    base = suite_lab_layout.base_dir
    # Small schemas and no warm-up: the demo's output is checked, not its figures.
    lab = settings_of(suite_lab_layout) | {"warmup_s": 0, "tables": 2, "table_size": 1000}
    targets = tmp_path / "targets.yaml"
    targets.write_text(
        yaml.safe_dump({"targets": [{"name": "lab", "kind": "lab", "settings": lab}]})
    )
    env = os.environ | {
        "GALERA_DOE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'demo.sqlite3'}",
        "GALERA_DOE_BROKER_URL": demo_broker,
        "GALERA_DOE_TARGETS_FILE": str(targets),
        "COLUMNS": "120",
    }
    galera_doe = Path(sys.executable).with_name("galera-doe")
    try:
        result = subprocess.run(
            [str(galera_doe), "demo", str(spec)],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        out = result.stdout
        assert result.returncode == 0, out + result.stderr
        assert "on target 'lab': 4 planned trials" in out and "failed 0" in out, out
        assert re.search(r"^Deploy ", out, re.M) and "lab cluster stopped" in out, out
        # No node of the demo's cluster is left running.
        assert not any(
            str(base) in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            for pid in os.listdir("/proc")
            if pid.isdigit() and Path(f"/proc/{pid}/cmdline").exists()
        )
    finally:
        LabCluster(suite_lab_layout).stop()  # what a failed demo may have left
