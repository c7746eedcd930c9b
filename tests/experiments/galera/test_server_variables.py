"""The catalogue of server variables a benchmark may set, the classes it refuses, and the
operator's changes to it (the catalogue read back from the running MariaDB is in
tests/app/test_server_variables.py, beside its fixture)."""

from __future__ import annotations

import pytest

from experiments.galera.refusals import REFUSALS, refusal
from experiments.galera.restart_settings import RESTART_ONLY_VARIABLES
from experiments.galera.server_variables import SERVER_VARIABLES
from experiments.galera.variable_policy import DEFAULT_POLICY, policy_from_settings


def test_no_catalogued_or_restart_only_tunable_is_in_a_refused_class():
    assert [n for n in SERVER_VARIABLES if refusal(n) is not None] == []
    dangerous = [n for n in RESTART_ONLY_VARIABLES if (r := refusal(n)) and not r.widenable]
    assert dangerous == []


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("general_log_file", "general_log_file is a path: a benchmark may not set it"),
        ("wsrep_data_home_dir", "is a path: a benchmark may not set it"),
        ("wsrep_cluster_address", "decides which cluster the node joins"),
        ("wsrep_node_address", "is a network address: a benchmark may not set it"),
        ("bind_address", "is a network address"),
        ("report_host", "is a network address"),
        ("wsrep_sst_auth", "is a credential or a security setting: a benchmark may not set it"),
        ("require_secure_transport", "is a credential or a security setting"),
        ("init_connect", "runs statements or commands: a benchmark may not set it"),
        ("wsrep_notify_cmd", "runs statements or commands"),
        ("wsrep_on", "switches Galera replication"),
        ("wsrep_provider", "switches Galera replication or its provider library"),
        ("wsrep_provider_options", "is never a factor: each Galera provider option"),
        ("general_log", "writes or configures a log: a benchmark may not set it unless"),
        ("slow_query_log", "writes or configures a log"),
        ("read_only", "takes the node out of service or makes it refuse writes"),
        ("wsrep_desync", "takes the node out of service"),
        ("server_id", "is replication identity or wiring"),
        ("gtid_slave_pos", "is replication identity or wiring"),
        ("wsrep_node_name", "is replication identity or wiring"),
        ("wsrep_gtid_domain_id", "is replication identity or wiring"),
        ("binlog_format", "is replication identity or wiring"),
        ("sql_mode", "changes what statements mean or which data the server accepts"),
        ("tx_isolation", "(a safety setting)"),
        ("innodb_buffer_pool_dump_now", "is an action, not a setting"),
        ("innodb_io_capasity", "not in the catalogue of server variables a benchmark may set"
         " (close: innodb_io_capacity"),
        ("innodb_thread_concurrency", "not in the catalogue"),
    ],
)  # fmt: skip
def test_a_refused_or_unknown_name_says_why(name: str, words: str):
    with pytest.raises(ValueError) as refused:
        DEFAULT_POLICY.variable(name)
    assert words in str(refused.value)
    assert str(refused.value).startswith(name)


def test_the_dangerous_classes_cannot_be_widened_and_the_others_can():
    assert {r.reason.split(" (")[0] for r in REFUSALS if not r.widenable} == {
        "is never a factor: each Galera provider option is a factor of its own, named like"
        " gcs.fc_limit",
        "switches Galera replication or its provider library, so the node would leave the cluster",
        "decides which cluster the node joins",
        "is a path",
        "is a network address",
        "is a credential or a security setting",
        "runs statements or commands",
    }
    widened = policy_from_settings(
        {"server_variables": {"allow": ["general_log", "key_buffer_size"]}}
    )
    assert widened.value("general_log", "ON") == "ON"
    assert widened.value("key_buffer_size", 1 << 24) == 1 << 24
    with pytest.raises(ValueError, match="a finite number or a word"):
        widened.value("key_buffer_size", "/tmp/x")
    # Allowed again, a catalogued variable keeps its rules.
    allowed = policy_from_settings({"server_variables": {"allow": ["innodb_io_capacity"]}})
    with pytest.raises(ValueError, match="from 100 to 4294967295"):
        allowed.value("innodb_io_capacity", 50)


def test_a_denied_variable_is_refused_even_from_the_catalogue():
    narrowed = policy_from_settings(
        {"server_variables": {"deny": ["innodb_flush_log_at_trx_commit"]}}
    )
    with pytest.raises(ValueError, match="denied on this target by its operator"):
        narrowed.variable("innodb_flush_log_at_trx_commit")
    assert narrowed.value("sync_binlog", 1) == 1


@pytest.mark.parametrize(
    ("name", "value", "written"),
    [
        ("innodb_io_capacity", 200.0, 200),
        ("innodb_io_capacity", 4294967295, 4294967295),
        ("innodb_max_dirty_pages_pct", 99.999, 99.999),
        ("innodb_adaptive_hash_index", "off", "off"),
        ("innodb_adaptive_hash_index", 1.0, 1),
        ("query_cache_type", "demand", "demand"),
        ("binlog_cache_size", 65536, 65536),
    ],
)
def test_values_are_written_as_set_global_takes_them(name: str, value: object, written: object):
    got = DEFAULT_POLICY.value(name, value)
    assert got == written and type(got) is type(written)


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("innodb_io_capacity", 99, "innodb_io_capacity takes an integer from 100 to 4294967295"),
        ("innodb_io_capacity", 2**63, "from 100 to 4294967295"),
        ("innodb_io_capacity", 150.5, "an integer"),
        ("innodb_io_capacity", "200", "an integer"),
        ("innodb_io_capacity", float("nan"), "an integer"),
        ("innodb_io_capacity", True, "an integer"),
        ("innodb_max_dirty_pages_pct", 100, "a number from 0 to 99.999"),
        ("innodb_max_dirty_pages_pct", float("inf"), "a number"),
        ("binlog_cache_size", 5000, "a multiple of 4096"),
        ("query_cache_type", 1, "takes one of OFF, ON, DEMAND"),
        ("query_cache_type", "sometimes", "takes one of OFF, ON, DEMAND"),
        ("innodb_adaptive_hash_index", 2, "takes ON or OFF"),
        ("innodb_adaptive_hash_index", "yes please", "takes ON or OFF"),
    ],
)
def test_a_value_out_of_kind_or_bounds_is_refused(name: str, value: object, words: str):
    with pytest.raises(ValueError) as refused:
        DEFAULT_POLICY.value(name, value)
    assert words in str(refused.value)


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({"allow": ["wsrep_on"]}, "server_variables.allow[0]: wsrep_on switches Galera"
         " replication or its provider library, so the node would leave the cluster, a class no"
         " targets file may allow"),
        ({"allow": ["sync_binlog", "general_log_file"]}, "allow[1]: general_log_file is a path"),
        ({"allow": ["init_connect"]}, "runs statements or commands, a class no targets file"),
        ({"allow": ["wsrep_provider_options"]}, "allow[0]: wsrep_provider_options is never"),
        ({"allow": ["wsrep_cluster_name"]}, "decides which cluster the node joins, a class no"),
        ({"allow": ["wsrep_sst_auth"]}, "is a credential or a security setting, a class no"),
        ({"allow": ["general_log"], "deny": ["general_log"]}, "in the deny list too"),
        ({"allow": "general_log"}, "server_variables.allow: expected a list"),
        ({"deny": ["gcs.fc_limit"]}, "deny[0]: 'gcs.fc_limit' is not a server variable name"),
        ({"deny": ["sync_binlog\n"]}, "deny[0]: 'sync_binlog\\n' is not a server variable name"),
        ({"widen": ["general_log"]}, "server_variables.widen: only allow and deny lists"),
        (["general_log"], "server_variables: expected a mapping"),
    ],
)  # fmt: skip
def test_a_malformed_policy_names_its_place_and_rule(raw: object, words: str):
    with pytest.raises(ValueError) as refused:
        policy_from_settings({"server_variables": raw})
    assert words in str(refused.value)
