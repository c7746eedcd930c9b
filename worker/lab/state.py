"""What the lab records under its base directory and which processes are its own.

    lab.json           the running nodes (pids and ports), read by any process that asks
    credentials.json   the lab's SQL user and its generated password (mode 0600)
    lab.lock           serializes processes that start or stop nodes

Nodes outlive the process that started them, so a node is known by its pid and command line
(a live `mariadbd` started with this layout's option file), never by a handle alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import secrets
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

from worker.galera_sql import Credentials
from worker.lab import procfs
from worker.lab.layout import LabLayout

log = logging.getLogger(__name__)

LAB_USER = "galera_doe"

# Nodes this process started, so their exit status is collected (no zombies left in /proc).
CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie has exited)."""
    child = CHILDREN.get(pid)
    if child is not None:
        if child.poll() is None:
            return True
        del CHILDREN[pid]
        return False
    return procfs.running(pid)


@contextlib.contextmanager
def locked(layout: LabLayout, *, blocking: bool = True) -> Iterator[bool]:
    """Hold the lab's lock; yields False when not blocking and another process holds it."""
    with open(layout.base_dir / "lab.lock", "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def load_credentials(layout: LabLayout) -> Credentials:
    """The lab's SQL user, with a password generated the first time and kept (mode 0600)."""
    path = layout.base_dir / "credentials.json"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        data = json.loads(path.read_text())
        return Credentials(data["user"], data["password"])
    credentials = Credentials(LAB_USER, secrets.token_urlsafe(24))
    with os.fdopen(fd, "w") as handle:
        json.dump({"user": credentials.user, "password": credentials.password}, handle)
    return credentials


def _state_file(layout: LabLayout) -> Path:
    return layout.base_dir / "lab.json"


def is_ours(layout: LabLayout, index: int, pid: int) -> bool:
    """Whether `pid` is a live mariadbd started with node `index`'s option file."""
    argv = procfs.argv(pid)
    return (
        alive(pid)
        and bool(argv)
        and Path(argv[0]).name == "mariadbd"
        and f"--defaults-file={layout.config_file(index)}" in argv
    )


def running(layout: LabLayout) -> dict[int, int]:
    """Node index -> pid, from the state file, keeping only pids that are really ours."""
    state_file = _state_file(layout)
    try:
        recorded = json.loads(state_file.read_text())["nodes"]
        pids = {int(entry["index"]): int(entry["pid"]) for entry in recorded}
    except FileNotFoundError:
        return {}
    except (ValueError, KeyError, TypeError) as error:
        log.warning("ignoring unreadable lab state %s: %s", state_file, error)
        return {}
    return {index: pid for index, pid in pids.items() if is_ours(layout, index, pid)}


def adopt(layout: LabLayout) -> dict[int, int]:
    """The running nodes, adding any mariadbd of this layout the state file missed."""
    nodes = running(layout)
    pattern = re.compile(rf"--defaults-file={re.escape(str(layout.base_dir))}/node(\d+)/my\.cnf")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in nodes.values():
            continue
        pid = int(entry.name)
        match = pattern.fullmatch(next(iter(procfs.argv(pid)[1:2]), ""))
        if match and int(match.group(1)) not in nodes:
            index = int(match.group(1))
            if is_ours(layout, index, pid):
                nodes[index] = pid
    save(layout, nodes)
    return nodes


def save(layout: LabLayout, nodes: Mapping[int, int]) -> None:
    """Record the running nodes; with none left, the state file goes."""
    state_file = _state_file(layout)
    if not nodes:
        state_file.unlink(missing_ok=True)
        return
    entries = [
        {
            "index": index,
            "name": f"node{index}",
            "pid": pid,
            "client_port": layout.client_port(index),
            "gmcast_port": layout.gmcast_port(index),
        }
        for index, pid in sorted(nodes.items())
    ]
    temporary = state_file.with_suffix(".tmp")
    temporary.write_text(json.dumps({"cluster_name": layout.cluster_name, "nodes": entries}))
    temporary.replace(state_file)
