"""Child processes the CLI, the demo and the tests start: the API and a worker, stopped by pid."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from app.queue import TRIALS_QUEUE


def api_command(host: str, port: int) -> list[str]:
    """argv of the API server."""
    return [
        sys.executable, "-m", "uvicorn", "app.main:app",
        "--host", host, "--port", str(port), "--log-level", "warning",
    ]  # fmt: skip


def worker_command(loglevel: str = "INFO") -> list[str]:
    """argv of one worker that runs one trial at a time."""
    return [
        sys.executable, "-m", "celery", "-A", "worker.celery_app:celery_app", "worker",
        "--pool=solo", "--concurrency=1", f"--loglevel={loglevel}", "-Q", TRIALS_QUEUE,
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
