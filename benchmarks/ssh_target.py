"""The `ssh` target's figures (issue 56): trial overhead, a node's leave and join, client skew.

Run `.venv/bin/python -m benchmarks.ssh_target [--repeats 3]` as root (the emulation makes
network namespaces; the lab starts its nodes as the mysql user). In one run it brings up the
multi-host emulation of the test suite (`tests.ssh_hosts.Emulation`: three node hosts and two
client hosts as network namespaces running sshd, mariadbd started over SSH; imported from the
tests, which is acceptable for a benchmark) and a lab cluster of its own (free ports, a
directory under /var/tmp), and measures, trial configurations interleaved between the two
targets so that the machine's noise falls on both alike:

1. trial overhead: wall time of `target.run(...)` minus the runtime (10 s, no warm-up, one table
   of 200 rows) at 2 nodes with 1 and 2 clients, `ssh` against `lab` (the baseline), median of
   `--repeats`;
2. a node's leave (3 -> 2) and join (2 -> 3, IST) time around `nodes_for(k)`, on both targets;
3. the start skew of the two client hosts (`record["clients"]["start_skew_ms"]`), median and
   max over the 2-client trials.

Everything it started is stopped at the end, also on failure: both targets closed, the lab's
nodes stopped, the emulation's hosts torn down (its `down()` stops by pid), directories removed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tests.ssh_hosts import PASSWORD_ENV, SQL_PASSWORD, Emulation
from worker.lab.layout import free_layout
from worker.targets.cluster import ClusterTarget
from worker.targets.lab import LabTarget, settings_of
from worker.targets.ssh.target import SshTarget

RUNTIME_S = 10  # the minimum both targets accept
NODES = 2
CLIENTS = (1, 2)
SMALL = {"tables": 1, "table_size": 200, "warmup_s": 0}  # as the emulation's settings


@dataclass
class Figures:
    """What one run measured, in seconds (skew in ms)."""

    overhead: dict[tuple[str, int], list[float]] = field(default_factory=dict)
    leave: dict[str, list[float]] = field(default_factory=dict)
    join: dict[str, list[float]] = field(default_factory=dict)
    skew_ms: list[float] = field(default_factory=list)


@contextmanager
def ssh_target() -> Iterator[SshTarget]:
    """An `ssh` target on a fresh emulation, closed and torn down on the way out."""
    emulation = Emulation(nodes=3, clients=2)
    os.environ[PASSWORD_ENV] = SQL_PASSWORD
    try:
        emulation.up()
        target = SshTarget("ssh-bench", emulation.settings(stop_at_close=True))
        try:
            yield target
        finally:
            target.close()
    finally:
        left = emulation.down()
        os.environ.pop(PASSWORD_ENV, None)
        if left:
            print(f"stopped on the emulated hosts at the end: {left}", file=sys.stderr)


@contextmanager
def lab_target() -> Iterator[LabTarget]:
    """A `lab` target on a cluster of its own (free ports, /var/tmp), removed on the way out."""
    root = Path(f"/var/tmp/galera-doe-bench-ssh-{uuid.uuid4().hex[:8]}")
    root.mkdir(mode=0o755)
    shutil.chown(root, "mysql", "mysql")
    try:
        layout = free_layout(root / "lab", max_nodes=3, gcache_size="32M")
        target = LabTarget("lab-bench", settings_of(layout) | SMALL)
        try:
            yield target
        finally:
            target.cluster.reset()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _timed(action: Callable[[], object]) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


def _trial(target: ClusterTarget, clients: int, figures: Figures, key: int) -> None:
    """One measured trial: its overhead, and the client hosts' skew on the ssh target."""
    config = {"nodes": NODES, "clients": clients, "threads_per_client": 1, "runtime_s": RUNTIME_S}
    started = time.monotonic()
    result = target.run(config, run_key=key)
    wall = time.monotonic() - started
    figures.overhead.setdefault((target.kind, clients), []).append(wall - RUNTIME_S)
    skew = ((result.record or {}).get("clients") or {}).get("start_skew_ms")
    if target.kind == "ssh" and clients > 1 and skew is not None:
        figures.skew_ms.append(float(skew))


def _warm(targets: list[ClusterTarget]) -> None:
    """Bootstrap both clusters and prepare the schemas: a first trial each, not measured."""
    for target in targets:
        spent = _timed(lambda t=target: _trial(t, max(CLIENTS), Figures(), 0))
        print(f"{target.kind}: first trial (bootstrap, schemas) {spent:.1f} s", file=sys.stderr)


def measure(targets: list[ClusterTarget], repeats: int) -> Figures:
    """Every figure, `repeats` times, the targets taking turns within each repeat."""
    figures = Figures()
    _warm(targets)
    key = 1
    for repeat in range(repeats):
        order = targets if repeat % 2 == 0 else targets[::-1]
        for clients in CLIENTS:
            for target in order:
                key += 1
                _trial(target, clients, figures, key)
        for target in order:
            figures.join.setdefault(target.kind, []).append(_timed(lambda t=target: t.nodes_for(3)))
            figures.leave.setdefault(target.kind, []).append(
                _timed(lambda t=target: t.nodes_for(NODES))
            )
        print(f"repeat {repeat + 1} of {repeats} done", file=sys.stderr)
    return figures


def _cell(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.2f} s (max {max(values):.2f})"


def _ratio(ssh: list[float], lab: list[float]) -> str:
    if not ssh or not lab or statistics.median(lab) <= 0:
        return "-"
    return f"{statistics.median(ssh) / statistics.median(lab):.2f}"


def report(figures: Figures, repeats: int) -> None:
    """Print the table: each figure on ssh, on the lab (the baseline), and their ratio."""
    table = Table(title=f"The ssh target against the lab, median of {repeats} (max)")
    for column in ("measure", "ssh (emulated hosts)", "lab (baseline)", "ssh / lab"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    for clients in CLIENTS:
        ssh, lab = (
            figures.overhead.get(("ssh", clients), []),
            figures.overhead.get(("lab", clients), []),
        )
        table.add_row(
            f"trial overhead, {NODES} nodes, {clients} client(s), {RUNTIME_S} s run",
            _cell(ssh),
            _cell(lab),
            _ratio(ssh, lab),
        )
    for name, values in (("leave 3 -> 2", figures.leave), ("join 2 -> 3 (IST)", figures.join)):
        ssh, lab = values.get("ssh", []), values.get("lab", [])
        table.add_row(f"a node's {name}", _cell(ssh), _cell(lab), _ratio(ssh, lab))
    skew = figures.skew_ms
    table.add_row(
        "client start skew, 2 client hosts (goal 100 ms)",
        f"{statistics.median(skew):.1f} ms (max {max(skew):.1f})" if skew else "-",
        "",
        "",
    )
    Console().print(table)


def main() -> None:
    """Bring up both targets, measure, print the table, stop everything."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: the emulation makes namespaces, the lab runs nodes as mysql")
    with ExitStack() as stack:
        ssh = stack.enter_context(ssh_target())
        lab = stack.enter_context(lab_target())
        figures = measure([ssh, lab], args.repeats)
    report(figures, args.repeats)


if __name__ == "__main__":
    main()
