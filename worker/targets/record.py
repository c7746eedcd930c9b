"""What a trial ran on, kept with its results so that it can be re-run and audited.

The record holds the versions (server, Galera provider, sysbench), the trial's plan and the
server variables it set, every node's configured global variables (those not at their
compiled-in default, `wsrep_provider_options` among them) and its wsrep_* status counters
before and after the run, and the sysbench command lines with the password redacted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from worker import galera_sql

VERSION_VARIABLES = ("version", "version_comment")


def versions(
    node: galera_sql.Node, credentials: galera_sql.Credentials, sysbench: str
) -> dict[str, str]:
    """The server's and the Galera provider's versions as `node` reports them, and sysbench's."""
    found = galera_sql.global_variables(node, credentials, VERSION_VARIABLES)
    provider = galera_sql.global_status(node, credentials, ["wsrep_provider_version"])
    return {
        "server": f"{found.get('version', '')} {found.get('version_comment', '')}".strip(),
        "galera": provider.get("wsrep_provider_version", ""),
        "sysbench": sysbench,
    }


def node_states(
    nodes: Sequence[galera_sql.Node], credentials: galera_sql.Credentials
) -> list[dict[str, Any]]:
    """Each node's configured variables and wsrep status counters, now."""
    return [
        {
            "node": node.name,
            "address": f"{node.host}:{node.port}",
            "variables": galera_sql.configured_variables(node, credentials),
            "wsrep_status": galera_sql.wsrep_status(node, credentials),
        }
        for node in nodes
    ]


def trial_record(
    *,
    versions: Mapping[str, str],
    plan: Mapping[str, Any],
    commands: Sequence[str],
    before: Sequence[Mapping[str, Any]],
    after: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The record of one trial: `before` and `after` are `node_states` around the run."""
    return {
        "versions": dict(versions),
        "plan": dict(plan),
        "commands": list(commands),
        "nodes": [
            {
                "node": start["node"],
                "address": start["address"],
                "variables": start["variables"],
                "wsrep_status_before": start["wsrep_status"],
                "wsrep_status_after": end["wsrep_status"],
            }
            for start, end in zip(before, after, strict=True)
        ],
    }
