"""The two sites of a lab cluster: a network namespace per site and the delay proxy between them.

Galera learns a peer's address as the IP it sees plus the port the peer advertises, and binds
its outgoing connections to its own listen address. So each node has an address of its own
(`LabLayout.address`) and, in the other site's namespace, the proxy listens on that very
address and port, forwards into the node's namespace with the origin's address as source, and
delays every byte by half the round trip each way: no cross-site connection can bypass it.
Inside a site traffic is direct. The worker's own SQL reaches every node through an undelayed
forwarder on the node's address in this machine's namespace.

State, next to the cluster's (`LabLayout.base_dir`):

    wan.json        the proxy's pid, the sites and the delay, read by any process that asks
    wan-proxy.json  the proxy's routes and delay (rewritten and re-read on SIGHUP)
    wan-proxy.ready written by the proxy once it listens, and again with each new delay
    wan-proxy.log   its stdout and stderr
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from worker.galera_sql import GaleraError
from worker.lab import procfs
from worker.lab.layout import LabLayout
from worker.lab.wan.routes import Delay, Route

log = logging.getLogger(__name__)

_START_TIMEOUT_S = 10.0
_STOP_GRACE_S = 5.0
_POLL_S = 0.05


def routes(layout: LabLayout) -> list[Route]:
    """Every route of a two-site layout: each node's Galera ports (gmcast, IST, SST) from the
    other site, delayed, and its SQL port from this machine's namespace, undelayed."""
    found = []
    for index in range(1, layout.max_nodes + 1):
        address, home = layout.address(index), layout.netns(index)
        for site in range(1, layout.sites + 1):
            away = layout.namespace(site)
            if away == home:
                continue
            for port in layout.ports(index)[1:]:
                found.append(
                    Route(address, port, address, port, away, home, bind_source=True, delayed=True)
                )
        client = layout.client_port(index)
        found.append(Route(address, client, address, client, None, home, delayed=False))
    return found


class Wan:
    """The sites and the proxy of one lab layout; every method is idempotent, and `down`
    works from any process (it finds the proxy by its recorded pid, the namespaces by name)."""

    def __init__(self, layout: LabLayout) -> None:
        self.layout = layout
        self._state = layout.base_dir / "wan.json"
        self._config = layout.base_dir / "wan-proxy.json"
        self._ready = layout.base_dir / "wan-proxy.ready"
        self._log = layout.base_dir / "wan-proxy.log"

    def state(self) -> dict[str, Any] | None:
        """{"pid", "sites", "rtt_ms", "jitter_ms"} of the running WAN, None when there is none."""
        try:
            state: dict[str, Any] = json.loads(self._state.read_text())
        except (OSError, ValueError):
            return None
        return state if self._is_proxy(int(state.get("pid", 0))) else None

    def up(self, delay: Delay) -> None:
        """Namespaces for both sites and the proxy between them, with `delay`; a running WAN
        only takes the new delay."""
        if self.layout.sites != 2:
            raise ValueError("a WAN needs a layout of two sites")
        running = self.state()
        if running is not None:
            self._set_delay(running, delay)
            return
        self.down()
        for site in (1, 2):
            _ip("netns", "add", self.layout.namespace(site))
            _ip("-n", self.layout.namespace(site), "link", "set", "lo", "up")
        self._write_config(delay)
        self._ready.unlink(missing_ok=True)
        with open(self._log, "ab") as output:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "worker.lab.wan.delay_proxy",
                    str(self._config),
                    "--ready-file",
                    str(self._ready),
                ],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # like the nodes, it outlives this process
            )
        self._record(process.pid, delay)
        log.info("started the WAN proxy (pid %d, rtt %g ms)", process.pid, delay.rtt_ms)
        self._wait_ready(delay, lambda: process.poll() is None)

    def down(self) -> None:
        """Stop the proxy and delete the sites' namespaces (nodes in them must be stopped
        first: a namespace's name goes, but it lives on while a process holds it)."""
        try:
            pid = int(json.loads(self._state.read_text())["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            pid = 0
        if self._is_proxy(pid):
            for sig, grace in ((signal.SIGTERM, _STOP_GRACE_S), (signal.SIGKILL, _STOP_GRACE_S)):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
                deadline = time.monotonic() + grace
                while self._is_proxy(pid) and time.monotonic() < deadline:
                    time.sleep(_POLL_S)
                if not self._is_proxy(pid):
                    break
            log.info("stopped the WAN proxy (pid %d)", pid)
        for site in (1, 2):
            name = self.layout.namespace(site)
            if Path(f"/run/netns/{name}").exists():
                _ip("netns", "delete", name)
        self._state.unlink(missing_ok=True)

    def _set_delay(self, running: dict[str, Any], delay: Delay) -> None:
        if (running["rtt_ms"], running["jitter_ms"]) == (delay.rtt_ms, delay.jitter_ms):
            return
        self._write_config(delay)
        os.kill(int(running["pid"]), signal.SIGHUP)
        self._wait_ready(delay, lambda: self._is_proxy(int(running["pid"])))
        self._record(int(running["pid"]), delay)
        log.info("WAN delay now rtt %g ms, jitter %g ms", delay.rtt_ms, delay.jitter_ms)

    def _write_config(self, delay: Delay) -> None:
        config = {"routes": [asdict(r) for r in routes(self.layout)], **asdict(delay)}
        temporary = self._config.with_suffix(".tmp")
        temporary.write_text(json.dumps(config))
        temporary.replace(self._config)

    def _record(self, pid: int, delay: Delay) -> None:
        self._state.write_text(
            json.dumps({"pid": pid, "sites": self.layout.sites, **asdict(delay)})
        )

    def _wait_ready(self, delay: Delay, alive: Any) -> None:
        """Wait until the proxy reports that it listens with `delay`."""
        wanted = asdict(delay)
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            with contextlib.suppress(OSError, ValueError):
                if json.loads(self._ready.read_text()) == wanted:
                    return
            if not alive():
                raise GaleraError(f"the WAN proxy exited; its log:\n{procfs.tail(self._log)}")
            if time.monotonic() > deadline:
                raise GaleraError(
                    f"the WAN proxy did not take rtt {delay.rtt_ms:g} ms within "
                    f"{_START_TIMEOUT_S:g} s; its log:\n{procfs.tail(self._log)}"
                )
            time.sleep(_POLL_S)

    def _is_proxy(self, pid: int) -> bool:
        """Whether `pid` is this layout's proxy (a recycled pid is not)."""
        return pid > 0 and procfs.running(pid) and str(self._config) in procfs.argv(pid)


def _ip(*args: str) -> None:
    """Run `ip ARGS`; GaleraError with its message when it fails."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0 and "File exists" not in done.stderr:
        raise GaleraError(f"ip {' '.join(args)} failed: {done.stderr.strip()}")
