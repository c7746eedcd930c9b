"""The responses of a trial on a real cluster: sysbench's outputs combined, and the Galera
counters of every node read on each side of the run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from worker import galera_sql, sysbench_output


@dataclass(frozen=True)
class Measured:
    """What a trial's run left: the commands and their outputs, one snapshot of every node on
    each side of the run (`worker.targets.record.node_states`), the run's seconds, and the
    commit latency timed on the idle cluster before it."""

    argvs: list[list[str]]
    outputs: list[str]
    states_before: list[dict[str, Any]]
    states_after: list[dict[str, Any]]
    elapsed_s: float
    commit_ms: float

    @property
    def before(self) -> list[dict[str, str]]:
        """Every node's wsrep status before the run."""
        return [state["wsrep_status"] for state in self.states_before]

    @property
    def after(self) -> list[dict[str, str]]:
        """Every node's wsrep status after the run."""
        return [state["wsrep_status"] for state in self.states_after]


def check_membership_unchanged(before: list[dict[str, str]], after: list[dict[str, str]]) -> None:
    """Healthy before and after is not enough: a node that left and came back during the run
    changed the cluster's configuration id, and the run did not measure one cluster."""
    if [b["wsrep_cluster_conf_id"] for b in before] != [a["wsrep_cluster_conf_id"] for a in after]:
        raise galera_sql.GaleraError("the cluster's membership changed during the trial")


def trial_responses(measured: Measured, *, restart_s: float, workload: str) -> dict[str, float]:
    """Every response of the trial; SysbenchOutputError when an output cannot be read."""
    combined = sysbench_output.combine([sysbench_output.parse(text) for text in measured.outputs])
    responses = _responses(combined, measured.before, measured.after, measured.elapsed_s)
    responses["commit_latency_ms"] = measured.commit_ms
    responses["restart_s"] = restart_s
    if workload == "tpcc":
        responses |= _tpcc_responses(sysbench_output.tpcc_counts(measured.outputs))
    return responses


def _tpcc_responses(counts: sysbench_output.TpccCounts) -> dict[str, float]:
    """NOTPM (tpmc: the same count under TPC-C's name), the rollback rate of new orders and
    their p95 latency; the abort rate of certification conflicts stays in `abort_rate`."""
    return {
        "notpm": counts.notpm,
        "tpmc": counts.notpm,
        "rollback_rate": counts.rollback_rate,
        "new_order_latency_p95_ms": counts.latency_p95_ms,
    }


def _responses(
    combined: sysbench_output.Combined,
    before: list[dict[str, str]],
    after: list[dict[str, str]],
    elapsed_s: float,
) -> dict[str, float]:
    def delta(name: str) -> float:
        return sum(float(a[name]) - float(b[name]) for a, b in zip(after, before, strict=True))

    nodes = len(after)
    transactions = combined.transactions
    errors = combined.ignored_errors
    return {
        "tps": combined.tps,
        "qps": combined.qps,
        "latency_avg_ms": combined.latency_avg_ms,
        "latency_p95_ms": combined.latency_p95_ms,
        "errors_per_s": combined.errors_per_s,
        "reconnects_per_s": combined.reconnects_per_s,
        "cert_failures": delta("wsrep_local_cert_failures"),
        "bf_aborts": delta("wsrep_local_bf_aborts"),
        # Each node counts the time it was paused; flow control pauses the whole cluster.
        "flow_control_paused": delta("wsrep_flow_control_paused_ns") / (nodes * elapsed_s * 1e9),
        # Reading wsrep_local_recv_queue_avg resets it: the value after is the run's average.
        "recv_queue_avg": sum(float(a["wsrep_local_recv_queue_avg"]) for a in after) / nodes,
        # How many write-sets could be applied in parallel (averaged over the node's life).
        "cert_deps_distance": sum(float(a["wsrep_cert_deps_distance"]) for a in after) / nodes,
        "abort_rate": errors / (transactions + errors) if transactions + errors else 0.0,
        "tps_steady": combined.steady.tps_mean,
        "tps_se": combined.steady.tps_se,
        "latency_p95_steady_ms": combined.steady.p95_mean,
        "latency_p95_se_ms": combined.steady.p95_se,
    }
