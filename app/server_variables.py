"""The MariaDB server variables a factor may name: a catalogue of tunables, and what is refused.

A factor of a real cluster that is neither built in nor a provider option is a server variable,
set with `SET GLOBAL` on every node before the trial. Only the tunable performance settings of
this catalogue may be set; a name in a refused class (paths, addresses, credentials, commands,
the replication switches, replication identity, availability, logging, safety settings) is
refused with its reason, and any other name as not in the catalogue. The operator may narrow the
list of a target (`settings.server_variables.deny`) or widen it (`allow`) in the targets file,
but never to a class marked dangerous (`Refusal.widenable` False).

The catalogue describes MariaDB 10.11 (Debian 12's 10.11.19, the lab's server): every entry is a
dynamic global variable there, with the kind, the bounds, the block size and the levels that
information_schema.SYSTEM_VARIABLES reports (tests/app/test_server_variables.py checks them
against the running server).

Standard library only: the API checks factors with it at submission, the worker again before
it sets a variable.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

Kind = Literal["integer", "number", "boolean", "enum"]
SettingValue = int | float | str

NAME = re.compile(r"[a-z_][a-z0-9_]{0,63}\Z")
SETTINGS_KEY = "server_variables"


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


@dataclass(frozen=True)
class Refusal:
    """A class of server variables a benchmark may not set, and why."""

    # The end of "X ... : a benchmark may not set it", naming the rule.
    reason: str
    # Whether an operator may allow a variable of the class on a target of theirs.
    widenable: bool
    names: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()
    # Words of the name (split at "_") any of which puts it in the class.
    words: frozenset[str] = frozenset()
    # Names the patterns above would cover wrongly.
    exempt: frozenset[str] = frozenset()

    def covers(self, name: str) -> bool:
        """Whether `name` is in this class."""
        return name not in self.exempt and (
            name in self.names
            or name.startswith(self.prefixes)
            or name.endswith(self.suffixes)
            or not self.words.isdisjoint(name.split("_"))
        )


# In the order they are tried: a name takes the reason of the first class that covers it.
REFUSALS: tuple[Refusal, ...] = (
    Refusal(
        "is never a factor: each Galera provider option is a factor of its own, named like"
        " gcs.fc_limit (app/provider_options.py)",
        widenable=False,
        names=frozenset({"wsrep_provider_options"}),
    ),
    Refusal(
        "switches Galera replication or its provider library, so the node would leave the cluster",
        widenable=False,
        names=frozenset({"wsrep_on"}),
        prefixes=("wsrep_provider",),
    ),
    Refusal(
        "decides which cluster the node joins",
        widenable=False,
        prefixes=("wsrep_cluster_",),
    ),
    Refusal(
        "is a path",
        widenable=False,
        names=frozenset(
            {
                "basedir",
                "character_sets_dir",
                "datadir",
                "innodb_data_home_dir",
                "innodb_log_group_home_dir",
                "lc_messages_dir",
                "log_bin",
                "log_bin_index",
                "log_error",
                "plugin_dir",
                "relay_log",
                "relay_log_index",
                "secure_file_priv",
                "socket",
            }
        ),
        suffixes=("_file", "_filename", "_dir", "tmpdir", "_directory", "_path", "_basename"),
        # Whether Aria syncs its log directory: a setting of durability, not a path.
        exempt=frozenset({"aria_sync_log_dir"}),
    ),
    Refusal(
        "is a network address",
        widenable=False,
        names=frozenset({"bind_address", "port", "proxy_protocol_networks"}),
        suffixes=("_address", "_addr", "_host", "_port"),
    ),
    Refusal(
        "is a credential or a security setting",
        widenable=False,
        names=frozenset(
            {
                "automatic_sp_privileges",
                "local_infile",
                "log_bin_trust_function_creators",
                "report_user",
            }
        ),
        words=frozenset(
            {
                "auth",
                "cipher",
                "encrypt",
                "encrypted",
                "encryption",
                "password",
                "passwords",
                "secure",
                "ssl",
                "tls",
                "x509",
            }
        ),
    ),
    Refusal(
        "runs statements or commands",
        widenable=False,
        names=frozenset({"wsrep_dbug_option", "wsrep_notify_cmd", "wsrep_sst_method"}),
        prefixes=("init_",),
        suffixes=("_cmd", "_command"),
    ),
    Refusal(
        "is replication identity or wiring (a change can break replication or let the nodes"
        " diverge)",
        widenable=True,
        names=frozenset(
            {
                "auto_increment_increment",
                "auto_increment_offset",
                "binlog_format",
                "server_id",
                "sql_slave_skip_counter",
                "sync_master_info",
                "sync_relay_log",
                "sync_relay_log_info",
                "wsrep_auto_increment_control",
                "wsrep_forced_binlog_format",
                "wsrep_ignore_apply_errors",
                "wsrep_mode",
                "wsrep_node_name",
                "wsrep_osu_method",
                "wsrep_restart_slave",
                "wsrep_sst_donor",
                "wsrep_start_position",
            }
        ),
        prefixes=("gtid_", "wsrep_gtid_", "replicate_", "slave_", "rpl_", "master_", "relay_log_"),
    ),
    Refusal(
        "takes the node out of service or makes it refuse writes",
        widenable=True,
        names=frozenset(
            {
                "read_only",
                "super_read_only",
                "offline_mode",
                "wsrep_desync",
                "wsrep_reject_queries",
                "wsrep_sst_donor_rejects_queries",
                "max_user_connections",
            }
        ),
    ),
    Refusal(
        "writes or configures a log",
        widenable=True,
        names=frozenset(
            {
                "binlog_expire_logs_seconds",
                "expire_logs_days",
                "general_log",
                "innodb_print_all_deadlocks",
                "innodb_status_output",
                "innodb_status_output_locks",
                "long_query_time",
                "max_binlog_size",
                "max_relay_log_size",
                "min_examined_row_limit",
                "profiling",
                "profiling_history_size",
                "slow_query_log",
                "sql_log_off",
                "userstat",
                "wsrep_debug",
                "wsrep_log_conflicts",
            }
        ),
        prefixes=("log_",),
    ),
    Refusal(
        "changes what statements mean or which data the server accepts (a safety setting)",
        widenable=True,
        names=frozenset(
            {
                "autocommit",
                "check_constraint_checks",
                "completion_type",
                "default_storage_engine",
                "enforce_storage_engine",
                "explicit_defaults_for_timestamp",
                "foreign_key_checks",
                "innodb_checksum_algorithm",
                "innodb_default_row_format",
                "innodb_file_per_table",
                "innodb_force_primary_key",
                "innodb_snapshot_isolation",
                "innodb_strict_mode",
                "max_join_size",
                "old",
                "old_mode",
                "time_zone",
                "transaction_isolation",
                "tx_isolation",
                "tx_read_only",
                "unique_checks",
            }
        ),
        prefixes=("sql_", "character_set_", "collation_", "system_versioning_"),
    ),
    Refusal(
        "is an action, not a setting",
        widenable=True,
        names=frozenset({"flush", "innodb_buffer_pool_load_abort"}),
        prefixes=("innodb_monitor_",),
        suffixes=("_now",),
    ),
)


def refusal(name: str) -> Refusal | None:
    """The first refused class that covers `name`, if any."""
    return next((rule for rule in REFUSALS if rule.covers(name)), None)


@dataclass(frozen=True)
class Policy:
    """What one target's operator changed in the catalogue: names allowed beyond it (never a
    dangerous class) and names denied although it has them."""

    allow: frozenset[str] = frozenset()
    deny: frozenset[str] = frozenset()

    def variable(self, name: str) -> ServerVariable | None:
        """The catalogue's entry for `name`, None for a name only the operator allowed;
        ValueError saying why a benchmark may not set it otherwise."""
        if name in self.deny:
            raise ValueError(
                f"{name} is denied on this target by its operator"
                f" (settings.{SETTINGS_KEY}.deny): a benchmark may not set it"
            )
        rule = refusal(name)
        if rule is not None and not rule.widenable:
            raise ValueError(f"{name} {rule.reason}: a benchmark may not set it")
        if name in SERVER_VARIABLES:
            return SERVER_VARIABLES[name]
        if name in self.allow:
            return None
        if rule is not None:
            raise ValueError(
                f"{name} {rule.reason}: a benchmark may not set it unless the target's operator"
                f" allows it (settings.{SETTINGS_KEY}.allow)"
            )
        known = [*SERVER_VARIABLES, *self.allow]
        close = difflib.get_close_matches(name, known, n=3)
        hint = f"close: {', '.join(close)}" if close else "none is close"
        raise ValueError(
            f"{name} is not in the catalogue of server variables a benchmark may set ({hint});"
            f" the target's operator may allow it (settings.{SETTINGS_KEY}.allow)"
        )

    def value(self, name: str, value: object) -> SettingValue:
        """`value` as `SET GLOBAL name` takes it (an integer of a whole number, ON/OFF words
        as given); ValueError naming the variable and its rule otherwise."""
        variable = self.variable(name)
        if variable is None:
            return _free_value(name, value)
        return _catalogued_value(variable, value)


DEFAULT_POLICY = Policy()

# A value for a variable the operator allowed beyond the catalogue: a number, or a word or a
# list of flags (optimizer_switch's a=on,b=off), never a path or a quoted string.
_FREE_WORD = re.compile(r"[A-Za-z0-9_.,=+-]{1,200}\Z")
_BOOLEAN_WORDS = {"ON": 1, "TRUE": 1, "1": 1, "OFF": 0, "FALSE": 0, "0": 0}


def _free_value(name: str, value: object) -> SettingValue:
    number = _number(value)
    if number is not None:
        return number
    if isinstance(value, str) and _FREE_WORD.match(value):
        return value
    raise ValueError(
        f"{name} takes a finite number or a word of letters, digits and _ . , = + -, got {value!r}"
    )


def _catalogued_value(variable: ServerVariable, value: object) -> SettingValue:
    name = variable.name
    if variable.kind == "enum":
        words = {level.casefold() for level in variable.levels}
        if isinstance(value, str) and value.casefold() in words:
            return value
        raise ValueError(f"{name} takes one of {', '.join(variable.levels)}, got {value!r}")
    number = _number(value)
    if variable.kind == "boolean":
        if isinstance(value, str) and value.upper() in _BOOLEAN_WORDS:
            return value
        if number is not None and number in (0, 1):
            return int(number)
        raise ValueError(f"{name} takes ON or OFF (also 1 or 0), got {value!r}")
    whole = variable.kind == "integer"
    if whole and isinstance(number, float):
        number = int(number) if number.is_integer() else None
    low, high = variable.bounds
    if number is None or not low <= number <= high or (whole and int(number) % variable.step):
        rule = "an integer" if whole else "a number"
        rule += f" from {_plain(low)} to {_plain(high)}"
        if variable.step > 1:
            rule += f", a multiple of {variable.step}"
        raise ValueError(f"{name} takes {rule}, got {value!r}")
    return number


def _number(value: object) -> int | float | None:
    """The finite number `value` is, None if it is none (booleans are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


def _plain(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else repr(number)


def policy_from_settings(settings: Mapping[str, Any]) -> Policy:
    """The policy a target's settings give (`server_variables: {allow: [...], deny: [...]}`);
    ValueError naming the place in the settings and the rule a malformed one breaks."""
    raw = settings.get(SETTINGS_KEY)
    if raw is None:
        return DEFAULT_POLICY
    if not isinstance(raw, Mapping):
        raise ValueError(f"{SETTINGS_KEY}: expected a mapping with allow and/or deny lists")
    unknown = sorted(str(key) for key in raw if key not in ("allow", "deny"))
    if unknown:
        raise ValueError(f"{SETTINGS_KEY}.{unknown[0]}: only allow and deny lists are read")
    allow = _names(raw.get("allow"), "allow")
    deny = _names(raw.get("deny"), "deny")
    for j, name in enumerate(allow):
        where = f"{SETTINGS_KEY}.allow[{j}]"
        rule = refusal(name)
        if rule is not None and not rule.widenable:
            raise ValueError(f"{where}: {name} {rule.reason}, a class no targets file may allow")
        if name in deny:
            raise ValueError(f"{where}: {name} is in the deny list too")
    return Policy(allow=frozenset(allow), deny=frozenset(deny))


def _names(raw: object, key: str) -> list[str]:
    where = f"{SETTINGS_KEY}.{key}"
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValueError(f"{where}: expected a list of server variable names")
    for j, name in enumerate(raw):
        if not isinstance(name, str) or not NAME.match(name):
            raise ValueError(
                f"{where}[{j}]: {name!r} is not a server variable name (a lower-case letter or"
                " _, then letters, digits or _, at most 64; provider options have their own"
                " catalogue)"
            )
    return list(raw)


def check_settings(
    values: Mapping[str, object], settings: Mapping[str, Any]
) -> dict[str, SettingValue]:
    """Every variable a trial sets with `SET GLOBAL`, checked against the catalogue and the
    target's policy (from its `settings`) and written as the server takes it; ValueError naming
    the first refused."""
    policy = policy_from_settings(settings)
    return {name: policy.value(name, value) for name, value in values.items()}
