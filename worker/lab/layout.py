"""Where the lab cluster lives and which loopback ports its nodes use: `LabLayout`."""

from __future__ import annotations

import errno
import random
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.galera.kinds import LAB_MAX_NODES, LAB_NODES_LIMIT
from worker.galera_sql import IDENTIFIER, GaleraError, Node

PROVIDER = "/usr/lib/galera/libgalera_smm.so"
SERVER_USER = "mysql"

_SIZE = re.compile(r"^[1-9][0-9]*[KMG]?$")
_UNIX_SOCKET_MAX = 107  # sun_path holds 108 bytes with the terminating NUL
# Node i of a two-site lab listens on WAN_NET.i inside its site's namespace.
WAN_NET = "127.10.0"


@dataclass(frozen=True)
class LabLayout:
    """Where the lab cluster lives and how its nodes are configured.

    Node i (1..max_nodes) listens for clients on client_port_base + i, for Galera on
    galera_port_base + 10 i (gmcast), + 1 (IST) and + 2 (rsync SST), all on 127.0.0.1.
    `timeout_s` bounds each node's start and the cluster's convergence after a resize.

    With `sites` = 2 the nodes alternate between two sites (node 1 in site 1, node 2 in site 2,
    ...), each site a network namespace of its own: node i listens on 127.10.0.i there (unique
    addresses, so that a node's address means the same node in every namespace) and is in the
    Galera segment of its site; `worker.lab.wan` joins the sites through a delay.
    """

    base_dir: Path = Path("/var/lib/galera-doe/lab")
    client_port_base: int = 3310
    galera_port_base: int = 4560
    buffer_pool: str = "64M"
    max_nodes: int = LAB_MAX_NODES
    cluster_name: str = "galera_doe_lab"
    gcache_size: str = "128M"
    redo_log_size: str = "32M"  # small: initialising a datadir and rsync SST copy it whole
    max_connections: int = 1024  # benchmark clients x threads may all land on one node
    timeout_s: float = 60.0
    sites: int = 1
    # Restart-only settings every node starts with: server variables as option lines, Galera
    # provider options (dotted names) appended to wsrep_provider_options.
    settings: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "base_dir", Path(self.base_dir))
        # Paths and values go into option files and SST scripts: keep them plain.
        if not self.base_dir.is_absolute() or re.search(r"[\s\"'#;\\]", str(self.base_dir)):
            raise ValueError(
                f"base_dir must be an absolute path without spaces or quotes: "
                f"{str(self.base_dir)!r}"
            )
        if len(str(self.socket(self.max_nodes))) > _UNIX_SOCKET_MAX:
            raise ValueError(f"base_dir is too long for a unix socket path: {self.base_dir}")
        if not 1 <= self.max_nodes <= LAB_NODES_LIMIT:
            raise ValueError(f"max_nodes must be from 1 to {LAB_NODES_LIMIT}, got {self.max_nodes}")
        for name in ("buffer_pool", "gcache_size", "redo_log_size"):
            if not _SIZE.fullmatch(getattr(self, name)):
                raise ValueError(f"{name} must be a size like 64M, got {getattr(self, name)!r}")
        if not IDENTIFIER.fullmatch(self.cluster_name):
            raise ValueError(f"cluster_name must be an identifier, got {self.cluster_name!r}")
        clients = range(self.client_port(1), self.client_port(self.max_nodes) + 1)
        galera = range(self.gmcast_port(1), self.sst_port(self.max_nodes) + 1)
        for ports in (clients, galera):
            if ports.start < 1024 or ports.stop > 65536:
                raise ValueError(f"ports {ports.start}-{ports.stop - 1} are outside 1024-65535")
        if clients.start < galera.stop and galera.start < clients.stop:
            raise ValueError("client ports and Galera ports of the layout overlap")
        if self.max_connections < 10 or self.timeout_s <= 0:
            raise ValueError("max_connections must be at least 10 and timeout_s positive")
        if self.sites not in (1, 2):
            raise ValueError(f"sites must be 1 or 2, got {self.sites}")

    def node(self, index: int) -> Node:
        """The client address of node `index` (and its site's namespace on a WAN)."""
        return Node(f"node{index}", self.address(index), self.client_port(index), self.netns(index))

    def site(self, index: int) -> int:
        """The site of node `index` (1 or 2): the nodes alternate, so any cluster of two or
        more nodes spans both sites."""
        return (index - 1) % self.sites + 1

    def address(self, index: int) -> str:
        """The address node `index` listens on, for clients and for Galera."""
        return "127.0.0.1" if self.sites == 1 else f"{WAN_NET}.{index}"

    def namespace(self, site: int) -> str:
        """The network namespace of `site` on a WAN (named after the layout's ports: unique
        per lab, so that tests and benchmarks can run labs of their own)."""
        return f"gdoe{self.galera_port_base}s{site}"

    def netns(self, index: int) -> str | None:
        """The namespace node `index` runs in; None with one site (this machine's own)."""
        return None if self.sites == 1 else self.namespace(self.site(index))

    def client_port(self, index: int) -> int:
        """SQL port of node `index`."""
        return self.client_port_base + index

    def gmcast_port(self, index: int) -> int:
        """Galera group communication port of node `index`."""
        return self.galera_port_base + 10 * index

    def ist_port(self, index: int) -> int:
        """Incremental state transfer receive port of node `index`."""
        return self.gmcast_port(index) + 1

    def sst_port(self, index: int) -> int:
        """rsync state snapshot transfer receive port of node `index`."""
        return self.gmcast_port(index) + 2

    def ports(self, index: int) -> tuple[int, int, int, int]:
        """Every port node `index` listens on: client, gmcast, IST, SST."""
        return (
            self.client_port(index),
            self.gmcast_port(index),
            self.ist_port(index),
            self.sst_port(index),
        )

    def node_dir(self, index: int) -> Path:
        """Directory of node `index` (config, datadir, socket, pid file, log)."""
        return self.base_dir / f"node{index}"

    def datadir(self, index: int) -> Path:
        """Datadir of node `index`."""
        return self.node_dir(index) / "data"

    def socket(self, index: int) -> Path:
        """Unix socket of node `index`."""
        return self.node_dir(index) / "mariadbd.sock"

    def config_file(self, index: int) -> Path:
        """Option file node `index` is started with (`--defaults-file`)."""
        return self.node_dir(index) / "my.cnf"

    def log_file(self, index: int) -> Path:
        """Where node `index`'s stdout and stderr go."""
        return self.node_dir(index) / "mariadbd.log"

    def server_options(self, index: int) -> dict[str, str]:
        """The [mysqld] options of node `index`; the wsrep_* ones make it a Galera node."""
        address = self.address(index)
        peers = ",".join(
            f"{self.address(i)}:{self.gmcast_port(i)}" for i in range(1, self.max_nodes + 1)
        )
        settings = dict(self.settings)
        provider = {
            "gmcast.listen_addr": f"tcp://{address}:{self.gmcast_port(index)}",
            "gmcast.segment": str(self.site(index) - 1),
            "ist.recv_addr": f"{address}:{self.ist_port(index)}",
            "gcache.size": self.gcache_size,
        } | {name: value for name, value in settings.items() if "." in name}
        provider_options = ";".join(f"{name}={value}" for name, value in provider.items())
        variables = {name: value for name, value in settings.items() if "." not in name}
        return {
            "user": SERVER_USER,
            "datadir": str(self.datadir(index)),
            "socket": str(self.socket(index)),
            "pid_file": str(self.node_dir(index) / "mariadbd.pid"),
            "port": str(self.client_port(index)),
            "bind_address": address,
            "skip_name_resolve": "ON",
            "max_connections": str(self.max_connections),
            "binlog_format": "ROW",
            "default_storage_engine": "InnoDB",
            "innodb_autoinc_lock_mode": "2",
            "innodb_buffer_pool_size": self.buffer_pool,
            "innodb_log_file_size": self.redo_log_size,
            "innodb_flush_log_at_trx_commit": "2",
            "wsrep_on": "ON",
            "wsrep_provider": PROVIDER,
            "wsrep_cluster_name": self.cluster_name,
            "wsrep_cluster_address": f"gcomm://{peers}",
            "wsrep_node_name": f"node{index}",
            "wsrep_node_address": f"{address}:{self.gmcast_port(index)}",
            "wsrep_node_incoming_address": f"{address}:{self.client_port(index)}",
            "wsrep_sst_method": "rsync",
            "wsrep_sst_receive_address": f"{address}:{self.sst_port(index)}",
            "wsrep_provider_options": provider_options,
        } | variables

    def config_text(self, index: int) -> str:
        """The option file node `index` starts with."""
        lines = [f"{key}={value}" for key, value in self.server_options(index).items()]
        return "[mysqld]\n" + "\n".join(lines) + "\n"


LAB_LAYOUT = LabLayout()


def port_busy(port: int) -> bool:
    """Whether something listens on 127.0.0.1:`port`.

    SO_REUSEADDR, as the servers themselves set it, lets a port in TIME_WAIT count as free.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return True
            raise
    return False


def free_layout(base_dir: Path, **options: Any) -> LabLayout:
    """A layout on random port bases (below the ephemeral range) whose every port is free now,
    for clusters that must not meet another lab (tests, benchmarks). `options` go to LabLayout."""
    rng = random.Random()
    for _ in range(50):
        client = rng.randrange(20000, 32000, 100)
        layout = LabLayout(
            base_dir=base_dir, client_port_base=client, galera_port_base=client + 20, **options
        )
        ports = [port for i in range(1, layout.max_nodes + 1) for port in layout.ports(i)]
        if not any(port_busy(port) for port in ports):
            return layout
    raise GaleraError("no free port range for a lab cluster")
