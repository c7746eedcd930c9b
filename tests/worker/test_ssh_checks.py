"""The worker's own files an `ssh` target needs, checked when the worker loads it: the
known_hosts file, the hosts' keys and the operator's workload scripts (this machine's
sysbench loads them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncssh
import pytest

from worker.targets.base import TargetError
from worker.targets.ssh.checks import check_local_files

SCRIPT = """sysbench.cmdline.options = {
  tables = {"Number of tables", 1},
  table_size = {"Rows per table", 10000},
  orders_per_trx = {"Orders per transaction", 4},
  hot_share = {"Share of orders on the hot rows", 0.5},
}
function event() end
"""


def private_key(path: Path, *, mode: int = 0o600) -> None:
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(path))
    path.chmod(mode)


def staging(tmp_path: Path, script: str | None = SCRIPT) -> dict[str, Any]:
    """Settings of an ssh target whose files are all in `tmp_path` and usable."""
    key = tmp_path / "id_ed25519"
    private_key(key)
    (tmp_path / "known_hosts").write_text("")
    if script is not None:
        (tmp_path / "orders.lua").write_text(script)
    host = {"address": "10.0.0.11", "ssh_key": str(key)}
    return {
        "known_hosts": str(tmp_path / "known_hosts"),
        "nodes": [{"host": "db1", **host}, {"host": "db2", **host, "port": 3307}],
        "clients": [{"host": "load1", **host, "ssh_key": str(tmp_path / "load1_key")}],
        "workloads": {
            "my_orders": {
                "script": str(tmp_path / "orders.lua"),
                "options": {
                    "orders_per_trx": {"kind": "integer", "range": [1, 20]},
                    "hot_share": {"kind": "continuous", "range": [0, 1]},
                },
            }
        },
    }


def refusal(settings: dict[str, Any]) -> str:
    with pytest.raises(TargetError) as refused:
        check_local_files("staging", settings)
    return str(refused.value)


def with_client_key(tmp_path: Path, settings: dict[str, Any]) -> dict[str, Any]:
    private_key(tmp_path / "load1_key", mode=0o400)
    return settings


def test_usable_files_pass(tmp_path: Path):
    check_local_files("staging", with_client_key(tmp_path, staging(tmp_path)))


def test_a_missing_key_file_is_named(tmp_path: Path):
    assert refusal(staging(tmp_path)) == (
        f"target 'staging': settings.clients[0].ssh_key: {tmp_path}/load1_key does not exist"
        " (the private key of load1)"
    )


def test_a_key_other_users_can_read_is_refused(tmp_path: Path):
    settings = with_client_key(tmp_path, staging(tmp_path))
    (tmp_path / "id_ed25519").chmod(0o644)
    assert refusal(settings) == (
        f"target 'staging': settings.nodes[0].ssh_key: {tmp_path}/id_ed25519 is open to other"
        f" users (mode 0644): chmod 600 {tmp_path}/id_ed25519"
    )


def test_a_file_that_is_no_private_key_is_refused(tmp_path: Path):
    settings = with_client_key(tmp_path, staging(tmp_path))
    (tmp_path / "load1_key").chmod(0o600)
    (tmp_path / "load1_key").write_text("ssh-ed25519 AAAA... a public key, not the private one\n")
    assert refusal(settings).startswith(
        f"target 'staging': settings.clients[0].ssh_key: {tmp_path}/load1_key is not a private"
        " key usable without a passphrase: "
    )


def test_a_missing_known_hosts_file_is_named(tmp_path: Path):
    settings = with_client_key(tmp_path, staging(tmp_path))
    (tmp_path / "known_hosts").unlink()
    assert "settings.known_hosts: " in refusal(settings)


def test_a_workload_script_that_does_not_exist_is_named(tmp_path: Path):
    settings = with_client_key(tmp_path, staging(tmp_path, script=None))
    assert refusal(settings) == (
        f"target 'staging': settings.workloads.my_orders.script: {tmp_path}/orders.lua does"
        " not exist"
    )


@pytest.mark.parametrize(
    ("script", "words"),
    [
        ("function event( end\n", "orders.lua:1: "),
        ("local x = nil + 1\n", "attempt to perform arithmetic on a nil value"),
    ],
)
def test_a_workload_script_that_does_not_load_is_named(tmp_path: Path, script: str, words: str):
    message = refusal(with_client_key(tmp_path, staging(tmp_path, script=script)))
    assert message.startswith(
        f"target 'staging': settings.workloads.my_orders.script: {tmp_path}/orders.lua does"
        " not load in sysbench: "
    )
    assert words in message


def test_an_option_the_script_does_not_declare_is_named(tmp_path: Path):
    script = SCRIPT.replace('  hot_share = {"Share of orders on the hot rows", 0.5},\n', "")
    message = refusal(with_client_key(tmp_path, staging(tmp_path, script=script)))
    assert message.startswith("target 'staging': settings.workloads.my_orders.options.hot_share: ")
    assert "does not declare it in sysbench.cmdline.options" in message


def test_a_script_must_declare_the_schema_options_the_service_passes(tmp_path: Path):
    script = SCRIPT.replace('  table_size = {"Rows per table", 10000},\n', "")
    message = refusal(with_client_key(tmp_path, staging(tmp_path, script=script)))
    assert message.startswith("target 'staging': settings.workloads.my_orders.script: ")
    assert "does not declare --table_size" in message


def test_a_script_declaring_no_options_takes_any(tmp_path: Path):
    # sysbench then answers `help` with an error, yet the script loaded and reads any option.
    settings = staging(tmp_path, script="function event() end\n")
    check_local_files("staging", with_client_key(tmp_path, settings))
