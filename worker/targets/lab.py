"""The `lab` target: a real Galera cluster of `mariadbd` processes on this machine's loopback.

The worker starts it on the first trial, resizes it to each trial's node count (joins by
SST/IST, clean shutdown of the last nodes) and reuses it between trials; a trial on two sites
moves the nodes into two network namespaces joined by an emulated WAN (`worker.lab.wan`). `recover`
resets it after a failed trial, `close` stops it when the worker exits.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from experiments.galera.kinds import CLUSTER_FACTORS, WAN_FACTORS
from worker import galera_sql
from worker.lab.layout import LabLayout
from worker.lab.supervisor import LabCluster
from worker.lab.wan.routes import Delay
from worker.targets.base import InfeasibleError
from worker.targets.cluster import ClusterTarget
from worker.targets.trial_plan import TrialPlan

# The values the trials' settings replaced, to set back (`worker.targets.restore`).
RESTORE_FILE = "restore.json"
LAYOUT_SETTINGS = (
    "base_dir",
    "client_port_base",
    "galera_port_base",
    "buffer_pool",
    "gcache_size",
    "redo_log_size",
    "max_nodes",
)


def layout_from(settings: Mapping[str, Any]) -> LabLayout:
    """The cluster layout a `lab` target's settings describe (defaults for the rest)."""
    layout = {k: settings[k] for k in LAYOUT_SETTINGS if k in settings}
    if "base_dir" in layout:
        layout["base_dir"] = Path(layout["base_dir"])
    return LabLayout(**layout)


def settings_of(layout: LabLayout) -> dict[str, Any]:
    """The `lab` target settings that describe `layout` (what `layout_from` reads back)."""
    return {name: getattr(layout, name) for name in LAYOUT_SETTINGS} | {
        "base_dir": str(layout.base_dir)
    }


class LabTarget(ClusterTarget):
    """Trials on the local lab cluster."""

    kind: ClassVar[str] = "lab"
    accepted_factors = (*CLUSTER_FACTORS, *WAN_FACTORS)

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        super().__init__(name, settings)
        self.cluster = LabCluster(layout_from(self.settings))

    @property
    def credentials(self) -> galera_sql.Credentials:
        """The user the lab created when it bootstrapped."""
        return self.cluster.credentials

    @property
    def restore_file(self) -> Path:
        """Beside the datadirs: it belongs to the cluster, whichever lab target drives it."""
        return self.cluster.layout.base_dir / RESTORE_FILE

    def place(self, plan: TrialPlan) -> None:
        """Split the nodes over the trial's sites, the WAN between them at its round trip."""
        self.cluster.place(plan.sites, Delay(rtt_ms=plan.wan_rtt_ms, jitter_ms=plan.wan_jitter_ms))

    def restart_with(self, settings: Mapping[str, str], *, every_node: bool = False) -> float:
        """A rolling restart of the nodes whose option file lacks `settings` (of every node
        with `every_node`)."""
        return self.cluster.configure(settings, every_node=every_node)

    def nodes_for(self, count: int) -> list[galera_sql.Node]:
        """Resize the running cluster to `count` nodes."""
        if count > self.cluster.layout.max_nodes:
            raise InfeasibleError(
                f"the lab runs at most {self.cluster.layout.max_nodes} nodes; {count} asked"
            )
        self.cluster.resize(count)
        return self.cluster.nodes()

    def recover(self) -> None:
        """Start the next trial from a fresh cluster."""
        super().recover()
        self.cluster.reset()

    def close(self) -> None:
        """Stop every node cleanly."""
        self.cluster.stop()
