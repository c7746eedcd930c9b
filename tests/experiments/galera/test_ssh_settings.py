"""An `ssh` target's settings (its hosts, the operator's workloads) and the factor ranges and
workloads they give the target."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.galera.kinds import CLUSTER_RANGES
from experiments.galera.ssh_settings import (
    check_ssh_settings,
    known_hosts_path,
    operator_workloads,
    ssh_clients,
    ssh_nodes,
)
from experiments.galera.target_spec import TargetSpec

KEY = "/etc/galera-doe/id_ed25519"
SETTINGS: dict[str, Any] = {
    "known_hosts": "/etc/galera-doe/known_hosts",
    "user": "galera_doe",
    "password_env": "STAGING_DB_PASSWORD",
    "nodes": [
        {"host": "db1", "address": "10.0.0.11", "port": 3306, "ssh_user": "deploy",
         "ssh_key": KEY, "service": "systemd"},
        {"host": "db2", "address": "10.0.0.12", "ssh_key": KEY, "service": "mariadbd",
         "defaults_file": "/etc/mysql/my.cnf", "dropin_dir": "/etc/mysql/conf.d"},
    ],
    "clients": [{"host": "load1", "address": "10.0.0.21", "ssh_user": "deploy", "ssh_key": KEY}],
    "workloads": {
        "my_orders": {
            "script": "/etc/galera-doe/orders.lua",
            "options": {
                "orders_per_trx": {"kind": "integer", "range": [1, 20]},
                "hot_share": {"kind": "continuous", "range": [0.0, 1.0]},
            },
        }
    },
}  # fmt: skip


def changed(path: str, value: Any) -> dict[str, Any]:
    """SETTINGS with the value at a dotted path (list indexes as numbers) replaced; None
    deletes it."""
    settings = copy.deepcopy(SETTINGS)
    *parents, last = path.split(".")
    place: Any = settings
    for part in parents:
        place = place[int(part)] if isinstance(place, list) else place[part]
    key: Any = int(last) if isinstance(place, list) else last
    if value is None:
        del place[key]
    else:
        place[key] = value
    return settings


def test_the_issues_example_is_read():
    check_ssh_settings(SETTINGS)
    nodes, clients = ssh_nodes(SETTINGS), ssh_clients(SETTINGS)
    assert [(n.host.name, n.host.address, n.port, n.service) for n in nodes] == [
        ("db1", "10.0.0.11", 3306, "systemd"),
        ("db2", "10.0.0.12", 3306, "mariadbd"),
    ]
    assert nodes[0].host.ssh_user == "deploy" and nodes[1].host.ssh_user == "root"
    assert nodes[0].unit == "mariadb" and nodes[1].defaults_file == "/etc/mysql/my.cnf"
    assert [(c.name, c.ssh_port, c.where) for c in clients] == [("load1", 22, "clients[0]")]
    orders = operator_workloads(SETTINGS)["my_orders"]
    assert orders.script == "/etc/galera-doe/orders.lua"
    assert orders.options["orders_per_trx"].whole and not orders.options["hot_share"].whole


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        ("nodes.1.host", "db1", "nodes[1].host: db1 is listed twice (first as nodes[0])"),
        ("clients.0.host", "db2", "clients[0].host: db2 is listed twice (first as nodes[1])"),
        ("nodes.1.address", "10.0.0.11",
         "nodes[1].address: 10.0.0.11 port 3306 is listed twice (first as nodes[0])"),
        ("nodes.1.host", None, "nodes[1].host: a host name"),
        ("nodes.0.address", None, "nodes[0].address: an IP address or DNS name"),
        ("nodes.0.address", "a,b", "nodes[0].address"),
        ("nodes.1.ssh_key", None, "nodes[1].ssh_key: the path of the private key"),
        ("clients.0.ssh_key", None, "clients[0].ssh_key: the path of the private key"),
        ("nodes.0.service", "docker", "nodes[0].service: one of systemd, mariadbd"),
        ("nodes.1.defaults_file", None, "nodes[1].defaults_file: a node run as mariadbd needs"),
        ("nodes.1.dropin_dir", None, "nodes[1].dropin_dir: a node run as mariadbd needs"),
        ("nodes.0.start", "systemctl start mariadb", "nodes[0].start: a non-empty argument list"),
        ("nodes.0.port", 70000, "nodes[0].port: a port from 1 to 65535"),
        ("nodes.0.sudo", "yes", "nodes[0].sudo: true or false"),
        ("nodes", [], "nodes: list the cluster's node hosts"),
        ("clients", {"host": "x"}, "clients: a list of client hosts"),
        ("known_hosts", "", "known_hosts: the path of the known_hosts file"),
        ("sudo", "yes", "sudo: true or false"),
        ("defaults", {"nodes": 3}, "defaults.nodes: from 1 to the 2 nodes listed, got 3"),
        ("defaults", {"clients": 2}, "defaults.clients: from 1 to the 1 client hosts listed"),
        ("defaults", {"workload": "orders"}, "defaults.workload: one of oltp_read_write"),
        ("workloads.my_orders.script", None, "workloads.my_orders.script: the path of the Lua"),
        ("workloads.my_orders.options.hot_share.kind", "categorical",
         "workloads.my_orders.options.hot_share.kind: one of integer, continuous"),
        ("workloads.my_orders.options.hot_share.range", [1, 0],
         "workloads.my_orders.options.hot_share.range: [low, high]"),
        ("workloads.my_orders.options.hot_share.range", [0, "x"],
         "workloads.my_orders.options.hot_share.range"),
        ("workloads.my_orders.options.orders_per_trx.range", [1, 2.5],
         "orders_per_trx.range: an integer option's range is two whole numbers"),
        ("workloads.my_orders.options.threads", {"kind": "integer", "range": [1, 2]},
         "workloads.my_orders.options.threads: threads already means something"),
        ("workloads.my_orders.options.clients", {"kind": "integer", "range": [1, 2]},
         "options.clients: clients already means something"),
        ("workloads.oltp_insert", {"script": "/x.lua"}, "workloads.oltp_insert: a workload's"),
        ("workloads.other", {"script": "/y.lua", "options": {"hot_share": {
            "kind": "continuous", "range": [0, 1]}}},
         "workloads.other.options.hot_share: already an option of the my_orders workload"),
    ],
)  # fmt: skip
def test_a_bad_setting_is_refused_naming_its_path(path: str, value: Any, words: str):
    with pytest.raises(ValueError) as refused:
        check_ssh_settings(changed(path, value))
    assert words in str(refused.value)


def test_sudo_and_known_hosts_have_target_wide_defaults():
    assert known_hosts_path(changed("known_hosts", None)) == "~/.ssh/known_hosts"
    every = changed("sudo", True)
    every["nodes"][1]["sudo"] = False
    assert [n.host.sudo for n in ssh_nodes(every)] == [True, False]
    assert [c.sudo for c in ssh_clients(every)] == [True]
    assert not any(n.host.sudo for n in ssh_nodes(SETTINGS))


def test_defaults_within_the_hosts_and_workloads_pass():
    check_ssh_settings(changed("defaults", {"nodes": 2, "clients": 1, "workload": "my_orders"}))
    check_ssh_settings(changed("clients", None) | {"defaults": {"clients": 8}})


def test_two_nodes_on_one_machine_differ_by_port():
    two = changed("nodes.1.address", "10.0.0.11")
    two["nodes"][1]["port"] = 3307
    check_ssh_settings(two)


def staging(settings: dict[str, Any] | None = None) -> TargetSpec:
    return TargetSpec("staging", "ssh", SETTINGS if settings is None else settings)


def test_nodes_and_clients_go_up_to_the_hosts_listed():
    target = staging()
    assert target.factor_range("nodes") == (1, 2) and target.factor_range("load_nodes") == (1, 2)
    assert target.factor_range("clients") == (1, 1)
    assert target.factor_range("orders_per_trx") == (1, 20)
    assert target.factor_range("hot_share") == (0, 1)
    without = staging(changed("clients", None))
    assert without.factor_range("clients") == (CLUSTER_RANGES["clients"].low, 16)
    assert target.restartable and target.accepts_server_variables


def space(*factors: dict[str, Any]) -> FactorSpace:
    return FactorSpace.from_dicts(list(factors))


def workload(*levels: str) -> dict[str, Any]:
    return {"name": "workload", "kind": "categorical", "levels": list(levels)}


@pytest.mark.parametrize(
    ("factor", "field", "words"),
    [
        ({"name": "nodes", "kind": "integer", "low": 1, "high": 3}, "factors.0",
         "nodes is an integer factor from 1 to 2 on target 'staging' (settings.nodes lists 2)"),
        ({"name": "clients", "kind": "integer", "low": 1, "high": 2}, "factors.0",
         "clients is an integer factor from 1 to 1 on target 'staging' (settings.clients lists"),
        ({"name": "orders_per_trx", "kind": "integer", "low": 1, "high": 30}, "factors.0",
         "orders_per_trx is an integer factor from 1 to 20 on target 'staging'"),
        ({"name": "orders_per_trx", "kind": "continuous", "low": 1, "high": 5}, "factors.0.kind",
         "orders_per_trx takes whole numbers"),
        ({"name": "hot_share", "kind": "continuous", "low": 0, "high": 2}, "factors.0",
         "hot_share is a number from 0 to 1 on target 'staging'"),
    ],
)  # fmt: skip
def test_a_factor_beyond_the_targets_declaration_is_refused(
    factor: dict[str, Any], field: str, words: str
):
    with pytest.raises(DomainError) as refused:
        staging().check_space(space(factor, workload("my_orders")))
    assert refused.value.field == field and words in refused.value.rule


def test_the_operators_workload_is_a_level_with_its_options_as_factors():
    target = staging()
    target.check_space(
        space(
            workload("my_orders"),
            {"name": "hot_share", "kind": "continuous", "low": 0.1, "high": 0.9},
            {"name": "orders_per_trx", "kind": "integer", "levels": [1, 5]},
        )
    )
    target.check_space(space(workload("my_orders", "oltp_read_write")))
    with pytest.raises(DomainError) as alone:
        target.check_space(
            space(
                workload("my_orders", "oltp_read_write"),
                {"name": "hot_share", "kind": "continuous", "low": 0.1, "high": 0.9},
            )
        )
    assert alone.value.field == "factors.1.name"
    assert "hot_share is an option of the my_orders workload" in alone.value.rule
    with pytest.raises(DomainError) as unknown:
        target.check_space(space(workload("their_orders")))
    assert "among oltp_read_write" in unknown.value.rule and "my_orders" in unknown.value.rule
    other = TargetSpec("dc", "external", {"nodes": [{"host": "db1"}]})
    with pytest.raises(DomainError, match="hot_share is not in the catalogue"):
        other.check_space(space({"name": "hot_share", "kind": "continuous", "low": 0, "high": 1}))


def test_a_planned_run_beyond_the_hosts_is_refused():
    with pytest.raises(DomainError) as refused:
        staging().check_plan([{"nodes": 2}, {"nodes": 3}])
    assert refused.value.field == "design"
    assert "planned runs set nodes to 3: target 'staging' accepts 1 to 2" in refused.value.rule


def test_nodes_is_hard_to_change_on_an_ssh_target():
    prepared, notes = staging().prepared_space(
        space({"name": "nodes", "kind": "integer", "low": 1, "high": 2})
    )
    assert prepared["nodes"].hard_to_change
    assert notes == [
        "nodes is treated as hard to change on target 'staging': the cluster is resized per"
        " whole plot"
    ]
    restart, _ = staging().prepared_space(
        space({"name": "back_log", "kind": "integer", "levels": [80, 160]})
    )
    assert restart["back_log"].hard_to_change


def test_an_ssh_target_reports_its_client_hosts_cpu():
    assert "client_cpu_busy" in (staging().responses or ())
    assert "client_cpu_busy" not in (TargetSpec("dc", "external", {}).responses or ())


@pytest.mark.parametrize(
    ("path", "key"), [("nodes.0", "sudoo"), ("clients.0", "adress"), ("nodes.1", "dropin")]
)
def test_a_key_no_host_entry_has_is_refused_naming_it(path: str, key: str):
    settings = copy.deepcopy(SETTINGS)
    section, index = path.split(".")
    settings[section][int(index)][key] = True
    with pytest.raises(ValueError, match=rf"^{section}\[{index}\]\.{key}: not a setting; one of "):
        check_ssh_settings(settings)
