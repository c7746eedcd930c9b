"""The delay lines of the WAN proxy: every accepted connection (`Pipe`) and its upstream
connection, joined by two delay lines, one per direction, woken by one timerfd clock (`Clock`).

Each chunk read is written out one-way delay later (chunks of one direction never reorder,
reading goes on while earlier chunks wait), so the delay costs latency, not throughput; a
direction holding MAX_IN_FLIGHT bytes stops reading until it drains.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import math
import os
import random
import socket
from collections import deque
from collections.abc import Callable

from worker.lab.wan import kernel
from worker.lab.wan.routes import NO_DELAY, Delay, Route

MAX_IN_FLIGHT = 8 * 1024 * 1024
"""Bytes one direction of a connection may hold in its delay line before it stops reading."""

# A timer may fire a hair before its due time as clocks round; a microsecond early is nothing.
_EARLY_S = 1e-6


class Clock:
    """Calls delay lines back at their due times through a timerfd read by the event loop.

    The loop's own timers (call_at) sleep in epoll, whose timeout is whole milliseconds rounded
    up: each way came out about 0.5 ms late, a tenth of a 10 ms round trip. A timerfd wakes the
    loop when due, give or take the machine's wake-up latency (0.1-0.2 ms on the 2-core VM).
    Its deadlines are absolute times of CLOCK_MONOTONIC, the clock of loop.time().
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.fd = kernel.monotonic_timerfd()
        self.heap: list[tuple[float, int, _Line]] = []
        self.tokens = itertools.count(1)
        self.armed = math.inf
        self.spec = kernel.Itimerspec()
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
        kernel.arm_at(self.fd, self.spec, when)

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

    def __init__(self, pipe: Pipe) -> None:
        self.pipe = pipe
        self.transport: asyncio.Transport | None = None
        self.outgoing: _Line
        self.incoming: _Line

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        kernel.nodelay(transport.get_extra_info("socket"))
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

    def __init__(self, pipe: Pipe, source: _End, dest: _End) -> None:
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


class Pipe:
    """An accepted connection, its upstream connection and the two delay lines between them."""

    def __init__(
        self,
        route: Route,
        family: int,
        address: tuple[object, ...],
        delay: Callable[[], Delay],
        clock: Clock,
        live: set[Pipe],
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
            sock = kernel.socket_in(self.route.connect_netns, self.family)
        except OSError:
            self.connecting = None
            self.close()
            return
        try:
            sock.setblocking(False)
            kernel.nodelay(sock)
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
