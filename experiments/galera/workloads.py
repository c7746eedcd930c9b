"""The sysbench workloads a real cluster runs, and the options of the project's own."""

from __future__ import annotations

# The sysbench workloads Debian's sysbench 1.0.20 ships that run on the oltp_* schema: every one
# is prepared the same way, so a schema prepared once serves them all.
WORKLOADS: tuple[str, ...] = (
    "oltp_read_write",
    "oltp_read_only",
    "oltp_write_only",
    "oltp_update_index",
    "oltp_point_select",
    "oltp_update_non_index",
    "oltp_insert",
    "oltp_delete",
    "rw_mix",
    "tpcc",
)
# The options of the project's own workloads (worker/workloads/*.lua), factors of a real
# cluster that apply to that workload only, with the range each may take.
WORKLOAD_OPTIONS: dict[str, dict[str, tuple[float, float]]] = {
    "rw_mix": {"statements_per_trx": (1, 100), "write_share": (0, 1), "hot_rows": (1, 10**9)},
    "tpcc": {"warehouses": (1, 1000)},
}
