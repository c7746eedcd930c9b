"""`python -m worker.lab up|down|status`: the local lab cluster by hand (`galera-doe lab` runs it).

The lab's layout comes from the `lab` target of the operator's targets file (or the defaults),
so the cluster managed here is the one the worker runs trials on.
"""

from __future__ import annotations

import argparse
import json
import sys

from app.config import get_settings
from app.target_specs import load_targets
from worker.galera_sql import GaleraError
from worker.lab_layout import LabLayout
from worker.lab_supervisor import LabCluster
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
    commands.add_parser("status", help="nodes, pids, ports and health as JSON")
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
    print(json.dumps(cluster.status(), indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
