"""Whether a client's schema holds what `sysbench prepare` made, and how far trials moved it.

A prepared schema carries a marker, the table `galera_doe_schema`: one row with what was
prepared (`layout`: the kind of schema, its tables and rows per table or its warehouses and
scale, and `VERSION`, the version of this preparation), the rows counted right after it, and
when. A schema is reused when its marker says it was made as the trial would make it, every
table is there, and its rows moved by at most the target's `max_schema_drift` (a fraction,
default `MAX_DRIFT`) from the count at prepare; otherwise it is prepared again. Row counts, not
the auto-increment counter or the largest id, because the largest id moves with every insert
(by the cluster size on Galera) and says nothing of deletes.

Dense ids. sysbench's prepare fills the oltp tables by auto-increment, and on Galera the
auto-increment step is the cluster size (`wsrep_auto_increment_control`): on N nodes the ids are
1, 1 + N, 1 + 2N, ... while the workloads pick ids from 1 to table_size, so (N - 1)/N of their
point reads miss, and each DELETE + INSERT pair of oltp_read_write that misses adds a row (a
1000-row table grew 15.7 % in 5 s on two nodes). What a trial measured then depended on the node
count of the cluster that prepared the schema. Here the oltp tables are prepared with explicit
ids 1..table_size (`--auto_inc=off`), and their `id` gets its AUTO_INCREMENT back afterwards for
oltp_insert, whose rows then go above table_size. That ALTER copies each table: about as long as
the prepare itself (2.9 s against 3.0 s for 4 tables of 10 000 rows on two lab nodes), paid once
per schema.

The bound. oltp_read_write and the other oltp workloads now leave the row count as prepare made
it (an UPDATE, or a DELETE and INSERT of the same id); oltp_insert adds rows, oltp_delete removes
them and tpcc adds orders, so after one of those the schema is counted again before the next
trial. Within 5 % of the prepared rows, the share of point reads that miss (after deletes) and
the size of the tables against the buffer pool (after inserts) stay within 5 % of what the first
run of a design met; a looser bound lets a design's later runs measure a different table than
its first (at lab scale one 10 s oltp_insert trial adds more than 5 % anyway). The target
setting `max_schema_drift` changes it (0: prepare again after any change; `reprepare: true`
prepares before every trial).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pymysql.cursors import Cursor

from worker.targets.base import Value

MARKER = "galera_doe_schema"
# Bumped whenever a prepare makes something else: older schemas are prepared again.
VERSION = 2
MAX_DRIFT = 0.05
TPCC_TABLES = (
    "warehouse",
    "district",
    "customer",
    "history",
    "orders",
    "new_orders",
    "order_line",
    "item",
    "stock",
)
# The script that prepares every oltp-family schema (the oltp_* scripts and rw_mix share
# oltp_common's prepare; oltp_insert's own would leave the tables empty without auto-increment).
OLTP_PREPARE = "oltp_read_write"


def layout(
    workload: str, *, tables: int, table_size: int, options: Mapping[str, Value]
) -> dict[str, Any]:
    """What a prepare for `workload` makes: the marker's `layout`."""
    if workload == "tpcc":
        return {
            "version": VERSION,
            "kind": "tpcc",
            "warehouses": int(options["warehouses"]),
            "tpcc_scale": int(options["tpcc_scale"]),
        }
    return {"version": VERSION, "kind": "oltp", "tables": tables, "table_size": table_size}


def _tables(made: Mapping[str, Any]) -> tuple[str, ...]:
    if made["kind"] == "tpcc":
        return TPCC_TABLES
    return tuple(f"sbtest{i}" for i in range(1, int(made["tables"]) + 1))


def _counted(made: Mapping[str, Any]) -> tuple[str, ...]:
    """The tables whose rows say how far trials moved the schema: every oltp table; tpcc's
    orders, one row per new order (its order lines and history grow with it)."""
    return ("orders",) if made["kind"] == "tpcc" else _tables(made)


def rows(cursor: Cursor, database: str, made: Mapping[str, Any]) -> int:
    """The rows of the counted tables of `database` now."""
    total = 0
    for table in _counted(made):
        cursor.execute(f"SELECT COUNT(*) FROM {database}.{table}")
        total += int(cursor.fetchone()[0])
    return total


def problem(cursor: Cursor, database: str, made: Mapping[str, Any], max_drift: float) -> str:
    """Why `database` cannot be used as the prepare of `made` would leave it ('' when it can):
    no marker, another layout, a table missing, or rows moved beyond `max_drift`."""
    cursor.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (database,)
    )
    present = {str(name) for (name,) in cursor.fetchall()}
    if MARKER not in present:
        return "not prepared (no marker)" if present else "not there"
    cursor.execute(f"SELECT layout, prepared_rows FROM {database}.{MARKER}")
    found = cursor.fetchone()
    if found is None or json.loads(found[0]) != dict(made):
        wanted = json.dumps(made, sort_keys=True)
        return f"prepared as {found[0] if found else 'nothing'}, not as {wanted}"
    missing = sorted(set(_tables(made)) - present)
    if missing:
        return f"table {', '.join(missing)} missing"
    prepared, now = int(found[1]), rows(cursor, database, made)
    drift = abs(now - prepared) / prepared if prepared else float(now > 0)
    if drift > max_drift:
        return (
            f"{now} rows against {prepared} at prepare: moved {drift:.1%}, beyond the bound of"
            f" {max_drift:.1%}"
        )
    return ""


def finish(cursor: Cursor, database: str, made: Mapping[str, Any]) -> None:
    """After sysbench prepared `database`: give the oltp ids their auto-increment back (they
    were written 1..table_size) and write the marker with the rows counted now."""
    if made["kind"] == "oltp":
        for table in _tables(made):
            cursor.execute(
                f"ALTER TABLE {database}.{table} MODIFY id INTEGER NOT NULL AUTO_INCREMENT"
            )
    cursor.execute(
        f"CREATE TABLE {database}.{MARKER} (layout VARCHAR(255) NOT NULL, prepared_rows BIGINT"
        " NOT NULL, prepared_at DATETIME(6) NOT NULL, PRIMARY KEY (layout))"
    )
    cursor.execute(
        f"INSERT INTO {database}.{MARKER} VALUES (%s, %s, UTC_TIMESTAMP(6))",
        (json.dumps(made, sort_keys=True), rows(cursor, database, made)),
    )
