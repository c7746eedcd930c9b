"""A TCP proxy that delays each direction of every connection by half a round trip.

The lab has no netem, so a WAN between two sites (two network namespaces) is emulated in user
space: for every node of one site the proxy listens, inside the other site's namespace, on the
node's own address and port, connects to the node in its namespace and, with `bind_source`,
binds that upstream socket to the address of whoever connected, so the node sees the true
origin. Each chunk read is written out one-way delay later on a pipelined delay line (chunks of
one direction never reorder, reading goes on while earlier chunks wait), so the delay costs
latency, not throughput.

Run `python -m worker.wan.delay_proxy CONFIG.json [--ready-file PATH]`; CONFIG is
{"routes": [{Route fields}...], "rtt_ms": .., "jitter_ms": ..}. PATH receives
{"rtt_ms": .., "jitter_ms": ..} once every route listens, and again after each SIGHUP, which
re-reads the delay from CONFIG (the routes stay). SIGTERM or SIGINT closes every socket and exits
0; a route that cannot listen exits 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import heapq
import itertools
import json
import math
import os
import random
import signal
import socket
import sys
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

CLONE_NEWNET = 0x40000000
_CLOCK_MONOTONIC = 1
_TFD_TIMER_ABSTIME = 1
_PR_SET_TIMERSLACK = 29
NETNS_DIR = Path("/run/netns")
MAX_IN_FLIGHT = 8 * 1024 * 1024
"""Bytes one direction of a connection may hold in its delay line before it stops reading."""

# A timer may fire a hair before its due time as clocks round; a microsecond early is nothing.
_EARLY_S = 1e-6

_libc = ctypes.CDLL(None, use_errno=True)


class _Timespec(ctypes.Structure):
    _fields_ = (("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long))


class _Itimerspec(ctypes.Structure):
    _fields_ = (("it_interval", _Timespec), ("it_value", _Timespec))


_libc.timerfd_settime.argtypes = (
    ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Itimerspec), ctypes.c_void_p
)  # fmt: skip


def _check(result: int, call: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{call}: {os.strerror(errno)}")
    return result


@dataclass(frozen=True)
class Route:
    """Listen on listen_host:listen_port (in `listen_netns`), forward to connect_host:connect_port
    (in `connect_netns`); None is the proxy's own namespace."""

    listen_host: str
    listen_port: int
    connect_host: str
    connect_port: int
    listen_netns: str | None = None
    connect_netns: str | None = None
    bind_source: bool = False
    delayed: bool = True

    def __post_init__(self) -> None:
        for name in ("listen_host", "connect_host"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"{name} must be a non-empty string")
        for name in ("listen_port", "connect_port"):
            port = getattr(self, name)
            if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
                raise ValueError(f"{name} must be a port number, not {port!r}")
        for name in ("listen_netns", "connect_netns"):
            netns = getattr(self, name)
            if netns is not None and (not isinstance(netns, str) or not netns or "/" in netns):
                raise ValueError(f"{name} must be a namespace name or null, not {netns!r}")
        for name in ("bind_source", "delayed"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false")

    def __str__(self) -> str:
        def end(host: str, port: int, netns: str | None) -> str:
            return f"{host}:{port}" + (f" (netns {netns})" if netns else "")

        return (
            f"{end(self.listen_host, self.listen_port, self.listen_netns)} -> "
            f"{end(self.connect_host, self.connect_port, self.connect_netns)}"
        )


@dataclass(frozen=True)
class Delay:
    """Round-trip time to add; each direction waits rtt_ms / 2, varied by up to +-jitter_ms / 2
    per chunk (order kept)."""

    rtt_ms: float = 0.0
    jitter_ms: float = 0.0

    def __post_init__(self) -> None:
        for name in ("rtt_ms", "jitter_ms"):
            value = getattr(self, name)
            if (
                not isinstance(value, int | float)
                or isinstance(value, bool)
                or not math.isfinite(value)
                or value < 0
            ):
                raise ValueError(f"{name} must be a finite number >= 0, not {value!r}")


NO_DELAY = Delay()


class RouteError(Exception):
    """A route cannot listen (or its namespace does not exist)."""

    def __init__(self, route: Route, error: OSError) -> None:
        super().__init__(f"route {route}: {error}")
        self.route = route


def load_config(path: Path) -> tuple[list[Route], Delay]:
    """Routes and delay from a JSON file
    {"routes": [...Route fields...], "rtt_ms": .., "jitter_ms": ..}.

    ValueError names what is wrong; OSError when the file cannot be read.
    """
    try:
        config = json.loads(Path(path).read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON: {error}") from None
    if not isinstance(config, dict) or not isinstance(config.get("routes"), list):
        raise ValueError('expected {"routes": [...], "rtt_ms": .., "jitter_ms": ..}')
    known = {field.name for field in fields(Route)}
    routes = []
    for index, item in enumerate(config["routes"]):
        if not isinstance(item, dict) or not item.keys() <= known:
            raise ValueError(f"routes[{index}] must be an object with fields of {sorted(known)}")
        try:
            routes.append(Route(**item))
        except (TypeError, ValueError) as error:
            raise ValueError(f"routes[{index}]: {error}") from None
    delay = Delay(config.get("rtt_ms", 0.0), config.get("jitter_ms", 0.0))
    return routes, Delay(float(delay.rtt_ms), float(delay.jitter_ms))


def _setns(fd: int) -> None:
    _check(_libc.setns(fd, CLONE_NEWNET), "setns")


def socket_in(netns: str | None, family: int = socket.AF_INET) -> socket.socket:
    """A TCP socket of network namespace `netns` (/run/netns/<netns>; None: the thread's own).

    Only creation needs the switch: a socket keeps its namespace for good, so whatever binds,
    listens or connects it later, in any thread, does so in `netns`.
    """
    if netns is None:
        return socket.socket(family, socket.SOCK_STREAM)
    target = os.open(NETNS_DIR / netns, os.O_RDONLY | os.O_CLOEXEC)
    try:
        # Opened here rather than once per process: setns acts on the calling thread only, and
        # once switched /proc/thread-self/ns/net would name the target.
        home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        try:
            _setns(target)
            try:
                return socket.socket(family, socket.SOCK_STREAM)
            finally:
                _setns(home)
        finally:
            os.close(home)
    finally:
        os.close(target)


def _nodelay(sock: socket.socket) -> None:
    # Galera sends many small messages: Nagle would hold them for an ACK, a delay of its own.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _Clock:
    """Calls delay lines back at their due times through a timerfd read by the event loop.

    The loop's own timers (call_at) sleep in epoll, whose timeout is whole milliseconds rounded
    up: each way came out about 0.5 ms late, a tenth of a 10 ms round trip. A timerfd wakes the
    loop when due, give or take the machine's wake-up latency (0.1-0.2 ms on the 2-core VM).
    Its deadlines are absolute times of CLOCK_MONOTONIC, the clock of loop.time().
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.fd = _check(
            _libc.timerfd_create(_CLOCK_MONOTONIC, os.O_NONBLOCK | os.O_CLOEXEC), "timerfd_create"
        )
        self.heap: list[tuple[float, int, _Line]] = []
        self.tokens = itertools.count(1)
        self.armed = math.inf
        self.spec = _Itimerspec()
        loop.add_reader(self.fd, self._fire)

    def call_at(self, when: float, line: _Line) -> int:
        """Have `line.deliver()` called at `when` while `line.timer` is the token returned."""
        token = next(self.tokens)
        heapq.heappush(self.heap, (when, token, line))
        if when < self.armed:
            self._arm(when)
        return token

    def close(self) -> None:
        self.loop.remove_reader(self.fd)
        os.close(self.fd)

    def _arm(self, when: float) -> None:
        self.armed = when
        seconds = math.floor(when)
        self.spec.it_value.tv_sec = seconds
        self.spec.it_value.tv_nsec = int((when - seconds) * 1e9)
        _check(
            _libc.timerfd_settime(self.fd, _TFD_TIMER_ABSTIME, ctypes.byref(self.spec), None),
            "timerfd_settime",
        )

    def _fire(self) -> None:
        with contextlib.suppress(BlockingIOError):  # re-armed since epoll saw it: no count
            os.read(self.fd, 8)
        heap = self.heap
        # Lines reschedule themselves while delivering: arm once, after them all (and even
        # after an error, or every line would stall).
        self.armed = -math.inf
        now = self.loop.time() + _EARLY_S
        try:
            while heap and heap[0][0] <= now:
                _, token, line = heapq.heappop(heap)
                if line.timer == token:
                    line.deliver()
        finally:
            self.armed = math.inf
            if heap:
                self._arm(heap[0][0])


class _End(asyncio.Protocol):
    """One socket of a proxied connection: what it reads enters `outgoing`, `incoming` writes
    to it."""

    def __init__(self, pipe: _Pipe) -> None:
        self.pipe = pipe
        self.transport: asyncio.Transport | None = None
        self.outgoing: _Line
        self.incoming: _Line

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        _nodelay(transport.get_extra_info("socket"))
        if self is self.pipe.down:
            self.pipe.accepted()

    def data_received(self, data: bytes) -> None:
        self.outgoing.push(data)

    def eof_received(self) -> bool:
        self.outgoing.push(None)
        return True  # half-close: the other direction goes on

    def pause_writing(self) -> None:
        self.incoming.dest_full(True)

    def resume_writing(self) -> None:
        self.incoming.dest_full(False)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.pipe.close(abort=exc is not None)


class _Line:
    """One direction of a connection: a delay line from `source` to `dest`. Chunks wait in a
    queue with their due times (non-decreasing); one timer, set for the head, writes out
    whatever is due."""

    def __init__(self, pipe: _Pipe, source: _End, dest: _End) -> None:
        self.pipe = pipe
        self.loop = pipe.loop
        self.clock = pipe.clock
        self.delay = pipe.delay
        self.source = source
        self.dest = dest
        self.queue: deque[tuple[float, bytes | None]] = deque()
        self.queued = 0
        self.last_due = 0.0
        self.timer: int | None = None  # the token of the clock's call
        self.over_limit = False
        self.blocked = False  # dest's write buffer is full
        self.reading = True
        self.finished = False  # EOF delivered

    def push(self, data: bytes | None) -> None:
        """Queue a chunk (None: EOF) for one-way delay from now."""
        delay = self.delay()
        one_way = delay.rtt_ms / 2000.0
        if delay.jitter_ms:
            one_way = max(0.0, one_way + (random.random() - 0.5) * delay.jitter_ms / 1000.0)
        now = self.loop.time()
        due = now + one_way
        if due < self.last_due:
            due = self.last_due
        self.last_due = due
        if due <= now and not self.queue and not self.blocked:
            self._write(data)
            return
        self.queue.append((due, data))
        if data is not None:
            self.queued += len(data)
            if self.queued >= MAX_IN_FLIGHT and not self.over_limit:
                self.over_limit = True
                self._flow()
        if self.timer is None and not self.blocked:
            self.timer = self.clock.call_at(self.queue[0][0], self)

    def dest_full(self, full: bool) -> None:
        """Dest's transport paused (or resumed) writing: hold the queue and stop reading."""
        self.blocked = full
        self._flow()
        if not full and self.queue and self.timer is None:
            self.deliver()

    def cancel(self) -> None:
        self.timer = None
        self.queue.clear()

    def deliver(self) -> None:
        """Write out what is due; call back for the next chunk."""
        self.timer = None
        queue = self.queue
        now = self.loop.time() + _EARLY_S
        while queue and queue[0][0] <= now and not self.blocked:
            _, data = queue.popleft()
            if data is not None:
                self.queued -= len(data)
            self._write(data)
            if self.pipe.closed:
                return
        if queue and not self.blocked:
            self.timer = self.clock.call_at(queue[0][0], self)
        if self.over_limit and self.queued < MAX_IN_FLIGHT:
            self.over_limit = False
            self._flow()

    def _write(self, data: bytes | None) -> None:
        transport = self.dest.transport
        if transport is None:
            return
        if data is not None:
            transport.write(data)
            return
        if transport.can_write_eof():
            transport.write_eof()
        self.finished = True
        self.pipe.line_finished()

    def _flow(self) -> None:
        reading = not (self.over_limit or self.blocked)
        transport = self.source.transport
        if reading == self.reading or transport is None:
            return
        self.reading = reading
        if reading:
            transport.resume_reading()
        else:
            transport.pause_reading()


class _Pipe:
    """An accepted connection, its upstream connection and the two delay lines between them."""

    def __init__(
        self,
        route: Route,
        family: int,
        address: tuple[object, ...],
        delay: Callable[[], Delay],
        clock: _Clock,
        live: set[_Pipe],
    ) -> None:
        self.route = route
        self.family = family
        self.address = address
        self.loop = clock.loop
        self.clock = clock
        self.delay = delay if route.delayed else _no_delay
        self.live = live
        self.down = _End(self)
        self.up = _End(self)
        self.forward = _Line(self, self.down, self.up)
        self.backward = _Line(self, self.up, self.down)
        self.down.outgoing = self.up.incoming = self.forward
        self.up.outgoing = self.down.incoming = self.backward
        self.connecting: asyncio.Task[None] | None = None
        self.closed = False

    def accepted(self) -> None:
        assert self.down.transport is not None
        self.live.add(self)
        # Nothing to forward to until upstream connects; the kernel buffers meanwhile.
        self.down.transport.pause_reading()
        self.connecting = self.loop.create_task(self._connect())

    async def _connect(self) -> None:
        assert self.down.transport is not None
        peer = self.down.transport.get_extra_info("peername")
        try:
            if peer is None:
                raise OSError("the accepted peer is gone")
            sock = socket_in(self.route.connect_netns, self.family)
        except OSError:
            self.connecting = None
            self.close()
            return
        try:
            sock.setblocking(False)
            _nodelay(sock)
            if self.route.bind_source:
                # Leaves the port to connect(), which may then reuse one another peer holds:
                # many connections from one source address share the ephemeral range.
                sock.setsockopt(socket.IPPROTO_IP, socket.IP_BIND_ADDRESS_NO_PORT, 1)
                sock.bind((peer[0], 0))
            await self.loop.sock_connect(sock, self.address)
            await self.loop.create_connection(lambda: self.up, sock=sock)
        except OSError:
            sock.close()
            self.connecting = None
            self.close()
            return
        except asyncio.CancelledError:
            sock.close()
            raise
        self.connecting = None
        if self.down.transport is not None:
            self.down.transport.resume_reading()

    def line_finished(self) -> None:
        if self.forward.finished and self.backward.finished:
            self.close()

    def close(self, abort: bool = False) -> None:
        """Close both sockets (abort: at once, dropping what is buffered)."""
        if self.closed:
            return
        self.closed = True
        self.live.discard(self)
        self.forward.cancel()
        self.backward.cancel()
        if self.connecting is not None:
            self.connecting.cancel()
        for end in (self.down, self.up):
            if end.transport is not None:
                if abort:
                    end.transport.abort()
                else:
                    end.transport.close()


def _no_delay() -> Delay:
    return NO_DELAY


def _address(host: str, port: int) -> tuple[int, tuple[object, ...]]:
    family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    return family, address


def _listener(route: Route) -> socket.socket:
    family, address = _address(route.listen_host, route.listen_port)
    sock = socket_in(route.listen_netns, family)
    try:
        # A restarted proxy must not wait for its old connections' TIME_WAIT to pass.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(socket.SOMAXCONN)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


async def serve(
    routes: Sequence[Route], delay: Callable[[], Delay], ready: Callable[[], None]
) -> None:
    """Listen on every route, forward until cancelled; `delay()` is read for each chunk so a
    change applies at once; `ready()` is called once every listener is bound.

    RouteError when a route cannot listen or names a namespace that does not exist; on
    cancellation every listener and connection is closed.
    """
    loop = asyncio.get_running_loop()
    clock = _Clock(loop)
    live: set[_Pipe] = set()
    servers: list[asyncio.Server] = []

    def factory(route: Route, family: int, address: tuple[object, ...]) -> Callable[[], _End]:
        return lambda: _Pipe(route, family, address, delay, clock, live).down

    try:
        for route in routes:
            try:
                if route.connect_netns is not None:
                    os.close(os.open(NETNS_DIR / route.connect_netns, os.O_RDONLY))
                family, address = _address(route.connect_host, route.connect_port)
                sock = _listener(route)
            except OSError as error:
                raise RouteError(route, error) from None
            servers.append(await loop.create_server(factory(route, family, address), sock=sock))
        ready()
        await loop.create_future()
    finally:
        for server in servers:
            server.close()
        for pipe in list(live):
            pipe.close(abort=True)
        clock.close()


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text)
    temporary.replace(path)


async def _run(config: Path, routes: list[Route], delay: Delay, ready_file: Path | None) -> int:
    loop = asyncio.get_running_loop()
    current = delay

    def report() -> None:
        if ready_file is not None:
            _write_atomically(ready_file, json.dumps(asdict(current)) + "\n")

    def reload() -> None:
        nonlocal current
        try:
            _, current = load_config(config)
        except (OSError, ValueError) as error:
            print(f"delay_proxy: {config}: {error}; delay stays {current}", file=sys.stderr)
            return
        report()

    task = loop.create_task(serve(routes, lambda: current, report))
    loop.add_signal_handler(signal.SIGHUP, reload)
    for stop in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(stop, task.cancel)
    try:
        await task
    except RouteError as error:
        print(f"delay_proxy: {error}", file=sys.stderr)
        return 2
    except asyncio.CancelledError:
        if not task.cancelled():
            raise
    finally:
        for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m worker.wan.delay_proxy CONFIG.json [--ready-file PATH]`: serve the routes
    until SIGTERM or SIGINT (exit 0); exit 2 when the config is invalid or a route cannot
    listen."""
    parser = argparse.ArgumentParser(
        prog="python -m worker.wan.delay_proxy",
        description="Forward TCP routes, delaying each direction by half the round trip.",
    )
    parser.add_argument("config", type=Path, help='{"routes": [...], "rtt_ms", "jitter_ms"}')
    parser.add_argument(
        "--ready-file",
        type=Path,
        help="written (atomically) with the delay once every route listens and on each SIGHUP",
    )
    args = parser.parse_args(argv)
    # The kernel may wake a timer up to the thread's slack late (50 us by default) to batch
    # wake-ups, and every delivery waits on one.
    _libc.prctl(_PR_SET_TIMERSLACK, 1, 0, 0, 0)
    try:
        routes, delay = load_config(args.config)
    except (OSError, ValueError) as error:
        print(f"delay_proxy: {args.config}: {error}", file=sys.stderr)
        return 2
    return asyncio.run(_run(args.config, routes, delay, args.ready_file))


if __name__ == "__main__":
    raise SystemExit(main())
