"""What each kind of target accepts as factors, in which ranges, and reports as responses."""

from __future__ import annotations

from dataclasses import dataclass

from experiments.galera.responses import GALERA_RESPONSES, MEASURED_RESPONSES, TPCC_RESPONSES
from experiments.galera.server_variables import SERVER_VARIABLES
from experiments.galera.workloads import WORKLOAD_OPTIONS

CLUSTER_FACTORS: tuple[str, ...] = (
    "nodes",
    "load_nodes",
    "clients",
    "threads_per_client",
    "runtime_s",
    "workload",
    "wsrep_slave_threads",
    *(name for options in WORKLOAD_OPTIONS.values() for name in options),
)
# The lab's topology: its nodes split over one or two sites (network namespaces) whose
# replication traffic crosses an emulated WAN of this round trip and jitter; only the lab can
# move its nodes apart, so these are lab factors.
WAN_FACTORS: dict[str, tuple[float, float]] = {
    "sites": (1, 2),
    "wan_rtt_ms": (0, 300),
    "wan_jitter_ms": (0, 100),
}
# Any other factor of a real cluster named like a server variable
# (experiments.galera.server_variables.NAME) is one, set with SET GLOBAL on every node if the
# catalogue there allows it.

SIMULATED_FACTORS: tuple[str, ...] = (
    "nodes",
    "clients",
    "threads_per_client",
    "wsrep_slave_threads",
    "runtime_s",
    "write_share",
)


@dataclass(frozen=True)
class FactorRange:
    """The values a built-in factor takes on a kind of target: low to high, whole numbers only
    when `whole` (counts of nodes, clients, threads; seconds sysbench runs); `why` names the
    setting the bound comes from when the operator's targets file sets it."""

    low: float
    high: float
    whole: bool = True
    why: str = ""


# The lab's largest cluster unless its settings say otherwise (settings.max_nodes, at most
# LAB_NODES_LIMIT: two-digit node numbers in its ports and paths); its layout's default.
LAB_MAX_NODES = 9
LAB_NODES_LIMIT = 99
# Trials shorter than this cannot tell a steady state from the warm-up (MSER-5 on one-second
# interval reports); an hour is the longest trial any target runs.
MIN_RUNTIME_S = 10
MAX_RUNTIME_S = 3600
# The simulated model's domain (worker/targets/simulated_model.py): the published study's inputs.
SIMULATED_RANGES: dict[str, FactorRange] = {
    "nodes": FactorRange(1, 16),
    "clients": FactorRange(1, 16),
    "threads_per_client": FactorRange(1, 256),
    "wsrep_slave_threads": FactorRange(1, 64),
    "runtime_s": FactorRange(MIN_RUNTIME_S, MAX_RUNTIME_S, whole=False),
    "write_share": FactorRange(0, 1, whole=False),
}
# A real cluster's built-in numeric factors: as many client machines and threads as the
# simulated one (16 x 256 connections, what deploy/galera/galera.cnf's max_connections is sized
# for), whole seconds (sysbench's --time), the catalogue's range of applier threads, and the
# workloads' options and the WAN's ranges above. `nodes` and `load_nodes` go up to the target's
# node count (`TargetSpec.factor_range`).
_WHOLE_OPTIONS = frozenset({"statements_per_trx", "hot_rows", "warehouses", "sites"})
CLUSTER_RANGES: dict[str, FactorRange] = {
    "clients": FactorRange(1, 16),
    "threads_per_client": FactorRange(1, 256),
    "runtime_s": FactorRange(MIN_RUNTIME_S, MAX_RUNTIME_S),
    "wsrep_slave_threads": FactorRange(*SERVER_VARIABLES["wsrep_slave_threads"].bounds),
    **{
        name: FactorRange(low, high, whole=name in _WHOLE_OPTIONS)
        for options in (*WORKLOAD_OPTIONS.values(), WAN_FACTORS)
        for name, (low, high) in options.items()
    },
}

# An `ssh` target's client machines are hosts of their own: each one's CPU busy share
# (0 to 1) during the run tells when the load generator, not the cluster, was the limit.
CLIENT_HOST_RESPONSES: tuple[str, ...] = ("client_cpu_busy",)

# None means "any name": a manual target records whatever was measured elsewhere. An `ssh`
# target also accepts the options of the workloads its settings declare
# (`TargetSpec.factors`, `experiments.galera.ssh_settings`).
KIND_FACTORS: dict[str, tuple[str, ...] | None] = {
    "simulated": SIMULATED_FACTORS,
    "lab": (*CLUSTER_FACTORS, *WAN_FACTORS),
    "external": CLUSTER_FACTORS,
    "ssh": CLUSTER_FACTORS,
    "manual": None,
}
KIND_RESPONSES: dict[str, tuple[str, ...] | None] = {
    "simulated": GALERA_RESPONSES,
    "lab": (*MEASURED_RESPONSES, *TPCC_RESPONSES),
    "external": (*MEASURED_RESPONSES, *TPCC_RESPONSES),
    "ssh": (*MEASURED_RESPONSES, *TPCC_RESPONSES, *CLIENT_HOST_RESPONSES),
    "manual": None,
}
SERVER_VARIABLE_KINDS = frozenset({"lab", "external", "ssh"})
RUNNABLE_KINDS = frozenset({"simulated", "lab", "external", "ssh"})
# Real clusters whose factors are the cluster's (`CLUSTER_FACTORS`, with their ranges).
CLUSTER_KINDS = frozenset({"lab", "external", "ssh"})
