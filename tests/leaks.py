"""What the suite started and left running: lab nodes, sysbench, delay proxies, sshd, the
service's APIs and workers, namespaces.

Every process the suite starts inherits `RUN_MARK` in its environment (set when the suite's
conftest is imported; child processes of children keep it), so a leftover is recognised by what
the suite made, never by name alone: the system MariaDB and another run's processes lack this
run's mark. Namespaces are recognised by the lab's name prefix, less those there at the start
and those holding another run's processes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from worker.lab import procfs

RUN_MARK = "GALERA_DOE_TEST_RUN"
# worker.lab.layout.LabLayout.namespace: gdoe<galera port base>s<site>.
NAMESPACE_PREFIX = "gdoe"
_KINDS = {"mariadbd": "lab node", "sysbench": "sysbench"}
_DELAY_PROXY = "worker.lab.wan.delay_proxy"
# The service's own processes (a demo killed by a time-out leaves its API and worker running).
_SERVICE = {"app.main:app": "API", "worker.celery_app:celery_app": "worker"}


def mark_this_run() -> str:
    """This run's mark, set in the environment its processes inherit (an xdist worker keeps
    the mark of the run that started it)."""
    return os.environ.setdefault(RUN_MARK, uuid.uuid4().hex)


@dataclass(frozen=True)
class Leftover:
    """A process or a namespace the suite made and did not remove."""

    kind: str
    pid: int | None
    what: str

    def __str__(self) -> str:
        return f"{self.kind} {f'pid {self.pid} ' if self.pid else ''}{self.what}"


def _marked(pid: str, mark: str) -> bool:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"{RUN_MARK}={mark}".encode() in environ


def _kind(argv: list[str]) -> str | None:
    if _DELAY_PROXY in argv:
        return "delay proxy"
    for module, kind in _SERVICE.items():
        if module in argv:
            return kind
    if argv and argv[0].startswith("sshd: "):
        return "sshd"  # it retitles itself: "sshd: /usr/sbin/sshd -D -e -f <config> [listener]"
    return _KINDS.get(Path(argv[0]).name) if argv else None


def processes(mark: str) -> list[Leftover]:
    """The lab nodes, sysbench runs, delay proxies, sshd, APIs and workers of the run marked
    `mark` that run now."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        argv = procfs.argv(int(entry.name))
        kind = _kind(argv)
        # sshd's title overwrites its environment: the run's mark is in its config's path
        # (tests.ssh_hosts puts it in the emulation's directory).
        ours = kind == "sshd" and mark in argv[0]
        if kind is not None and (ours or _marked(entry.name, mark)):
            found.append(Leftover(kind, int(entry.name), " ".join(argv).strip()))
    return found


def namespaces() -> set[str]:
    """The network namespaces named like a lab's sites."""
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    names = {line.split()[0] for line in done.stdout.splitlines() if line.strip()}
    return {name for name in names if name.startswith(NAMESPACE_PREFIX)}


def leftovers(mark: str, namespaces_before: set[str], *, grace_s: float = 10.0) -> list[Leftover]:
    """What the run left, after `grace_s` for processes that are stopping right now."""
    deadline = time.monotonic() + grace_s
    while (found := processes(mark)) and time.monotonic() < deadline:
        time.sleep(0.2)
    made = sorted(name for name in namespaces() - namespaces_before if _ours(name, mark))
    return found + [Leftover("network namespace", None, name) for name in made]


def _ours(namespace: str, mark: str) -> bool:
    """Whether every process in `namespace` is of the run marked `mark` (or none is): another
    run's namespace, made while this one ran, holds that run's processes."""
    done = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
    return all(_marked(pid, mark) for pid in done.stdout.split())


def remove(found: list[Leftover]) -> None:
    """Stop the leftover processes by pid (SIGTERM: a node shuts down cleanly) and delete the
    namespaces, so that a failed run does not leave them to the next one."""
    for leftover in found:
        if leftover.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(leftover.pid, signal.SIGTERM)
        else:
            subprocess.run(["ip", "netns", "delete", leftover.what], capture_output=True)
