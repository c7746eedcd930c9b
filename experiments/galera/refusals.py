"""The classes of server variables a benchmark may not set, each with its reason.

A name in a refused class (paths, addresses, credentials, commands, the replication switches,
replication identity, availability, logging, safety settings) is refused with its reason; an
operator may allow a name of a class that is not dangerous (`Refusal.widenable`) on a target of
theirs (`experiments.galera.variable_policy`), never one of the others.
"""

from __future__ import annotations

from dataclasses import dataclass


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
        " gcs.fc_limit (experiments/galera/provider_options.py)",
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
