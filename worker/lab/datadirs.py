"""The lab nodes' datadirs: making them, initialising them, and choosing which to bootstrap from."""

from __future__ import annotations

import logging
import os
import pwd
import re
import shutil
import stat
import subprocess
from pathlib import Path

from worker.galera_sql import GaleraError
from worker.lab import procfs
from worker.lab.layout import SERVER_USER, LabLayout

log = logging.getLogger(__name__)

INSTALL_DB = "/usr/bin/mariadb-install-db"


def grastate(datadir: Path) -> dict[str, str]:
    """grastate.dat as a mapping (empty when the node never ran with wsrep)."""
    try:
        text = (datadir / "grastate.dat").read_text()
    except OSError:
        return {}
    pairs = (line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def check_traversable(path: Path, user: str) -> None:
    """GaleraError unless `user` can traverse `path` and every directory above it."""
    entry = pwd.getpwnam(user)
    groups = set(os.getgrouplist(user, entry.pw_gid))
    for directory in (path, *path.parents):
        info = directory.stat()
        if info.st_uid == entry.pw_uid:
            bit = stat.S_IXUSR
        elif info.st_gid in groups:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not info.st_mode & bit:
            raise GaleraError(
                f"{directory} (mode {stat.filemode(info.st_mode)}) cannot be traversed by the "
                f"{user} user that runs the nodes; rsync SST would fail with 'Permission denied'"
            )


def wipe(layout: LabLayout, index: int) -> None:
    """Remove node `index`'s datadir."""
    shutil.rmtree(layout.datadir(index), ignore_errors=True)


def make_dirs(layout: LabLayout, index: int) -> None:
    """Node `index`'s directory and datadir, owned by the user that runs the nodes."""
    account = pwd.getpwnam(SERVER_USER)
    for directory in (layout.node_dir(index), layout.datadir(index)):
        directory.mkdir(mode=0o750, exist_ok=True)
        os.chown(directory, account.pw_uid, account.pw_gid)


def install(layout: LabLayout, index: int) -> None:
    """A fresh datadir for node `index` (system tables, root by unix socket only)."""
    wipe(layout, index)
    make_dirs(layout, index)
    output = layout.node_dir(index) / "install.log"
    argv = [
        INSTALL_DB,
        "--no-defaults",
        f"--datadir={layout.datadir(index)}",
        f"--user={SERVER_USER}",
        "--skip-test-db",
        f"--innodb-log-file-size={layout.redo_log_size}",
    ]
    try:
        with open(output, "wb") as handle:
            subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=handle,
                stderr=subprocess.STDOUT,
                timeout=layout.timeout_s,
                check=True,
            )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        raise GaleraError(
            f"initialising node{index}'s datadir failed ({error}):\n{procfs.tail(output)}"
        ) from error


def _initialized(layout: LabLayout, index: int) -> bool:
    return (layout.datadir(index) / "mysql").is_dir()


def _bootstrap_rank(layout: LabLayout, index: int) -> tuple[bool, int, int]:
    """Order of preference to bootstrap from: safe first, then most advanced, then node 1."""
    state = grastate(layout.datadir(index))
    seqno = state.get("seqno", "-1")
    return (
        state.get("safe_to_bootstrap", "1") == "1",
        int(seqno) if re.fullmatch(r"-?\d+", seqno) else -1,
        -index,
    )


def prepare_bootstrap(layout: LabLayout) -> bool:
    """Give node 1 the datadir to bootstrap from; True when it had to be created anew.

    After a clean shutdown the last node to leave has safe_to_bootstrap: 1; failing that
    (a node crashed), a node shut down cleanly has the highest seqno. The chosen datadir
    moves to node 1 (datadirs are not tied to ports) and, if not safe, is declared safe:
    InnoDB recovers it, the other nodes catch up by SST, and lab data is disposable.
    """
    candidates = [i for i in range(1, layout.max_nodes + 1) if _initialized(layout, i)]
    if not candidates:
        install(layout, 1)
        return True
    best = max(candidates, key=lambda index: _bootstrap_rank(layout, index))
    first = layout.datadir(1)
    if best != 1:
        log.info("bootstrapping from node%d's datadir, the most recent", best)
        make_dirs(layout, 1)
        other, swap = layout.datadir(best), first.with_name("data.swap")
        shutil.rmtree(swap, ignore_errors=True)  # left by a swap that was interrupted
        first.rename(swap)
        other.rename(first)
        swap.rename(other)
    state_file = first / "grastate.dat"
    if not _bootstrap_rank(layout, 1)[0]:
        log.warning("no lab node was the last to leave cleanly; forcing %s safe", state_file)
        state_file.write_text(
            re.sub(r"safe_to_bootstrap:\s*0", "safe_to_bootstrap: 1", state_file.read_text())
        )
    return False
