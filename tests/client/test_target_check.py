"""`galera-doe targets check NAME` on the worker's machine: a table of every host's checks with
a fix per line, exit 1 when one fails. The hosts here are unreachable (a free port of this
machine): each row says which host and what to do."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import asyncssh
import yaml
from rich.console import Console
from typer.testing import CliRunner, Result

from client.cli import cli
from client.cli.target_commands import check_table


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def targets_file(tmp_path: Path, port: int) -> Path:
    key = tmp_path / "id_ed25519"
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(key))
    key.chmod(0o600)
    (tmp_path / "known_hosts").write_text("")
    (tmp_path / "orders.lua").write_text("function event( end\n")
    host = {"address": "127.0.0.1", "ssh_port": port, "ssh_key": str(key)}
    staging = {
        "name": "staging",
        "kind": "ssh",
        "settings": {
            "known_hosts": str(tmp_path / "known_hosts"),
            "user": "galera_doe",
            "password_env": "GALERA_DOE_CHECK_TEST_PASSWORD",
            "nodes": [{"host": "db1", **host, "port": port, "sudo": True}],
            "clients": [{"host": "load1", **host, "ssh_key": str(tmp_path / "missing_key")}],
            "workloads": {"my_orders": {"script": str(tmp_path / "orders.lua")}},
        },
    }
    path = tmp_path / "targets.yaml"
    path.write_text(yaml.safe_dump({"targets": [staging, {"name": "sim", "kind": "simulated"}]}))
    return path


def check(tmp_path: Path, *args: str, port: int | None = None) -> Result:
    path = targets_file(tmp_path, port or free_port())
    env = {"GALERA_DOE_TARGETS_FILE": str(path), "COLUMNS": "400"}
    return CliRunner().invoke(cli, ["targets", "check", *args, "--timeout", "3"], env=env)


def table_lines(output: str) -> dict[tuple[str, str], str]:
    """The table's lines by (host, check)."""
    lines = {}
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        if len(cells) == 5 and cells[0] not in ("host", ""):
            lines[(cells[0], cells[1])] = line
    return lines


def test_unreachable_hosts_are_named_with_a_fix_and_exit_1(tmp_path: Path):
    port = free_port()
    result = check(tmp_path, "staging", port=port)
    assert result.exit_code == 1, result.output
    lines = table_lines(result.output)
    login = lines[("db1", "ssh login")]
    assert "missing" in login and f"127.0.0.1:{port} refused the connection" in login
    assert f"sshd listens on port {port}, reachable from the worker" in login
    sql = lines[("db1", f"SQL 127.0.0.1:{port}")]
    assert "missing" in sql and "start the server on db1" in sql
    assert "ok" in lines[("db1", "ssh key")]
    key = lines[("load1", "ssh key")]
    assert "missing" in key and f"{tmp_path}/missing_key does not exist" in key
    assert "ssh-keygen -t ed25519" in key
    password = lines[("worker", "SQL password")]
    assert "GALERA_DOE_CHECK_TEST_PASSWORD is not set" in password and "export" in password
    script = lines[("worker", "workload my_orders")]
    assert "does not load in sysbench" in script
    # No remote check of a host SSH did not reach: they could only repeat why.
    assert ("db1", "sudo -n true") not in lines and ("load1", "sysbench --version") not in lines
    assert "checks failed: see their fixes" in result.output


def test_only_an_ssh_target_of_the_file_is_checked(tmp_path: Path):
    other = check(tmp_path, "sim")
    assert other.exit_code == 2 and "target 'sim' is of kind simulated" in other.output
    unknown = check(tmp_path, "prod")
    assert unknown.exit_code == 2 and "no target 'prod' in the targets file" in unknown.output


def test_the_table_has_a_line_per_check_with_its_fix():
    rows: list[dict[str, Any]] = [
        {"host": "db1", "check": "ssh login", "ok": True, "detail": "deploy@10.0.0.11:22",
         "fix": ""},
        {"host": "db1", "check": "sudo -n true", "ok": False,
         "detail": "sudo: a password is required",
         "fix": "let deploy run sudo [without] a password"},
    ]  # fmt: skip
    console = Console(width=200, record=True)
    console.print(check_table("staging", rows))
    text = console.export_text()
    assert "target staging" in text
    lines = table_lines(text)
    assert "ok" in lines[("db1", "ssh login")] and "missing" not in lines[("db1", "ssh login")]
    # Rich markup in a message is printed as written.
    assert "missing" in lines[("db1", "sudo -n true")]
    assert "let deploy run sudo [without] a password" in lines[("db1", "sudo -n true")]
