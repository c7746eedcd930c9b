"""The commands that run the service itself: the API, a worker, the demo and the lab cluster."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer
import uvicorn

from app.config import Settings
from app.target_specs import load_targets
from client.cli.base import EXIT_INTERRUPTED, EXIT_USAGE, Model, cli, fail
from client.demo import QUICKSTART, run_demo
from client.processes import ServiceError, worker_command


@cli.command()
def serve(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8000,
) -> None:
    """Run the REST API (OpenAPI at /docs) and its dashboard (/ui)."""
    typer.echo(f"dashboard: http://{host}:{port}/ui (API at http://{host}:{port}/docs)")
    uvicorn.run("app.main:app", host=host, port=port)


@cli.command()
def worker(
    loglevel: Annotated[str, typer.Option(help="DEBUG, INFO, WARNING or ERROR")] = "INFO",
    target: Annotated[
        list[str] | None,
        typer.Option(
            help="run only this target's trials (repeatable); default: every runnable target "
            "of GALERA_DOE_TARGETS_FILE",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run one Celery worker that runs trials one at a time."""
    runnable = {n for n, spec in load_targets(Settings().targets_file).items() if spec.runnable}
    unknown = sorted(set(target or ()) - runnable)
    if unknown:
        fail(
            f"--target {', '.join(unknown)}: not a runnable target of the targets file "
            f"(runnable: {', '.join(sorted(runnable))})",
            EXIT_USAGE,
        )
    argv = worker_command(loglevel, target or ())
    os.execv(argv[0], argv)


@cli.command()
def demo(
    file: Annotated[
        Path, typer.Argument(metavar="[FILE.yaml]", help="experiment file (YAML)")
    ] = QUICKSTART,
    timeout: Annotated[float, typer.Option(help="seconds to wait for the trials")] = 900.0,
    model: Model = None,
    target: Annotated[
        str | None, typer.Option(help="run on this target instead, e.g. simulated (instant)")
    ] = None,
) -> None:
    """Start the API and a worker, run an experiment end to end, print the optimum.

    It starts its own API on a free port (--url is not used) and stops what it started.
    """
    try:
        run_demo(file, timeout=timeout, model=model, target=target)
    except ServiceError as error:  # the demo's API or worker exited: keep its log tail
        fail(str(error))
    except KeyboardInterrupt:
        fail("interrupted: the API and the worker were stopped", EXIT_INTERRUPTED)


@cli.command()
def lab(
    action: Annotated[str, typer.Argument(help="up, down or status")],
    nodes: Annotated[int, typer.Option(help="node count for `up`")] = 3,
    as_json: Annotated[
        bool, typer.Option("--json", help="status as JSON instead of a table")
    ] = False,
) -> None:
    """Manage the local lab Galera cluster by hand: up [--nodes N], down, status [--json]."""
    if action not in ("up", "down", "status"):
        fail("the action is one of up, down, status", EXIT_USAGE)
    # The lab lives on the worker side; the CLI runs it as a module, importing no worker code.
    argv = [sys.executable, "-m", "worker.lab", action]
    if action == "up":
        argv += ["--nodes", str(nodes)]
    if as_json and action != "down":
        argv.append("--json")
    raise typer.Exit(subprocess.run(argv, check=False).returncode)
