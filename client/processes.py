"""Child processes the CLI, the demo and the tests start: the API and a worker, stopped by pid."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from app.config import Settings
from app.queue import trial_queue
from app.services.api_keys import create_key, revoke_key
from client.http import ApiError, Client


def api_command(host: str, port: int) -> list[str]:
    """argv of the API server."""
    return [
        sys.executable, "-m", "uvicorn", "app.main:app",
        "--host", host, "--port", str(port), "--log-level", "warning",
    ]  # fmt: skip


def worker_command(loglevel: str = "INFO", targets: Sequence[str] = ()) -> list[str]:
    """argv of one worker that runs one trial at a time, for the given targets (default: every
    runnable target of its targets file)."""
    queues = ["-Q", ",".join(trial_queue(name) for name in targets)] if targets else []
    return [
        sys.executable, "-m", "celery", "-A", "worker.celery_app:celery_app", "worker",
        "--pool=solo", "--concurrency=1", f"--loglevel={loglevel}", *queues,
        "--without-gossip", "--without-mingle", "--without-heartbeat",
    ]  # fmt: skip


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ChildProcess:
    """A process started with an argument list, its output in a log file, stopped by its pid."""

    def __init__(
        self, name: str, argv: list[str], *, env: Mapping[str, str], log_dir: Path
    ) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self._log = self.log_path.open("wb")
        # A session of its own: Ctrl-C reaches the parent, which stops the child in order.
        self.process = subprocess.Popen(
            argv, env=dict(env), stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self.process.pid

    def alive(self) -> bool:
        """Whether the child still runs."""
        return self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after `timeout` seconds; waits for the exit."""
        if self.alive():
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()

    def kill(self) -> None:
        """SIGKILL now and wait for the exit."""
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)
        self.process.wait()

    def tail(self, lines: int = 20) -> str:
        """The last lines of the child's output."""
        self._log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def wait_until(check: Callable[[], bool], *, timeout: float, interval: float = 0.2) -> bool:
    """Poll `check()` until it returns true or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(interval)
    return False


class ServiceError(RuntimeError):
    """The API or the worker did not come up, or exited; the message has its log tail."""


@dataclass
class Service:
    """A running API and worker, and a client of the API."""

    client: Client
    api_key: str
    api: ChildProcess
    worker: ChildProcess

    def check_alive(self) -> None:
        """Raise ServiceError naming the child that exited, with its output."""
        for child in (self.api, self.worker):
            if not child.alive():
                raise ServiceError(f"the {child.name} exited:\n{child.tail()}")


@contextmanager
def running_service(
    env: Mapping[str, str],
    log_dir: Path,
    *,
    loglevel: str = "INFO",
    stop_timeout: float = 10.0,
    owner: str = "demo",
) -> Iterator[Service]:
    """Start the API and one worker, wait until the API reports healthy, stop both at the end.

    The client carries a new API key of `owner`, made on the service's database (`api_key`)
    and revoked when the service stops, so no demo key outlives its demo. The worker stops
    first (it may hold a lab cluster it has to shut down: give it `stop_timeout`).
    """
    port = free_port()
    database_url = env.get("GALERA_DOE_DATABASE_URL") or Settings().database_url
    made = create_key(database_url, owner)
    api_key = made.token
    service = Service(
        client=Client(f"http://127.0.0.1:{port}", api_key=api_key),
        api_key=api_key,
        api=ChildProcess("api", api_command("127.0.0.1", port), env=env, log_dir=log_dir),
        worker=ChildProcess("worker", worker_command(loglevel), env=env, log_dir=log_dir),
    )

    def healthy() -> bool:
        service.check_alive()
        try:
            return bool(service.client.health()["status"] == "ok")
        except (ApiError, httpx.TransportError):  # not listening yet, or not healthy yet
            return False

    try:
        if not wait_until(healthy, timeout=60):
            raise ServiceError(f"the API did not become healthy:\n{service.api.tail()}")
        yield service
    finally:
        service.client.close()
        service.worker.stop(timeout=stop_timeout)
        service.api.stop()
        revoke_key(database_url, str(made.key.id))
