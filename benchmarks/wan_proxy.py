"""The WAN delay proxy: the delay it adds against the delay asked, and its throughput ceiling.

Run `python -m benchmarks.wan_proxy` from the repository root. A child process serves an echo
port and a sink port (which counts what it reads until EOF and answers the count) on loopback;
three proxies (`python -m worker.lab.wan.delay_proxy`, child processes started and stopped by pid)
forward to both at rtt 0, 10 and 100 ms. The client is this process. The baseline, in the same
run, is the direct connection to the same servers; the paths take turns, round after round, so
that the load of whatever else runs on the machine falls on all of them alike.

1. Delay: round trips of a 100-byte ping-pong on one connection (200 per path, 50 at 100 ms),
   median and p95, what the proxy adds to the direct median, and the error of the median
   against the asked rtt.
2. Throughput: a one-way bulk transfer of 200 MB (best of 3), and 1-KB ping-pongs on 32
   parallel connections for 2 s (best of 2), each against the direct connection, with the
   proxy's CPU time (from /proc) per transfer or per thousand requests. At rtt 100 ms the
   bulk transfer meets the proxy's bound on bytes in flight (a window, as TCP's): 8 MiB per
   50 ms one way.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict
from multiprocessing.connection import Connection
from pathlib import Path
from typing import NamedTuple

from rich.console import Console
from rich.table import Table

from worker.lab.wan.routes import Route

HOST = "127.0.0.1"
RTTS_MS = (0.0, 10.0, 100.0)
ROUND_TRIPS = {None: 200, 0.0: 200, 10.0: 200, 100.0: 50}  # per path (None: direct)
ROUNDS = 5
PING_SIZE = 100
BULK_BYTES = 200_000_000
BULK_REPEATS = 3
REQUEST_SIZE = 1024
PARALLEL = 32
REQUESTS_SECONDS = 2.0
REQUEST_REPEATS = 2
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class _Echo(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.transport.write(data)


class _Sink(asyncio.BufferedProtocol):
    """Counts the bytes it reads (into one reused buffer) and answers the count at EOF."""

    def __init__(self) -> None:
        self.buffer = bytearray(1024 * 1024)
        self.count = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return memoryview(self.buffer)

    def buffer_updated(self, nbytes: int) -> None:
        self.count += nbytes

    def eof_received(self) -> bool:
        self.transport.write(self.count.to_bytes(8, "big"))
        return False


def _servers(report: Connection) -> None:
    """The child process: echo and sink on free ports, sent back through `report`."""

    async def run() -> None:
        loop = asyncio.get_running_loop()
        echo = await loop.create_server(_Echo, HOST, 0)
        sink = await loop.create_server(_Sink, HOST, 0)
        report.send([s.sockets[0].getsockname()[1] for s in (echo, sink)])
        await loop.create_future()

    asyncio.run(run())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


class Endpoint(NamedTuple):
    """Where the client connects: directly, or through the proxy of `rtt_ms` (process `pid`)."""

    name: str
    rtt_ms: float | None
    pid: int | None
    echo: int
    sink: int


@contextmanager
def _proxy(rtt_ms: float, targets: Endpoint, workdir: Path) -> Iterator[Endpoint]:
    """A proxy process at `rtt_ms` with a route to each of the targets' ports."""
    echo, sink = _free_port(), _free_port()
    routes = [Route(HOST, echo, HOST, targets.echo), Route(HOST, sink, HOST, targets.sink)]
    config, ready = workdir / f"proxy-{rtt_ms:g}.json", workdir / f"proxy-{rtt_ms:g}.ready"
    config.write_text(json.dumps({"routes": [asdict(r) for r in routes], "rtt_ms": rtt_ms}))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "worker.lab.wan.delay_proxy",
            str(config),
            "--ready-file",
            str(ready),
        ]
    )
    try:
        deadline = time.monotonic() + 10
        while not ready.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the proxy at rtt {rtt_ms:g} ms did not start")
            time.sleep(0.02)
        yield Endpoint(f"proxy rtt {rtt_ms:g} ms", rtt_ms, process.pid, echo, sink)
    finally:
        os.kill(process.pid, signal.SIGTERM)
        process.wait(10)


def _round_trips(port: int, count: int) -> list[float]:
    """Milliseconds of `count` ping-pongs of PING_SIZE bytes on one connection (after 2 more)."""
    payload = os.urandom(PING_SIZE)
    times = []
    with socket.create_connection((HOST, port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for index in range(count + 2):
            started = time.perf_counter()
            sock.sendall(payload)
            received = 0
            while received < PING_SIZE:
                chunk = sock.recv(PING_SIZE - received)
                if not chunk:
                    raise ConnectionError("the echo closed")
                received += len(chunk)
            if index >= 2:
                times.append((time.perf_counter() - started) * 1000)
    return times


def _bulk_seconds(port: int) -> float:
    """Seconds to send BULK_BYTES one way until the sink has counted them all."""
    block = memoryview(bytes(1024 * 1024))
    with socket.create_connection((HOST, port)) as sock:
        started = time.perf_counter()
        left = BULK_BYTES
        while left:
            left -= sock.send(block[: min(left, len(block))])
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while len(answer) < 8:
            chunk = sock.recv(8 - len(answer))
            if not chunk:
                raise ConnectionError("the sink closed before answering")
            answer += chunk
        elapsed = time.perf_counter() - started
    if int.from_bytes(answer, "big") != BULK_BYTES:
        raise RuntimeError(f"the sink counted {int.from_bytes(answer, 'big')} bytes")
    return elapsed


class _PingPong(asyncio.Protocol):
    """Sends REQUEST_SIZE bytes again each time as many have come back, until `stop`."""

    def __init__(self, stop: float, done: asyncio.Future[int]) -> None:
        self.stop, self.done = stop, done
        self.payload = bytes(REQUEST_SIZE)
        self.pending = 0
        self.count = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.transport.write(self.payload)

    def data_received(self, data: bytes) -> None:
        self.pending += len(data)
        while self.pending >= REQUEST_SIZE:
            self.pending -= REQUEST_SIZE
            self.count += 1
            if time.perf_counter() >= self.stop:
                self.transport.close()
                if not self.done.done():
                    self.done.set_result(self.count)
                return
            self.transport.write(self.payload)


async def _requests_per_second(port: int) -> float:
    """Requests/s of PARALLEL connections doing REQUEST_SIZE ping-pongs for REQUESTS_SECONDS."""
    loop = asyncio.get_running_loop()
    futures = [loop.create_future() for _ in range(PARALLEL)]
    started = time.perf_counter()
    stop = started + REQUESTS_SECONDS
    for done in futures:
        await loop.create_connection(lambda done=done: _PingPong(stop, done), HOST, port)
    counts = await asyncio.gather(*futures)
    return sum(counts) / (time.perf_counter() - started)


class DelayRow(NamedTuple):
    path: str
    asked_ms: float | None  # None: the direct connection
    times_ms: list[float]


class RateRow(NamedTuple):
    path: str
    rate: float  # MB/s or requests/s
    proxy_cpu_s: float | None  # per transfer, or per 1000 requests; None: direct


def main() -> None:
    """Start the servers and the proxies, measure, print both tables, stop everything."""
    context = multiprocessing.get_context("fork")
    parent, child = context.Pipe()
    servers = context.Process(target=_servers, args=(child,), daemon=True)
    servers.start()
    try:
        echo, sink = parent.recv()
        direct = Endpoint("direct", None, None, echo, sink)
        with tempfile.TemporaryDirectory(prefix="galera-doe-wan-") as workdir, ExitStack() as stack:
            proxies = [stack.enter_context(_proxy(rtt, direct, Path(workdir))) for rtt in RTTS_MS]
            rows = _measure([direct, *proxies])
    finally:
        assert servers.pid is not None
        os.kill(servers.pid, signal.SIGTERM)
        servers.join(10)
    _print(*rows)


def _measure(endpoints: list[Endpoint]) -> tuple[list[DelayRow], list[RateRow], list[RateRow]]:
    """Round trips, bulk MB/s and requests/s of every endpoint, the endpoints taking turns."""
    times: dict[Endpoint, list[float]] = {endpoint: [] for endpoint in endpoints}
    for _ in range(ROUNDS):
        for endpoint in endpoints:
            times[endpoint] += _round_trips(endpoint.echo, ROUND_TRIPS[endpoint.rtt_ms] // ROUNDS)
    delays = [DelayRow(e.name, e.rtt_ms, times[e]) for e in endpoints]

    def bulk(endpoint: Endpoint) -> tuple[float, float]:
        return BULK_BYTES / 1e6 / _bulk_seconds(endpoint.sink), 1.0

    def requests(endpoint: Endpoint) -> tuple[float, float]:
        rate = asyncio.run(_requests_per_second(endpoint.echo))
        return rate, rate * REQUESTS_SECONDS / 1000

    return (
        delays,
        _best_of(BULK_REPEATS, endpoints, bulk),
        _best_of(REQUEST_REPEATS, [e for e in endpoints if not e.rtt_ms], requests),
    )


def _best_of(
    repeats: int, endpoints: list[Endpoint], run: Callable[[Endpoint], tuple[float, float]]
) -> list[RateRow]:
    """Per endpoint the best rate of `repeats` turns of `run` (which returns a rate and the
    units of work done) and the proxy's CPU seconds per unit."""
    best = dict.fromkeys(endpoints, 0.0)
    units = dict.fromkeys(endpoints, 0.0)
    cpu = dict.fromkeys(endpoints, 0.0)
    for _ in range(repeats):
        for endpoint in endpoints:
            before = _cpu_seconds(endpoint.pid) if endpoint.pid else 0.0
            rate, done = run(endpoint)
            cpu[endpoint] += _cpu_seconds(endpoint.pid) - before if endpoint.pid else 0.0
            best[endpoint] = max(best[endpoint], rate)
            units[endpoint] += done
    return [RateRow(e.name, best[e], cpu[e] / units[e] if e.pid else None) for e in endpoints]


def _print(delays: list[DelayRow], bulk: list[RateRow], requests: list[RateRow]) -> None:
    console = Console(width=120)
    direct_median = statistics.median(delays[0].times_ms)
    table = Table(title=f"Delay added against asked ({PING_SIZE}-byte ping-pong, one connection)")
    for name in ("path", "asked rtt ms", "round trips", "median ms", "p95 ms",
                 "added to direct ms", "error vs asked"):  # fmt: skip
        table.add_column(name, justify="left" if name == "path" else "right")
    for row in delays:
        median = statistics.median(row.times_ms)
        asked = row.asked_ms
        table.add_row(
            row.path,
            "-" if asked is None else f"{asked:g}",
            str(len(row.times_ms)),
            f"{median:.3f}",
            f"{statistics.quantiles(row.times_ms, n=20)[-1]:.3f}",
            "-" if asked is None else f"{median - direct_median:.3f}",
            f"{(median - asked) / asked:+.1%}" if asked else "-",
        )
    console.print(table)
    table = Table(title="Throughput ceiling against the direct connection (same run)")
    for name in ("transfer", "path", "rate", "x direct", "proxy CPU"):
        table.add_column(name, justify="left" if name in ("transfer", "path") else "right")
    for row in bulk:
        table.add_row(
            f"bulk {BULK_BYTES / 1e6:g} MB one way",
            row.path,
            f"{row.rate:.0f} MB/s",
            f"{row.rate / bulk[0].rate:.2f}",
            "-" if row.proxy_cpu_s is None else f"{row.proxy_cpu_s:.2f} s",
        )
    for row in requests:
        table.add_row(
            f"{REQUEST_SIZE // 1024}-KB ping-pong x {PARALLEL} connections",
            row.path,
            f"{row.rate:,.0f} req/s",
            f"{row.rate / requests[0].rate:.2f}",
            "-" if row.proxy_cpu_s is None else f"{row.proxy_cpu_s * 1000:.0f} ms per 1000",
        )
    console.print(table)


if __name__ == "__main__":
    main()
