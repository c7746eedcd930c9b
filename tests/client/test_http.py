"""The client's retries, against a real HTTP server on loopback that answers 503 first."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from client import http
from client.http import ApiError, Client


class _Flaky(BaseHTTPRequestHandler):
    """503 for the first `failures` requests, then 201; records each Idempotency-Key."""

    failures = 0
    keys: ClassVar[list[str | None]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).keys.append(self.headers.get("Idempotency-Key"))
        failing = len(self.keys) <= self.failures
        body = json.dumps({"detail": "busy"} if failing else {"id": 7}).encode()
        self.send_response(503 if failing else 201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_Flaky]]:
    monkeypatch.setattr(http, "RETRY_PAUSE_S", 0.01)
    handler = type("Flaky", (_Flaky,), {"keys": []})
    running = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    handler.url = f"http://127.0.0.1:{running.server_address[1]}"  # type: ignore[attr-defined]
    yield handler
    running.shutdown()
    running.server_close()


def test_a_503_is_retried_with_the_same_idempotency_key(server: type[_Flaky]) -> None:
    server.failures = 2
    with Client(server.url) as client:  # type: ignore[attr-defined]
        created = client.create_experiment({"name": "x"}, idempotency_key="k-1")
    assert created == {"id": 7}
    assert server.keys == ["k-1", "k-1", "k-1"]


def test_after_the_last_retry_the_503_reaches_the_caller(server: type[_Flaky]) -> None:
    server.failures = 10
    with Client(server.url) as client, pytest.raises(ApiError) as error:  # type: ignore[attr-defined]
        client.create_experiment({"name": "x"}, idempotency_key="k-2")
    assert error.value.status_code == 503
    assert len(server.keys) == http.RETRIES + 1


def test_a_lost_connection_is_retried_then_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http, "RETRY_PAUSE_S", 0.01)
    with Client("http://127.0.0.1:9", timeout=1.0) as client, pytest.raises(Exception) as error:
        client.create_experiment({"name": "x"}, idempotency_key="k-3")
    assert "Connect" in type(error.value).__name__
