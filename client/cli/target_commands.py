"""`galera-doe targets check NAME`: what an `ssh` target of the targets file needs, host by
host, as a table of what works and what is missing with a fix per line.

It runs where the worker runs, with its targets file (GALERA_DOE_TARGETS_FILE), its keys and
its environment, as `galera-doe lab` does: the checks live on the worker side
(`worker.targets.ssh.check`), run as a module that gets the target on stdin and answers with
its rows as JSON, so the CLI imports no worker code.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from app.config import Settings
from app.target_specs import TargetsFileError, load_targets
from client.cli.base import EXIT_FAILED, EXIT_USAGE, CommandError, cli, fail, stdout
from experiments.galera.target_spec import TargetSpec

CHECK_MODULE = "worker.targets.ssh.check"
ROW_FIELDS = ("host", "check", "ok", "detail", "fix")

targets_cli = typer.Typer(
    help="Check the targets of the targets file (GALERA_DOE_TARGETS_FILE): run it where the "
    "worker runs; it does not use --url.",
    no_args_is_help=True,
)
cli.add_typer(targets_cli, name="targets")


@targets_cli.command("check")
def targets_check(
    name: Annotated[str, typer.Argument(metavar="NAME", help="an ssh target of the file")],
    timeout: Annotated[float, typer.Option(help="seconds to wait for each SSH login")] = 10.0,
) -> None:
    """Reach every host of an ssh target: print what works and what is missing, with a fix.

    It checks the keys, SSH, sudo, mariadbd, sysbench, each node's service and Galera status,
    and the workload scripts; it exits 1 when anything is missing.
    """
    spec = _ssh_target(name)
    rows = run_checks(spec, timeout=timeout)
    console = stdout()
    console.print(check_table(spec.name, rows))
    failed = sum(1 for row in rows if not row["ok"])
    if failed:
        console.print(f"{failed} of {len(rows)} checks failed: see their fixes")
        raise typer.Exit(EXIT_FAILED)
    console.print(f"all {len(rows)} checks passed")


def _ssh_target(name: str) -> TargetSpec:
    """The ssh target `name` of the targets file; exit 2 naming what is wrong otherwise."""
    try:
        targets = load_targets(Settings().targets_file)
    except TargetsFileError as error:
        fail(str(error), EXIT_USAGE)
    spec = targets.get(name)
    if spec is None:
        fail(f"no target '{name}' in the targets file (it has {', '.join(targets)})", EXIT_USAGE)
    if spec.kind != "ssh":
        fail(f"target '{name}' is of kind {spec.kind}: only an ssh target is checked", EXIT_USAGE)
    return spec


def run_checks(spec: TargetSpec, *, timeout: float) -> list[dict[str, Any]]:
    """The target's rows, from the worker side's checks run as a module."""
    done = subprocess.run(
        [sys.executable, "-m", CHECK_MODULE, "--timeout", f"{timeout:g}"],
        input=json.dumps({"name": spec.name, "settings": spec.settings}),
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        rows = json.loads(done.stdout) if done.returncode in (0, 1) else None
    except json.JSONDecodeError:
        rows = None
    if not isinstance(rows, list) or not all(_is_row(row) for row in rows):
        tail = " ".join(done.stderr.strip().splitlines()[-3:]) or f"exit status {done.returncode}"
        raise CommandError(f"the checks of target '{spec.name}' did not run: {tail}")
    return rows


def _is_row(row: object) -> bool:
    return isinstance(row, Mapping) and all(key in row for key in ROW_FIELDS)


def check_table(target: str, rows: Iterable[Mapping[str, Any]]) -> Table:
    """One line per check: host, check, ok or missing, what was found, the fix."""
    table = Table(title=f"target {target}")
    for column in ROW_FIELDS:
        table.add_column(column if column != "ok" else "result", overflow="fold")
    for row in rows:
        table.add_row(
            escape(str(row["host"])),
            escape(str(row["check"])),
            "[green]ok[/]" if row["ok"] else "[red]missing[/]",
            escape(str(row["detail"])),
            escape(str(row["fix"])),
        )
    return table
