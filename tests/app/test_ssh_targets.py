"""An `ssh` target in the operator's targets file: what the file may declare, and the
experiments its declaration refuses (issue 56's bad input)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.target_specs import TargetsFileError, load_targets
from tests.experiments.galera.test_ssh_settings import SETTINGS

STAGING: dict[str, Any] = {"name": "staging", "kind": "ssh", "settings": SETTINGS}
# The staging target third in the file, as an operator's file lists its targets.
OTHERS = [{"name": "sim", "kind": "simulated"}, {"name": "notes", "kind": "manual"}]


def targets_file(tmp_path: Path, staging: dict[str, Any]) -> Path:
    path = tmp_path / "targets.yaml"
    path.write_text(yaml.safe_dump({"targets": [*OTHERS, staging]}))
    return path


def test_the_issues_example_is_read(tmp_path: Path):
    staging = load_targets(targets_file(tmp_path, STAGING))["staging"]
    assert staging.kind == "ssh" and staging.restartable
    assert staging.workloads[-1] == "my_orders"


Edit = Callable[[dict[str, Any]], Any]


def node(i: int, **changes: Any) -> Edit:
    return lambda settings: settings["nodes"][i].update(changes)


def dropped(*path: Any) -> Edit:
    def drop(settings: dict[str, Any]) -> None:
        place = settings
        for part in path[:-1]:
            place = place[part]
        del place[path[-1]]

    return drop


def extra_client(**changes: Any) -> Edit:
    return lambda settings: settings["clients"].append({**settings["clients"][0], **changes})


def option(**changes: Any) -> Edit:
    def change(settings: dict[str, Any]) -> None:
        settings["workloads"]["my_orders"]["options"]["hot_share"].update(changes)

    return change


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (node(1, host="db1"), "targets[2].settings.nodes[1].host: db1 is listed twice"),
        (extra_client(address="10.0.0.22"),
         "targets[2].settings.clients[1].host: load1 is listed twice"),
        (node(1, address="10.0.0.11", port=3306),
         "targets[2].settings.nodes[1].address: 10.0.0.11 port 3306 is listed twice"),
        (extra_client(host="load2"),
         "targets[2].settings.clients[1].address: 10.0.0.21 is listed twice"),
        (dropped("nodes", 0, "host"), "targets[2].settings.nodes[0].host: a host name"),
        (dropped("nodes", 1, "address"), "targets[2].settings.nodes[1].address: an IP address"),
        (dropped("nodes", 0, "ssh_key"), "targets[2].settings.nodes[0].ssh_key: the path of"),
        (node(0, service="docker"),
         "targets[2].settings.nodes[0].service: one of systemd, mariadbd, got 'docker'"),
        (dropped("nodes", 1, "defaults_file"),
         "targets[2].settings.nodes[1].defaults_file: a node run as mariadbd needs"),
        (dropped("workloads", "my_orders", "script"),
         "targets[2].settings.workloads.my_orders.script: the path of the Lua script"),
        (option(kind="fuzzy"),
         "targets[2].settings.workloads.my_orders.options.hot_share.kind: one of integer"),
        (option(range=[0.5]),
         "targets[2].settings.workloads.my_orders.options.hot_share.range: [low, high]"),
        (node(0, sudo="yes"), "targets[2].settings.nodes[0].sudo: true or false, got 'yes'"),
    ],
)  # fmt: skip
def test_a_bad_ssh_target_is_refused_naming_the_path(tmp_path: Path, edit: Edit, message: str):
    staging = copy.deepcopy(STAGING)
    edit(staging["settings"])
    with pytest.raises(TargetsFileError) as refused:
        load_targets(targets_file(tmp_path, staging))
    assert message in str(refused.value)


def test_only_an_ssh_target_declares_workloads(tmp_path: Path):
    external = {
        "name": "dc",
        "kind": "external",
        "settings": {"nodes": [{"host": "db1"}], "workloads": STAGING["settings"]["workloads"]},
    }
    with pytest.raises(TargetsFileError, match=r"targets\[2\]\.settings\.workloads: only an ssh"):
        load_targets(targets_file(tmp_path, external))


def experiment(*factors: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "on staging",
        "target": "staging",
        "factors": list(factors),
        "design": {"kind": "full_factorial", "levels": 2},
        "objective": {"response": "tps", "goal": "maximize"},
    }


ORDERS = {"name": "workload", "kind": "categorical", "levels": ["my_orders"]}


@pytest.mark.targets([STAGING])
async def test_an_experiment_within_the_declaration_is_planned(api):
    created = await api.post(
        "/experiments",
        json=experiment(
            {"name": "nodes", "kind": "integer", "low": 1, "high": 2},
            {"name": "hot_share", "kind": "continuous", "low": 0.1, "high": 0.9},
            ORDERS,
        ),
    )
    assert created.status_code == 201, created.text
    assert {t["config"]["workload"] for t in created.json()["trials"]} == {"my_orders"}


@pytest.mark.targets([STAGING])
@pytest.mark.parametrize(
    ("factors", "loc", "words"),
    [
        ([{"name": "nodes", "kind": "integer", "low": 1, "high": 3}], ["factors", 0],
         "nodes is an integer factor from 1 to 2 on target 'staging' (settings.nodes lists 2)"),
        ([{"name": "clients", "kind": "integer", "low": 1, "high": 4}], ["factors", 0],
         "clients is an integer factor from 1 to 1 on target 'staging' (settings.clients lists"
         " 1)"),
        ([{"name": "orders_per_trx", "kind": "integer", "low": 1, "high": 40}, ORDERS],
         ["factors", 0], "orders_per_trx is an integer factor from 1 to 20 on target 'staging'"),
        ([{"name": "hot_share", "kind": "continuous", "low": 0, "high": 1}], ["factors", 0, "name"],
         "hot_share is an option of the my_orders workload"),
        ([{"name": "workload", "kind": "categorical", "levels": ["their_orders"]}],
         ["factors", 0, "levels"], "workload is categorical with levels among"),
    ],
)  # fmt: skip
async def test_an_experiment_beyond_the_declaration_is_a_422_naming_the_field(
    api, factors: list[dict[str, Any]], loc: list[Any], words: str
):
    refused = await api.post("/experiments", json=experiment(*factors))
    assert refused.status_code == 422, refused.text
    detail = refused.json()["detail"]
    assert any(item["loc"][1:] == loc and words in item["msg"] for item in detail), detail


@pytest.mark.targets([STAGING])
async def test_the_targets_list_shows_the_workload_options_as_factors(api):
    [staging] = (await api.get("/targets")).json()
    assert staging["kind"] == "ssh" and staging["runnable"] and staging["accepts_server_variables"]
    assert {"nodes", "clients", "orders_per_trx", "hot_share"} <= set(staging["factors"])
    assert "client_cpu_busy" in staging["responses"]
    assert "10.0.0.11" not in str(staging) and "STAGING_DB_PASSWORD" not in str(staging)
