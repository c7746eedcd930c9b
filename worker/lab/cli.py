"""`python -m worker.lab up|down|status`: the local lab cluster by hand (`galera-doe lab` runs it).

The lab's layout comes from the `lab` target of the operator's targets file (or the defaults),
so the cluster managed here is the one the worker runs trials on.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from app.config import get_settings
from app.target_specs import load_targets
from worker.galera_sql import GaleraError
from worker.lab.layout import LabLayout
from worker.lab.supervisor import LabCluster
from worker.targets.lab import layout_from


def lab_layout() -> LabLayout:
    """The layout of the first `lab` target of the targets file, or the default layout."""
    specs = [s for s in load_targets(get_settings().targets_file).values() if s.kind == "lab"]
    return layout_from(specs[0].settings if specs else {})


def main(argv: list[str] | None = None) -> int:
    """Bring the lab up to N nodes, take it down, or print its status as JSON."""
    parser = argparse.ArgumentParser(prog="galera-doe lab", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start or resize the lab cluster")
    up.add_argument("--nodes", type=int, default=3)
    commands.add_parser("down", help="stop every node cleanly")
    status = commands.add_parser("status", help="nodes, pids, ports and health")
    for command in (up, status):
        command.add_argument("--json", action="store_true", help="print JSON, not a table")
    args = parser.parse_args(argv)
    cluster = LabCluster(lab_layout())
    try:
        if args.command == "up":
            cluster.resize(args.nodes)
        elif args.command == "down":
            cluster.stop()
    except GaleraError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    state = cluster.status()
    if getattr(args, "json", False) or args.command == "down":
        print(json.dumps(state, indent=2, default=str))
    else:
        print_status(state)
    return 0


def print_status(state: dict[str, Any]) -> None:
    """The cluster as a table: one row per node, then whether the cluster is healthy."""
    table = Table(title=f"lab cluster {state['cluster_name']} in {state['base_dir']}")
    for name in ("node", "pid", "port", "gmcast", "state", "size", "ready", "problem"):
        table.add_column(name, overflow="fold")
    for node in state["nodes"]:
        health = node.get("health") or {}
        table.add_row(
            node["name"],
            str(node["pid"]),
            str(node["client_port"]),
            str(node["gmcast_port"]),
            str(health.get("state", "")),
            str(health.get("cluster_size", "")),
            str(health.get("ready", "")),
            node.get("error") or "",
        )
    console = Console()
    console.print(table)
    wan = state.get("wan")
    if wan:
        console.print(
            f"two sites (odd nodes in site 1, even in site 2), {wan['rtt_ms']:g} ms round trip"
            f" between them, jitter {wan['jitter_ms']:g} ms (proxy pid {wan['pid']})"
        )
    verdict = "healthy" if state["healthy"] else "not healthy" if state["size"] else "down"
    console.print(f"{state['size']} node(s), {verdict}")
