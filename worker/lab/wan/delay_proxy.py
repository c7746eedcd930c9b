"""A TCP proxy that delays each direction of every connection by half a round trip.

The lab has no netem, so a WAN between two sites (two network namespaces) is emulated in user
space: for every node of one site the proxy listens, inside the other site's namespace, on the
node's own address and port, connects to the node in its namespace and, with `bind_source`,
binds that upstream socket to the address of whoever connected, so the node sees the true
origin. Each chunk read is written out one-way delay later on a pipelined delay line (chunks of
one direction never reorder, reading goes on while earlier chunks wait), so the delay costs
latency, not throughput.

Run `python -m worker.lab.wan.delay_proxy CONFIG.json [--ready-file PATH]`; CONFIG is
{"routes": [{Route fields}...], "rtt_ms": .., "jitter_ms": ..}. PATH receives
{"rtt_ms": .., "jitter_ms": ..} once every route listens, and again after each SIGHUP, which
re-reads the delay from CONFIG (the routes stay). SIGTERM or SIGINT closes every socket and exits
0; a route that cannot listen exits 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from worker.lab.wan import kernel
from worker.lab.wan.delay_line import Clock, Pipe
from worker.lab.wan.routes import Delay, Route, RouteError, load_config


def _address(host: str, port: int) -> tuple[int, tuple[object, ...]]:
    family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    return family, address


def _listener(route: Route) -> socket.socket:
    family, address = _address(route.listen_host, route.listen_port)
    sock = kernel.socket_in(route.listen_netns, family)
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
    clock = Clock(loop)
    live: set[Pipe] = set()
    servers: list[asyncio.Server] = []

    def factory(
        route: Route, family: int, address: tuple[object, ...]
    ) -> Callable[[], asyncio.Protocol]:
        return lambda: Pipe(route, family, address, delay, clock, live).down

    try:
        for route in routes:
            try:
                if route.connect_netns is not None:
                    os.close(os.open(kernel.NETNS_DIR / route.connect_netns, os.O_RDONLY))
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
    """`python -m worker.lab.wan.delay_proxy CONFIG.json [--ready-file PATH]`: serve the routes
    until SIGTERM or SIGINT (exit 0); exit 2 when the config is invalid or a route cannot
    listen."""
    parser = argparse.ArgumentParser(
        prog="python -m worker.lab.wan.delay_proxy",
        description="Forward TCP routes, delaying each direction by half the round trip.",
    )
    parser.add_argument("config", type=Path, help='{"routes": [...], "rtt_ms", "jitter_ms"}')
    parser.add_argument(
        "--ready-file",
        type=Path,
        help="written (atomically) with the delay once every route listens and on each SIGHUP",
    )
    args = parser.parse_args(argv)
    kernel.tight_timer_slack()
    try:
        routes, delay = load_config(args.config)
    except (OSError, ValueError) as error:
        print(f"delay_proxy: {args.config}: {error}", file=sys.stderr)
        return 2
    return asyncio.run(_run(args.config, routes, delay, args.ready_file))


if __name__ == "__main__":
    raise SystemExit(main())
