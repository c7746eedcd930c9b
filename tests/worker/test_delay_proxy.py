"""The WAN delay proxy (`worker.lab.wan.delay_proxy`) on real sockets: the delay it adds, order and
integrity under load, jitter, half-close, backpressure, a delay changed by SIGHUP, routes across
network namespaces with the origin's address kept, and the command's exits.

Servers, clients and an in-process proxy share the test's event loop; `main` runs as a child
process. Namespaces are named gdoet<random> and deleted by finalizers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict
from pathlib import Path

import pytest

from worker.lab.wan.delay_line import MAX_IN_FLIGHT
from worker.lab.wan.delay_proxy import serve
from worker.lab.wan.kernel import socket_in
from worker.lab.wan.routes import Delay, Route, RouteError, load_config

REPO = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"


def free_port(host: str = HOST) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


class Echo(asyncio.Protocol):
    """Sends back what it reads; closes once the client's EOF and the echo are through."""

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.transport.write(data)


class Silent(asyncio.Protocol):
    """Reads nothing, so everything sent to it piles up in front of it."""

    def connection_made(self, transport):
        transport.pause_reading()


async def tcp_server(factory: Callable[[], asyncio.Protocol], port: int = 0) -> asyncio.Server:
    return await asyncio.get_running_loop().create_server(factory, HOST, port)


def port_of(server: asyncio.Server) -> int:
    return server.sockets[0].getsockname()[1]


@contextlib.asynccontextmanager
async def proxy(routes: list[Route], delay: Callable[[], Delay]) -> AsyncIterator[None]:
    """serve() as a task of this loop until the block ends."""
    ready = asyncio.Event()
    task = asyncio.create_task(serve(routes, delay, ready.set))
    waiting = asyncio.create_task(ready.wait())
    await asyncio.wait({task, waiting}, timeout=5, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if task.done():
        task.result()
    assert ready.is_set()
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def route_to(server: asyncio.Server, **options: object) -> Route:
    return Route(HOST, free_port(), HOST, port_of(server), **options)


async def round_trips(port: int, count: int, size: int = 100) -> list[float]:
    """Milliseconds of `count` ping-pongs of `size` bytes on one connection."""
    reader, writer = await asyncio.open_connection(HOST, port)
    payload = os.urandom(size)
    times = []
    try:
        for _ in range(count):
            started = time.perf_counter()
            writer.write(payload)
            assert await reader.readexactly(size) == payload
            times.append((time.perf_counter() - started) * 1000)
    finally:
        writer.close()
    return times


async def refused(connect: Callable[[], Awaitable[object]]) -> bool:
    try:
        await connect()
    except ConnectionRefusedError:
        return True
    return False


async def test_round_trip_adds_the_asked_rtt():
    echo = await tcp_server(Echo)
    delayed, zero, plain = route_to(echo), route_to(echo), route_to(echo, delayed=False)
    delays = {delayed: Delay(100), zero: Delay(0), plain: Delay(100)}
    try:
        async with (
            proxy([delayed], lambda: delays[delayed]),
            proxy([zero], lambda: delays[zero]),
            proxy([plain], lambda: delays[plain]),
        ):
            await round_trips(zero.listen_port, 20)  # warm up
            slow = statistics.median(await round_trips(delayed.listen_port, 10))
            fast = statistics.median(await round_trips(zero.listen_port, 50))
            undelayed = statistics.median(await round_trips(plain.listen_port, 50))
    finally:
        echo.close()
    assert 100 <= slow < 110
    assert fast < 5
    assert undelayed < 5  # a route with delayed=False ignores the delay


async def test_bulk_transfer_is_intact_in_order_and_pipelined():
    """20 MB out and echoed back at rtt 20 ms cost about what they cost at rtt 0 plus the rtt.
    A stop-and-wait line would pay one way per chunk: at least 80 of them (asyncio reads at
    most 256 KiB at a time), 0.8 s; the sender's 320 writes of 64 KiB would take 3.2 s."""
    echo = await tcp_server(Echo)
    data = os.urandom(20 * 1024 * 1024)
    write_size, rtt_ms = 64 * 1024, 20.0
    elapsed = {0.0: math.inf, rtt_ms: math.inf}
    try:
        for asked in (0.0, rtt_ms, 0.0, rtt_ms):  # best of two: the machine is shared
            route = route_to(echo)
            async with proxy([route], lambda asked=asked: Delay(asked)):
                reader, writer = await asyncio.open_connection(HOST, route.listen_port)
                started = time.perf_counter()

                async def send(writer=writer):
                    view = memoryview(data)
                    for offset in range(0, len(data), write_size):
                        writer.write(view[offset : offset + write_size])
                        await writer.drain()
                    writer.write_eof()

                sending = asyncio.create_task(send())
                received = await reader.read(-1)  # up to the echo's EOF
                await sending
                elapsed[asked] = min(elapsed[asked], time.perf_counter() - started)
                writer.close()
            assert received == data
    finally:
        echo.close()
    chunks = len(data) // write_size
    assert elapsed[rtt_ms] < elapsed[0.0] + 0.4, elapsed
    assert elapsed[rtt_ms] < chunks * rtt_ms / 1000 / 10, elapsed


async def test_jitter_varies_round_trips_within_the_asked_range_and_keeps_order():
    echo = await tcp_server(Echo)
    route = route_to(echo)
    rtt, jitter = 40.0, 20.0
    try:
        async with proxy([route], lambda: Delay(rtt, jitter)):
            times = await round_trips(route.listen_port, 30)
            reader, writer = await asyncio.open_connection(HOST, route.listen_port)
            sent = b"".join(b"%06d" % number for number in range(300))
            for number in range(300):
                writer.write(b"%06d" % number)
                if number % 10 == 0:
                    await asyncio.sleep(0.001)  # separate chunks, each with its own jitter
            writer.write_eof()
            assert await reader.read(-1) == sent
            writer.close()
    finally:
        echo.close()
    # Each way varies by +-jitter/2, so a round trip by +-jitter (and a timer may oversleep).
    assert all(rtt - jitter <= value < rtt + jitter + 4 for value in times), times
    assert max(times) - min(times) > 3, times


async def test_half_close_reaches_the_far_side_after_the_delay():
    loop = asyncio.get_running_loop()
    seen: dict[str, float] = {}

    class Reply(asyncio.Protocol):
        def connection_made(self, transport):
            self.transport, self.data = transport, b""

        def data_received(self, data):
            self.data += data

        def eof_received(self):
            seen["eof"] = loop.time()
            self.transport.write(b"got " + self.data)
            return False  # closes once the reply is out

    server = await tcp_server(Reply)
    route = route_to(server)
    try:
        async with proxy([route], lambda: Delay(60)):
            reader, writer = await asyncio.open_connection(HOST, route.listen_port)
            writer.write(b"hello")
            writer.write_eof()
            sent = loop.time()
            assert await asyncio.wait_for(reader.read(-1), 2) == b"got hello"
            answered = loop.time()
            writer.close()
    finally:
        server.close()
    assert seen["eof"] - sent >= 0.030
    assert answered - sent >= 0.060


async def test_an_upstream_that_refuses_closes_the_client_at_once():
    route = Route(HOST, free_port(), HOST, free_port())
    async with proxy([route], lambda: Delay(100)):
        reader, writer = await asyncio.open_connection(HOST, route.listen_port)
        started = time.perf_counter()
        with contextlib.suppress(ConnectionResetError):
            assert await asyncio.wait_for(reader.read(-1), 2) == b""
        writer.close()
    assert time.perf_counter() - started < 0.05


async def test_a_receiver_that_does_not_read_stops_the_sender():
    """The bytes in flight stay bounded: the delay line holds at most MAX_IN_FLIGHT, then the
    proxy stops reading and the kernel's buffers fill up to the sender (their sizes tune
    themselves up to the sysctl maxima)."""
    silent = await tcp_server(Silent)
    route = route_to(silent)
    kernel = sum(
        int(Path(f"/proc/sys/net/ipv4/{name}").read_text().split()[2])
        for name in ("tcp_rmem", "tcp_wmem")
    )
    sent = 0
    try:
        async with proxy([route], lambda: Delay(5000)):
            sock = socket.create_connection((HOST, route.listen_port))
            sock.setblocking(False)
            chunk = bytes(256 * 1024)
            stalls = 0
            # Each stall gives the proxy a turn of the loop: 25 in a row, and it stopped reading.
            while stalls < 25 and sent < 512 * 1024 * 1024:
                try:
                    sent += sock.send(chunk)
                    stalls = 0
                except BlockingIOError:
                    stalls += 1
                    await asyncio.sleep(0.02)
            sock.close()
    finally:
        silent.close()
    assert MAX_IN_FLIGHT <= sent < MAX_IN_FLIGHT + kernel + 1024 * 1024, (sent, kernel)


async def test_cancelling_serve_closes_listeners_and_connections():
    echo = await tcp_server(Echo)
    route = route_to(echo)
    async with proxy([route], lambda: Delay()):
        reader, writer = await asyncio.open_connection(HOST, route.listen_port)
        writer.write(b"ping")
        assert await reader.readexactly(4) == b"ping"
    with contextlib.suppress(ConnectionResetError):
        assert await asyncio.wait_for(reader.read(-1), 2) == b""
    writer.close()
    echo.close()
    assert await refused(lambda: asyncio.open_connection(HOST, route.listen_port))


async def test_serve_names_a_route_that_cannot_listen():
    with socket.socket() as taken:
        taken.bind((HOST, 0))
        taken.listen()
        busy = Route(HOST, taken.getsockname()[1], HOST, 1)
        with pytest.raises(RouteError, match=f"{HOST}:{busy.listen_port}"):
            await serve([Route(HOST, free_port(), HOST, 1), busy], Delay, lambda: None)


def test_load_config_reads_routes_and_delay(tmp_path):
    route = Route("127.10.0.1", 4567, "127.10.0.1", 4567, "a", "b", bind_source=True)
    path = tmp_path / "proxy.json"
    path.write_text(json.dumps({"routes": [asdict(route)], "rtt_ms": 30, "jitter_ms": 2}))
    assert load_config(path) == ([route], Delay(30.0, 2.0))
    path.write_text(json.dumps({"routes": [{**asdict(route), "listen_port": "x"}]}))
    with pytest.raises(ValueError, match=r"routes\[0\]: listen_port"):
        load_config(path)
    path.write_text(json.dumps({"routes": [], "rtt_ms": -1}))
    with pytest.raises(ValueError, match="rtt_ms"):
        load_config(path)


# Network namespaces: two sites, the proxy between them.


@pytest.fixture
def two_sites(request) -> tuple[str, str]:
    names = []
    tag = uuid.uuid4().hex[:8]
    for site in "ab":
        name = f"gdoet{tag}{site}"
        subprocess.run(["ip", "netns", "add", name], check=True)
        request.addfinalizer(lambda name=name: subprocess.run(["ip", "netns", "delete", name]))
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        names.append(name)
    return names[0], names[1]


async def listening_in(netns: str) -> str:
    done = await asyncio.create_subprocess_exec(
        "ip", "netns", "exec", netns, "ss", "-Hltn", stdout=subprocess.PIPE
    )
    out, _ = await done.communicate()
    return out.decode()


async def test_a_route_across_namespaces_keeps_the_origin_address(two_sites):
    site_a, site_b = two_sites
    node, port = "127.10.0.1", 4567
    loop = asyncio.get_running_loop()

    async def tell_peer(reader, writer):
        writer.write(writer.get_extra_info("peername")[0].encode())
        writer.close()

    listener = socket_in(site_a)
    listener.bind((node, port))
    server = await asyncio.start_server(tell_peer, sock=listener)

    async def connect_from_b(source: str) -> str:
        sock = socket_in(site_b)
        with sock:
            sock.setblocking(False)
            sock.bind((source, 0))
            await loop.sock_connect(sock, (node, port))
            return (await asyncio.wait_for(loop.sock_recv(sock, 100), 2)).decode()

    route = Route(node, port, node, port, site_b, site_a, bind_source=True)
    try:
        # Without the proxy nothing in B answers for the node in A.
        assert await refused(lambda: connect_from_b("127.10.0.2"))
        async with proxy([route], lambda: Delay(10)):
            assert await connect_from_b("127.10.0.2") == "127.10.0.2"
            # The same from a process that entered B on its own, and with another origin.
            client = await asyncio.create_subprocess_exec(
                "ip", "netns", "exec", site_b, sys.executable, "-c",
                "import socket; s = socket.socket(); s.bind(('127.10.0.3', 0)); "
                f"s.connect(('{node}', {port})); print(s.recv(100).decode())",
                stdout=subprocess.PIPE,
            )  # fmt: skip
            out, _ = await asyncio.wait_for(client.communicate(), 10)
            assert out.decode().strip() == "127.10.0.3"
            assert f"{node}:{port}" in await listening_in(site_a)  # the node
            assert f"{node}:{port}" in await listening_in(site_b)  # the proxy
        assert f"{node}:{port}" not in await listening_in(site_b)
        assert await refused(lambda: connect_from_b("127.10.0.2"))
    finally:
        server.close()


# The command: a child process, started and stopped by pid.


def start_main(request, config: dict, tmp_path: Path) -> tuple[subprocess.Popen, Path, Path]:
    path, ready = tmp_path / "proxy.json", tmp_path / "proxy.ready"
    path.write_text(json.dumps(config))
    process = subprocess.Popen(
        [sys.executable, "-m", "worker.lab.wan.delay_proxy", str(path), "--ready-file", str(ready)],
        cwd=REPO,
        stderr=subprocess.PIPE,
        text=True,
    )

    def stop() -> None:
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stderr.close()

    request.addfinalizer(stop)
    return process, path, ready


async def wait_for_ready(process: subprocess.Popen, ready: Path, delay: Delay) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(ready.read_text()) == asdict(delay):
                return
        assert process.poll() is None, process.stderr.read()
        await asyncio.sleep(0.02)
    raise AssertionError(f"the proxy did not report {delay}")


async def test_sighup_changes_the_delay_of_an_open_connection(request, tmp_path):
    echo = await tcp_server(Echo)
    route = route_to(echo)
    config = {"routes": [asdict(route)], "rtt_ms": 40, "jitter_ms": 0}
    process, path, ready = start_main(request, config, tmp_path)
    try:
        await wait_for_ready(process, ready, Delay(40))
        reader, writer = await asyncio.open_connection(HOST, route.listen_port)

        async def median_rtt() -> float:
            times = []
            for _ in range(5):
                started = time.perf_counter()
                writer.write(b"x" * 100)
                await reader.readexactly(100)
                times.append((time.perf_counter() - started) * 1000)
            return statistics.median(times)

        before = await median_rtt()
        path.write_text(json.dumps({**config, "rtt_ms": 150}))
        process.send_signal(signal.SIGHUP)
        await wait_for_ready(process, ready, Delay(150))
        after = await median_rtt()
        writer.close()
    finally:
        echo.close()
    assert 40 <= before < 50
    assert 150 <= after < 160


async def test_main_names_a_route_that_cannot_listen_and_exits_2(request, tmp_path):
    with socket.socket() as taken:
        taken.bind((HOST, 0))
        taken.listen()
        busy = Route(HOST, taken.getsockname()[1], HOST, 1)
        config = {"routes": [asdict(Route(HOST, free_port(), HOST, 1)), asdict(busy)]}
        process, _, ready = start_main(request, config, tmp_path)
        assert process.wait(10) == 2
    error = process.stderr.read()
    assert str(busy) in error and "Address already in use" in error, error
    assert not ready.exists()


async def test_main_exits_2_for_a_namespace_that_does_not_exist(request, tmp_path):
    route = Route(HOST, free_port(), HOST, 1, connect_netns=f"gdoet{uuid.uuid4().hex[:8]}none")
    process, _, _ = start_main(request, {"routes": [asdict(route)]}, tmp_path)
    assert process.wait(10) == 2
    assert str(route) in process.stderr.read()


async def test_sigterm_closes_every_socket_and_exits_0(request, tmp_path):
    echo = await tcp_server(Echo)
    route = route_to(echo)
    process, _, ready = start_main(request, {"routes": [asdict(route)]}, tmp_path)
    try:
        await wait_for_ready(process, ready, Delay())
        reader, writer = await asyncio.open_connection(HOST, route.listen_port)
        writer.write(b"ping")
        assert await reader.readexactly(4) == b"ping"
        process.send_signal(signal.SIGTERM)
        with contextlib.suppress(ConnectionResetError):
            assert await asyncio.wait_for(reader.read(-1), 5) == b""
        writer.close()
        for _ in range(250):
            if process.poll() is not None:
                break
            await asyncio.sleep(0.02)
        assert process.poll() == 0, process.stderr.read()
    finally:
        echo.close()
    assert await refused(lambda: asyncio.open_connection(HOST, route.listen_port))
