"""A multi-host emulation for the `ssh` target's tests: network namespaces as hosts.

Each host is a network namespace `gdoeh<tag><name>` with an address of a private /24 picked at
setup (one no interface of this machine uses), joined to the others by a bridge in this
machine's namespace, which holds the /24's first address: the worker, here, reaches every host
through it and nothing else leaves. In each namespace Debian's sshd runs in the foreground
(its pid kept, stopped by pid) with a host key, an authorized key and a known_hosts file made
here. Node hosts hold a Galera option file (`my.cnf`, including a drop-in directory) and an
empty datadir under /var/tmp (the mysql user traverses every parent), the first one
initialised with the SQL user of the tests; their servers are started over SSH by the target
code, never here. Client hosts run sshd; the target runs its clients' sysbench there over SSH.

`emulation` is a module-scoped fixture: one set of hosts per test module.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import leaks
from worker.lab import datadirs
from worker.lab.layout import PROVIDER, SERVER_USER, LabLayout
from worker.targets.ssh.hosts import HostSpec

NAMESPACE_PREFIX = "gdoeh"
SSHD = "/usr/sbin/sshd"
PRIVSEP_DIR = Path("/run/sshd")  # sshd insists on it (Debian's compiled-in path)
MARIADBD = "/usr/sbin/mariadbd"
SQL_USER = "gdoe"
SQL_PASSWORD = "gdoe-ssh-test"
PASSWORD_ENV = "GALERA_DOE_SSH_TEST_PASSWORD"
CLUSTER_NAME = "gdoe_ssh_test"
_SSHD_WAIT_S = 10.0
_SESSION_GRACE_S = 3.0  # an sshd session ends a moment after its connection closed


@dataclass(frozen=True)
class EmulatedHost:
    """One emulated host: its namespace, its address, its directory."""

    name: str
    role: str  # "node" or "client"
    netns: str
    address: str
    home: Path

    @property
    def defaults_file(self) -> Path:
        """The option file its mariadbd starts with (nodes)."""
        return self.home / "my.cnf"

    @property
    def dropin_dir(self) -> Path:
        """The directory `my.cnf` includes: the target's drop-in goes there."""
        return self.home / "conf.d"

    @property
    def datadir(self) -> Path:
        """The node's datadir."""
        return self.home / "data"

    @property
    def error_log(self) -> Path:
        """The node's error log."""
        return self.home / "mariadbd.err"


def _run(*argv: str, input: str | None = None) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, input=input, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def free_subnet() -> ipaddress.IPv4Network:
    """A private /24 that no address or route of this machine touches."""
    used = _run("ip", "-4", "-o", "addr", "show") + _run("ip", "-4", "route", "show")
    for _ in range(100):
        prefix = f"10.{random.randrange(100, 250)}.{random.randrange(256)}."
        if prefix not in used:
            return ipaddress.IPv4Network(f"{prefix}0/24")
    raise RuntimeError("no free private /24 for the emulated hosts")


def netns_pids(netns: str) -> list[int]:
    """The processes running in namespace `netns`."""
    done = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True)
    return [int(pid) for pid in done.stdout.split()]


class Emulation:
    """Node and client hosts as network namespaces running sshd (module docstring)."""

    def __init__(self, nodes: int = 3, clients: int = 2) -> None:
        self.tag = f"{random.randrange(16**4):04x}"
        # The run's mark in the path: the leak check knows this run's sshd by its config file.
        mark = os.environ.get(leaks.RUN_MARK, "unmarked")
        self.root = Path(tempfile.mkdtemp(prefix=f"gdoeh-{self.tag}-{mark}-", dir="/var/tmp"))
        self.root.chmod(0o755)  # the mysql user traverses it to the datadirs
        self.subnet = free_subnet()
        self.bridge = f"{NAMESPACE_PREFIX}b{self.tag}"
        addresses = list(self.subnet.hosts())
        self.gateway = str(addresses[0])
        names = [f"node{i}" for i in range(1, nodes + 1)]
        names += [f"client{i}" for i in range(1, clients + 1)]
        self.hosts = {
            name: EmulatedHost(
                name=name,
                role="node" if name.startswith("node") else "client",
                netns=f"{NAMESPACE_PREFIX}{self.tag}{name[0]}{name[-1]}",
                address=str(addresses[i]),
                home=self.root / name,
            )
            for i, name in enumerate(names, start=1)
        }
        self.unused_address = str(addresses[200])
        self.key = self.root / "id_worker"
        self.wrong_key = self.root / "id_stranger"
        self.known_hosts = self.root / "known_hosts"
        self._sshd: dict[str, subprocess.Popen[bytes]] = {}
        self.setup_s = 0.0

    @property
    def nodes(self) -> list[EmulatedHost]:
        """The node hosts, in order."""
        return [h for h in self.hosts.values() if h.role == "node"]

    @property
    def clients(self) -> list[EmulatedHost]:
        """The client hosts, in order."""
        return [h for h in self.hosts.values() if h.role == "client"]

    # Setting up ---------------------------------------------------------------------------

    def up(self) -> None:
        """Make the keys, the bridge, every host with its sshd, the nodes' datadirs."""
        started = time.monotonic()
        self._keys()
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")
        PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        for host in self.hosts.values():
            self._host(host)
        for index, host in enumerate(self.nodes, start=1):
            self._node(host, index)
        self._wait_sshd()
        self.setup_s = time.monotonic() - started

    def _keys(self) -> None:
        for key in (self.key, self.wrong_key, self.root / "host_key"):
            _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", key.name, "-f", str(key))
        (self.root / "authorized_keys").write_text(Path(f"{self.key}.pub").read_text())
        host_key = Path(f"{self.root / 'host_key'}.pub").read_text().split()
        self.known_hosts.write_text(
            "".join(f"{h.address} {host_key[0]} {host_key[1]}\n" for h in self.hosts.values())
        )

    def _host(self, host: EmulatedHost) -> None:
        """The namespace, its veth pair on the bridge, and sshd in it."""
        veth = f"{NAMESPACE_PREFIX}{self.tag}v{host.name[0]}{host.name[-1]}"
        _run("ip", "netns", "add", host.netns)
        _run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", host.netns)
        _run("ip", "link", "set", veth, "master", self.bridge, "up")
        inside = ("ip", "-n", host.netns)
        _run(*inside, "addr", "add", f"{host.address}/24", "dev", "eth0")
        _run(*inside, "link", "set", "eth0", "up")
        _run(*inside, "link", "set", "lo", "up")
        host.home.mkdir(mode=0o755)
        config = host.home / "sshd_config"
        config.write_text(self._sshd_config(host))
        with open(host.home / "sshd.log", "wb") as log:
            self._sshd[host.name] = subprocess.Popen(
                ["ip", "netns", "exec", host.netns, SSHD, "-D", "-e", "-f", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def _sshd_config(self, host: EmulatedHost) -> str:
        mark = os.environ.get(leaks.RUN_MARK, "")
        return "\n".join(
            [
                f"ListenAddress {host.address}:22",
                f"HostKey {self.root / 'host_key'}",
                f"AuthorizedKeysFile {self.root / 'authorized_keys'}",
                "PidFile none",
                "PermitRootLogin prohibit-password",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",
                "PrintMotd no",
                # What sessions start carries the suite's mark: the leak check finds it. SHLVL:
                # bash skips ~/.bashrc for a command sshd gives it (this machine's runs pyenv
                # rehash, a second's work under a lock), as a server's plain account would.
                f"SetEnv {leaks.RUN_MARK}={mark} SHLVL=1",
                "",
            ]
        )

    def _node(self, host: EmulatedHost, index: int) -> None:
        """The node's option file and drop-in directory; an empty datadir, except node 1's,
        initialised with the tests' SQL user."""
        host.dropin_dir.mkdir(mode=0o755)
        host.defaults_file.write_text(self.option_text(host))
        layout = LabLayout(base_dir=self.root, max_nodes=len(self.nodes), timeout_s=120)
        if index == 1:
            datadirs.install(layout, 1)
            statements = (
                f"CREATE USER '{SQL_USER}'@'%' IDENTIFIED BY '{SQL_PASSWORD}';\n"
                f"GRANT ALL PRIVILEGES ON *.* TO '{SQL_USER}'@'%' WITH GRANT OPTION;\n"
            )
            _run(
                MARIADBD, "--no-defaults", f"--datadir={host.datadir}", f"--user={SERVER_USER}",
                "--bootstrap", f"--log-error={host.home / 'bootstrap.err'}",
                input="FLUSH PRIVILEGES;\n" + statements,
            )  # fmt: skip
        else:
            datadirs.make_dirs(layout, index)
        datadirs.check_traversable(host.datadir, SERVER_USER)

    def option_text(self, host: EmulatedHost) -> str:
        """A node's my.cnf, as an operator's Galera node has one (standard ports)."""
        peers = ",".join(node.address for node in self.nodes)
        options = {
            "user": SERVER_USER,
            "datadir": host.datadir,
            "socket": host.home / "mariadbd.sock",
            "pid_file": host.home / "mariadbd.pid",
            "log_error": host.error_log,
            "port": 3306,
            "bind_address": host.address,
            "skip_name_resolve": "ON",
            "max_connections": 512,
            "binlog_format": "ROW",
            "default_storage_engine": "InnoDB",
            "innodb_autoinc_lock_mode": 2,
            "innodb_buffer_pool_size": "64M",
            "innodb_log_file_size": "32M",
            "innodb_flush_log_at_trx_commit": 2,
            "wsrep_on": "ON",
            "wsrep_provider": PROVIDER,
            "wsrep_cluster_name": CLUSTER_NAME,
            "wsrep_cluster_address": f"gcomm://{peers}",
            "wsrep_node_name": host.name,
            "wsrep_node_address": host.address,
            "wsrep_sst_method": "rsync",
            "wsrep_provider_options": "gcache.size=64M",
        }
        lines = [f"{key}={value}" for key, value in options.items()]
        return "[mysqld]\n" + "\n".join(lines) + f"\n\n!includedir {host.dropin_dir}\n"

    def _wait_sshd(self) -> None:
        deadline = time.monotonic() + _SSHD_WAIT_S
        for host in self.hosts.values():
            while not self._listening(host):
                process = self._sshd[host.name]
                if process.poll() is not None or time.monotonic() > deadline:
                    log = (host.home / "sshd.log").read_text()
                    raise RuntimeError(f"sshd of {host.name} did not start: {log}")
                time.sleep(0.05)

    def _listening(self, host: EmulatedHost) -> bool:
        done = subprocess.run(
            ["ip", "netns", "exec", host.netns, "ss", "-Hltn", "sport = :22"],
            capture_output=True,
            text=True,
        )
        return host.address in done.stdout

    # Using it -----------------------------------------------------------------------------

    def spec(self, name: str, **changes: Any) -> HostSpec:
        """How the worker logs in to host `name` (`changes`: fields to change)."""
        fields: dict[str, Any] = {
            "name": name,
            "address": self.hosts[name].address,
            "key_file": self.key,
            "known_hosts": self.known_hosts,
        }
        return HostSpec(**(fields | changes))

    def settings(self, **changes: Any) -> dict[str, Any]:
        """An `ssh` target's settings for these hosts (plain mariadbd nodes)."""
        nodes = [
            {
                "host": node.name,
                "address": node.address,
                "ssh_key": str(self.key),
                "service": "mariadbd",
                "defaults_file": str(node.defaults_file),
                "dropin_dir": str(node.dropin_dir),
            }
            for node in self.nodes
        ]
        clients = [
            {"host": c.name, "address": c.address, "ssh_key": str(self.key)} for c in self.clients
        ]
        settings = {
            "nodes": nodes,
            "clients": clients,
            "known_hosts": str(self.known_hosts),
            "user": SQL_USER,
            "password_env": PASSWORD_ENV,
            "state_dir": str(self.root / "state"),
            "table_size": 200,
            "tables": 1,
            "warmup_s": 0,
        }
        return settings | changes

    def processes(self, name: str) -> list[int]:
        """What runs in host `name`'s namespace, sshd's listener aside."""
        listener = self._sshd[name].pid
        return [pid for pid in netns_pids(self.hosts[name].netns) if pid != listener]

    # Tearing down -------------------------------------------------------------------------

    def down(self) -> list[str]:
        """Stop whatever runs in the hosts (by pid, SIGTERM, then SIGKILL), their sshd, and
        remove the namespaces, the bridge and the directory; what had to be stopped besides
        sshd's own sessions (a test that left a server or a command running)."""
        left = []
        for host in self.hosts.values():
            if Path(f"/run/netns/{host.netns}").exists():
                left += [f"{host.name}: {what}" for what in self._stop_all(host)]
        for process in self._sshd.values():
            if process.poll() is None:
                process.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(5)
            if process.poll() is None:
                process.kill()
                process.wait(5)
        for host in self.hosts.values():
            subprocess.run(["ip", "netns", "delete", host.netns], capture_output=True)
        subprocess.run(["ip", "link", "delete", self.bridge], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)
        return left

    def _stop_all(self, host: EmulatedHost) -> list[str]:
        """Stop every process of `host` but its sshd listener (servers shut down cleanly),
        after a moment for the sessions of connections just closed to end; the command lines
        of those that were not sshd sessions."""
        deadline = time.monotonic() + _SESSION_GRACE_S
        while (found := self.processes(host.name)) and time.monotonic() < deadline:
            time.sleep(0.1)
        argvs = {pid: " ".join(_argv(pid)) for pid in found}
        for sig, grace in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 5.0)):
            for pid in found:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + grace
            while (alive := [p for p in found if Path(f"/proc/{p}").exists()]) and (
                time.monotonic() < deadline
            ):
                time.sleep(0.1)
            if not alive:
                break
        return [what for what in argvs.values() if what and not what.startswith("sshd: ")]


def _argv(pid: int) -> list[str]:
    with contextlib.suppress(OSError):
        raw = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        return [part for part in raw.split("\0") if part]
    return []


@pytest.fixture(scope="module")
def password() -> Iterator[None]:
    """The emulated cluster's SQL password in the environment variable its targets name."""
    os.environ[PASSWORD_ENV] = SQL_PASSWORD
    yield
    os.environ.pop(PASSWORD_ENV, None)


@pytest.fixture(scope="module")
def emulation() -> Iterator[Emulation]:
    """Three node hosts and two client hosts, for the whole test module; torn down after it
    (a server a test left running fails the teardown)."""
    hosts = Emulation()
    try:
        hosts.up()
        yield hosts
    finally:
        left = hosts.down()
    assert not left, f"processes left on the emulated hosts: {left}"
