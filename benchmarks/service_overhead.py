"""What the service costs per trial: the full path against running the target in process.

Run `python benchmarks/service_overhead.py [--trials N] [--mariadb]`. For each database backend it
starts the API and one worker as child processes, submits a full factorial on the simulated
target, starts it and times it until the last trial is recorded; the baseline, measured in the
same run, calls the simulated target directly for the same configurations. The ratio is the
price of the REST call, the broker round trip, the atomic claim and the two commits per trial.
Needs Redis (and MariaDB with --mariadb) on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid
from pathlib import Path

import asyncmy
from rich.console import Console
from rich.table import Table

from app.db.migrate import upgrade_to_head
from app.target_specs import load_targets
from client.processes import running_service, wait_until
from worker.targets import build_target

BROKER_URL = "redis://127.0.0.1:6379/12"


def _spec(trials: int) -> dict[str, object]:
    levels = max(2, round(trials ** (1 / 3)))
    return {
        "name": "overhead benchmark",
        "target": "simulated",
        "factors": [
            {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
            {"name": "clients", "kind": "integer", "low": 1, "high": 8},
            {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 32},
        ],
        "design": {"kind": "full_factorial", "levels": levels, "seed": 1},
        "objective": {"response": "tps"},
    }


def _baseline(configs: list[dict[str, object]], repeats: int = 5) -> float:
    """Seconds per trial of the simulated target called in process (best of `repeats`)."""
    target = build_target(load_targets(None)["simulated"])
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for key, config in enumerate(configs):
            target.run(config, run_key=key)
        best = min(best, time.perf_counter() - started)
    return best / len(configs)


def _through_service(database_url: str, trials: int, logs: Path) -> tuple[float, list[dict]]:
    """Seconds per trial from start to the last recorded result, and the trials run."""
    upgrade_to_head(database_url)
    env = os.environ | {
        "GALERA_DOE_DATABASE_URL": database_url,
        "GALERA_DOE_BROKER_URL": BROKER_URL,
    }
    with running_service(env, logs, loglevel="WARNING") as service:
        client = service.client
        created = client.create_experiment(_spec(trials))
        started = time.perf_counter()
        client.start(created["id"])
        wait_until(
            lambda: client.experiment(created["id"])["status"] == "completed",
            timeout=600,
            interval=0.05,
        )
        elapsed = time.perf_counter() - started
        done = client.trials(created["id"])
    return elapsed / len(done), done


async def _mariadb(statement: str) -> None:
    connection = await asyncmy.connect(host="127.0.0.1", port=3306, user="root", password="")
    async with connection.cursor() as cursor:
        await cursor.execute(statement)
    connection.close()


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=125, help="about this many trials")
    parser.add_argument("--mariadb", action="store_true", help="also measure on MariaDB")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp)
        sqlite_url = f"sqlite+aiosqlite:///{logs / 'bench.sqlite3'}"
        per_trial, done = _through_service(sqlite_url, args.trials, logs)
        baseline = _baseline([t["config"] for t in done])
        rows.append(("SQLite (aiosqlite)", len(done), per_trial))
        if args.mariadb:
            name = f"galera_doe_bench_{uuid.uuid4().hex[:8]}"
            asyncio.run(_mariadb(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
            try:
                url = f"mysql+asyncmy://root@127.0.0.1:3306/{name}?charset=utf8mb4"
                per_trial, done = _through_service(url, args.trials, logs)
                rows.append(("MariaDB (asyncmy)", len(done), per_trial))
            finally:
                asyncio.run(_mariadb(f"DROP DATABASE IF EXISTS {name}"))
    table = Table(title="Per-trial cost: full service path vs the target in process")
    for column in ("path", "trials", "ms per trial", "trials per s", "ratio to baseline"):
        table.add_column(column, justify="left" if column == "path" else "right")
    table.add_row("baseline: simulated target in process", str(len(done)),
                  f"{baseline * 1e3:.3f}", f"{1 / baseline:.0f}", "1.0")  # fmt: skip
    for path, count, seconds in rows:
        table.add_row(f"API + Redis + worker, {path}", str(count), f"{seconds * 1e3:.1f}",
                      f"{1 / seconds:.0f}", f"{seconds / baseline:.0f}")  # fmt: skip
    Console().print(table)


if __name__ == "__main__":
    main()
