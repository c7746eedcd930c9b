"""How long the lab cluster takes to change size, against starting one plain server.

Run `python benchmarks/lab_cluster.py` as root (the nodes run as the mysql user). In a directory
of its own under /var/tmp, on free ports, so a running lab is never touched, it times through
`LabCluster.resize`: 3 nodes from nothing (datadir initialisation, bootstrap, two SST joins;
target 20 s), adding a 4th node (rsync SST; 10 s), removing it (clean shutdown; 10 s), adding
it back (IST; 10 s), a rolling restart of the 4 nodes with a restart-only setting (gcache.size;
10 s per node), and moving them to two sites 100 ms apart and back (namespaces, the delay proxy,
every node restarted; 40 s each way). The baseline, measured in the same run, starts one plain
mariadbd (no wsrep) on node 1's initialised datadir with the same InnoDB settings, until it
accepts a connection (best of 3): the ratio is what Galera's joins and state transfers cost
beyond starting servers.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pymysql
from rich.console import Console
from rich.table import Table

from client.processes import ChildProcess, wait_until
from worker.lab.layout import LabLayout, free_layout
from worker.lab.supervisor import MARIADBD, LabCluster
from worker.lab.wan.routes import Delay

NODES = 3
TARGETS_S = {"grow": 20.0, "add": 10.0, "remove": 10.0, "restart": 10.0, "move": 40.0}


def timed(action: Callable[[], object]) -> float:
    """Wall time of one call, in seconds."""
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def answers(socket_path: Path) -> bool:
    """Whether a server accepts root over its unix socket."""
    try:
        pymysql.connect(unix_socket=str(socket_path), user="root", connect_timeout=1).close()
    except pymysql.MySQLError:
        return False
    return True


def plain_start(layout: LabLayout, log_dir: Path) -> float:
    """Seconds for one mariadbd without wsrep to answer on node 1's datadir; stops it after."""
    options = {k: v for k, v in layout.server_options(1).items() if not k.startswith("wsrep_")}
    argv = [MARIADBD, "--no-defaults", *(f"--{key}={value}" for key, value in options.items())]
    started = time.perf_counter()
    server = ChildProcess("plain-mariadbd", argv, env=os.environ, log_dir=log_dir)
    try:
        if not wait_until(lambda: answers(layout.socket(1)), timeout=60, interval=0.02):
            raise RuntimeError(f"the plain server did not start:\n{server.tail()}")
        return time.perf_counter() - started
    finally:
        server.stop(timeout=60)


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep", action="store_true", help="leave the directory for inspection")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: the lab starts its nodes as the mysql user")
    root = Path(f"/var/tmp/galera-doe-bench-{uuid.uuid4().hex[:8]}")
    root.mkdir(mode=0o755)
    shutil.chown(root, "mysql", "mysql")
    layout = free_layout(root / "lab", max_nodes=NODES + 1, cluster_name="galera_doe_bench")
    lab = LabCluster(layout)
    try:
        rows = [
            (f"{NODES} nodes from nothing", "grow", timed(lambda: lab.resize(NODES))),
            (f"add node {NODES + 1} (SST)", "add", timed(lambda: lab.resize(NODES + 1))),
            (f"remove node {NODES + 1}", "remove", timed(lambda: lab.resize(NODES))),
            (f"add node {NODES + 1} back (IST)", "add", timed(lambda: lab.resize(NODES + 1))),
            (
                "rolling restart, per node (gcache.size)",
                "restart",
                lab.configure({"gcache.size": "64M"}) / (NODES + 1),
            ),
            (
                "move to two sites, rtt 100 ms",
                "move",
                timed(lambda: (lab.place(2, Delay(rtt_ms=100)), lab.resize(NODES + 1))),
            ),
            (
                "move back to one site",
                "move",
                timed(lambda: (lab.place(1, Delay()), lab.resize(NODES + 1))),
            ),
        ]
        stop_s = timed(lab.stop)
        baseline = min(plain_start(layout, root) for _ in range(3))
    finally:
        lab.reset()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)

    table = Table(
        title="Lab cluster: resize times vs starting one plain mariadbd",
        caption="baseline: mariadbd without wsrep on an initialised datadir, best of 3",
    )
    for column in ("step", "seconds", "target s", "within", "ratio to baseline"):
        table.add_column(column, justify="left" if column == "step" else "right")
    table.add_row("baseline: plain mariadbd", f"{baseline:.2f}", "", "", "1.0")
    for step, kind, seconds in rows:
        target = TARGETS_S[kind]
        within = "yes" if seconds <= target else "NO"
        table.add_row(step, f"{seconds:.2f}", f"{target:g}", within, f"{seconds / baseline:.0f}")
    table.add_row(
        f"stop all {NODES + 1} nodes", f"{stop_s:.2f}", "", "", f"{stop_s / baseline:.0f}"
    )
    Console().print(table)


if __name__ == "__main__":
    main()
