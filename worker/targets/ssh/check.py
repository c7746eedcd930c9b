"""`galera-doe targets check NAME`: everything an `ssh` target needs, host by host, each as a
row of what works and what is missing, with the fix (`Row`).

On the worker's machine, as the worker would: the known_hosts file and the SQL password there,
then for every host its key file and SSH login (host key checked), `sudo -n true` where the
host says `sudo`; on a node `mariadbd --version`, its service (the systemd unit, or the defaults
file mariadbd starts with), its SQL port and Galera state from the worker; on a client host
`sysbench --version` (without client hosts, the worker's own sysbench); and each of the
operator's workload scripts loading in sysbench. A host that SSH does not reach gets no
further remote rows (they could only repeat why).

`python -m worker.targets.ssh.check` reads `{"name": ..., "settings": ...}` on stdin and prints
the rows as JSON (the CLI, which reads the targets file, prints them as a table); it exits 1
when any check failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.galera.ssh_settings import (
    SshHost,
    SshNode,
    known_hosts_path,
    operator_workloads,
    ssh_clients,
    ssh_nodes,
)
from worker import galera_sql
from worker.targets.ssh.checks import key_problem, known_hosts_problem, script_problem
from worker.targets.ssh.hosts import Completed, Host, HostError, HostPool, HostSpec
from worker.targets.ssh.nodes import host_spec

WORKER = "worker"
COMMAND_TIMEOUT_S = 30
# What a login over SSH finds on PATH: a non-root user's has no sbin.
_SBIN_HINT = "/usr/sbin is not on the PATH of a non-root login"


@dataclass(frozen=True)
class Row:
    """One check of one host: whether it passed, what was found, and how to fix it."""

    host: str
    check: str
    ok: bool
    detail: str
    fix: str = ""


def check_target(
    settings: Mapping[str, Any], *, connect_timeout: float = 10.0, sysbench: str = "sysbench"
) -> list[Row]:
    """Every check of the `ssh` target with these settings (module docstring), in order: the
    worker's, then each node's, each client host's, and the workloads'."""
    nodes, clients = ssh_nodes(settings), ssh_clients(settings)
    rows = [known_hosts_row(settings), *password_rows(settings)]
    known_hosts = Path(known_hosts_path(settings))
    pool = HostPool(
        [host_spec(h, known_hosts) for h in [n.host for n in nodes] + clients],
        connect_timeout=connect_timeout,
    )
    try:
        credentials = sql_credentials(settings)
        for node in nodes:
            rows += node_rows(pool.host(node.host.name), node, credentials)
        for client in clients:
            rows += client_rows(pool.host(client.name), client)
    finally:
        pool.close()
    if not clients:
        rows.append(local_sysbench_row(sysbench))
    rows += workload_rows(settings, sysbench=sysbench)
    return rows


def sql_credentials(settings: Mapping[str, Any]) -> galera_sql.Credentials:
    """The SQL user of the settings, with the password from its environment variable."""
    password_env = settings.get("password_env")
    password = os.environ.get(str(password_env), "") if password_env else ""
    return galera_sql.Credentials(user=str(settings.get("user", "root")), password=password)


def known_hosts_row(settings: Mapping[str, Any]) -> Row:
    """The known_hosts file the hosts' keys are checked against."""
    path = Path(known_hosts_path(settings)).expanduser()
    problem = known_hosts_problem(settings)
    fix = (
        f"add each host's key after checking its fingerprint: ssh-keyscan -p PORT ADDRESS >> {path}"
        if problem
        else ""
    )
    return Row(WORKER, "known_hosts file", not problem, problem or str(path), fix)


def password_rows(settings: Mapping[str, Any]) -> list[Row]:
    """The SQL password's environment variable, when the settings name one."""
    name = settings.get("password_env")
    if not name:
        return []
    if name in os.environ:
        return [Row(WORKER, "SQL password", True, f"read from {name}")]
    fix = f"export {name}=... in the environment of the worker and of this check"
    return [Row(WORKER, "SQL password", False, f"{name} is not set", fix)]


def key_row(host: SshHost) -> Row:
    """The host's private key on the worker."""
    problem = key_problem(host)
    path = Path(host.ssh_key).expanduser()
    if not problem:
        return Row(host.name, "ssh key", True, str(path))
    if path.is_file():
        fix = f"chmod 600 {path} (and chown it to the worker's user)"
    else:
        fix = (
            f"copy the private key to {path}, or make one (ssh-keygen -t ed25519 -f {path}) and"
            f" install it (ssh-copy-id -i {path}.pub -p {host.ssh_port}"
            f" {host.ssh_user}@{host.address})"
        )
    return Row(host.name, "ssh key", False, problem.partition(": ")[2], fix)


def ssh_row(host: Host) -> Row:
    """A login with the key, the host key found in known_hosts."""
    spec = host.spec
    try:
        host.run(["true"], timeout=COMMAND_TIMEOUT_S, check=True)
    except HostError as error:
        return Row(spec.name, "ssh login", False, _without_host(error), ssh_fix(spec, str(error)))
    return Row(spec.name, "ssh login", True, f"{spec.user}@{spec.address}:{spec.ssh_port}")


def ssh_fix(spec: HostSpec, message: str) -> str:
    """What to do about a failed SSH login that said `message`."""
    port = f"-p {spec.ssh_port}"
    if "host key" in message:
        return (
            f"check the host's key fingerprint, then add it: ssh-keyscan {port} {spec.address}"
            f" >> {spec.known_hosts}"
        )
    if "refused for user" in message:
        return (
            f"install the public key for {spec.user}: ssh-copy-id -i {spec.key_file}.pub {port}"
            f" {spec.user}@{spec.address}"
        )
    if "known_hosts file" in message:
        return "see the known_hosts file row"
    if "key file" in message:
        return "see its ssh key row"
    return (
        f"check that {spec.address} is the host's address and that sshd listens on port"
        f" {spec.ssh_port}, reachable from the worker"
    )


def _without_host(error: HostError) -> str:
    """The error's message without the host's name and address, which the row shows."""
    return str(error).partition("): ")[2] or str(error)


def sudo_row(host: Host) -> Row:
    """`sudo -n true`: privileged commands run without a password prompt."""
    spec = host.spec
    done = _run(host, ["true"], privileged=True)
    if isinstance(done, Row):
        return dataclasses.replace(done, check="sudo -n true")
    if done.returncode == 0:
        return Row(spec.name, "sudo -n true", True, f"{spec.user} may use sudo")
    said = _last_line(done.stderr) or f"exit status {done.returncode}"
    return Row(spec.name, "sudo -n true", False, said, sudo_fix(spec, said))


def sudo_fix(spec: HostSpec, said: str) -> str:
    """What to do when `sudo -n true` failed saying `said`."""
    if "not found" in said:
        return (
            f"install sudo on {spec.name} (apt install sudo), or set sudo: false if"
            f" {spec.user} is root"
        )
    return (
        f"let {spec.user} run sudo without a password: a line '{spec.user} ALL=(root) NOPASSWD:"
        " ALL' in /etc/sudoers.d/galera-doe (check it with visudo -cf), or set sudo: false"
    )


def _run(host: Host, argv: list[str], *, privileged: bool = False) -> Completed | Row:
    """The command's `Completed`, or a failed Row when the host could not run it."""
    try:
        return host.run(argv, timeout=COMMAND_TIMEOUT_S, privileged=privileged)
    except HostError as error:
        return Row(host.spec.name, argv[0], False, _without_host(error), "see its ssh login row")


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0][:120] if lines else ""


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def version_row(host: Host, argv: list[str], fix: str) -> Row:
    """`argv` (a program's --version) runs on the host; its first line is the detail."""
    check = " ".join(argv)
    done = _run(host, argv)
    if isinstance(done, Row):
        return dataclasses.replace(done, check=check)
    if done.returncode == 0:
        return Row(host.spec.name, check, True, _first_line(done.stdout) or "(no output)")
    said = _last_line(done.stderr) or f"exit status {done.returncode}"
    return Row(host.spec.name, check, False, said, fix)


def node_rows(host: Host, node: SshNode, credentials: galera_sql.Credentials) -> list[Row]:
    """A node host's checks: its key, SSH, sudo, mariadbd, its service, then its SQL port."""
    rows = [key_row(node.host), ssh_row(host)]
    if rows[-1].ok:
        if node.host.sudo:
            rows.append(sudo_row(host))
        fix = (
            "install MariaDB with the Galera provider (apt install mariadb-server galera-4), or"
            f" set {node.host.where}.mariadbd to its path ({_SBIN_HINT})"
        )
        rows.append(version_row(host, [node.mariadbd, "--version"], fix))
        rows.append(service_row(host, node))
    rows.append(sql_row(node, credentials))
    return rows


def service_row(host: Host, node: SshNode) -> Row:
    """What starts the node's server: its systemd unit is installed, or the defaults file
    mariadbd starts with is there."""
    name, where = node.host.name, node.host.where
    if node.service == "systemd":
        check = f"systemd unit {node.unit}"
        done = _run(host, ["systemctl", "show", "--property=LoadState", "--value", node.unit])
        if isinstance(done, Row):
            return dataclasses.replace(done, check=check)
        state = done.stdout.strip() or _last_line(done.stderr) or "unknown"
        fix = f"install mariadb-server on {name}, or set {where}.unit to the unit that runs it"
        return Row(name, check, state == "loaded", state, "" if state == "loaded" else fix)
    path = str(node.defaults_file)
    check = "defaults file"
    try:
        found = host.read(path, privileged=node.host.sudo) is not None
    except HostError as error:
        return Row(name, check, False, _without_host(error), f"make {path} readable")
    fix = f"create {path} on {name}, or set {where}.defaults_file to the file mariadbd reads"
    return Row(
        name, check, found, path if found else f"{path} does not exist", "" if found else fix
    )


def sql_row(node: SshNode, credentials: galera_sql.Credentials) -> Row:
    """The node's SQL port answers the worker, Synced in a Primary component."""
    name, check = node.host.name, f"SQL {node.host.address}:{node.port}"
    where = galera_sql.Node(name=name, host=node.host.address, port=node.port)
    try:
        health = galera_sql.node_health(where, credentials)
    except galera_sql.GaleraError as error:
        fix = (
            f"start the server on {name} (a trial starts missing nodes itself, but the check"
            f" reads them), open port {node.port} to the worker, and check that"
            f" {credentials.user} may log in from the worker's address"
        )
        # GaleraError names the node and its address, which the row shows.
        return Row(name, check, False, str(error).partition(") ")[2] or str(error), fix)
    detail = f"{health.state}, {health.cluster_status}, cluster of {health.cluster_size}"
    ok = health.state == "Synced" and health.cluster_status == "Primary"
    if health.cluster_size == 0:
        fix = (
            f"the server on port {node.port} runs no Galera replication: start it as a node of"
            " the cluster (wsrep_on=ON, wsrep_provider, wsrep_cluster_address)"
        )
    else:
        fix = f"see {name}'s error log: a node takes trials Synced in a Primary component"
    return Row(name, check, ok, detail, "" if ok else fix)


def client_rows(host: Host, client: SshHost) -> list[Row]:
    """A client host's checks: its key, SSH, sudo, sysbench."""
    rows = [key_row(client), ssh_row(host)]
    if rows[-1].ok:
        if client.sudo:
            rows.append(sudo_row(host))
        fix = f"install sysbench on {client.name} (apt install sysbench)"
        rows.append(version_row(host, ["sysbench", "--version"], fix))
    return rows


def local_sysbench_row(sysbench: str) -> Row:
    """Without client hosts the clients run on the worker: its own sysbench."""
    check = f"{sysbench} --version"
    try:
        done = subprocess.run(
            [sysbench, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return Row(WORKER, check, False, str(error), "install sysbench (apt install sysbench)")
    if done.returncode != 0:
        said = _last_line(done.stderr) or f"exit status {done.returncode}"
        return Row(WORKER, check, False, said, "install sysbench (apt install sysbench)")
    return Row(WORKER, check, True, _last_line(done.stdout))


def workload_rows(settings: Mapping[str, Any], *, sysbench: str = "sysbench") -> list[Row]:
    """Each of the operator's workload scripts loads in the worker's sysbench."""
    rows = []
    for workload in operator_workloads(settings).values():
        problem = script_problem(workload, sysbench=sysbench)
        fix = f"fix the script, or its path or options in settings.workloads.{workload.name}"
        detail = problem.partition(": ")[2] if problem else workload.script
        rows.append(
            Row(WORKER, f"workload {workload.name}", not problem, detail, fix if problem else "")
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Read the target on stdin, print its rows as JSON; 1 when a check failed."""
    parser = argparse.ArgumentParser(prog="python -m worker.targets.ssh.check")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to connect")
    args = parser.parse_args(argv)
    target = json.load(sys.stdin)
    rows = check_target(target["settings"], connect_timeout=args.timeout)
    json.dump([dataclasses.asdict(row) for row in rows], sys.stdout)
    return 0 if all(row.ok for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
