"""The catalogue of server variables a benchmark may set, checked against the running MariaDB
10.11 (the suite's server, the lab's binary), and as the targets file, the lab and the worker
apply it (its pure rules are tested in tests/experiments/galera/test_server_variables.py)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql
import pytest

from app.target_specs import TargetsFileError, load_targets
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.galera.refusals import refusal
from experiments.galera.server_variables import SERVER_VARIABLES
from experiments.galera.target_spec import TargetSpec
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
