"""Commands on the operator's hosts over SSH, for the worker's synchronous target code.

Every host is reached with asyncssh, with the key the targets file names and the host key
checked against its known_hosts file (an unknown or changed key fails, never accepted). All
connections of a process live on one asyncio loop in a daemon thread (`_LoopThread`); `Host` and
`HostPool` are its synchronous facade. Every failure to reach or use a host is a `HostError`
naming it: an infrastructure failure, so the trial is retried.

Nothing a command starts outlives its SSH channel: the command runs under a small remote sh
watchdog (`_WATCHDOG`) in a session of its own, and when the channel's stdin reaches EOF (the
channel closed, the connection dropped, the worker was killed) the watchdog kills that session's
process group. The wrapper reports the command's pid and its start time on its first stderr
line, so a command cut short is killed by pid, and commands started together report their skew.
A daemon the command itself puts in a session of its own (a server's start) stays, as meant.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import threading
import time
from collections.abc import Coroutine, Sequence
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Any, TypeVar

import asyncssh

from worker.targets.base import InfrastructureError, TrialCancelledError

__all__ = ["AtOnce", "Completed", "Host", "HostError", "HostPool", "HostSpec"]

T = TypeVar("T")

# $1: 1 to wait for a line on stdin before starting (commands started at one instant), $2: the
# bytes of input that follow on stdin (kept in a temporary file for the command), then the argv.
# After them stdin carries nothing until EOF, which the background reader takes as "kill".
_WATCHDOG = r"""g=$1 n=$2; shift 2
exec 3<&0 0</dev/null
if [ "$g" = 1 ]; then echo @gdoe-ready >&2; IFS= read -r _ <&3 || exit 125; fi
t=/dev/null
if [ "$n" -gt 0 ]; then
  t=$(mktemp) || exit 125
  head -c "$n" <&3 >"$t" || { rm -f "$t"; exit 125; }
fi
sh -c 'echo "@gdoe $$ $(date +%s.%N)" >&2; exec setsid "$@"' gdoe "$@" <"$t" 3<&- &
c=$!
{ while IFS= read -r _; do :; done; kill -s KILL -- "-$c"; } <&3 >/dev/null 2>&1 &
w=$!
exec 3<&-
wait "$c"; r=$?
kill "$w" 2>/dev/null
[ "$t" = /dev/null ] || rm -f "$t"
exit "$r"
"""
_MARKER = b"@gdoe "
_READY = b"@gdoe-ready\n"
# put: into a temporary file beside the target, then renamed over it (never half written).
_PUT = r"""umask 077; t=$(mktemp "$1.XXXXXX") || exit 1
cat >"$t" && chmod "$2" "$t" && mv -f "$t" "$1" || { rm -f "$t"; exit 1; }"""
_READ = r"""if [ -e "$1" ]; then exec cat -- "$1"; fi; exit 3"""
_MISSING = 3
_KILL_TIMEOUT_S = 10.0
_CANCEL_POLL_S = 0.05


@dataclass(frozen=True)
class HostSpec:
    """One host of the targets file and how to log in to it."""

    name: str  # as in the targets file: in every error message
    address: str  # IP or DNS name
    _: KW_ONLY
    ssh_port: int = 22
    user: str = "root"
    key_file: Path
    known_hosts: Path
    sudo: bool = False  # privileged commands run under `sudo -n`

    def __post_init__(self) -> None:
        object.__setattr__(self, "key_file", Path(self.key_file).expanduser())
        object.__setattr__(self, "known_hosts", Path(self.known_hosts).expanduser())


class HostError(InfrastructureError):
    """A host could not be reached or a command on it failed: the trial is retried."""

    def __init__(self, spec: HostSpec, message: str) -> None:
        super().__init__(f"host '{spec.name}' ({spec.address}): {message}")
        self.host = spec.name
        self.address = spec.address


@dataclass(frozen=True)
class Completed:
    """A finished remote command."""

    returncode: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class AtOnce:
    """Commands started together: results in the order given, and the hosts' start skew."""

    results: list[Completed]
    start_skew_s: float


class _LoopThread:
    """The process's asyncio loop in a daemon thread (a forked child makes one of its own)."""

    _lock = threading.Lock()
    _current: _LoopThread | None = None

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="ssh-hosts", daemon=True).start()

    @classmethod
    def get(cls) -> _LoopThread:
        """The loop of this process."""
        with cls._lock:
            if cls._current is None or cls._current.pid != os.getpid():
                cls._current = _LoopThread()
            return cls._current

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the loop and wait for its result (an interrupt cancels it)."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise


@dataclass
class _Started:
    """A wrapped command whose channel is open; pid and start time once it reported them."""

    host: Host
    process: asyncssh.SSHClientProcess[bytes]
    argv: list[str]
    privileged: bool
    pid: int | None = None
    started_at: float | None = None
    first_stderr: bytes = b""
    done: bool = False


def _wrapped(argv: Sequence[str], *, gated: bool, size: int, sudo: bool) -> str:
    """The remote command line that runs `argv` under the watchdog."""
    parts = ["sh", "-c", _WATCHDOG, "gdoe-watch", "1" if gated else "0", str(size), *argv]
    return shlex.join(["sudo", "-n", *parts] if sudo else parts)


def _send(process: asyncssh.SSHClientProcess[bytes], data: bytes, *, eof: bool = False) -> None:
    """Write to a command's stdin; one that ended without reading it says why by its exit."""
    with contextlib.suppress(BrokenPipeError, asyncssh.Error):
        process.stdin.write(data)
        if eof:
            process.stdin.write_eof()


def _decode(data: bytes | str | None) -> str:
    return data if isinstance(data, str) else (data or b"").decode("utf-8", errors="replace")


def _tail(text: str, lines: int = 10) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


class Host:
    """One host: a connection opened on first use and reused; commands run synchronously."""

    def __init__(self, spec: HostSpec, *, connect_timeout: float = 10.0) -> None:
        self.spec = spec
        self.connect_timeout = connect_timeout
        self._pid = os.getpid()
        self._connection: asyncssh.SSHClientConnection | None = None
        self._lock: asyncio.Lock | None = None

    def _here(self) -> _LoopThread:
        """This process's loop; a forked child drops the parent's connection for one of its own."""
        if self._pid != os.getpid():
            self._pid, self._connection, self._lock = os.getpid(), None, None
        return _LoopThread.get()

    def error(self, message: str) -> HostError:
        """A HostError about this host."""
        return HostError(self.spec, message)

    # Synchronous facade ---------------------------------------------------------------------

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float = 60,
        input: str | None = None,
        privileged: bool = False,
        check: bool = False,
    ) -> Completed:
        """Run `argv` (shell-quoted remotely); `privileged` runs it under sudo -n when the
        host says so; `check` raises HostError unless it exits 0. A command past `timeout`
        is killed and raises HostError."""
        data = input.encode() if input is not None else b""
        done = self._here().call(self._run(list(argv), data, privileged, timeout))
        if check and done.returncode != 0:
            tail = _tail(done.stderr) or "(no output)"
            raise self.error(f"`{shlex.join(argv)}` exited {done.returncode}: {tail}")
        return done

    def put(
        self, data: bytes, remote_path: str, *, mode: int = 0o644, privileged: bool = False
    ) -> None:
        """Write `data` to `remote_path` (atomically: a temporary file renamed over it)."""
        argv = ["sh", "-c", _PUT, "gdoe-put", remote_path, format(mode, "o")]
        code, _, stderr = self._here().call(self._plain(argv, data, privileged))
        if code != 0:
            raise self.error(f"cannot write {remote_path}: {_tail(_decode(stderr))}")

    def read(self, remote_path: str, *, privileged: bool = False) -> bytes | None:
        """The content of `remote_path`, None when it does not exist."""
        argv = ["sh", "-c", _READ, "gdoe-read", remote_path]
        code, stdout, stderr = self._here().call(self._plain(argv, b"", privileged))
        if code == _MISSING:
            return None
        if code != 0:
            raise self.error(f"cannot read {remote_path}: {_tail(_decode(stderr))}")
        return stdout

    def close(self) -> None:
        """Close the connection: whatever its commands started is killed remotely."""
        if self._connection is not None:
            self._here().call(self._close())

    # On the loop ----------------------------------------------------------------------------

    async def _connect(self) -> asyncssh.SSHClientConnection:
        """The open connection, opened now when there is none (or the last one dropped)."""
        if self._connection is not None and not self._connection.is_closed():
            return self._connection
        spec = self.spec
        if not spec.key_file.is_file():
            raise self.error(f"the key file {spec.key_file} (ssh_key) does not exist")
        if not spec.known_hosts.is_file():
            raise self.error(f"the known_hosts file {spec.known_hosts} does not exist")
        try:
            self._connection = await asyncio.wait_for(
                asyncssh.connect(
                    spec.address,
                    port=spec.ssh_port,
                    username=spec.user,
                    client_keys=[str(spec.key_file)],
                    known_hosts=str(spec.known_hosts),
                    agent_path=None,
                    config=[],
                    preferred_auth="publickey",
                    connect_timeout=self.connect_timeout,
                    keepalive_interval=30,
                ),
                self.connect_timeout + 5,
            )
        except Exception as error:
            raise self.error(self._why(error)) from error
        return self._connection

    def _why(self, error: Exception) -> str:
        """What a failed connection means, with what to check."""
        spec = self.spec
        where = f"{spec.address}:{spec.ssh_port}"
        if isinstance(error, asyncssh.HostKeyNotVerifiable):
            return (
                f"its host key is not the one {spec.known_hosts} lists for {where} (unknown or "
                f"changed): check the key, then add it (ssh-keyscan -p {spec.ssh_port} "
                f"{spec.address} >> {spec.known_hosts})"
            )
        if isinstance(error, asyncssh.PermissionDenied):
            return (
                f"the key {spec.key_file} was refused for user {spec.user}: is its public key "
                f"in ~{spec.user}/.ssh/authorized_keys?"
            )
        if isinstance(error, asyncssh.KeyImportError):
            return f"the key file {spec.key_file} cannot be used: {error}"
        if isinstance(error, ConnectionRefusedError):
            return f"{where} refused the connection: is sshd listening on port {spec.ssh_port}?"
        if isinstance(error, TimeoutError):
            return f"cannot reach {where}: no answer within {self.connect_timeout:g} s"
        if isinstance(error, OSError):
            return f"cannot reach {where}: {error.strerror or error}"
        return f"SSH to {where} failed: {error}"

    async def _session(self, command: str) -> asyncssh.SSHClientProcess[bytes]:
        """A channel running `command`; HostError when the connection fails."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            connection = await self._connect()
        try:
            opening = connection.create_process(command, encoding=None)
            return await asyncio.wait_for(opening, self.connect_timeout + 20)
        except (asyncssh.Error, OSError, TimeoutError) as error:
            self._connection = None
            raise self.error(f"cannot open an SSH channel: {error!r}") from error

    async def _plain(
        self, argv: list[str], data: bytes, privileged: bool
    ) -> tuple[int, bytes, bytes]:
        """Run a short command that ends at EOF on its own (no watchdog): code, out, err."""
        sudo = privileged and self.spec.sudo
        process = await self._session(shlex.join(["sudo", "-n", *argv] if sudo else argv))
        try:
            _send(process, data, eof=True)
            done = await asyncio.wait_for(process.wait(), 120)
        except (asyncssh.Error, OSError, TimeoutError) as error:
            raise self.error(f"`{shlex.join(argv[:2])}` failed: {error!r}") from error
        finally:
            process.close()
        code = done.exit_status if done.exit_status is not None else 255
        return code, bytes(done.stdout or b""), bytes(done.stderr or b"")

    async def _start(
        self, argv: list[str], *, gated: bool, size: int, privileged: bool
    ) -> _Started:
        """Open a channel running `argv` under the watchdog (gated: waiting for the go line)."""
        sudo = privileged and self.spec.sudo
        process = await self._session(_wrapped(argv, gated=gated, size=size, sudo=sudo))
        return _Started(self, process, argv, privileged)

    async def _collect(self, started: _Started) -> Completed:
        """Read the pid line, then everything until the command exits."""
        process = started.process
        try:
            first = await process.stderr.readline()
            if first.startswith(_MARKER):
                _, pid, when = first.split()
                started.pid, started.started_at = int(pid), float(when)
            else:
                started.first_stderr += first
            stdout, stderr, done = await asyncio.gather(
                process.stdout.read(), process.stderr.read(), process.wait()
            )
        except (asyncssh.Error, OSError) as error:
            self._connection = None
            raise self.error(f"`{shlex.join(started.argv)}` lost its channel: {error}") from error
        started.done = True
        process.close()
        code = done.exit_status if done.exit_status is not None else 255
        return Completed(code, _decode(stdout), _decode(started.first_stderr + stderr))

    async def _ready(self, started: _Started) -> None:
        """Wait until a gated command waits for its go line (its shell started)."""
        try:
            line = await started.process.stderr.readline()
        except (asyncssh.Error, OSError) as error:
            self._connection = None
            raise self.error(f"`{shlex.join(started.argv)}` lost its channel: {error}") from error
        if line != _READY:
            started.first_stderr = line  # it failed before: the rest of its stderr follows

    async def _kill(self, started: _Started) -> None:
        """Kill a command's process group by its pid, then close its channel (the watchdog
        kills it too, should the kill not get through)."""
        if started.pid is not None and not started.done:
            argv = ["kill", "-s", "KILL", "--", f"-{started.pid}"]
            with contextlib.suppress(HostError, asyncssh.Error, OSError, TimeoutError):
                await asyncio.wait_for(self._plain(argv, b"", started.privileged), _KILL_TIMEOUT_S)
        started.process.close()

    async def _run(
        self, argv: list[str], data: bytes, privileged: bool, timeout: float
    ) -> Completed:
        started = await self._start(argv, gated=False, size=len(data), privileged=privileged)
        try:
            _send(started.process, data)
            return await asyncio.wait_for(self._collect(started), timeout)
        except TimeoutError:
            raise self.error(f"`{shlex.join(argv)}` did not finish within {timeout:g} s") from None
        finally:
            await self._kill(started)

    async def _close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(connection.wait_closed(), 5)


class HostPool:
    """One connection per host, opened lazily and reused; one asyncio loop in a daemon thread."""

    def __init__(self, specs: Sequence[HostSpec], *, connect_timeout: float = 10.0) -> None:
        names = [spec.name for spec in specs]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"hosts listed twice: {', '.join(twice)}")
        self._hosts = {spec.name: Host(spec, connect_timeout=connect_timeout) for spec in specs}

    @property
    def names(self) -> list[str]:
        """The hosts' names, in the order given."""
        return list(self._hosts)

    def host(self, name: str) -> Host:
        """The host called `name` (KeyError for another name)."""
        return self._hosts[name]

    def run_at_once(
        self,
        commands: Sequence[tuple[str, Sequence[str]]],
        *,
        timeout: float,
        cancel: threading.Event | None = None,
        privileged: bool = False,
    ) -> AtOnce:
        """Start every (host name, argv) at one instant and wait for all of them: channels are
        opened first, then every command is released together. On cancel (TrialCancelledError),
        timeout (HostError) or any failure, every remote command is killed before this returns."""
        jobs = [(self.host(name), list(argv)) for name, argv in commands]
        for host, _ in jobs:
            host._here()  # a forked child opens connections of its own
        return _LoopThread.get().call(_at_once(jobs, timeout, cancel, privileged))

    def close(self) -> None:
        """Close every connection (what their commands started is killed)."""
        for host in self._hosts.values():
            host.close()


async def _at_once(
    jobs: list[tuple[Host, list[str]]],
    timeout: float,
    cancel: threading.Event | None,
    privileged: bool,
) -> AtOnce:
    started: list[_Started] = []
    deadline = time.monotonic() + timeout
    try:
        opened = await asyncio.gather(
            *(h._start(argv, gated=True, size=0, privileged=privileged) for h, argv in jobs),
            return_exceptions=True,
        )
        started = [s for s in opened if isinstance(s, _Started)]
        for failure in opened:
            if isinstance(failure, BaseException):
                raise failure
        await asyncio.wait_for(
            asyncio.gather(*(s.host._ready(s) for s in started)), deadline - time.monotonic()
        )
        for each in started:
            _send(each.process, b"\n")
        collecting = asyncio.gather(*(s.host._collect(s) for s in started))
        results = await _unless_cancelled(collecting, deadline - time.monotonic(), cancel)
    except TimeoutError:
        late = next((s for s in started if not s.done), started[0])
        raise late.host.error(
            f"`{shlex.join(late.argv)}` did not finish within {timeout:g} s"
        ) from None
    finally:
        await asyncio.gather(*(s.host._kill(s) for s in started), return_exceptions=True)
    times = [s.started_at for s in started if s.started_at is not None]
    return AtOnce(list(results), max(times) - min(times) if times else 0.0)


async def _unless_cancelled(
    work: asyncio.Future[list[Completed]], timeout: float, cancel: threading.Event | None
) -> list[Completed]:
    """`work`'s result; TrialCancelledError once `cancel` is set, TimeoutError past `timeout`."""
    waiter = asyncio.ensure_future(_wait_for_event(cancel))
    try:
        done, _ = await asyncio.wait(
            {work, waiter}, timeout=max(timeout, 0), return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        waiter.cancel()
    if work in done:
        return work.result()
    work.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await work
    if waiter in done:
        raise TrialCancelledError("the trial was cancelled")
    raise TimeoutError


async def _wait_for_event(event: threading.Event | None) -> None:
    """Return once `event` is set (never without one)."""
    if event is None:
        await asyncio.Event().wait()
        return
    while not event.is_set():
        await asyncio.sleep(_CANCEL_POLL_S)
