"""A lab cluster of a benchmark's own: a fresh directory, free ports, removed afterwards."""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from worker.lab.layout import free_layout
from worker.targets.lab import LabTarget, settings_of


@contextmanager
def own_lab_target(name: str) -> Iterator[LabTarget]:
    """A lab target on a cluster no one else uses; its nodes are stopped and its directory
    removed on the way out. Exits when not run as root (the nodes run as the mysql user)."""
    if os.geteuid() != 0:
        sys.exit("run as root: the lab starts its nodes as the mysql user")
    root = Path(f"/var/tmp/galera-doe-bench-{uuid.uuid4().hex[:8]}")
    root.mkdir(mode=0o755)
    shutil.chown(root, "mysql", "mysql")
    target = LabTarget(name, settings_of(free_layout(root / "lab")))
    try:
        yield target
    finally:
        target.cluster.reset()
        shutil.rmtree(root, ignore_errors=True)
