"""The `ssh` target: trials on the operator's own Galera cluster, its servers driven over SSH.

Settings (checked by `experiments.galera.ssh_settings`): `nodes`, a list of `{host, address,
port, ssh_port, ssh_user, ssh_key, sudo, service, unit, defaults_file, dropin_dir, start, stop,
check, bootstrap}` (`worker.targets.ssh.nodes`); `clients`, the client hosts, where the clients'
sysbench runs (`worker.targets.ssh.load`); `known_hosts`, the file the hosts' keys are checked
against; `user` and `password_env` (the SQL account, the password in that environment
variable); `sudo`, the default of every host; `state_dir`, where the values the trials' SET
GLOBALs replaced are kept (`worker.targets.restore`); `join_timeout_s`; `stop_at_close`, to stop
every node when the worker closes the target.

`nodes` is the cluster's size here, as on the lab: a trial on k nodes starts the first k listed
that do not run (each joins by IST or SST and is Synced before the next) and then stops the
others cleanly, last first, each once the rest saw it leave, so the cluster stays Primary. A
cluster found entirely down is bootstrapped from the node whose grastate.dat says
safe_to_bootstrap: 1 (else from the one with the highest seqno, declared safe), or the trial
fails naming the nodes to check. Restart-only settings go into each node's drop-in option file
and are applied by a rolling restart; `close` puts back what the drop-ins replaced (the servers
keep running with the settings until their next restart).
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from experiments.galera import ssh_settings
from worker import galera_sql
from worker.targets.base import InfeasibleError, InfrastructureError, TargetError
from worker.targets.operator_account import OperatorAccount
from worker.targets.ssh.hosts import HostError, HostPool
from worker.targets.ssh.load import ClientLoadTarget
from worker.targets.ssh.nodes import NodeService, dropin_text, host_spec, node_spec

log = logging.getLogger(__name__)

_POLL_S = 0.5
_PROCESS_CHECK_S = 3.0  # how often a joining node's process is looked at over SSH


class SshTarget(OperatorAccount, ClientLoadTarget):
    """Trials on an operator's cluster reached over SSH."""

    kind: ClassVar[str] = "ssh"

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        super().__init__(name, settings)
        try:
            ssh_settings.check_ssh_settings(self.settings)
            nodes = ssh_settings.ssh_nodes(self.settings)
            clients = ssh_settings.ssh_clients(self.settings)
        except ValueError as error:
            raise TargetError(f"target '{name}': settings.{error}") from None
        known_hosts = Path(ssh_settings.known_hosts_path(self.settings))
        for host in [n.host for n in nodes] + clients:
            if not Path(host.ssh_key).expanduser().is_file():
                raise TargetError(
                    f"target '{name}': settings.{host.where}.ssh_key: {host.ssh_key} does not exist"
                )
        node_hosts = [host_spec(n.host, known_hosts) for n in nodes]
        self.client_hosts = [host_spec(c, known_hosts) for c in clients]
        self.pool = HostPool(node_hosts + self.client_hosts)
        entries = self.settings["nodes"]
        self.services = [
            NodeService(node_spec(node, entry, spec), self.pool.host(spec.name))
            for node, entry, spec in zip(nodes, entries, node_hosts, strict=True)
        ]
        if "nodes" not in (self.settings.get("defaults") or {}):
            self.defaults["nodes"] = len(self.services)
        self.read_account(name, self.settings)
        self.join_timeout_s = float(self.settings.get("join_timeout_s", 600))
        self.stop_at_close = bool(self.settings.get("stop_at_close", False))
        # How long the last leave and join took (s), for the record and the figures.
        self.timings: dict[str, float] = {}
        self._closed = False

    # Cluster size ----------------------------------------------------------------------------

    def nodes_for(self, count: int) -> list[galera_sql.Node]:
        """Run exactly the first `count` nodes listed, healthy, in one cluster."""
        if count > len(self.services):
            raise InfeasibleError(
                f"target '{self.name}' lists {len(self.services)} nodes; {count} asked"
            )
        up = self._running()
        if not up:
            up = [self._bootstrap()]
        for service in self.services[:count]:
            if service not in up:
                self._join(service, up)
        for service in reversed(list(up)):
            if self.services.index(service) >= count:
                self._leave(service, up)
        return [service.node for service in self.services[:count]]

    def _running(self) -> list[NodeService]:
        """The nodes whose server runs, in the order listed (a node answering SQL runs)."""
        return [
            s for s in self.services if galera_sql.answers(s.node, self.credentials) or s.running()
        ]

    def _join(self, service: NodeService, up: list[NodeService]) -> None:
        """Start `service` and wait until it and every running node see all of them."""
        started = time.monotonic()
        service.start(bootstrap=False)
        up.append(service)
        up.sort(key=self.services.index)
        try:
            self._wait_healthy(up, service, f"{service.name} did not join the cluster")
        except InfrastructureError:
            up.remove(service)
            raise
        self.timings["join_s"] = time.monotonic() - started
        log.info("%s joined in %.1f s", service.name, self.timings["join_s"])

    def _leave(self, service: NodeService, up: list[NodeService]) -> None:
        """Stop `service` cleanly and wait until the others saw it leave."""
        started = time.monotonic()
        service.stop()
        up.remove(service)
        if up:
            self._wait_healthy(up, None, f"the cluster did not settle after {service.name} left")
        self.timings["leave_s"] = time.monotonic() - started
        log.info("%s left in %.1f s", service.name, self.timings["leave_s"])

    def _bootstrap(self) -> NodeService:
        """Start a new cluster from the node with the most recent state (module docstring)."""
        states = {s.name: s.saved_state() for s in self.services}
        candidates = [s for s in self.services if states[s.name][0]]
        if not candidates:
            first = self.services[0]
            raise TargetError(
                f"target '{self.name}': every node is down and none has an initialised datadir:"
                f" check {first.name} ({first.datadir})"
            )
        ranks = {s.name: _bootstrap_rank(states[s.name][1]) for s in candidates}
        best = max(candidates, key=lambda s: ranks[s.name])
        safe, seqno = ranks[best.name]
        if not safe:
            tied = [s.name for s in candidates if ranks[s.name] == (safe, seqno)]
            if seqno < 0 or len(tied) > 1:
                raise TargetError(
                    f"target '{self.name}': every node is down and none is safe to bootstrap"
                    f" (grastate.dat); check {', '.join(tied)}: run galera_recovery there and"
                    " set safe_to_bootstrap: 1 on the node with the highest seqno"
                )
            log.warning("no node left the cluster last; bootstrapping %s (seqno %d)", best, seqno)
            best.mark_safe_to_bootstrap()
        best.start(bootstrap=True)
        self._wait_healthy([best], best, f"{best.name} did not bootstrap a new cluster")
        return best

    def _wait_healthy(
        self, services: list[NodeService], joining: NodeService | None, failure: str
    ) -> None:
        """Wait until every node of `services` is healthy in a cluster of all of them;
        InfrastructureError (with the log of `joining`, when its server exited) past the
        join timeout."""
        nodes = [s.node for s in services]
        deadline = time.monotonic() + self.join_timeout_s
        checked = time.monotonic()
        while True:
            try:
                galera_sql.check_healthy(nodes, self.credentials, expected_size=len(nodes))
                return
            except galera_sql.GaleraError as error:
                problem = str(error)
            now = time.monotonic()
            if joining is not None and now - checked > _PROCESS_CHECK_S:
                checked = now
                if not joining.running():
                    raise InfrastructureError(
                        f"{failure}: its server exited; the last lines of its log:\n"
                        f"{joining.log_tail()}"
                    )
            if now > deadline:
                raise InfrastructureError(f"{failure} within {self.join_timeout_s:g} s: {problem}")
            time.sleep(_POLL_S)

    # Restart-only settings -----------------------------------------------------------------

    def restart_with(self, settings: Mapping[str, str], *, every_node: bool = False) -> float:
        """Put `settings` in every node's drop-in and restart the running nodes whose drop-in
        differed (all of them with `every_node`), one at a time, each back in the cluster before
        the next; a single running node is restarted as a new cluster. The seconds the restarts
        took, 0 without one. VariableError when a node does not start with them (it is started
        again with its previous drop-in)."""
        wanted = {s.name: self._dropin_for(s, settings) for s in self.services}
        up = self._running()
        for service in self.services:
            if service not in up:
                service.write_dropin(wanted[service.name])
        stale = [s for s in up if every_node or s.dropin() != wanted[s.name]]
        if not stale:
            return 0.0
        started = time.monotonic()
        for service in stale:
            self._restart(service, up, wanted[service.name], settings)
        log.info("restarted %d node(s) in %.1f s", len(stale), time.monotonic() - started)
        return time.monotonic() - started

    def _dropin_for(self, service: NodeService, settings: Mapping[str, str]) -> str | None:
        dotted = any("." in name for name in settings)
        provider = service.base_provider_options() if dotted else {}
        return dropin_text(self.name, settings, provider)

    def _restart(
        self,
        service: NodeService,
        up: list[NodeService],
        text: str | None,
        settings: Mapping[str, str],
    ) -> None:
        """Restart one running node with drop-in `text`."""
        previous = service.dropin()
        alone = up == [service]
        if alone:
            service.stop()
            up.clear()
        else:
            self._leave(service, up)
        service.write_dropin(text)

        def start() -> None:
            if alone:
                service.start(bootstrap=True)
                up.append(service)
                self._wait_healthy(up, service, f"{service.name} did not restart")
            else:
                self._join(service, up)

        try:
            start()
        except (InfrastructureError, HostError) as error:
            service.write_dropin(previous)
            with contextlib.suppress(InfrastructureError):
                start()
            asked = ", ".join(f"{name}={value}" for name, value in settings.items())
            raise galera_sql.VariableError(
                f"{service.name} does not start with {asked or 'its drop-in'}: {error}"
            ) from error

    # Closing ---------------------------------------------------------------------------------

    def close(self) -> None:
        """Remove the client hosts' directories, put back what the drop-ins replaced, stop the
        nodes with `stop_at_close`, and close the SSH connections (nothing the target started
        over them stays)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.close_clients()
            for service in self.services:
                with contextlib.suppress(HostError):
                    service.restore_dropin()
            if self.stop_at_close:
                self._stop_all()
        finally:
            self.pool.close()

    def _stop_all(self) -> None:
        """Stop every running node, last first, each once the others saw it leave."""
        up = self._running()
        for service in reversed(list(up)):
            try:
                self._leave(service, up)
            except InfrastructureError as error:
                log.warning("stopping target '%s': %s", self.name, error)


def _bootstrap_rank(state: Mapping[str, str]) -> tuple[bool, int]:
    """Preference to bootstrap from: safe first, then the most advanced. A datadir that never
    ran with Galera (no grastate.dat) is safe, as Galera itself takes it."""
    seqno = state.get("seqno", "-1")
    return (
        state.get("safe_to_bootstrap", "1") == "1",
        int(seqno) if re.fullmatch(r"-?\d+", seqno) else -1,
    )
