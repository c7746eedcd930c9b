"""`galera-doe demo`, the main job, end to end as a user runs it (on the test Redis)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def test_demo_prints_the_optimum_and_stops_what_it_started(redis_url: str, tmp_path: Path):
    env = os.environ | {
        # An empty database: the demo's API creates the schema by migrating it at start.
        "GALERA_DOE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'demo.sqlite3'}",
        "GALERA_DOE_BROKER_URL": redis_url,
        "COLUMNS": "120",
    }
    galera_doe = Path(sys.executable).with_name("galera-doe")
    started = time.monotonic()
    result = subprocess.run(
        [str(galera_doe), "demo"], env=env, capture_output=True, text=True, timeout=120
    )
    elapsed = time.monotonic() - started
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    assert "Predicted optimum" in out and "Factors ranked by effect" in out, out
    assert re.search(r"predicted tps \d+\.\d  95% CI \[.*\]  95% PI \[.*\]", out), out
    assert elapsed < 60, f"the demo took {elapsed:.0f} s"
    pids = [int(pid) for pid in re.findall(r"pid (\d+)", out)]
    assert len(pids) == 2, out
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists(), f"process {pid} outlived the demo"
