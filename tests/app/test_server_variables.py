"""The catalogue of server variables a benchmark may set, checked against the running MariaDB
10.11 (the suite's server, the lab's binary), and the operator's changes to it."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql
import pytest

from app.target_specs import TargetsFileError, load_targets
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.galera.refusals import REFUSALS, refusal
from experiments.galera.restart_settings import RESTART_ONLY_VARIABLES
from experiments.galera.server_variables import SERVER_VARIABLES
from experiments.galera.target_spec import TargetSpec
from experiments.galera.variable_policy import DEFAULT_POLICY, policy_from_settings
from tests.conftest import MARIADB
from worker.targets.base import InfeasibleError
from worker.targets.external import ExternalTarget

# Where the catalogue asks for less than the server allows, and why (module comments).
NARROWED = {"max_connect_errors": {"low": 100}}
KINDS = {"BOOLEAN": "boolean", "ENUM": "enum", "DOUBLE": "number"}


@pytest.fixture(scope="module")
def server() -> dict[str, dict[str, Any]]:
    """Every variable of the running server, as information_schema.SYSTEM_VARIABLES has it."""
    connection = pymysql.connect(**MARIADB, cursorclass=pymysql.cursors.DictCursor)
    with connection, connection.cursor() as cursor:
        cursor.execute("SELECT VERSION() AS version")
        assert cursor.fetchone()["version"].startswith("10.11.")
        cursor.execute("SELECT * FROM information_schema.SYSTEM_VARIABLES")
        return {row["VARIABLE_NAME"].lower(): row for row in cursor.fetchall()}


def test_every_entry_is_a_dynamic_global_variable_of_its_kind_and_bounds(server):
    for name, variable in SERVER_VARIABLES.items():
        row = server[name]
        assert row["READ_ONLY"] == "NO" and row["VARIABLE_SCOPE"] != "SESSION ONLY", name
        assert variable.kind == KINDS.get(row["VARIABLE_TYPE"], "integer"), name
        if variable.kind == "enum":
            assert variable.levels == tuple(row["ENUM_VALUE_LIST"].split(",")), name
            continue
        if variable.kind == "integer":
            assert "INT" in row["VARIABLE_TYPE"], name
            assert variable.step == max(int(row["NUMERIC_BLOCK_SIZE"]), 1), name
        if variable.kind != "boolean":
            low = NARROWED.get(name, {}).get("low", row["NUMERIC_MIN_VALUE"])
            server_bounds = (Decimal(str(low)), Decimal(str(row["NUMERIC_MAX_VALUE"])))
            assert tuple(Decimal(str(end)) for end in variable.bounds) == server_bounds, name


def test_every_value_a_server_variable_holds_as_a_path_is_a_refused_path(server):
    # What the server itself holds as a file or directory name, read-only or not.
    paths = [
        name
        for name, row in server.items()
        if str(row["GLOBAL_VALUE"] or "").startswith("/")
        or str(row["GLOBAL_VALUE"] or "").endswith((".log", ".sock", ".pid"))
    ]
    assert {"general_log_file", "slow_query_log_file", "datadir", "slave_load_tmpdir"} <= set(paths)
    for name in paths:
        rule = refusal(name)
        assert rule is not None and rule.reason == "is a path" and not rule.widenable, name


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


def test_the_targets_file_is_refused_naming_the_path_of_a_bad_policy(tmp_path: Path):
    path = tmp_path / "targets.yaml"
    path.write_text(
        "targets:\n"
        "  - {name: lab, kind: lab, settings: {server_variables: {allow: [general_log]}}}\n"
        "  - {name: dc, kind: external, settings: {nodes: [{host: db1}],\n"
        "      server_variables: {allow: [slow_query_log, wsrep_on]}}}\n"
    )
    with pytest.raises(TargetsFileError) as refused:
        load_targets(path)
    assert str(refused.value).startswith(
        "targets[1].settings.server_variables.allow[1]: wsrep_on switches Galera replication"
    )
    path.write_text(
        "targets:\n  - {name: sim, kind: simulated, settings: {server_variables: {deny: [a]}}}\n"
    )
    with pytest.raises(TargetsFileError, match=r"targets\[0\]\.settings\.server_variables: only"):
        load_targets(path)
    path.write_text("targets:\n  - {name: lab, kind: lab, settings: {max_nodes: 100}}\n")
    with pytest.raises(TargetsFileError, match=r"targets\[0\]\.settings\.max_nodes: a whole"):
        load_targets(path)


def factor(name: str, **fields: Any) -> FactorSpace:
    return FactorSpace.from_dicts([{"name": name, **fields}])


@pytest.mark.parametrize(
    ("space", "field", "words"),
    [
        (factor("general_log_file", kind="categorical", levels=["/tmp/x"]), "factors.0.name",
         "general_log_file is a path: a benchmark may not set it"),
        (factor("general_log", kind="integer", levels=[1]), "factors.0.name", "writes or"),
        (factor("wsrep_provider_options", kind="categorical", levels=["evs.evict=0"]),
         "factors.0.name", "is never a factor"),
        (factor("wsrep_cluster_address", kind="categorical", levels=["gcomm://"]),
         "factors.0.name", "decides which cluster"),
        (factor("wsrep_on", kind="integer", levels=[0]), "factors.0.name", "wsrep_on"),
        (factor("read_only", kind="integer", levels=[1]), "factors.0.name", "refuse writes"),
        (factor("init_connect", kind="categorical", levels=["DROP"]), "factors.0.name", "runs"),
        (factor("wsrep_sst_auth", kind="categorical", levels=["a:b"]), "factors.0.name",
         "is a credential"),
        (factor("innodb_io_capacity", kind="continuous", low=100, high=900), "factors.0.kind",
         "innodb_io_capacity takes whole numbers: make it an integer factor"),
        (factor("innodb_io_capacity", kind="integer", low=50, high=900), "factors.0.low",
         "from 100 to 4294967295"),
        (factor("innodb_io_capacity", kind="integer", levels=[200, 2**40]), "factors.0.levels",
         "from 100 to 4294967295"),
        (factor("innodb_adaptive_hash_index", kind="categorical", levels=["OFF", "MAYBE"]),
         "factors.0.levels", "takes ON or OFF"),
        (factor("wsrep_slave_threads", kind="integer", low=1, high=1024), "factors.0",
         "wsrep_slave_threads is an integer factor from 1 to 512 on target 'lab'"),
    ],
)  # fmt: skip
def test_the_lab_refuses_a_server_variable_factor_naming_the_field(
    space: FactorSpace, field: str, words: str
):
    with pytest.raises(DomainError) as refused:
        load_targets(None)["lab"].check_space(space)
    assert refused.value.field == field and words in refused.value.rule


def test_the_catalogues_levels_pass_and_an_operator_changes_the_list_per_target():
    lab = load_targets(None)["lab"]
    lab.check_space(factor("innodb_adaptive_hash_index", kind="categorical", levels=["OFF", "ON"]))
    lab.check_space(factor("innodb_flush_log_at_trx_commit", kind="integer", levels=[0, 1, 2]))
    lab.check_space(factor("innodb_max_dirty_pages_pct", kind="continuous", low=10, high=90))
    settings = {"server_variables": {"allow": ["general_log"], "deny": ["sync_binlog"]}}
    changed = TargetSpec("lab2", "lab", settings)
    changed.check_space(factor("general_log", kind="integer", levels=[0, 1]))
    with pytest.raises(DomainError, match="denied on this target by its operator"):
        changed.check_space(factor("sync_binlog", kind="integer", levels=[0, 1]))
    narrowed = TargetSpec("lab3", "lab", {"server_variables": {"deny": ["wsrep_slave_threads"]}})
    with pytest.raises(DomainError, match="denied"):
        narrowed.check_space(factor("wsrep_slave_threads", kind="integer", levels=[1, 4]))


def test_the_worker_checks_with_the_same_catalogue_before_it_sets_anything():
    external = ExternalTarget("dc", {"nodes": [{"host": "db1"}]})
    plan = external.plan({"innodb_io_capacity": 400.0, "wsrep_slave_threads": 4})
    assert plan.variables == {"innodb_io_capacity": 400, "wsrep_slave_threads": 4}
    assert type(plan.variables["innodb_io_capacity"]) is int
    for config in ({"general_log": 1}, {"wsrep_provider_options": "evs.evict=x"},
                   {"innodb_io_capacity": 10}, {"wsrep_slave_threads": 4096}):  # fmt: skip
        with pytest.raises(InfeasibleError, match=r"innodb_io_capacity|general_log|wsrep_"):
            external.plan(config)
    widened = {"nodes": [{"host": "db1"}], "server_variables": {"allow": ["general_log"]}}
    assert ExternalTarget("dc", widened).plan({"general_log": 1}).variables == {"general_log": 1}
    denied = {"nodes": [{"host": "db1"}], "server_variables": {"deny": ["sync_binlog"]}}
    with pytest.raises(InfeasibleError, match="denied"):
        ExternalTarget("dc", denied).plan({"sync_binlog": 1})
