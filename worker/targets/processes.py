"""The benchmark processes of a trial on a real cluster: started at once, watched for exit,
cancellation and time-out, and stopped by pid, none outliving the call (`run_processes`)."""

from __future__ import annotations

import contextlib
import logging
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence

from worker.targets.base import InfrastructureError, TrialCancelledError

log = logging.getLogger(__name__)

# How often a running sysbench is checked for exit and for cancellation, and how long one that
# was told to stop (SIGTERM) gets before SIGKILL.
POLL_S = 0.2
STOP_GRACE_S = 5.0


def run_processes(
    argvs: Sequence[list[str]],
    *,
    timeout: float,
    cancel: threading.Event | None = None,
    name: str = "sysbench",
    pass_fds: Sequence[int] = (),
) -> list[tuple[int, str]]:
    """Run the commands at once and return each one's exit code and output, in order; each
    inherits the descriptors `pass_fds` (the password file) and no other.

    Every process is stopped by its pid (SIGTERM, SIGKILL after STOP_GRACE_S) when `cancel` is
    set (TrialCancelledError), when `timeout` seconds pass (InfrastructureError), or on any
    other exception: none outlives the call.
    """
    processes: list[subprocess.Popen[bytes]] = []
    with contextlib.ExitStack() as files:
        # Files, not pipes: an hour of interval reports would fill a pipe read only at the end.
        outputs = [files.enter_context(tempfile.TemporaryFile()) for _ in argvs]
        try:
            for argv, output in zip(argvs, outputs, strict=True):
                process = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    pass_fds=pass_fds,
                )
                processes.append(process)
                log.info("started %s (pid %d)", name, process.pid)
            deadline = time.monotonic() + timeout
            while any(process.poll() is None for process in processes):
                if cancel is not None and cancel.wait(POLL_S):
                    pids = ", ".join(str(p.pid) for p in processes)
                    log.info("trial cancelled: stopping %s (pid %s)", name, pids)
                    raise TrialCancelledError(f"the trial was cancelled; {name} was stopped")
                if cancel is None:
                    time.sleep(POLL_S)
                if time.monotonic() > deadline:
                    raise InfrastructureError(f"{name} did not finish within {timeout:g} s")
        finally:
            _stop(processes)
        results = []
        for process, output in zip(processes, outputs, strict=True):
            output.seek(0)
            results.append((process.returncode, output.read().decode(errors="replace")))
        return results


def _stop(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every process still running, SIGKILL those that outlive the grace; reap all."""
    running = [process for process in processes if process.poll() is None]
    for process in running:
        process.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for process in running:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
