"""The settings of an `ssh` target (the operator's own cluster, reached over SSH), read and
checked without touching a file or a host: its node and client hosts, and the operator's own
workloads with the options they declare as factors.

Every check raises ValueError whose text starts with the setting's path under `settings`
(``nodes[1].host: db1 is listed twice``); the targets file's reader prefixes the target's path.
What needs the worker's files (the key files, the scripts) is checked where the worker loads the
target (`worker.targets.ssh.checks`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from experiments.galera.kinds import CLUSTER_FACTORS, WAN_FACTORS
from experiments.galera.restart_settings import is_restart_only
from experiments.galera.server_variables import SERVER_VARIABLES
from experiments.galera.workloads import WORKLOADS

# How a node's server is started, stopped and checked: a systemd unit, or mariadbd run with
# --defaults-file (the file then has to be named, with the directory it includes, where the
# service writes its drop-in); any of its commands can be the operator's argument list.
SERVICES = ("systemd", "mariadbd")
COMMAND_KEYS = ("start", "stop", "check", "bootstrap")
# What a host's entry may say, and a node's besides: any other key is a typo the service would
# otherwise ignore silently (a misspelt `sudo` runs every command unprivileged).
HOST_KEYS = frozenset({"host", "address", "ssh_key", "ssh_user", "ssh_port", "sudo"})
NODE_KEYS = HOST_KEYS | {
    "port", "service", "unit", "defaults_file", "dropin_dir", "mariadbd", *COMMAND_KEYS,
}  # fmt: skip
DEFAULT_UNIT = "mariadb"
DEFAULT_SQL_PORT = 3306
DEFAULT_SSH_PORT = 22
DEFAULT_SSH_USER = "root"
# The worker's user's own known_hosts unless the settings name another: a file either way, so
# a host's key is always checked, never accepted on first sight.
DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"
OPTION_KINDS = ("integer", "continuous")

# A host's name is a key of the SSH pool and appears in every message; an address is given to
# sysbench as --mysql-host, which reads a comma as a list of servers.
_HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
_ADDRESS = re.compile(r"[A-Za-z0-9._:-]{1,255}\Z")
_UNIT = re.compile(r"[A-Za-z0-9@._:-]{1,255}\Z")
# sysbench's script options: `--name=value` with the name as the script declares it.
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}\Z")
# Options sysbench itself or the service already passes: a workload option of one of these
# names would silently change the run (its length, threads, tables) instead of the script.
_RESERVED_OPTIONS = frozenset(
    {"threads", "time", "events", "rate", "tables", "table_size", "histogram", "percentile"}
)
_RESERVED_PREFIXES = ("mysql_", "db_", "report_", "warmup_", "tpcc_")


@dataclass(frozen=True)
class SshHost:
    """A machine the worker reaches over SSH; `where` is its path in the settings
    (``nodes[0]``, ``clients[1]``), for messages."""

    name: str
    address: str
    ssh_key: str
    where: str
    ssh_port: int = DEFAULT_SSH_PORT
    ssh_user: str = DEFAULT_SSH_USER
    sudo: bool = False


@dataclass(frozen=True)
class SshNode:
    """A Galera node: its host, the SQL port, and how its server is run."""

    host: SshHost
    port: int = DEFAULT_SQL_PORT
    service: str = "systemd"
    unit: str = DEFAULT_UNIT
    defaults_file: str | None = None
    dropin_dir: str | None = None
    mariadbd: str = "mariadbd"


@dataclass(frozen=True)
class WorkloadOption:
    """An option the operator's script takes, a factor of the kind and range declared."""

    name: str
    kind: str
    low: float
    high: float

    @property
    def whole(self) -> bool:
        """Whether the option takes whole numbers only."""
        return self.kind == "integer"


@dataclass(frozen=True)
class OperatorWorkload:
    """The operator's own workload: a Lua script on the worker, shipped to the client hosts."""

    name: str
    script: str
    options: dict[str, WorkloadOption]


def known_hosts_path(settings: Mapping[str, Any]) -> str:
    """The known_hosts file the hosts' keys are checked against (as written: `~` unexpanded)."""
    path = settings.get("known_hosts", DEFAULT_KNOWN_HOSTS)
    if not isinstance(path, str) or not path.strip():
        raise ValueError(
            "known_hosts: the path of the known_hosts file on the worker the hosts' keys are"
            f" checked against (default {DEFAULT_KNOWN_HOSTS})"
        )
    return path


def ssh_nodes(settings: Mapping[str, Any]) -> list[SshNode]:
    """The nodes listed in `settings.nodes` (at least one)."""
    listed = settings.get("nodes")
    if not isinstance(listed, list) or not listed:
        raise ValueError("nodes: list the cluster's node hosts, at least one")
    sudo = _sudo("sudo", settings, False)
    return [_node(f"nodes[{i}]", entry, sudo) for i, entry in enumerate(listed)]


def ssh_clients(settings: Mapping[str, Any]) -> list[SshHost]:
    """The client hosts listed in `settings.clients`; none: the clients run on the worker."""
    listed = settings.get("clients")
    if listed is None:
        return []
    if not isinstance(listed, list):
        raise ValueError("clients: a list of client hosts")
    sudo = _sudo("sudo", settings, False)
    clients = []
    for i, entry in enumerate(listed):
        _known_keys(f"clients[{i}]", _mapping(f"clients[{i}]", entry), HOST_KEYS)
        clients.append(_host(f"clients[{i}]", entry, sudo))
    return clients


def _sudo(where: str, entry: Mapping[str, Any], default: bool) -> bool:
    """Whether privileged commands run under `sudo -n` (a host's own `sudo`, else the
    target's)."""
    sudo = entry.get("sudo", default)
    if not isinstance(sudo, bool):
        raise ValueError(f"{where}: true or false, got {sudo!r}")
    return sudo


def _mapping(where: str, entry: object) -> Mapping[str, Any]:
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}: a mapping with host, address and ssh_key")
    return entry


def _node(where: str, listed: object, sudo: bool) -> SshNode:
    entry = _mapping(where, listed)
    _known_keys(where, entry, NODE_KEYS)
    host = _host(where, entry, sudo)
    service = entry.get("service", "systemd")
    if service not in SERVICES:
        raise ValueError(f"{where}.service: one of {', '.join(SERVICES)}, got {service!r}")
    defaults_file = _optional_text(where, entry, "defaults_file")
    dropin_dir = _optional_text(where, entry, "dropin_dir")
    if service == "mariadbd" and defaults_file is None:
        raise ValueError(
            f"{where}.defaults_file: a node run as mariadbd needs the option file it starts with"
        )
    if service == "mariadbd" and dropin_dir is None:
        raise ValueError(
            f"{where}.dropin_dir: a node run as mariadbd needs the directory its defaults file"
            " includes (!includedir), where the service writes its drop-in"
        )
    unit = entry.get("unit", DEFAULT_UNIT)
    if not isinstance(unit, str) or not _UNIT.match(unit):
        raise ValueError(f"{where}.unit: a systemd unit name, got {unit!r}")
    for key in COMMAND_KEYS:
        argv = entry.get(key)
        if argv is not None and not (
            isinstance(argv, list) and argv and all(isinstance(a, str) and a for a in argv)
        ):
            raise ValueError(f"{where}.{key}: a non-empty argument list, got {argv!r}")
    return SshNode(
        host=host,
        port=_port(where, entry, "port", DEFAULT_SQL_PORT),
        service=str(service),
        unit=unit,
        defaults_file=defaults_file,
        dropin_dir=dropin_dir,
        mariadbd=_optional_text(where, entry, "mariadbd") or "mariadbd",
    )


def _host(where: str, listed: object, sudo: bool) -> SshHost:
    entry = _mapping(where, listed)
    name, address = entry.get("host"), entry.get("address")
    if not isinstance(name, str) or not _HOST_NAME.match(name):
        raise ValueError(f"{where}.host: a host name (letters, digits, . _ -), got {name!r}")
    if not isinstance(address, str) or not _ADDRESS.match(address):
        raise ValueError(f"{where}.address: an IP address or DNS name, got {address!r}")
    key = _optional_text(where, entry, "ssh_key")
    if key is None:
        raise ValueError(f"{where}.ssh_key: the path of the private key on the worker")
    user = entry.get("ssh_user", DEFAULT_SSH_USER)
    if not isinstance(user, str) or not _HOST_NAME.match(user):
        raise ValueError(f"{where}.ssh_user: a user name, got {user!r}")
    return SshHost(
        name=name,
        address=address,
        ssh_key=key,
        where=where,
        ssh_port=_port(where, entry, "ssh_port", DEFAULT_SSH_PORT),
        ssh_user=user,
        sudo=_sudo(f"{where}.sudo", entry, sudo),
    )


def _known_keys(where: str, entry: Mapping[str, Any], known: frozenset[str]) -> None:
    unknown = sorted(str(key) for key in entry if key not in known)
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: not a setting; one of {', '.join(sorted(known))}")


def _port(where: str, entry: Mapping[str, Any], key: str, default: int) -> int:
    port = entry.get(key, default)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"{where}.{key}: a port from 1 to 65535, got {port!r}")
    return port


def _optional_text(where: str, entry: Mapping[str, Any], key: str) -> str | None:
    value = entry.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or "\n" in value or "\0" in value:
        raise ValueError(f"{where}.{key}: a path, got {value!r}")
    return value


def check_unique_hosts(nodes: list[SshNode], clients: list[SshHost]) -> None:
    """Raise naming the second listing of a host: a name is listed once among nodes and clients
    (it names the host everywhere), a node's address and SQL port once among the nodes, a
    client's address and SSH port once among the clients."""
    names: dict[str, str] = {}
    for host in [n.host for n in nodes] + clients:
        if host.name in names:
            raise ValueError(
                f"{host.where}.host: {host.name} is listed twice (first as {names[host.name]})"
            )
        names[host.name] = host.where
    servers: dict[tuple[str, int], str] = {}
    for node in nodes:
        key = (node.host.address.lower(), node.port)
        if key in servers:
            raise ValueError(
                f"{node.host.where}.address: {node.host.address} port {node.port} is listed twice"
                f" (first as {servers[key]})"
            )
        servers[key] = node.host.where
    machines: dict[tuple[str, int], str] = {}
    for client in clients:
        key = (client.address.lower(), client.ssh_port)
        if key in machines:
            raise ValueError(
                f"{client.where}.address: {client.address} is listed twice (first as"
                f" {machines[key]})"
            )
        machines[key] = client.where


def operator_workloads(settings: Mapping[str, Any]) -> dict[str, OperatorWorkload]:
    """The operator's workloads by name (`settings.workloads`), each with its declared options;
    an option belongs to one workload, and no name is one the service already gives a meaning."""
    declared = settings.get("workloads")
    if declared is None:
        return {}
    if not isinstance(declared, Mapping):
        raise ValueError("workloads: a mapping of workload names to {script, options}")
    workloads: dict[str, OperatorWorkload] = {}
    owners: dict[str, str] = {}
    for name, entry in declared.items():
        where = f"workloads.{name}"
        if not isinstance(name, str) or not _NAME.match(name) or name in WORKLOADS:
            raise ValueError(
                f"{where}: a workload's name is lower-case letters, digits and underscores, and"
                f" not one of sysbench's or the project's ({', '.join(WORKLOADS)})"
            )
        workload = _workload(where, name, entry)
        for option in workload.options:
            if option in owners:
                raise ValueError(
                    f"{where}.options.{option}: already an option of the {owners[option]}"
                    " workload; an option belongs to one workload"
                )
            owners[option] = name
        workloads[name] = workload
    return workloads


def _workload(where: str, name: str, entry: object) -> OperatorWorkload:
    if not isinstance(entry, Mapping):
        raise ValueError(f"{where}: a mapping with script and options")
    script = _optional_text(where, entry, "script")
    if script is None:
        raise ValueError(f"{where}.script: the path of the Lua script on the worker")
    options = entry.get("options") or {}
    if not isinstance(options, Mapping):
        raise ValueError(f"{where}.options: a mapping of option names to {{kind, range}}")
    return OperatorWorkload(
        name=name,
        script=script,
        options={
            option: _option(f"{where}.options.{option}", option, spec)
            for option, spec in options.items()
        },
    )


def _option(where: str, name: object, spec: object) -> WorkloadOption:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"{where}: an option's name is lower-case letters, digits and underscores")
    if _taken(name):
        raise ValueError(
            f"{where}: {name} already means something to the service (a built-in factor, a"
            " server setting or an option sysbench takes itself): rename it in the script"
        )
    if not isinstance(spec, Mapping):
        raise ValueError(f"{where}: a mapping with kind and range")
    kind = spec.get("kind")
    if kind not in OPTION_KINDS:
        raise ValueError(f"{where}.kind: one of {', '.join(OPTION_KINDS)}, got {kind!r}")
    bounds = spec.get("range")
    numbers = isinstance(bounds, list | tuple) and len(bounds) == 2
    if not numbers or not all(_number(v) for v in bounds) or not bounds[0] < bounds[1]:
        raise ValueError(f"{where}.range: [low, high], two numbers with low below high")
    if kind == "integer" and not all(float(v).is_integer() for v in bounds):
        raise ValueError(f"{where}.range: an integer option's range is two whole numbers")
    return WorkloadOption(name=name, kind=kind, low=float(bounds[0]), high=float(bounds[1]))


def _taken(name: str) -> bool:
    return (
        name in CLUSTER_FACTORS
        or name in WAN_FACTORS
        or name in SERVER_VARIABLES
        or is_restart_only(name)
        or name in _RESERVED_OPTIONS
        or name.startswith(_RESERVED_PREFIXES)
    )


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_ssh_settings(settings: Mapping[str, Any]) -> None:
    """Raise naming the first malformed setting of an `ssh` target (module docstring)."""
    known_hosts_path(settings)
    for key in ("user", "password_env"):
        value = settings.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise ValueError(f"{key}: a non-empty string, got {value!r}")
    nodes, clients = ssh_nodes(settings), ssh_clients(settings)
    check_unique_hosts(nodes, clients)
    check_defaults(settings, nodes=len(nodes), clients=len(clients))


def check_defaults(settings: Mapping[str, Any], *, nodes: int, clients: int) -> None:
    """Raise unless the values a trial takes for the factors its experiment does not vary
    (settings.defaults) fit the hosts listed and the workloads known."""
    defaults = settings.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        raise ValueError("defaults: a mapping of factor names to values")
    counts = {"nodes": (nodes, "nodes"), "load_nodes": (nodes, "nodes")}
    if clients:
        counts["clients"] = (clients, "client hosts")
    for name, (most, what) in counts.items():
        value = defaults.get(name)
        if value is not None and not (_number(value) and 1 <= value <= most):
            raise ValueError(f"defaults.{name}: from 1 to the {most} {what} listed, got {value!r}")
    known = (*WORKLOADS, *operator_workloads(settings))
    workload = defaults.get("workload")
    if workload is not None and workload not in known:
        raise ValueError(f"defaults.workload: one of {', '.join(known)}, got {workload!r}")
