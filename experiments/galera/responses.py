"""The responses a trial measures: what every Galera target reports, and what real clusters add."""

from __future__ import annotations

GALERA_RESPONSES: tuple[str, ...] = (
    "tps",
    "qps",
    "latency_avg_ms",
    "latency_p95_ms",
    "errors_per_s",
    "reconnects_per_s",
    "cert_failures",
    "bf_aborts",
    "flow_control_paused",
    "recv_queue_avg",
    "abort_rate",
)

# Real clusters also report the steady-state mean and standard error measured from sysbench's
# interval reports, so the analysis can weigh runs and tell noise from effect.
MEASURED_RESPONSES: tuple[str, ...] = (
    *GALERA_RESPONSES,
    "cert_deps_distance",
    # The median single-row autocommit INSERT on the writing node, timed before the run.
    "commit_latency_ms",
    # The seconds the trial's restart-only settings took to apply (0: no restart).
    "restart_s",
    "tps_steady",
    "tps_se",
    "latency_p95_steady_ms",
    "latency_p95_se_ms",
)
# What the TPC-C-like workload reports besides the other responses: new-order transactions
# per minute (NOTPM, DBT2's name; tpmc is the same count under TPC-C's name), the share of
# new orders rolled back by the specification's unused item, and new-order p95 latency.
TPCC_RESPONSES: tuple[str, ...] = ("notpm", "tpmc", "rollback_rate", "new_order_latency_p95_ms")
