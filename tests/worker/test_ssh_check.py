"""The rows of `galera-doe targets check` (worker.targets.ssh.check): what each check finds
and the fix it gives, for the worker's own files and for hosts it cannot reach."""

from __future__ import annotations

import socket
from pathlib import Path

import asyncssh
import pytest

from experiments.galera.ssh_settings import SshHost, SshNode
from worker import galera_sql
from worker.targets.ssh.check import (
    Row,
    check_target,
    key_row,
    known_hosts_row,
    local_sysbench_row,
    password_rows,
    sql_row,
    ssh_fix,
    sudo_fix,
)
from worker.targets.ssh.hosts import HostSpec


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def host(key: Path, port: int = 22, name: str = "db1") -> SshHost:
    return SshHost(name=name, address="127.0.0.1", ssh_key=str(key), where="nodes[0]",
                   ssh_port=port, ssh_user="deploy")  # fmt: skip


def test_a_key_row_says_what_is_wrong_and_the_fix(tmp_path: Path):
    key = tmp_path / "id_ed25519"
    missing = key_row(host(key))
    assert not missing.ok and missing.detail == f"{key} does not exist (the private key of db1)"
    assert f"ssh-keygen -t ed25519 -f {key}" in missing.fix
    assert f"ssh-copy-id -i {key}.pub -p 22 deploy@127.0.0.1" in missing.fix
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(key))
    key.chmod(0o644)
    open_key = key_row(host(key))
    assert not open_key.ok and "is open to other users (mode 0644)" in open_key.detail
    assert open_key.fix.startswith(f"chmod 600 {key}")
    key.chmod(0o600)
    assert key_row(host(key)) == Row("db1", "ssh key", True, str(key))


def test_the_known_hosts_file_and_the_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    absent = known_hosts_row({"known_hosts": str(tmp_path / "known_hosts")})
    assert not absent.ok and "ssh-keyscan -p PORT ADDRESS >>" in absent.fix
    monkeypatch.delenv("GALERA_DOE_NO_SUCH_PASSWORD", raising=False)
    [unset] = password_rows({"password_env": "GALERA_DOE_NO_SUCH_PASSWORD"})
    assert not unset.ok and unset.fix.startswith("export GALERA_DOE_NO_SUCH_PASSWORD=")
    monkeypatch.setenv("GALERA_DOE_NO_SUCH_PASSWORD", "secret")
    [found] = password_rows({"password_env": "GALERA_DOE_NO_SUCH_PASSWORD"})
    assert found.ok and "secret" not in found.detail
    assert password_rows({}) == []


@pytest.mark.parametrize(
    ("message", "fix"),
    [
        ("its host key is not the one /k lists for 10.0.0.11:22 (unknown or changed): check",
         "check the host's key fingerprint, then add it: ssh-keyscan -p 22 10.0.0.11 >> /k"),
        ("the key /id was refused for user deploy: is its public key in",
         "install the public key for deploy: ssh-copy-id -i /id.pub -p 22 deploy@10.0.0.11"),
        ("the known_hosts file /k does not exist", "see the known_hosts file row"),
        ("the key file /id (ssh_key) does not exist", "see its ssh key row"),
        ("cannot reach 10.0.0.11:22: no answer within 3 s",
         "check that 10.0.0.11 is the host's address and that sshd listens on port 22"),
    ],
)  # fmt: skip
def test_a_failed_login_gets_the_fix_for_its_cause(message: str, fix: str):
    spec = HostSpec("db1", "10.0.0.11", user="deploy", key_file=Path("/id"),
                    known_hosts=Path("/k"))  # fmt: skip
    assert ssh_fix(spec, f"host 'db1' (10.0.0.11): {message}").startswith(fix)


def test_sudo_fixes():
    spec = HostSpec("db1", "10.0.0.11", user="deploy", key_file=Path("/id"),
                    known_hosts=Path("/k"))  # fmt: skip
    assert sudo_fix(spec, "sudo: a password is required").startswith(
        "let deploy run sudo without a password: a line 'deploy ALL=(root) NOPASSWD: ALL'"
    )
    assert sudo_fix(spec, "bash: line 1: sudo: command not found").startswith("install sudo on db1")


def test_a_node_whose_sql_port_does_not_answer_is_named(tmp_path: Path):
    port = free_port()
    row = sql_row(SshNode(host=host(tmp_path / "k"), port=port), galera_sql.Credentials("u"))
    assert (row.host, row.check, row.ok) == ("db1", f"SQL 127.0.0.1:{port}", False)
    assert row.detail.startswith("does not answer") and "start the server on db1" in row.fix


def test_the_workers_own_sysbench_when_no_client_host_is_listed():
    assert local_sysbench_row("sysbench").ok
    absent = local_sysbench_row("/nonexistent/sysbench")
    assert not absent.ok and absent.fix == "install sysbench (apt install sysbench)"


def test_an_unreachable_host_gets_rows_naming_it_and_no_remote_checks(tmp_path: Path):
    key = tmp_path / "id_ed25519"
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(key))
    key.chmod(0o600)
    (tmp_path / "known_hosts").write_text("")
    port = free_port()
    entry = {"address": "127.0.0.1", "ssh_port": port, "ssh_key": str(key), "sudo": True}
    settings = {
        "known_hosts": str(tmp_path / "known_hosts"),
        "nodes": [{"host": "db1", **entry, "port": port}],
    }
    rows = check_target(settings, connect_timeout=3)
    assert [(r.host, r.check, r.ok) for r in rows] == [
        ("worker", "known_hosts file", True),
        ("db1", "ssh key", True),
        ("db1", "ssh login", False),
        ("db1", f"SQL 127.0.0.1:{port}", False),
        ("worker", "sysbench --version", True),
    ]
    login = rows[2]
    assert login.detail == (
        f"127.0.0.1:{port} refused the connection: is sshd listening on port {port}?"
    )
    assert f"sshd listens on port {port}" in login.fix
