"""`galera-doe demo` on a real lab cluster, the main job as `make demo` runs it (on the test
Redis): the first lab module, so it starts the suite's lab cluster from its datadirs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.integration.test_demo import own_broker
from worker.lab.layout import LabLayout
from worker.lab.supervisor import LabCluster
from worker.targets.lab import settings_of

pytestmark = pytest.mark.integration


@pytest.fixture
def demo_broker(redis_url: str) -> Iterator[str]:
    """The lab demo's Redis database (the simulated demos run beside it on 13)."""
    yield from own_broker(redis_url, 10)


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
