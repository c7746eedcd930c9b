"""The SQL client (`worker.galera_sql`) and the lab supervisor (`worker.lab.supervisor`) on real
mariadbd processes: resize, rejoin, replication, variables, adoption, and the lab target's read
of the settings its nodes run (a baseline's "current"). One file for both rooms:
the suite's lab cluster (`suite_lab_layout` in tests/conftest.py: under /var/tmp, on free
ports, so it never meets a running lab) serves the module; each test brings it to the size it
needs. The last test stops it and wipes it: the bootstrap from nothing is tested here.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import stopped_at_the_end
from worker.galera_sql import (
    Credentials,
    GaleraError,
    Node,
    VariableError,
    check_healthy,
    cluster_health,
    connect,
    global_status,
    set_globals,
)
from worker.lab.layout import LabLayout
from worker.lab.supervisor import LabCluster
from worker.targets.base import TargetError
from worker.targets.lab import LabTarget, settings_of

pytestmark = pytest.mark.integration

MAX_NODES = 4


@pytest.fixture(scope="module")
def layout(suite_lab_layout: LabLayout) -> Iterator[LabLayout]:
    """The suite's lab (tests/conftest.py), its cluster stopped after the module."""
    assert suite_lab_layout.max_nodes >= MAX_NODES
    yield from stopped_at_the_end(suite_lab_layout)


@pytest.fixture(scope="module")
def lab(layout: LabLayout) -> Iterator[LabCluster]:
    cluster = LabCluster(layout)
    yield cluster
    cluster.stop()


def sizes(lab: LabCluster) -> list[int]:
    """wsrep_cluster_size as every running node reports it."""
    return [
        int(global_status(node, lab.credentials, ["wsrep_cluster_size"])["wsrep_cluster_size"])
        for node in lab.nodes()
    ]


def read_global(node: Node, credentials: Credentials, name: str) -> object:
    with connect(node, credentials) as connection, connection.cursor() as cursor:
        cursor.execute(f"SELECT @@GLOBAL.{name}")
        return cursor.fetchone()[0]


def test_credentials_never_show_the_password():
    credentials = Credentials("someone", "s3cret-value")
    assert "s3cret-value" not in repr(credentials)
    assert "s3cret-value" not in str(credentials)


def test_resize_grows_shrinks_and_rejoins(lab: LabCluster, layout: LabLayout):
    lab.resize(1)
    assert sizes(lab) == [1]
    lab.resize(3)
    assert [node.name for node in lab.nodes()] == ["node1", "node2", "node3"]
    assert [node.port for node in lab.nodes()] == [layout.client_port(i) for i in (1, 2, 3)]
    assert sizes(lab) == [3, 3, 3]
    lab.resize(2)
    assert sizes(lab) == [2, 2]
    assert lab.size() == 2
    lab.resize(3)
    assert sizes(lab) == [3, 3, 3]
    # Node 3 left cleanly a moment ago: the donor's gcache still holds what it missed.
    assert "IST received" in layout.log_file(3).read_text()
    check_healthy(lab.nodes(), lab.credentials)
    assert all(health.ok(3) for health in cluster_health(lab.nodes(), lab.credentials))


def test_a_write_on_node_1_is_read_on_node_3(lab: LabCluster):
    lab.resize(3)
    first, _, third = lab.nodes()
    marker = uuid.uuid4().hex
    with connect(first, lab.credentials) as connection, connection.cursor() as cursor:
        cursor.execute("CREATE DATABASE IF NOT EXISTS replication_check")
        cursor.execute(
            "CREATE TABLE IF NOT EXISTS replication_check.t (id INT PRIMARY KEY AUTO_INCREMENT, "
            "marker CHAR(32)) ENGINE=InnoDB"
        )
        cursor.execute("INSERT INTO replication_check.t (marker) VALUES (%s)", (marker,))
    with connect(third, lab.credentials) as connection, connection.cursor() as cursor:
        # Make the read wait for every write the cluster ordered before it.
        cursor.execute("SET SESSION wsrep_sync_wait = 1")
        cursor.execute("SELECT COUNT(*) FROM replication_check.t WHERE marker = %s", (marker,))
        assert cursor.fetchone()[0] == 1


def test_set_globals_sets_every_node_and_refuses_bad_names(lab: LabCluster):
    lab.resize(3)
    nodes, credentials = lab.nodes(), lab.credentials
    set_globals(nodes, credentials, {"wsrep_slave_threads": 2})
    assert [read_global(node, credentials, "wsrep_slave_threads") for node in nodes] == [2, 2, 2]

    refused = {
        "no_such_variable": 1,
        "datadir": "/tmp",
        "wsrep_slave_threads = 8; DROP DATABASE mysql; --": 1,
        "wsrep_slave_threads\n": 8,
    }
    for name, value in refused.items():
        # The valid variable rides along: nothing may be set when one name is refused.
        with pytest.raises(VariableError, match="not a"):
            set_globals(nodes, credentials, {"wsrep_slave_threads": 8, name: value})
    assert [read_global(node, credentials, "wsrep_slave_threads") for node in nodes] == [2, 2, 2]

    with pytest.raises(VariableError, match="refused"):
        set_globals(nodes, credentials, {"wsrep_slave_threads": "many"})
    with pytest.raises(VariableError, match="reads back"):
        set_globals(nodes, credentials, {"wsrep_slave_threads": 100_000})
    # The node changed before the clamp was seen got its previous value back.
    assert [read_global(node, credentials, "wsrep_slave_threads") for node in nodes] == [2, 2, 2]
    set_globals(nodes, credentials, {"wsrep_slave_threads": 1})


def test_a_variable_the_account_may_not_set_is_refused_not_retried(lab: LabCluster):
    lab.resize(1)
    (node,) = lab.nodes()
    weak = Credentials("galera_doe_weak", "weak-password-1")
    with connect(node, lab.credentials) as connection:
        cursor = connection.cursor()
        cursor.execute(
            f"CREATE USER IF NOT EXISTS {weak.user}@'%%' IDENTIFIED BY %s", (weak.password,)
        )
        cursor.execute(f"GRANT SELECT ON *.* TO {weak.user}@'%'")
    with pytest.raises(VariableError, match="refused by"):
        set_globals([node], weak, {"max_connect_errors": 123})


def test_a_second_object_adopts_the_running_nodes(lab: LabCluster, layout: LabLayout):
    lab.resize(3)
    other = LabCluster(layout)
    assert other.nodes() == lab.nodes()
    assert other.credentials == lab.credentials
    status = other.status()
    assert status["healthy"] is True
    assert [node["pid"] for node in status["nodes"]] == [
        node["pid"] for node in lab.status()["nodes"]
    ]
    assert all(node["health"]["cluster_size"] == 3 for node in status["nodes"])


def test_a_stale_or_lost_state_file_does_not_fool_adoption(lab: LabCluster, layout: LabLayout):
    lab.resize(3)
    state_file = layout.base_dir / "lab.json"
    state = json.loads(state_file.read_text())
    # A pid that is alive but not a mariadbd of this layout (this very process).
    state["nodes"].append({"index": 4, "pid": os.getpid()})
    state_file.write_text(json.dumps(state))
    assert [node.name for node in LabCluster(layout).nodes()] == ["node1", "node2", "node3"]
    state_file.write_text("{not json")
    assert [node.name for node in LabCluster(layout).nodes()] == ["node1", "node2", "node3"]
    assert lab.nodes() == LabCluster(layout).nodes()


def test_a_crashed_node_is_noticed_and_restarted(lab: LabCluster):
    lab.resize(3)
    crashed = lab.status()["nodes"][2]["pid"]
    os.kill(crashed, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while lab.size() != 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [node.name for node in lab.nodes()] == ["node1", "node2"]
    lab.resize(3)
    assert sizes(lab) == [3, 3, 3]
    assert lab.status()["nodes"][2]["pid"] != crashed


def shown(node: Node, credentials: Credentials, name: str) -> str:
    """A setting as the node shows it: SHOW GLOBAL VARIABLES, or its provider options."""
    with connect(node, credentials) as connection, connection.cursor() as cursor:
        variable = "wsrep_provider_options" if "." in name else name
        cursor.execute("SHOW GLOBAL VARIABLES LIKE %s", (variable,))
        ((_, value),) = cursor.fetchall()
    if variable == name:
        return value
    option = re.search(rf"(?:^|;)\s*{re.escape(name)}\s*=\s*([^;]*)", value)
    assert option is not None, value
    return option.group(1).strip()


def test_the_lab_target_reads_what_its_nodes_run(lab: LabCluster, layout: LabLayout):
    lab.resize(3)
    target = LabTarget("lab", settings_of(layout))
    # The module's cluster, on the suite's layout (its gcache size too): adopted, not restarted.
    target.cluster = lab
    nodes, credentials = lab.nodes(), lab.credentials
    names = ["wsrep_slave_threads", "innodb_flush_log_at_trx_commit", "gcs.fc_limit"]
    before = {name: shown(nodes[0], credentials, name) for name in names}
    started = time.monotonic()
    assert target.read_current({"nodes": 3}, names) == before
    print(f"read_current of 3 settings on 3 lab nodes: {time.monotonic() - started:.2f} s")

    set_globals(nodes, credentials, {"wsrep_slave_threads": 3})  # the operator changed it
    try:
        assert target.read_current({"nodes": 3}, ["wsrep_slave_threads"]) == {
            "wsrep_slave_threads": "3"
        }
        # A trial's setting is set back before the read: it is not today's configuration.
        target.apply_settings(nodes, target.plan({"nodes": 3, "wsrep_slave_threads": 5}))
        assert shown(nodes[2], credentials, "wsrep_slave_threads") == "5"
        assert target.read_current({"nodes": 3}, ["wsrep_slave_threads"]) == {
            "wsrep_slave_threads": "3"
        }
        assert shown(nodes[2], credentials, "wsrep_slave_threads") == "3"
        assert not target.restore_file.exists()  # nothing left to set back
        set_globals(nodes[1:2], credentials, {"wsrep_slave_threads": 4})
        with pytest.raises(TargetError, match="disagree on wsrep_slave_threads: node1 3, node2 4"):
            target.read_current({"nodes": 3}, ["wsrep_slave_threads"])
        with pytest.raises(TargetError, match="node1 does not report no_such_variable"):
            target.read_current({"nodes": 3}, ["no_such_variable"])
    finally:
        set_globals(nodes, credentials, {"wsrep_slave_threads": int(before["wsrep_slave_threads"])})


def test_a_taken_port_is_named(layout: LabLayout, lab: LabCluster):
    lab.resize(1)
    blocker = socket.socket()
    # Node 2 just left, its port may be in TIME_WAIT: that alone must not count as taken.
    blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    blocker.bind(("127.0.0.1", layout.client_port(2)))
    blocker.listen()
    try:
        with pytest.raises(GaleraError, match="taken by another process"):
            lab.resize(2)
    finally:
        blocker.close()
    assert lab.size() == 1


def test_stop_leaves_no_process_and_the_cluster_bootstraps_again(
    lab: LabCluster, layout: LabLayout
):
    lab.resize(2)
    pids = [node["pid"] for node in lab.status()["nodes"]]
    lab.stop()
    assert not any(Path(f"/proc/{pid}").exists() for pid in pids)
    assert lab.nodes() == []
    assert not (layout.base_dir / "lab.json").exists()
    assert "safe_to_bootstrap: 1" in (layout.datadir(1) / "grastate.dat").read_text()

    lab.resize(1)
    assert sizes(lab) == [1]
    lab.reset()
    assert lab.size() == 0
    assert not layout.datadir(1).exists()
