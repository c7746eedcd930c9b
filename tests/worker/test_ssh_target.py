"""The `ssh` target on emulated hosts (`tests.ssh_hosts`): real sshd and mariadbd processes in
network namespaces, driven over SSH as on an operator's machines. One set of hosts and one
cluster for the module; the tests run in file order (the failures first, on a cluster not yet
started; the close last)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator

import pytest

from tests.ssh_hosts import PASSWORD_ENV, SQL_PASSWORD, Emulation, emulation, password  # noqa: F401
from worker import galera_sql
from worker.targets.base import InfrastructureError, TargetError, TrialCancelledError
from worker.targets.ssh.check import check_target
from worker.targets.ssh.hosts import Host, HostError, HostPool
from worker.targets.ssh.nodes import DROPIN_NAME
from worker.targets.ssh.target import SshTarget

pytestmark = pytest.mark.integration

# Restart-only: a server variable and a provider option (merged into the node's own options).
SETTINGS = {"innodb_log_buffer_size": "33554432", "gcache.size": "96M"}
OPERATORS_FILE = "[mysqld]\n# the operator's own file\n"


@pytest.fixture(scope="module")
def target(emulation: Emulation, password: None) -> Iterator[SshTarget]:  # noqa: F811
    made = SshTarget("ssh-test", emulation.settings(stop_at_close=True))
    yield made
    made.close()


def _sizes(target: SshTarget, count: int) -> list[int]:
    nodes = [s.node for s in target.services[:count]]
    return [h.cluster_size for h in galera_sql.cluster_health(nodes, target.credentials)]


def _servers(emulation: Emulation, name: str) -> list[int]:  # noqa: F811
    """The mariadbd processes running in host `name`'s namespace."""
    return [p for p in emulation.processes(name) if "mariadbd" in _cmdline(p)]


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_an_unreachable_host_fails_naming_it(emulation: Emulation, password: None) -> None:  # noqa: F811
    nodes = emulation.settings()["nodes"][:1]
    nodes[0] = nodes[0] | {"address": emulation.unused_address}
    target = SshTarget("ssh-unreachable", emulation.settings(nodes=nodes, clients=[]))
    target.pool.host("node1").connect_timeout = 3
    try:
        with pytest.raises(HostError, match=rf"host 'node1' \({emulation.unused_address}\)"):
            target.nodes_for(1)
    finally:
        target.close()
    assert issubclass(HostError, InfrastructureError)  # the trial is retried


def test_a_wrong_key_fails_naming_the_host(emulation: Emulation, password: None) -> None:  # noqa: F811
    nodes = emulation.settings()["nodes"][1:2]
    nodes[0] = nodes[0] | {"ssh_key": str(emulation.wrong_key)}
    target = SshTarget("ssh-wrong-key", emulation.settings(nodes=nodes, clients=[]))
    try:
        with pytest.raises(HostError, match=r"host 'node2' .*the key .*id_stranger was refused"):
            target.nodes_for(1)
    finally:
        target.close()


def test_a_missing_key_file_is_refused_naming_the_field(
    emulation: Emulation,  # noqa: F811
    password: None,  # noqa: F811
) -> None:
    clients = emulation.settings()["clients"]
    clients[1] = clients[1] | {"ssh_key": str(emulation.root / "no-such-key")}
    with pytest.raises(TargetError, match=r"settings\.clients\[1\]\.ssh_key: .*no-such-key"):
        SshTarget("ssh-no-key", emulation.settings(clients=clients))


def test_the_cluster_resizes_2_3_2_seen_by_every_node(
    target: SshTarget,
    emulation: Emulation,  # noqa: F811
) -> None:
    started = time.monotonic()
    assert [n.name for n in target.nodes_for(2)] == ["node1", "node2"]
    print(f"bootstrap and first join: {time.monotonic() - started:.1f} s")
    assert _sizes(target, 2) == [2, 2]
    assert not _servers(emulation, "node3")

    assert len(target.nodes_for(3)) == 3
    assert _sizes(target, 3) == [3, 3, 3]
    print(f"node3 joined over SSH in {target.timings['join_s']:.1f} s")

    assert len(target.nodes_for(2)) == 2
    assert _sizes(target, 2) == [2, 2]
    assert not _servers(emulation, "node3")
    print(f"node3 left over SSH in {target.timings['leave_s']:.1f} s")


def test_a_restart_only_setting_is_applied_rolling_the_cluster_primary(
    target: SshTarget,
    emulation: Emulation,  # noqa: F811
) -> None:
    target.nodes_for(2)  # as the resize left it: two restarts, not three
    # A file of the operator's at the drop-in's path on the stopped node3: put back at close.
    (emulation.hosts["node3"].dropin_dir / DROPIN_NAME).write_text(OPERATORS_FILE)
    seen: list[tuple[str, str, int]] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for service in target.services[:2]:
                try:
                    health = galera_sql.node_health(service.node, target.credentials)
                except galera_sql.GaleraError:
                    continue  # the node restarting
                seen.append((service.name, health.cluster_status, health.cluster_size))
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        restart_s = target.restart_with(
            {"innodb_log_buffer_size": "33554432", "gcache.size": "96M"}
        )
    finally:
        stop.set()
        watcher.join()
    assert restart_s > 0
    assert {status for _, status, _ in seen} == {"Primary"}
    assert min(size for _, _, size in seen) == 1  # one node at a time
    for service in target.services[:2]:
        values = galera_sql.global_variables(
            service.node, target.credentials, ["innodb_log_buffer_size", "wsrep_provider_options"]
        )
        assert values["innodb_log_buffer_size"] == "33554432"
        assert "gcache.size = 96M" in values["wsrep_provider_options"]
    print(f"rolling restart of 2 nodes over SSH: {restart_s:.1f} s")

    assert target.restart_with(SETTINGS) == 0  # the nodes run with them already
    assert _sizes(target, 2) == [2, 2]
    assert "innodb_log_buffer_size=33554432" in (target.services[2].dropin() or "")


def test_a_trial_runs_on_the_cluster_over_ssh(target: SshTarget) -> None:
    config = {"nodes": 2, "clients": 2, "threads_per_client": 2, "runtime_s": 10}
    started = time.monotonic()
    result = target.run(config | {"workload": "oltp_read_only"}, run_key=1)
    print(f"a 10 s trial on the ssh target took {time.monotonic() - started:.1f} s")
    assert result.responses["tps"] > 0
    assert _sizes(target, 2) == [2, 2]


def test_the_settings_the_nodes_run_are_read_over_ssh(target: SshTarget) -> None:
    # As the trial above left the cluster: two nodes, no restart-only setting, none to set back.
    started = time.monotonic()
    read = target.read_current({"nodes": 2}, ["wsrep_slave_threads"])
    print(f"read_current on the ssh target took {time.monotonic() - started:.2f} s")
    node = target.services[0].node
    with galera_sql.connect(node, target.credentials) as connection:
        cursor = connection.cursor()
        cursor.execute("SHOW GLOBAL VARIABLES LIKE 'wsrep_slave_threads'")
        ((_, value),) = cursor.fetchall()
    assert read == {"wsrep_slave_threads": value}


def test_targets_check_finds_every_host_ready(target: SshTarget, emulation: Emulation) -> None:  # noqa: F811
    # What `galera-doe targets check` prints, on a cluster that works: every row passes.
    target.nodes_for(3)
    rows = check_target(emulation.settings())
    assert not [row for row in rows if not row.ok], [row for row in rows if not row.ok]
    checked = {row.host for row in rows}
    assert {host.name for host in [*emulation.nodes, *emulation.clients]} <= checked
    assert any(row.check.startswith("sysbench") for row in rows), rows


def test_with_sudo_the_nodes_are_driven_through_it(target: SshTarget, emulation: Emulation) -> None:  # noqa: F811
    # A second target on the same hosts, every one with sudo (root may sudo here): its checks,
    # starts, stops and drop-in reads run as `sudo -n sh -c <watchdog> ...`.
    privileged = SshTarget("ssh-sudo", emulation.settings(sudo=True))
    try:
        assert len(privileged.nodes_for(2)) == 2
        assert _sizes(privileged, 2) == [2, 2]
        assert not _servers(emulation, "node3")
        assert len(privileged.nodes_for(3)) == 3
        assert _sizes(privileged, 3) == [3, 3, 3]
    finally:
        privileged.close()
    rows = check_target(emulation.settings(sudo=True))
    sudo_rows = [row for row in rows if row.check == "sudo -n true"]
    assert len(sudo_rows) == len(emulation.hosts) and all(r.ok for r in sudo_rows), sudo_rows


def test_a_forked_worker_opens_its_own_connection(emulation: Emulation) -> None:  # noqa: F811
    host = Host(emulation.spec("client2"))
    assert host.run(["echo", "parent"]).stdout == "parent\n"
    child = os.fork()
    if child == 0:  # the parent's loop thread and connection are not in the child
        os._exit(0 if host.run(["echo", "child"], timeout=30).stdout == "child\n" else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert host.run(["echo", "parent"]).stdout == "parent\n"
    host.close()


def test_commands_at_once_start_together_and_are_killed_on_cancel(emulation: Emulation) -> None:  # noqa: F811
    pool = HostPool([emulation.spec("client1"), emulation.spec("client2")])
    try:
        done = pool.run_at_once([(n, ["hostname", "-I"]) for n in pool.names], timeout=30)
        assert [r.stdout.split() for r in done.results] == [
            [emulation.hosts[n].address] for n in pool.names
        ]  # each ran in its own host's namespace
        print(f"start skew of two client hosts: {done.start_skew_s * 1000:.1f} ms")
        assert done.start_skew_s < 0.1
        cancel = threading.Event()
        threading.Timer(1.0, cancel.set).start()
        with pytest.raises(TrialCancelledError):
            pool.run_at_once([(n, ["sleep", "317"]) for n in pool.names], timeout=30, cancel=cancel)
        _wait_gone(emulation, "sleep 317", 5.0)  # killed by pid before run_at_once returned
    finally:
        pool.close()


def _wait_gone(emulation: Emulation, command: str, timeout: float) -> None:  # noqa: F811
    """Wait until no process of the hosts runs `command` (its wrapper shell ends just after)."""
    deadline = time.monotonic() + timeout
    while found := [
        (name, pid)
        for name in emulation.hosts
        for pid in emulation.processes(name)
        if command in _cmdline(pid)
    ]:
        assert time.monotonic() < deadline, f"{command} still runs: {found}"
        time.sleep(0.1)


_HOLDER = """
import faulthandler
faulthandler.dump_traceback_later(25, exit=True)  # the stacks, should it hang
import sys
from pathlib import Path
from worker.targets.ssh.hosts import HostPool, HostSpec
spec = HostSpec("client1", sys.argv[1], key_file=Path(sys.argv[2]), known_hosts=Path(sys.argv[3]))
HostPool([spec]).run_at_once([("client1", ["sleep", "313"])], timeout=600)
"""


def test_a_killed_worker_leaves_nothing_running_on_the_host(emulation: Emulation) -> None:  # noqa: F811
    host = emulation.hosts["client1"]
    errors = emulation.root / "holder.err"
    with open(errors, "wb") as stderr:
        holder = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(_HOLDER), host.address, str(emulation.key),
             str(emulation.known_hosts)],
            stderr=stderr,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not [p for p in emulation.processes(host.name) if "sleep 313" in _cmdline(p)]:
            assert holder.poll() is None and time.monotonic() < deadline, (
                f"no remote sleep started; the holder's stderr: {errors.read_text()}"
            )
            time.sleep(0.1)
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        _wait_gone(emulation, "sleep 313", 10.0)  # its watchdog saw the channel close
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_a_cluster_found_down_bootstraps_from_the_node_that_left_last(target: SshTarget) -> None:
    target.nodes_for(2)
    node1, node2 = target.services[:2]
    node1.stop()
    deadline = time.monotonic() + 60
    # Until node2 saw node1 leave: it is the last, alone.
    while galera_sql.node_health(node2.node, target.credentials).cluster_size != 1:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    node2.stop()
    assert [s.saved_state()[1]["safe_to_bootstrap"] for s in (node1, node2)] == ["0", "1"]
    # node1, first listed, cannot bootstrap (Galera refuses it): node2 must.
    assert len(target.nodes_for(2)) == 2
    assert _sizes(target, 2) == [2, 2]

    node2.stop()
    node1.stop()
    for service in (node1, node2, target.services[2]):  # as after a crash: no seqno, none safe
        edits = ["-e", "s/^safe_to_bootstrap: 1/safe_to_bootstrap: 0/"]
        edits += ["-e", "s/^seqno:.*/seqno: -1/"]
        service.host.run(["sed", "-i", *edits, f"{service.datadir}/grastate.dat"], check=True)
    with pytest.raises(TargetError, match=r"none is safe to bootstrap.*check node1, node2, node3"):
        target.nodes_for(2)  # which one to trust is the operator's call (galera_recovery)
    node1.mark_safe_to_bootstrap()


def test_closing_the_target_leaves_nothing_on_the_hosts(
    target: SshTarget,
    emulation: Emulation,  # noqa: F811
) -> None:
    target.nodes_for(2)
    target.close()
    deadline = time.monotonic() + 10
    while left := {name: emulation.processes(name) for name in emulation.hosts}:
        if not any(left.values()):
            break
        assert time.monotonic() < deadline, f"left on the hosts: {left}"
        time.sleep(0.2)
    node1, node2, node3 = (h.dropin_dir / DROPIN_NAME for h in emulation.nodes)
    assert not node1.exists() and not node2.exists()
    assert node3.read_text() == OPERATORS_FILE
