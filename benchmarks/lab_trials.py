"""What the service costs around real trials on the lab cluster.

Run `python benchmarks/lab_trials.py [--runtime 20]` (root, with Redis on 127.0.0.1). It starts
the API and one worker, runs a 9-run design (nodes 1, 2, 3 as whole plots x 3 thread counts) on
the default `lab` target with `--runtime` second trials, and prints per-trial overhead (trial wall
time minus sysbench's own time, warm-up included in sysbench's time) split by whether the node
count changed, and the experiment's wall time against the sum of the trial runtimes (the
baseline measured in the same run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

from client.processes import running_service, wait_until

WARMUP_S = 2  # the lab target's default warm-up, run by sysbench before the measured time


def _seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def main() -> None:
    """Run the design and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runtime", type=int, default=20)
    args = parser.parse_args()
    spec = {
        "name": "lab overhead benchmark",
        "target": "lab",
        "factors": [
            {"name": "nodes", "kind": "integer", "levels": [1, 2, 3], "hard_to_change": True},
            {"name": "threads_per_client", "kind": "integer", "levels": [2, 4, 8]},
            {"name": "runtime_s", "kind": "integer", "levels": [args.runtime]},
        ],
        "design": {"kind": "full_factorial", "seed": 1},
        "objective": {"response": "tps"},
    }
    subprocess.run([sys.executable, "-m", "worker.lab", "down"], check=False, capture_output=True)
    with tempfile.TemporaryDirectory() as tmp:
        env = os.environ | {
            "GALERA_DOE_DATABASE_URL": f"sqlite+aiosqlite:///{Path(tmp) / 'bench.sqlite3'}",
            "GALERA_DOE_BROKER_URL": "redis://127.0.0.1:6379/12",
        }
        with running_service(env, Path(tmp), loglevel="WARNING", stop_timeout=90) as service:
            client = service.client
            created = client.create_experiment(spec)
            started = time.monotonic()
            client.start(created["id"])
            wait_until(
                lambda: client.experiment(created["id"])["status"] == "completed",
                timeout=3600,
                interval=1,
            )
            wall = time.monotonic() - started
            trials = sorted(client.trials(created["id"]), key=lambda t: t["run_order"])
    _print(trials, wall, args.runtime)


def _print(trials: list[dict], wall: float, runtime: int) -> None:
    same, changed = [], []
    previous = None
    for trial in trials:
        overhead = _seconds(trial["started_at"], trial["finished_at"]) - runtime - WARMUP_S
        (same if trial["config"]["nodes"] == previous else changed).append(overhead)
        previous = trial["config"]["nodes"]
    failed = sum(t["status"] != "succeeded" for t in trials)
    table = Table(title=f"Lab trials: 9-run design, {runtime} s trials ({failed} failed)")
    for column in ("measure", "value", "limit"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    table.add_row(
        "overhead per trial, same node count (median / max)",
        f"{statistics.median(same):.1f} / {max(same):.1f} s",
        "3 s",
    )
    table.add_row(
        "overhead per trial after a resize (median / max)",
        f"{statistics.median(changed):.1f} / {max(changed):.1f} s",
        "",
    )
    baseline = runtime * len(trials)
    table.add_row("sum of trial runtimes (baseline)", f"{baseline:.0f} s", "")
    table.add_row("experiment wall time", f"{wall:.0f} s", "")
    table.add_row("ratio to baseline", f"{wall / baseline:.2f}", "1.3")
    Console().print(table)


if __name__ == "__main__":
    main()
