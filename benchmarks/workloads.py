"""Prepare time and run overhead of every workload on a real lab cluster, against oltp_read_write.

Run `python benchmarks/workloads.py` as root. In a directory of its own under /var/tmp, on free
ports, it brings up a 2-node lab cluster and, declaring its nodes as an external target, times
for each workload: the prepare of a fresh schema (`sysbench <workload> prepare`, 4 tables of
10 000 rows), and a whole trial of 10 s (1 s warm-up, 2 client machines of 4 threads) from the
health checks to the record, with its tps (after one untimed trial that prepares the client
schemas the timed ones reuse). The baseline, in the same run, is oltp_read_write:
the ratios are each workload's cost against the plain trial, on this noisy 2-core machine.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from experiments.galera.workloads import WORKLOADS
from worker import galera_sql, sysbench
from worker.lab.layout import free_layout
from worker.lab.supervisor import LabCluster
from worker.targets.external import ExternalTarget

PASSWORD_ENV = "GALERA_DOE_BENCH_PASSWORD"
SETTINGS = {"warmup_s": 1, "tables": 4, "table_size": 10_000}
TRIAL = {"clients": 2, "threads_per_client": 4, "runtime_s": 10}
BASELINE = "oltp_read_write"


def prepare_seconds(target: ExternalTarget, node: galera_sql.Node, workload: str) -> float:
    """Wall time of one prepare of a fresh schema."""
    with galera_sql.connect(node, target.credentials) as connection:
        cursor = connection.cursor()
        cursor.execute("DROP DATABASE IF EXISTS bench_prepare")
        cursor.execute("CREATE DATABASE bench_prepare")
    with sysbench.password_file(target.credentials.password) as secret:
        connection_args = sysbench.Connection(
            host=node.host,
            port=node.port,
            user=target.credentials.user,
            database="bench_prepare",
            password_file=secret,
        )
        argv = sysbench.prepare_command(
            connection_args, workload=workload, tables=SETTINGS["tables"],
            table_size=SETTINGS["table_size"],
        )  # fmt: skip
        started = time.perf_counter()
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=600, check=False,
            pass_fds=sysbench.inherited(secret),
        )  # fmt: skip
        elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"prepare of {workload} failed: {done.stdout[-500:]}")
    return elapsed


def main() -> None:
    """Bring up the cluster, time every workload, print the table, stop the cluster."""
    base = Path("/var/tmp") / f"galera-doe-bench-{secrets.token_hex(4)}"
    base.mkdir(mode=0o755)
    shutil.chown(base, "mysql", "mysql")
    cluster = LabCluster(free_layout(base))
    try:
        cluster.resize(2)
        os.environ[PASSWORD_ENV] = cluster.credentials.password
        nodes = cluster.nodes()
        target = ExternalTarget(
            "bench",
            {
                "nodes": [{"host": n.host, "port": n.port} for n in nodes],
                "user": cluster.credentials.user,
                "password_env": PASSWORD_ENV,
                **SETTINGS,
            },
        )
        # An untimed first trial prepares the client schemas every timed trial then reuses.
        target.run({**TRIAL, "workload": BASELINE}, run_key=1)
        rows = []
        for workload in WORKLOADS:
            prepare = prepare_seconds(target, nodes[0], workload)
            config = {**TRIAL, "workload": workload}
            if workload == "rw_mix":
                config["write_share"] = 0.5  # the script's defaults for the other options
            started = time.perf_counter()
            result = target.run(config, run_key=1)
            rows.append((workload, prepare, time.perf_counter() - started, result.responses))
        target.close()
    finally:
        cluster.stop()
        shutil.rmtree(base, ignore_errors=True)
    baseline = next(row for row in rows if row[0] == BASELINE)
    table = Table(title="Workloads on a 2-node lab cluster (10 s trials, 2 clients x 4 threads)")
    for name in ("workload", "prepare s", "x baseline", "trial s", "x baseline", "tps",
                 "abort rate"):  # fmt: skip
        table.add_column(name, justify="left" if name == "workload" else "right")
    for workload, prepare, trial, responses in rows:
        table.add_row(
            workload,
            f"{prepare:.2f}",
            f"{prepare / baseline[1]:.2f}",
            f"{trial:.1f}",
            f"{trial / baseline[2]:.2f}",
            f"{responses['tps']:.0f}",
            f"{responses['abort_rate']:.4f}",
        )
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
