"""The `galera-doe` command line: serve the API, run a worker, run the demo."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer
import uvicorn
from rich.console import Console

from app.client import ApiError
from app.demo import QUICKSTART, DemoError, run_demo
from app.processes import ServiceError, worker_command

cli = typer.Typer(help="Design-of-experiments optimizer for Galera cluster benchmarks.")
err = Console(stderr=True)


@cli.command()
def serve(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8000,
) -> None:
    """Run the REST API (OpenAPI at /docs)."""
    uvicorn.run("app.main:app", host=host, port=port)


@cli.command()
def worker(loglevel: Annotated[str, typer.Option()] = "INFO") -> None:
    """Run one Celery worker that runs trials one at a time."""
    argv = worker_command(loglevel)
    os.execv(argv[0], argv)


@cli.command()
def demo(
    file: Annotated[Path, typer.Argument(exists=True, dir_okay=False)] = QUICKSTART,
    timeout: Annotated[float, typer.Option(help="seconds to wait for the trials")] = 900.0,
    model: Annotated[str, typer.Option(help="linear, interaction or quadratic")] = "quadratic",
    target: Annotated[
        str | None, typer.Option(help="run on this target instead, e.g. simulated (instant)")
    ] = None,
) -> None:
    """Start the API and a worker, run an experiment end to end, print the optimum."""
    try:
        run_demo(file, timeout=timeout, model=model, target=target)
    except (DemoError, ApiError, ServiceError) as error:
        err.print(f"[red]error:[/] {error}")
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        err.print("interrupted: the API and the worker were stopped")
        raise typer.Exit(130) from None


@cli.command()
def lab(
    action: Annotated[str, typer.Argument(help="up, down or status")],
    nodes: Annotated[int, typer.Option(help="node count for `up`")] = 3,
) -> None:
    """Manage the local lab Galera cluster by hand: up [--nodes N], down, status."""
    if action not in ("up", "down", "status"):
        err.print("[red]error:[/] the action is one of up, down, status")
        raise typer.Exit(2)
    # The lab lives on the worker side; the CLI runs it as a module, importing no worker code.
    argv = [sys.executable, "-m", "worker.lab", action]
    if action == "up":
        argv += ["--nodes", str(nodes)]
    raise typer.Exit(subprocess.run(argv, check=False).returncode)


def main() -> None:
    """Console-script entry point."""
    cli()
