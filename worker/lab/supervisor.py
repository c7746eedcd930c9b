"""The real local Galera cluster the `lab` target runs trials on.

`LabCluster` runs a cluster on this machine: one `mariadbd` per node with the galera-4 provider,
on loopback ports, under `LabLayout.base_dir` (lab.json, credentials.json and lab.lock: see
`worker.lab.state`):

    restore.json       the values trials' settings replaced, to set back (worker.targets.restore)
    node<i>/           my.cnf, data/, mariadbd.sock, mariadbd.pid, mariadbd.log (stdout+stderr)

Node 1 bootstraps the cluster (`--wsrep-new-cluster`), the others join by rsync SST, or by IST
when their datadir is recent enough. Nodes run as the `mysql` user, so the lab needs root, and
every directory above a datadir must be traversable by `mysql` (the rsync SST runs as it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pymysql
from pymysql.cursors import Cursor

from worker.galera_sql import (
    HEALTH_STATUS,
    GaleraError,
    Node,
    NodeHealth,
    VariableError,
    check_healthy,
    cursor_of,
    health_of,
    node_health,
)
from worker.lab import datadirs, procfs, state
from worker.lab.layout import LAB_LAYOUT, SERVER_USER, LabLayout, port_busy
from worker.lab.state import alive
from worker.lab.wan.routes import Delay
from worker.lab.wan.sites import Wan

log = logging.getLogger(__name__)

MARIADBD = "/usr/sbin/mariadbd"
LAB_HOST = "127.0.0.1"

_POLL_S = 0.2
_PORT_WAIT_S = 5.0  # a node's ports are free once it exited; this covers its SST helpers


class _NodeExitedError(GaleraError):
    """A node's process exited while it was being started."""


def _read(path: Path) -> str:
    """A file's text, '' when there is none."""
    try:
        return path.read_text()
    except OSError:
        return ""


class LabCluster:
    """A real Galera cluster of `mariadbd` processes on this machine, grown and shrunk on demand.

    Nodes outlive the Python process that started them: a new LabCluster on the same layout
    adopts them (from lab.json, checking each pid is a live mariadbd of this layout, and from
    /proc for any the file missed), so trials reuse the cluster across worker restarts.
    """

    def __init__(self, layout: LabLayout = LAB_LAYOUT) -> None:
        self.layout = layout
        running_wan = self.wan.state()
        if running_wan is not None and running_wan["sites"] != layout.sites:
            # Another process put the nodes on two sites: they are there still.
            self.layout = dataclasses.replace(layout, sites=int(running_wan["sites"]))
        try:
            layout.base_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
        except OSError as error:
            raise GaleraError(
                f"cannot create the lab directory {layout.base_dir}: {error}"
            ) from error
        self.credentials = state.load_credentials(self.layout)
        # Adopt now unless another process is changing the cluster (it records what it does).
        with state.locked(self.layout, blocking=False) as locked:
            if locked:
                state.adopt(self.layout)

    # Public API -----------------------------------------------------------------------------

    @property
    def wan(self) -> Wan:
        """The sites of the current layout and the proxy between them."""
        return Wan(self.layout)

    def nodes(self) -> list[Node]:
        """The running nodes, in order."""
        return [self.layout.node(index) for index in sorted(state.running(self.layout))]

    def size(self) -> int:
        """How many nodes run."""
        return len(state.running(self.layout))

    def resize(self, count: int) -> None:
        """Run exactly nodes 1..count, healthy, in one cluster.

        Bootstraps node 1 when nothing runs, starts missing nodes in order (they join by SST or
        IST), stops nodes above `count` cleanly, last first. GaleraError with the tail of the
        failing node's log when a node dies or the cluster does not converge in time.
        """
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"count must be an int, got {count!r}")
        if not 0 <= count <= self.layout.max_nodes:
            raise ValueError(f"count must be from 0 to {self.layout.max_nodes}, got {count}")
        if os.geteuid() != 0:
            raise GaleraError(f"the lab starts its nodes as the {SERVER_USER} user: run as root")
        datadirs.check_traversable(self.layout.base_dir, SERVER_USER)
        with state.locked(self.layout):
            running = state.adopt(self.layout)
            self._stop_nodes([i for i in running if i > count], running)
            if count == 0:
                return
            if not running:
                self._bootstrap(running)
            for index in range(1, count + 1):
                if index not in running:
                    self._start(index, running, bootstrap=False)
            self._wait_cluster(running)
        check_healthy(self.nodes(), self.credentials)

    def place(self, sites: int, delay: Delay) -> None:
        """Put the nodes on `sites` sites (1 or 2) whose traffic between them takes `delay`.

        Moving the nodes between one site and two stops them all (the next `resize` starts
        them in their sites' namespaces, from their datadirs); on two sites a new delay
        applies at once, to open connections too.
        """
        with state.locked(self.layout):
            if sites != self.layout.sites:
                running = state.adopt(self.layout)
                self._stop_nodes(list(running), running)
                self.wan.down()
                self.layout = dataclasses.replace(self.layout, sites=sites)
            if sites == 2:
                self.wan.up(delay)

    def configure(self, settings: Mapping[str, str], *, every_node: bool = False) -> float:
        """Run every node with the restart-only `settings` (server variables, provider options
        with dotted names): a rolling restart of the nodes whose option file differs (of all of
        them with `every_node`, for a fresh cluster state), one at a time, each back in the
        cluster (by IST) before the next stops, so the cluster stays Primary; a single node is
        restarted as a new cluster. Returns the seconds the restarts took, 0 when none was
        needed. VariableError when a node does not start with them.
        """
        with state.locked(self.layout):
            self.layout = dataclasses.replace(self.layout, settings=tuple(sorted(settings.items())))
            running = state.adopt(self.layout)
            stale = [
                index
                for index in sorted(running)
                if every_node
                or _read(self.layout.config_file(index)) != self.layout.config_text(index)
            ]
            if not stale:
                return 0.0
            started = time.monotonic()
            try:
                if len(running) == 1:
                    self._stop_node(stale[0], running)
                    self._bootstrap(running)
                else:
                    for index in stale:
                        self._stop_node(index, running)
                        self._start(index, running, bootstrap=False)
            except _NodeExitedError as error:
                asked = ", ".join(f"{name}={value}" for name, value in settings.items())
                raise VariableError(f"a node does not start with {asked}: {error}") from error
            log.info("restarted %d node(s) in %.1f s", len(stale), time.monotonic() - started)
            return time.monotonic() - started

    def stop(self) -> None:
        """Stop every node cleanly (last first), the WAN between the sites with them, and
        forget the cluster's state file."""
        with state.locked(self.layout):
            running = state.adopt(self.layout)
            self._stop_nodes(list(running), running)
            state.save(self.layout, running)
            self.wan.down()
            self.layout = dataclasses.replace(self.layout, sites=1)

    def reset(self) -> None:
        """Stop everything and wipe every datadir: the next resize starts from nothing."""
        self.stop()
        with state.locked(self.layout):
            for index in range(1, self.layout.max_nodes + 1):
                datadirs.wipe(self.layout, index)

    def status(self) -> dict[str, Any]:
        """The cluster as JSON-friendly data: each node's pid, ports, files and health."""
        running = state.running(self.layout)
        nodes = []
        healthy = bool(running)
        for index in sorted(running):
            node = self.layout.node(index)
            entry: dict[str, Any] = {
                "name": node.name,
                "index": index,
                "pid": running[index],
                "site": self.layout.site(index),
                "netns": node.netns,
                "host": node.host,
                "client_port": node.port,
                "gmcast_port": self.layout.gmcast_port(index),
                "ist_port": self.layout.ist_port(index),
                "sst_port": self.layout.sst_port(index),
                "datadir": str(self.layout.datadir(index)),
                "log": str(self.layout.log_file(index)),
            }
            try:
                health = node_health(node, self.credentials)
            except GaleraError as error:
                entry["health"] = None
                entry["error"] = str(error)
                healthy = False
            else:
                entry["health"] = {
                    "cluster_size": health.cluster_size,
                    "cluster_status": health.cluster_status,
                    "state": health.state,
                    "ready": health.ready,
                }
                entry["error"] = health.problem(len(running)) or None
                healthy = healthy and health.ok(len(running))
            nodes.append(entry)
        return {
            "base_dir": str(self.layout.base_dir),
            "cluster_name": self.layout.cluster_name,
            "sites": self.layout.sites,
            "wan": self.wan.state(),
            "user": self.credentials.user,
            "size": len(running),
            "healthy": healthy,
            "nodes": nodes,
        }

    # Processes -----------------------------------------------------------------------------

    def _bootstrap(self, running: dict[int, int]) -> None:
        """Start node 1 as a new cluster and make sure the lab's SQL user exists on it."""
        fresh = datadirs.prepare_bootstrap(self.layout)
        try:
            self._start(1, running, bootstrap=True)
        except _NodeExitedError as error:
            if fresh:
                raise
            log.warning("node1 cannot bootstrap from its datadir, re-initialising: %s", error)
            datadirs.install(self.layout, 1)
            self._start(1, running, bootstrap=True)
        with self._admin(1) as cursor:
            user = f"'{self.credentials.user}'@'{LAB_HOST}'"
            cursor.execute(f"CREATE USER IF NOT EXISTS {user}")
            cursor.execute(f"ALTER USER {user} IDENTIFIED BY %s", (self.credentials.password,))
            cursor.execute(f"GRANT ALL PRIVILEGES ON *.* TO {user} WITH GRANT OPTION")

    @contextlib.contextmanager
    def _admin(self, index: int) -> Iterator[Cursor]:
        """root over node `index`'s unix socket: works before the lab's user exists."""
        try:
            connection = pymysql.connect(
                unix_socket=str(self.layout.socket(index)),
                user="root",
                connect_timeout=2,
                read_timeout=10,
                autocommit=True,
            )
        except pymysql.MySQLError as error:
            raise GaleraError(f"node{index} does not answer on its socket: {error}") from error
        with cursor_of(connection, f"node{index}") as cursor:
            yield cursor

    def _local_health(self, index: int) -> NodeHealth | None:
        """Node `index`'s health through its socket, None while it does not answer yet."""
        try:
            with self._admin(index) as cursor:
                cursor.execute(
                    "SHOW GLOBAL STATUS WHERE Variable_name IN (%s, %s, %s, %s)", HEALTH_STATUS
                )
                status = {str(name).lower(): str(value) for name, value in cursor.fetchall()}
        except GaleraError:
            return None
        return health_of(self.layout.node(index), status)

    def _wait_ports(self, index: int) -> None:
        """Wait for node `index`'s ports to be free (a previous owner may still be closing);
        in a site's namespace they are the node's alone."""
        if self.layout.netns(index) is not None:
            return
        ports = self.layout.ports(index)
        deadline = time.monotonic() + _PORT_WAIT_S
        while busy := [port for port in ports if port_busy(port)]:
            if time.monotonic() > deadline:
                raise GaleraError(
                    f"node{index} cannot start: port(s) {', '.join(map(str, busy))} on 127.0.0.1 "
                    "are taken by another process"
                )
            time.sleep(_POLL_S)

    def _start(self, index: int, running: dict[int, int], *, bootstrap: bool) -> None:
        """Start node `index` and wait until it is Synced in a cluster of all running nodes."""
        datadirs.make_dirs(self.layout, index)
        config = self.layout.config_file(index)
        config.write_text(self.layout.config_text(index))
        # The saved primary component is for nodes restarting on their own; the lab decides
        # who bootstraps and who joins, and a stale view would only delay the join.
        (self.layout.datadir(index) / "gvwstate.dat").unlink(missing_ok=True)
        self._wait_ports(index)
        log_file = self.layout.log_file(index)
        if log_file.exists():
            log_file.replace(log_file.with_suffix(".log.1"))
        argv = [MARIADBD, f"--defaults-file={config}"]
        if bootstrap:
            argv.append("--wsrep-new-cluster")
        argv = self.layout.node(index).local_command(argv)
        with open(log_file, "wb") as output:
            # A session of its own: the node outlives this process and its terminal's signals.
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        state.CHILDREN[process.pid] = process
        running[index] = process.pid
        state.save(self.layout, running)
        log.info(
            "started node%d (pid %d%s)", index, process.pid, ", bootstrap" if bootstrap else ""
        )
        expected = len(running)

        def pending() -> tuple[int, str] | None:
            health = self._local_health(index)
            if health is None:
                return index, "not answering yet"
            return (index, health.problem(expected)) if not health.ok(expected) else None

        try:
            self._wait(running, pending, f"node{index} did not join the cluster")
        except GaleraError:
            # One that exited is gone already; one that hangs must not linger half-joined.
            if index in running:
                self._stop_node(index, running)
            raise

    def _wait_cluster(self, running: dict[int, int]) -> None:
        """Wait until every running node is healthy and sees all of them."""

        def pending() -> tuple[int, str] | None:
            for index in sorted(running):
                health = self._local_health(index)
                if health is None:
                    return index, "does not answer"
                if not health.ok(len(running)):
                    return index, health.problem(len(running))
            return None

        self._wait(running, pending, f"the cluster did not settle at {len(running)} nodes")

    def _wait(
        self,
        running: dict[int, int],
        pending: Callable[[], tuple[int, str] | None],
        failure: str,
    ) -> None:
        """Poll `pending` until it returns None; GaleraError with the failing node's log tail."""
        deadline = time.monotonic() + self.layout.timeout_s
        while True:
            for index, pid in sorted(running.items()):
                if not alive(pid):
                    del running[index]
                    state.save(self.layout, running)
                    raise _NodeExitedError(
                        f"{failure}: node{index} (pid {pid}) exited; "
                        f"last lines of {self.layout.log_file(index)}:\n"
                        f"{procfs.tail(self.layout.log_file(index))}"
                    )
            problem = pending()
            if problem is None:
                return
            if time.monotonic() > deadline:
                index, reason = problem
                raise GaleraError(
                    f"{failure} within {self.layout.timeout_s:g} s: node{index} {reason}; "
                    f"last lines of {self.layout.log_file(index)}:\n"
                    f"{procfs.tail(self.layout.log_file(index))}"
                )
            time.sleep(_POLL_S)

    def _stop_nodes(self, indexes: list[int], running: dict[int, int]) -> None:
        """Stop the nodes, last first, each after the others have seen the previous one leave:
        only the last node of a component that knows it is alone may bootstrap the next
        cluster, and across a WAN a leave takes round trips to agree on."""
        for index in sorted(indexes, reverse=True):
            self._stop_node(index, running)
            if running:
                try:
                    self._wait_cluster(running)
                except GaleraError as error:
                    log.warning("stopping the lab's nodes: %s", error)

    def _stop_node(self, index: int, running: dict[int, int]) -> None:
        """Shut node `index` down cleanly (SIGTERM by pid); SIGKILL if it hangs past the timeout."""
        pid = running.pop(index)
        for sig, grace in ((signal.SIGTERM, self.layout.timeout_s), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
            deadline = time.monotonic() + grace
            while alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if not alive(pid):
                break
            log.warning("node%d (pid %d) ignored %s for %g s", index, pid, sig.name, grace)
        state.save(self.layout, running)
