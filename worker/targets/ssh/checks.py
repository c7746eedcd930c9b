"""What an `ssh` target needs of the worker's own files, checked when the worker loads the
target: the known_hosts file, every host's private key (there, open to no other user, usable
without a passphrase), and the operator's workload scripts (there, loaded by this machine's
sysbench, declaring the options the targets file gives them). The settings' shape was checked
with the targets file (`experiments.galera.ssh_settings`); each failure here is a TargetError
naming the setting.
"""

from __future__ import annotations

import re
import stat
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import asyncssh

from experiments.galera.ssh_settings import (
    OperatorWorkload,
    SshHost,
    known_hosts_path,
    operator_workloads,
    ssh_clients,
    ssh_nodes,
)
from worker.targets.base import TargetError

HELP_TIMEOUT_S = 30
# sysbench's answer to `help` for a script that declares no options (it loaded, and takes any
# option as sysbench.opt.<name>).
_NO_HELP = "does not implement the 'help' command"
# The options a script's `help` lists: "  --name=N  description", "  --name[=on|off] ...".
_HELP_OPTION = re.compile(r"^\s+--([a-z][a-z0-9_]*)", re.MULTILINE)
# What the service passes every workload (the schema it prepares): a script that declares
# options must declare these too, or sysbench refuses the run.
SERVICE_OPTIONS = ("tables", "table_size")


def check_local_files(
    target: str, settings: Mapping[str, Any], *, sysbench: str = "sysbench"
) -> None:
    """Raise TargetError naming the first setting of target `target` whose file on this
    machine is missing or unusable (module docstring)."""
    problem = known_hosts_problem(settings)
    hosts = [n.host for n in ssh_nodes(settings)] + ssh_clients(settings)
    problem = problem or next((p for h in hosts if (p := key_problem(h))), "")
    for workload in operator_workloads(settings).values():
        problem = problem or script_problem(workload, sysbench=sysbench)
    if problem:
        raise TargetError(f"target '{target}': settings.{problem}")


def known_hosts_problem(settings: Mapping[str, Any]) -> str:
    """Why the known_hosts file cannot be used ('' when it can), starting with its setting."""
    path = Path(known_hosts_path(settings)).expanduser()
    if not path.is_file():
        return f"known_hosts: {path} does not exist"
    return ""


def key_problem(host: SshHost) -> str:
    """Why `host`'s private key cannot be used ('' when it can), starting with its setting: it
    must be a file open to no other user (ssh itself refuses a key others can read), a private
    key the worker reads without a passphrase."""
    path = Path(host.ssh_key).expanduser()
    where = f"{host.where}.ssh_key"
    if not path.is_file():
        return f"{where}: {path} does not exist (the private key of {host.name})"
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        return f"{where}: {path} is open to other users (mode {mode:04o}): chmod 600 {path}"
    try:
        asyncssh.read_private_key(path)
    except OSError as error:
        return f"{where}: {path} cannot be read by the worker: {error.strerror}"
    except ValueError as error:  # asyncssh.KeyImportError
        # A passphrase-protected key lands here too: the worker has no one to ask.
        return f"{where}: {path} is not a private key usable without a passphrase: {error}"
    return ""


def script_problem(workload: OperatorWorkload, *, sysbench: str = "sysbench") -> str:
    """Why the operator's script cannot run ('' when it can), starting with its setting: it
    must exist, load in sysbench (`sysbench <script> help` exits 0, or says the script
    declares no options) and, when it declares options, declare every one the targets file
    gives it."""
    where = f"workloads.{workload.name}.script"
    path = Path(workload.script).expanduser()
    if not path.is_file():
        return f"{where}: {path} does not exist"
    try:
        done = subprocess.run(
            [sysbench, str(path), "help"],
            capture_output=True,
            text=True,
            timeout=HELP_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{where}: `{sysbench} {path} help` could not run: {error}"
    return help_problem(workload, done.returncode, done.stdout + done.stderr)


def help_problem(workload: OperatorWorkload, returncode: int, output: str) -> str:
    """What `sysbench <script> help` exiting `returncode` with `output` says is wrong with the
    operator's script ('' when nothing)."""
    where = f"workloads.{workload.name}"
    lines = output.strip().splitlines()
    fatal = next((line for line in lines if line.startswith("FATAL:")), "")
    if fatal or (returncode != 0 and _NO_HELP not in output):
        said = fatal.removeprefix("FATAL:").strip() or (
            lines[-1] if lines else f"exit status {returncode}"
        )
        return f"{where}.script: {workload.script} does not load in sysbench: {said}"
    if returncode != 0:  # no options declared: the script reads any option it is given
        return ""
    listed = set(_HELP_OPTION.findall(output))
    unlisted = [name for name in SERVICE_OPTIONS if name not in listed]
    if unlisted:
        return (
            f"{where}.script: {workload.script} does not declare --{unlisted[0]} in"
            " sysbench.cmdline.options: the service passes --tables and --table_size (the"
            " schema it prepares) to every workload, so sysbench would refuse the run"
        )
    missing = [name for name in workload.options if name not in listed]
    if missing:
        return (
            f"{where}.options.{missing[0]}: {workload.script} does not declare it in"
            " sysbench.cmdline.options, so sysbench would refuse it"
        )
    return ""
