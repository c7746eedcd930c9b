"""Settings a server reads only when it starts: restart-only factors of a real cluster.

A restart-only factor is hard to change: the lab restarts its nodes with it (rolling, one node
at a time, the cluster kept Primary), an external target only through restart commands its
operator defined. Dynamic settings are set with SET GLOBAL instead, and checked against the
server's own list at run time; so this module names only the restart-only ones a benchmark may
tune, for the API to tell them apart at submission.
"""

from __future__ import annotations

import re

from experiments.galera.provider_options import is_provider_option_name, provider_option

# MariaDB 10.11's read-only global variables (information_schema.SYSTEM_VARIABLES, READ_ONLY
# 'YES') that tune performance. The others of that list are paths, identities, versions,
# security or replication wiring, which the deployment decides and a benchmark must not move.
RESTART_ONLY_VARIABLES: frozenset[str] = frozenset(
    {
        "aria_pagecache_buffer_size",
        "back_log",
        "binlog_optimize_thread_scheduling",
        "innodb_adaptive_hash_index_parts",
        "innodb_buffer_pool_chunk_size",
        "innodb_doublewrite",
        "innodb_flush_method",
        "innodb_log_buffer_size",
        "innodb_log_write_ahead_size",
        "innodb_open_files",
        "innodb_sort_buffer_size",
        "innodb_use_native_aio",
        "large_pages",
        "log_slave_updates",
        "metadata_locks_hash_instances",
        "open_files_limit",
        "performance_schema",
        "table_open_cache_instances",
        "thread_handling",
        "thread_stack",
    }
)
# What an option file line may hold as a value: no spaces, quotes, comment or line breaks.
_CONFIG_VALUE = re.compile(r"^[A-Za-z0-9_.+-]{1,64}$")


def is_restart_only(name: str) -> bool:
    """Whether the server or the provider reads `name` only when it starts."""
    if is_provider_option_name(name):
        try:
            option = provider_option(name)
        except ValueError:
            return False
        return option.tunable and not option.dynamic
    return name in RESTART_ONLY_VARIABLES


def config_value(name: str, value: int | float | str) -> str:
    """`value` as an option file line takes it; ValueError naming the rule otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{name} takes a number or a word, got {value!r}")
    text = str(value)
    if not _CONFIG_VALUE.fullmatch(text):
        raise ValueError(
            f"{name} takes a value of at most 64 letters, digits and _ . + -, got {text!r}"
        )
    return text
