"""One node of an `ssh` target: its server started, stopped and checked over SSH, its options,
its Galera state, and the drop-in option file the service owns.

Two kinds of service. `systemd` (the default): `systemctl start|stop|is-active <unit>`, a new
cluster by `galera_new_cluster`, the log from the journal. `mariadbd`: `mariadbd
--defaults-file=F` started in a session of its own in the background (it outlives the SSH
channel; its pid is what the start printed, else its pid file), stopped by SIGTERM to that pid
(SIGKILL past the timeout), a new cluster with `--wsrep-new-cluster`. Any of the commands can be
replaced by an argument list in the targets file (start, stop, check, bootstrap).

The server's options (datadir, pid file, error log, provider options) are read with
`my_print_defaults`. The drop-in (`<dropin_dir>/zz-galera-doe.cnf`) holds a trial's restart-only
settings; a file found there that the service did not write is kept and put back at the end.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.galera.ssh_settings import SshHost, SshNode
from worker import galera_sql
from worker.targets.base import TargetError
from worker.targets.ssh.hosts import Host, HostSpec

DROPIN_NAME = "zz-galera-doe.cnf"
DROPIN_HEADER = "# Written by galera-doe: removed when its worker closes the target."
OPTION_GROUPS = ("server", "mysqld", "mariadb", "mariadbd", "galera")
STOP_TIMEOUT_S = 300
START_TIMEOUT_S = 900  # systemctl start waits for a joiner's SST
SERVER_OUTPUT = "galera-doe-mariadbd.out"  # a mariadbd's output, without an error log
COMMAND_KEYS = ("start", "stop", "check", "bootstrap")

_ALIVE = r"""alive() { [ -n "$1" ] && [ -r "/proc/$1/cmdline" ] &&
  ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null &&
  tr '\0' ' ' <"/proc/$1/cmdline" | grep -qE 'mariadbd|mysqld'; }
p=$1; [ -n "$p" ] && alive "$p" || p=$(cat "$2" 2>/dev/null)
"""
# $1 pid (may be empty), $2 pid file: prints the pid and exits 0 when the server runs.
_CHECK = _ALIVE + 'alive "$p" && { echo "$p"; exit 0; }; exit 1'
# $1 pid, $2 pid file, $3 seconds: SIGTERM, then SIGKILL past the timeout (exit 2).
_STOP = (
    _ALIVE
    + r"""alive "$p" || exit 0
kill -TERM "$p"; i=0
while alive "$p"; do
  i=$((i+1)); if [ "$i" -gt "$(($3*5))" ]; then kill -KILL "$p"; exit 2; fi; sleep 0.2
done"""
)
# $1 the output file, then the server's argv: prints its pid.
_START = r"""out=$1; shift; setsid "$@" </dev/null >>"$out" 2>&1 & echo "$!" """
# $1 the datadir: "initialized" when it holds system tables, then grastate.dat.
_STATE = r"""[ -d "$1/mysql" ] && echo initialized; cat "$1/grastate.dat" 2>/dev/null; exit 0"""
_MARK_SAFE = (
    r"""sed -i 's/^safe_to_bootstrap:[[:space:]]*0/safe_to_bootstrap: 1/' "$1/grastate.dat" """
)


@dataclass(frozen=True)
class NodeSpec:
    """One entry of the targets file's `nodes`."""

    host: HostSpec
    port: int = 3306
    service: str = "systemd"
    unit: str = "mariadb"
    defaults_file: str | None = None
    dropin_dir: str = "/etc/mysql/mariadb.conf.d"
    mariadbd: str = "mariadbd"
    commands: tuple[tuple[str, tuple[str, ...]], ...] = ()  # start/stop/check/bootstrap overrides

    def command(self, key: str) -> list[str] | None:
        """The operator's argv for `key`, None when the default applies."""
        return next((list(argv) for name, argv in self.commands if name == key), None)


def host_spec(host: SshHost, known_hosts: Path) -> HostSpec:
    """How the worker logs in to a host of the targets file (its `sudo` already holds the
    target's default: `ssh_settings`)."""
    return HostSpec(
        host.name,
        host.address,
        ssh_port=host.ssh_port,
        user=host.ssh_user,
        key_file=Path(host.ssh_key),
        known_hosts=known_hosts,
        sudo=host.sudo,
    )


def node_spec(node: SshNode, entry: Mapping[str, Any], host: HostSpec) -> NodeSpec:
    """A node of the targets file (`node`, checked by `ssh_settings`) with what only the worker
    reads from its `entry`: the drop-in directory and the command overrides."""
    where = node.host.where
    if node.service == "mariadbd" and not entry.get("dropin_dir"):
        raise TargetError(
            f"{where}.dropin_dir: a node run as mariadbd needs the directory its defaults file"
            " includes (!includedir), for the service's drop-in option file"
        )
    commands = []
    for key in COMMAND_KEYS:
        argv = entry.get(key)
        if argv is None:
            continue
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise TargetError(f"{where}.{key}: a non-empty argument list, got {argv!r}")
        commands.append((key, tuple(argv)))
    return NodeSpec(
        host=host,
        port=node.port,
        service=node.service,
        unit=node.unit,
        defaults_file=node.defaults_file,
        dropin_dir=str(entry.get("dropin_dir") or NodeSpec.dropin_dir),
        mariadbd=str(entry.get("mariadbd") or NodeSpec.mariadbd),
        commands=tuple(commands),
    )


def provider_text(options: Mapping[str, str]) -> str:
    """wsrep_provider_options as an option file writes it."""
    return ";".join(f"{name}={value}" for name, value in options.items())


class NodeService:
    """One node's server on its host, driven over SSH."""

    def __init__(self, spec: NodeSpec, host: Host) -> None:
        self.spec = spec
        self.host = host
        self.name = spec.host.name
        self.node = galera_sql.Node(self.name, spec.host.address, spec.port)
        self._pid = ""
        self._options: list[tuple[str, str]] | None = None
        # The drop-in on the host, as read first (its content then is the original to put
        # back, unless the service wrote it) and as last written.
        self._original: bytes | None = None
        self._dropin: str | None = None
        self._read_dropin = False

    @property
    def dropin_path(self) -> str:
        """Where the service's drop-in lives on the host."""
        return f"{self.spec.dropin_dir.rstrip('/')}/{DROPIN_NAME}"

    # Options -------------------------------------------------------------------------------

    def options(self) -> list[tuple[str, str]]:
        """The server's options in the order its option files give them (read once)."""
        if self._options is None:
            defaults = (
                [f"--defaults-file={self.spec.defaults_file}"] if self.spec.defaults_file else []
            )
            done = self._run(["my_print_defaults", *defaults, *OPTION_GROUPS], "read its options")
            pairs = []
            for line in done.splitlines():
                name, _, value = line.removeprefix("--").partition("=")
                pairs.append((name.replace("-", "_"), value))
            self._options = pairs
        return self._options

    def option(self, name: str, default: str = "") -> str:
        """The value the server reads last for option `name`."""
        values = [value for key, value in self.options() if key == name]
        return values[-1] if values else default

    def base_provider_options(self) -> dict[str, str]:
        """The provider options of the operator's files, without the drop-in's."""
        values = [value for key, value in self.options() if key == "wsrep_provider_options"]
        ours = self.dropin() or ""
        if values and f"wsrep_provider_options={values[-1]}" in ours.splitlines():
            values.pop()  # the drop-in's own line: read before it was written
        return galera_sql.parse_provider_options(values[-1]) if values else {}

    @property
    def datadir(self) -> str:
        """The server's datadir."""
        return self.option("datadir", "/var/lib/mysql")

    @property
    def pid_file(self) -> str:
        """Where the server writes its pid."""
        pid_file = self.option("pid_file", "")
        if pid_file and not pid_file.startswith("/"):
            pid_file = f"{self.datadir}/{pid_file}"
        return pid_file or f"{self.datadir}/mariadbd.pid"

    # The server ----------------------------------------------------------------------------

    def running(self) -> bool:
        """Whether the server process runs (it may still be joining)."""
        argv = self.spec.command("check")
        if argv is None and self.spec.service == "systemd":
            argv = ["systemctl", "is-active", "--quiet", self.spec.unit]
        if argv is not None:
            return self.host.run(argv, privileged=True, timeout=60).returncode == 0
        done = self.host.run(self._script(_CHECK, self._pid, self.pid_file), privileged=True)
        self._pid = done.stdout.strip() if done.returncode == 0 else ""
        return done.returncode == 0

    def start(self, *, bootstrap: bool) -> None:
        """Start the server (as a new cluster with `bootstrap`); returns once it is launched
        (systemd: once the unit is active, i.e. the node is synced)."""
        argv = self.spec.command("bootstrap" if bootstrap else "start")
        if argv is None and self.spec.service == "systemd":
            argv = ["galera_new_cluster"] if bootstrap else ["systemctl", "start", self.spec.unit]
        if argv is not None:
            self._run(argv, "start its server", timeout=START_TIMEOUT_S)
            return
        server = [self.spec.mariadbd, f"--defaults-file={self.spec.defaults_file}"]
        if bootstrap:
            server.append("--wsrep-new-cluster")
        # Its own error log keeps its messages; without one, its output does.
        output = "/dev/null" if self.option("log_error") else f"{self.datadir}/{SERVER_OUTPUT}"
        self._pid = self._run(self._script(_START, output, *server), "start mariadbd").strip()

    def stop(self) -> None:
        """Shut the server down cleanly; returns once it has exited."""
        argv = self.spec.command("stop")
        if argv is None and self.spec.service == "systemd":
            argv = ["systemctl", "stop", self.spec.unit]
        if argv is None:
            argv = self._script(_STOP, self._pid, self.pid_file, str(STOP_TIMEOUT_S))
        done = self.host.run(argv, privileged=True, timeout=STOP_TIMEOUT_S + 30)
        if done.returncode != 0:
            raise self.host.error(
                f"stopping its server failed ({done.returncode}): {done.stderr.strip()[-500:]}"
            )
        self._pid = ""

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of the server's log (its error log, the journal with systemd)."""
        log_error = self.option("log_error")
        if self.spec.service == "systemd" and not log_error:
            argv = ["journalctl", "-u", self.spec.unit, "-n", str(lines), "--no-pager"]
        else:
            path = log_error or f"{self.datadir}/{SERVER_OUTPUT}"
            if not path.startswith("/"):
                path = f"{self.datadir}/{path}"
            argv = ["tail", "-n", str(lines), path]
        done = self.host.run(argv, privileged=True, timeout=30)
        return (done.stdout or done.stderr).strip()

    # Galera state --------------------------------------------------------------------------

    def saved_state(self) -> tuple[bool, dict[str, str]]:
        """Whether the datadir holds system tables, and its grastate.dat as a mapping."""
        text = self._run(self._script(_STATE, self.datadir), "read its grastate.dat")
        lines = text.splitlines()
        initialized = bool(lines) and lines[0] == "initialized"
        pairs = (line.split(":", 1) for line in lines[initialized:] if ":" in line)
        return initialized, {key.strip(): value.strip() for key, value in pairs}

    def mark_safe_to_bootstrap(self) -> None:
        """Declare the node safe to bootstrap (it has the most recent state)."""
        self._run(self._script(_MARK_SAFE, self.datadir), "mark it safe to bootstrap")

    # The drop-in ---------------------------------------------------------------------------

    def dropin(self) -> str | None:
        """The drop-in's content on the host now (None: there is none)."""
        if not self._read_dropin:
            found = self.host.read(self.dropin_path, privileged=True)
            text = found.decode(errors="replace") if found is not None else None
            # One the service wrote is a worker's leftover, not the operator's file.
            if text is None or not text.startswith(DROPIN_HEADER):
                self._original = found
            self._dropin = text
            self._read_dropin = True
        return self._dropin

    def write_dropin(self, text: str | None) -> None:
        """Put `text` in the drop-in (None: remove it) unless it is there already."""
        if self.dropin() == text:
            return
        if text is None:
            self._run(["rm", "-f", "--", self.dropin_path], "remove its drop-in")
        else:
            self.host.put(text.encode(), self.dropin_path, privileged=True)
        self._dropin = text

    def restore_dropin(self) -> None:
        """Put back what was at the drop-in's path before the service (nothing, mostly)."""
        if not self._read_dropin:
            return
        if self._original is None:
            self.write_dropin(None)
        elif self._dropin != self._original.decode(errors="replace"):
            self.host.put(self._original, self.dropin_path, privileged=True)
            self._dropin = self._original.decode(errors="replace")

    # Helpers -------------------------------------------------------------------------------

    @staticmethod
    def _script(script: str, *args: str) -> list[str]:
        return ["sh", "-c", script, "gdoe", *args]

    def _run(self, argv: Sequence[str], what: str, *, timeout: float = 120) -> str:
        done = self.host.run(argv, privileged=True, timeout=timeout)
        if done.returncode != 0:
            command = shlex.join(argv) if argv[:2] != ["sh", "-c"] else "its script"
            raise self.host.error(
                f"cannot {what} ({command} exited {done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[-500:]}"
            )
        return done.stdout


def dropin_text(
    target: str, settings: Mapping[str, str], provider: Mapping[str, str]
) -> str | None:
    """The drop-in for restart-only `settings` (dotted names are provider options, merged into
    the node's own `provider` options); None without settings."""
    if not settings:
        return None
    variables = {name: value for name, value in settings.items() if "." not in name}
    options = {name: value for name, value in settings.items() if "." in name}
    lines = [DROPIN_HEADER, f"# target: {target}", "[mysqld]"]
    lines += [f"{name}={value}" for name, value in variables.items()]
    if options:
        lines.append(f"wsrep_provider_options={provider_text(dict(provider) | options)}")
    return "\n".join(lines) + "\n"
