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

from app.services.api_keys import list_keys

pytestmark = pytest.mark.integration


def own_broker(redis_url: str, database: int) -> Iterator[str]:
    """A Redis database of a demo module's own, flushed before and after: an interrupted demo
    leaves messages for trial ids of its database, which no other test's worker may take."""
    url = f"{redis_url.rsplit('/', 1)[0]}/{database}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()


@pytest.fixture
def demo_broker(redis_url: str) -> Iterator[str]:
    """The simulated demos' Redis database."""
    yield from own_broker(redis_url, 13)


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
