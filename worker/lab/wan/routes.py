"""What the WAN delay proxy serves: its routes (`Route`), the delay it adds (`Delay`), and the
JSON file it reads them from (`load_config`)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from pathlib import Path


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
