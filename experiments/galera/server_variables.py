"""The MariaDB server variables a factor may name: the catalogue of tunables.

A factor of a real cluster that is neither built in nor a provider option is a server variable,
set with `SET GLOBAL` on every node before the trial. Only the tunable performance settings of
this catalogue may be set; the classes of names refused, with their reasons, are in
`experiments.galera.refusals`, and what an operator changes in the catalogue for a target in
`experiments.galera.variable_policy`.

The catalogue describes MariaDB 10.11 (Debian 12's 10.11.19, the lab's server): every entry is a
dynamic global variable there, with the kind, the bounds, the block size and the levels that
information_schema.SYSTEM_VARIABLES reports (tests/app/test_server_variables.py checks them
against the running server).

Standard library only: the API checks factors with it at submission, the worker again before
it sets a variable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

Kind = Literal["integer", "number", "boolean", "enum"]

NAME = re.compile(r"[a-z_][a-z0-9_]{0,63}\Z")


@dataclass(frozen=True)
class ServerVariable:
    """One tunable server variable: how its value is written and what it may be."""

    name: str
    kind: Kind
    low: float | None = None
    high: float | None = None
    # The server rounds an integer to a multiple of its block size (NUMERIC_BLOCK_SIZE).
    step: int = 1
    # The words an enum takes (ENUM_VALUE_LIST), compared without regard to case.
    levels: tuple[str, ...] = ()

    @property
    def bounds(self) -> tuple[float, float]:
        """The least and the greatest value of a numeric or boolean variable (0 and 1)."""
        assert self.low is not None and self.high is not None, f"{self.name} is an enum"
        return self.low, self.high


_UINT = 2**32 - 1
_ULONG = 2**64 - 1
_INT = 2**31 - 1


def _int(name: str, low: float, high: float, step: int = 1) -> ServerVariable:
    return ServerVariable(name, "integer", low, high, step)


def _real(name: str, low: float, high: float) -> ServerVariable:
    return ServerVariable(name, "number", low, high)


def _bool(name: str) -> ServerVariable:
    return ServerVariable(name, "boolean", 0, 1)


def _enum(name: str, *levels: str) -> ServerVariable:
    return ServerVariable(name, "enum", levels=levels)


_CATALOGUE: tuple[ServerVariable, ...] = (
    # Galera's server side: appliers, causality checks, retries, write-set limits, streaming.
    _int("wsrep_slave_threads", 1, 512),
    _int("wsrep_sync_wait", 0, 15),
    _int("wsrep_retry_autocommit", 0, 10000),
    _bool("wsrep_certify_nonpk"),
    _enum("wsrep_certification_rules", "strict", "optimized"),
    _int("wsrep_max_ws_rows", 0, 1048576),
    _int("wsrep_max_ws_size", 1024, _INT),
    _int("wsrep_trx_fragment_size", 0, _INT),
    _enum("wsrep_trx_fragment_unit", "bytes", "rows", "statements"),
    _bool("wsrep_slave_fk_checks"),
    _bool("wsrep_slave_uk_checks"),
    _int("wsrep_mysql_replication_bundle", 0, 1000),
    # InnoDB: durability, flushing, I/O, purge, the buffer pool and its LRU, spinning, locks.
    # (innodb_thread_concurrency and innodb_commit_concurrency left MariaDB in 10.6.)
    _bool("innodb_adaptive_flushing"),
    _real("innodb_adaptive_flushing_lwm", 0, 70),
    _bool("innodb_adaptive_hash_index"),
    _int("innodb_autoextend_increment", 1, 1000),
    _int("innodb_buffer_pool_size", 2097152, 18446744073701163008, step=1048576),
    _int("innodb_change_buffer_max_size", 0, 50),
    _enum("innodb_change_buffering", "none", "inserts", "deletes", "changes", "purges", "all"),
    _bool("innodb_deadlock_detect"),
    _int("innodb_flush_log_at_timeout", 0, 2700),
    _int("innodb_flush_log_at_trx_commit", 0, 3),
    _int("innodb_flush_neighbors", 0, 2),
    _bool("innodb_flush_sync"),
    _int("innodb_flushing_avg_loops", 1, 1000),
    _int("innodb_io_capacity", 100, _UINT),
    _int("innodb_io_capacity_max", 100, _UINT),
    _int("innodb_lock_wait_timeout", 0, 100000000),
    # 10.11 resizes the redo log online.
    _int("innodb_log_file_size", 4194304, _ULONG, step=4096),
    _int("innodb_log_spin_wait_delay", 0, 6000),
    _int("innodb_lru_flush_size", 1, _ULONG),
    _int("innodb_lru_scan_depth", 100, _ULONG),
    _real("innodb_max_dirty_pages_pct", 0, 99.999),
    _real("innodb_max_dirty_pages_pct_lwm", 0, 99.999),
    _int("innodb_max_purge_lag", 0, _ULONG),
    _int("innodb_max_purge_lag_delay", 0, 10000000),
    _int("innodb_old_blocks_pct", 5, 95),
    _int("innodb_old_blocks_time", 0, _UINT),
    _int("innodb_purge_batch_size", 1, 5000),
    _int("innodb_purge_threads", 1, 32),
    _bool("innodb_random_read_ahead"),
    _int("innodb_read_ahead_threshold", 0, 64),
    _int("innodb_read_io_threads", 1, 64),
    _int("innodb_write_io_threads", 2, 64),
    _int("innodb_spin_wait_delay", 0, 6000),
    _int("innodb_sync_spin_loops", 0, _ULONG),
    # The binary log's durability and group commit (with log_bin on).
    _int("sync_binlog", 0, _UINT),
    _int("binlog_cache_size", 4096, _ULONG, step=4096),
    _int("binlog_stmt_cache_size", 4096, _ULONG, step=4096),
    _int("binlog_commit_wait_count", 0, _ULONG),
    _int("binlog_commit_wait_usec", 0, _ULONG),
    # The query cache.
    _enum("query_cache_type", "OFF", "ON", "DEMAND"),
    _int("query_cache_size", 0, _ULONG, step=1024),
    _int("query_cache_limit", 0, _UINT),
    _int("query_cache_min_res_unit", 0, _UINT, step=8),
    _bool("query_cache_strip_comments"),
    _bool("query_cache_wlock_invalidate"),
    # Connections, threads, the thread pool (with thread_handling=pool-of-threads), caches.
    _int("max_connections", 10, 100000),
    # Not below the default 100: a few aborted connections would then block the worker's host.
    _int("max_connect_errors", 100, _UINT),
    _int("thread_cache_size", 0, 16384),
    _int("table_open_cache", 10, 1048576),
    _int("table_definition_cache", 400, 2097152),
    _int("thread_pool_size", 1, 100000),
    _int("thread_pool_stall_limit", 1, _UINT),
    _int("thread_pool_oversubscribe", 1, 1000),
    _int("thread_pool_max_threads", 1, 65536),
    _int("thread_pool_idle_timeout", 1, _UINT),
    _int("thread_pool_prio_kickup_timer", 0, _UINT),
    _bool("thread_pool_dedicated_listener"),
    # Per-connection buffers and temporary tables (a new session takes the global value).
    _int("sort_buffer_size", 1024, _ULONG),
    _int("join_buffer_size", 128, _ULONG, step=128),
    _int("read_buffer_size", 8192, _INT, step=4096),
    _int("read_rnd_buffer_size", 1, _INT),
    _int("tmp_table_size", 0, _ULONG, step=16384),
    _int("tmp_memory_table_size", 0, _ULONG, step=16384),
    _int("max_heap_table_size", 16384, _ULONG, step=1024),
    _int("bulk_insert_buffer_size", 0, _ULONG),
    _int("net_buffer_length", 1024, 1048576, step=1024),
    _int("max_allowed_packet", 1024, 1073741824, step=1024),
    _int("transaction_prealloc_size", 1024, 134217728, step=1024),
    _int("transaction_alloc_block_size", 1024, 134217728, step=1024),
    _int("query_prealloc_size", 1024, _UINT, step=1024),
    _int("query_alloc_block_size", 1024, _UINT, step=1024),
)
SERVER_VARIABLES: Mapping[str, ServerVariable] = MappingProxyType(
    {variable.name: variable for variable in sorted(_CATALOGUE, key=lambda v: v.name)}
)
