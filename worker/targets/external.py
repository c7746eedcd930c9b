"""The `external` target: an existing Galera cluster the operator declares in the targets file.

Settings: `nodes` (a list of `{host, port}`, optionally with `start`, `stop` and `restart`
commands as argument lists), `user`, and `password_env`, the name of the environment variable that
holds the password (never the password itself); `state_dir`, where the worker keeps the values
the trials' settings replaced until they are set back (`worker.targets.restore`; by default
~/.local/state/galera-doe, so a worker restarted on the same machine finds them). The
node-count factor picks how many of the listed nodes receive client load, as the published
4-node study did. A node that does not answer before a trial is started with its `start` command
when it has one; `stop` commands run when the worker exits. A trial with restart-only settings
runs each node's `restart` command with the settings appended as `name=value` arguments (the
operator's script writes them where the server reads them and restarts it), one node at a time,
each back in the cluster before the next.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Mapping
from typing import Any, ClassVar

from worker import galera_sql
from worker.targets.base import InfeasibleError, InfrastructureError, TargetError
from worker.targets.cluster import ClusterTarget
from worker.targets.operator_account import OperatorAccount

RESTART_TIMEOUT_S = 600


class ExternalTarget(OperatorAccount, ClusterTarget):
    """Trials on an operator's cluster."""

    kind: ClassVar[str] = "external"

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        super().__init__(name, settings)
        entries = self.settings.get("nodes")
        if not isinstance(entries, list) or not entries:
            raise TargetError(f"target '{name}': settings.nodes must list the cluster's nodes")
        self._nodes = [
            galera_sql.Node(name=f"node{i}", host=str(e["host"]), port=int(e.get("port", 3306)))
            for i, e in enumerate(entries, start=1)
        ]
        self._commands = [
            {key: _argv(name, e.get(key), key) for key in ("start", "stop", "restart")}
            for e in entries
        ]
        # The restart-only settings the nodes were last restarted with; none at first: they run
        # the configuration their operator gave them.
        self._restarted_with: dict[str, str] = {}
        if "nodes" not in (self.settings.get("defaults") or {}):
            self.defaults["nodes"] = len(self._nodes)
        self.read_account(name, self.settings)

    def nodes_for(self, count: int) -> list[galera_sql.Node]:
        """The first `count` nodes: they receive the client load."""
        if count > len(self._nodes):
            raise InfeasibleError(
                f"target '{self.name}' has {len(self._nodes)} nodes; {count} asked"
            )
        for node, commands in zip(self._nodes, self._commands, strict=True):
            if commands["start"] and not galera_sql.answers(node, self.credentials):
                subprocess.run(commands["start"], check=False, timeout=300)
        return self._nodes[:count]

    def restart_with(self, settings: Mapping[str, str], *, every_node: bool = False) -> float:
        """Run every node's restart command with `settings` when they changed (always with
        `every_node`), one node at a time, each healthy in the whole cluster before the next;
        InfeasibleError when a node has no restart command."""
        if dict(settings) == self._restarted_with and not every_node:
            return 0.0
        missing = [
            n.name for n, c in zip(self._nodes, self._commands, strict=True) if not c["restart"]
        ]
        if missing:
            needs = f"{', '.join(settings)} need" if settings else "a fresh cluster state needs"
            raise InfeasibleError(
                f"{needs} a restart, and {', '.join(missing)} of target '{self.name}' have no"
                " restart command"
            )
        size = self.cluster_size(self._nodes[:1])
        started = time.monotonic()
        arguments = [f"{name}={value}" for name, value in settings.items()]
        for node, commands in zip(self._nodes, self._commands, strict=True):
            done = subprocess.run([*commands["restart"], *arguments], check=False, timeout=600)
            if done.returncode != 0:
                raise InfrastructureError(
                    f"the restart command of {node.name} exited {done.returncode}"
                )
            _wait_healthy(self._nodes, self.credentials, size)
        self._restarted_with = dict(settings)
        return time.monotonic() - started

    def cluster_size(self, nodes: list[galera_sql.Node]) -> int:
        """The whole cluster's size as the first loaded node sees it now: only some of its
        nodes may take load, but none may join or leave during the trial."""
        try:
            size = galera_sql.node_health(nodes[0], self.credentials).cluster_size
        except galera_sql.GaleraError as error:
            raise InfrastructureError(str(error)) from error
        if size < len(nodes):
            raise InfrastructureError(
                f"the cluster has {size} nodes in its view; {len(nodes)} should take load"
            )
        return size

    def close(self) -> None:
        """Run the operator's stop commands, if any."""
        for commands in self._commands:
            if commands["stop"]:
                subprocess.run(commands["stop"], check=False, timeout=300)


def _argv(target: str, value: object, key: str) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(part, str) for part in value):
        raise TargetError(f"target '{target}': a node's {key} must be an argument list")
    return list(value)


def _wait_healthy(
    nodes: list[galera_sql.Node], credentials: galera_sql.Credentials, size: int
) -> None:
    """Wait until every node is healthy in a cluster of `size` (a restarted node rejoined)."""
    deadline = time.monotonic() + RESTART_TIMEOUT_S
    while True:
        try:
            galera_sql.check_healthy(nodes, credentials, expected_size=size)
            return
        except galera_sql.GaleraError as error:
            if time.monotonic() > deadline:
                raise InfrastructureError(
                    f"the cluster did not recover from a restart: {error}"
                ) from error
        time.sleep(1.0)
