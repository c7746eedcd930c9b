"""The client machines of an `ssh` target: each client's sysbench run on a host of its own.

Once per worker (at its first trial) every client host gets a directory of the service's own,
`mktemp -d /tmp/galera-doe-<target>.XXXXXX` (two workers never share one, nor do hosts that
share a file system), with the project's Lua workloads and the operator's scripts in it;
`close` removes it. A trial's commands are all started at one instant (`HostPool.run_at_once`)
and the start skew is what the hosts report.

The password is never on a command line: it goes to a 0600 file in that directory, which the
command opens as descriptor 3 and removes before sysbench starts (sysbench reads it as
`--config-file=/proc/self/fd/3`, as a local one reads its memfd); the file of a command that
never started is removed after the run. Around sysbench the command reads the host's
/proc/stat, so each host's CPU busy share during the run is known (`ClientLoad`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worker.sysbench import PasswordFile
from worker.targets.ssh.hosts import Completed, HostError, HostPool

log = logging.getLogger(__name__)

# Above this busy share a client host may have been the limit of the run, not the cluster.
SATURATED_BUSY = 0.9
REMOTE_TMP = "/tmp"
# The descriptor a client command holds the password file open on.
PASSWORD = PasswordFile(3)
WORKER = "worker"  # the load generator's name when sysbench runs on the worker itself
_CPU = "@gdoe-cpu "
# $1: the password file ('' without one), then sysbench's argv.
_CLIENT = r"""s=$1; shift
if [ -n "$s" ]; then exec 3<"$s" || exit 126; rm -f -- "$s"; fi
echo "@gdoe-cpu $(head -n 1 /proc/stat)" >&2
"$@"; r=$?
echo "@gdoe-cpu $(head -n 1 /proc/stat)" >&2
exit "$r"
"""


@dataclass(frozen=True)
class CpuTimes:
    """The machine's CPU time so far, in ticks: busy and in all."""

    busy: int
    total: int


def cpu_times(line: str) -> CpuTimes:
    """The aggregate `cpu` line of /proc/stat (user nice system idle iowait irq softirq steal;
    guest time is inside user): idle and iowait are not busy."""
    fields = line.split()
    if len(fields) < 5 or fields[0] != "cpu":
        raise ValueError(f"not the cpu line of /proc/stat: {line[:80]!r}")
    ticks = [int(value) for value in fields[1:9]]
    idle = sum(ticks[3:5])
    return CpuTimes(busy=sum(ticks) - idle, total=sum(ticks))


def local_cpu() -> CpuTimes:
    """This machine's CPU times."""
    return cpu_times(Path("/proc/stat").read_text().splitlines()[0])


def busy_share(before: CpuTimes, after: CpuTimes) -> float:
    """The share of CPU time that was busy from `before` to `after` (0 to 1)."""
    total = after.total - before.total
    if total <= 0:
        return 0.0
    return min(1.0, max(0.0, (after.busy - before.busy) / total))


@dataclass(frozen=True)
class ClientLoad:
    """What the load generators did during a trial's run: each one's CPU busy share, how far
    apart they started (None: the worker started its own processes), their sysbench."""

    hosts: list[str]
    cpu_busy: list[float]
    start_skew_s: float | None = None
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def saturated(self) -> list[str]:
        """The hosts busier than SATURATED_BUSY."""
        return [
            h for h, busy in zip(self.hosts, self.cpu_busy, strict=True) if busy > SATURATED_BUSY
        ]

    def responses(self) -> dict[str, float]:
        """`client_cpu_busy`: the busiest load generator's share."""
        return {"client_cpu_busy": max(self.cpu_busy)}

    def record(self) -> dict[str, Any]:
        """What the trial's record keeps: the flag at the top, for the DBA to see."""
        skew = self.start_skew_s
        return {
            "clients_saturated": bool(self.saturated),
            "saturated_clients": self.saturated,
            "clients": {
                "hosts": self.hosts,
                "cpu_busy": dict(zip(self.hosts, self.cpu_busy, strict=True)),
                "start_skew_ms": None if skew is None else round(skew * 1000, 3),
                "saturated_above": SATURATED_BUSY,
                "sysbench": self.versions,
            },
        }


class ClientHosts:
    """The client hosts of one target, their directories and their sysbench runs."""

    def __init__(
        self, target: str, pool: HostPool, names: Sequence[str], scripts: Mapping[str, Path]
    ) -> None:
        """`scripts`: what each directory holds, a file name there -> the file on the worker."""
        self.target = target
        self.pool = pool
        self.names = list(names)
        self.scripts = dict(scripts)
        self._dirs: dict[str, str] = {}
        self.versions: dict[str, str] = {}
        self._lock = threading.Lock()

    def directory(self, name: str) -> str:
        """Host `name`'s directory of the service (made now if it has none)."""
        self.ready()
        return self._dirs[name]

    def ready(self) -> None:
        """Give every host without one its directory, with the scripts; check its sysbench."""
        with self._lock:
            for name in self.names:
                if name not in self._dirs:
                    self._dirs[name] = self._prepare(name)

    def _prepare(self, name: str) -> str:
        host = self.pool.host(name)
        version = host.run(["sysbench", "--version"], timeout=30)
        if version.returncode != 0:
            raise host.error(
                f"sysbench does not run there (exit {version.returncode}): install it on the"
                " client host"
            )
        self.versions[name] = version.stdout.strip()
        made = host.run(
            ["mktemp", "-d", f"{REMOTE_TMP}/galera-doe-{self.target}.XXXXXX"], check=True
        )
        directory = made.stdout.strip()
        try:
            for file_name, local in self.scripts.items():
                host.put(local.read_bytes(), f"{directory}/{file_name}")
        except BaseException:
            with contextlib.suppress(HostError):
                host.run(["rm", "-rf", "--", directory])
            raise
        return directory

    def run(
        self,
        commands: Sequence[tuple[str, list[str]]],
        *,
        config_file: bytes | None,
        timeout: float,
        cancel: threading.Event | None,
    ) -> tuple[list[tuple[int, str]], ClientLoad]:
        """Run each (host, sysbench argv) at one instant, `config_file` (the password's
        --config-file, None without one) given to each as descriptor 3 (`PASSWORD`); every
        command's exit code and output, and the load the hosts carried."""
        self.ready()
        secrets: list[tuple[str, str]] = []
        try:
            wrapped = []
            for index, (name, argv) in enumerate(commands):
                secret = ""
                if config_file is not None:
                    secret = f"{self._dirs[name]}/password-{index}.cnf"
                    secrets.append((name, secret))
                    self.pool.host(name).put(config_file, secret, mode=0o600)
                wrapped.append((name, ["sh", "-c", _CLIENT, "gdoe-client", secret, *argv]))
            done = self.pool.run_at_once(wrapped, timeout=timeout, cancel=cancel)
        finally:
            self._remove(secrets)
        results, busy = [], []
        for completed in done.results:
            output, cpu = _split(completed)
            results.append((completed.returncode, output))
            busy.append(busy_share(*cpu) if len(cpu) == 2 else 0.0)
        hosts = [name for name, _ in commands]
        versions = {name: self.versions.get(name, "") for name in hosts}
        return results, ClientLoad(hosts, busy, done.start_skew_s, versions)

    def _remove(self, files: Sequence[tuple[str, str]]) -> None:
        """Remove the password files left by commands that did not start."""
        for name, path in files:
            with contextlib.suppress(HostError):
                self.pool.host(name).run(["rm", "-f", "--", path], timeout=30)

    def close(self) -> None:
        """Remove every host's directory (a host out of reach keeps it: logged)."""
        with self._lock:
            dirs, self._dirs = self._dirs, {}
        for name, directory in dirs.items():
            try:
                self.pool.host(name).run(["rm", "-rf", "--", directory], timeout=60, check=True)
            except HostError as error:
                log.warning("cannot remove %s: %s", directory, error)


def _split(completed: Completed) -> tuple[str, list[CpuTimes]]:
    """A client command's output (sysbench's stdout, then its stderr) and the /proc/stat lines
    the command read around it."""
    cpu: list[CpuTimes] = []
    errors = []
    for line in completed.stderr.splitlines():
        if line.startswith(_CPU):
            cpu.append(cpu_times(line.removeprefix(_CPU)))
        else:
            errors.append(line)
    tail = "\n".join(errors)
    return completed.stdout + (f"\n{tail}\n" if tail else ""), cpu
