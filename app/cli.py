"""The `galera-doe` command line: submit and follow experiments through the REST API (only over
HTTP, with `app.client.Client`), and run the service itself (API, worker, lab cluster, demo)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import httpx
import typer
import uvicorn
from rich.console import Console
from typer.core import TyperGroup

from app import console as show
from app import keys
from app.client import DEFAULT_URL, ApiError, Client
from app.config import Settings
from app.demo import QUICKSTART, run_demo
from app.processes import ServiceError, worker_command
from app.services.errors import ConflictError, NotFoundError
from app.targets import load_targets
from experiments.errors import DomainError

# Exit codes: 1 the API refused or could not be reached, 2 bad input on the command line (a file).
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CommandError(RuntimeError):
    """A command could not do what was asked; the message is one line for the user."""


@dataclass(frozen=True)
class Remote:
    """Where the API is and how to authenticate: the global options."""

    url: str = DEFAULT_URL
    api_key: str | None = None

    def client(self) -> Client:
        """A client of the API (close it, or use it in a `with` block)."""
        return Client(self.url, api_key=self.api_key)


class _ReportingGroup(TyperGroup):
    """The root command group: every error a user can cause ends as one line on stderr and an
    exit code, whichever command raised it (no traceback)."""

    def invoke(self, ctx: typer.Context) -> Any:
        with _errors_reported(ctx):
            return super().invoke(ctx)


def _fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _one_line(text: str) -> str:
    return " ".join(text.split())


@contextmanager
def _errors_reported(ctx: typer.Context) -> Iterator[None]:
    try:
        yield
    except ApiError as error:
        _fail(_one_line(str(error)))
    except httpx.TimeoutException:
        _fail(f"the API at {_url(ctx)} did not answer in time")
    except httpx.TransportError:
        _fail(f"cannot reach the API at {_url(ctx)} (is `galera-doe serve` running?)")
    except show.SpecFileError as error:
        _fail(_one_line(str(error)), EXIT_USAGE)
    except (show.WaitTimeoutError, CommandError) as error:
        _fail(_one_line(str(error)))
    except ServiceError as error:  # the demo's API or worker exited: keep its log tail
        _fail(str(error))
    except (NotFoundError, ConflictError, DomainError) as error:  # from `keys`
        _fail(_one_line(str(error)))
    except KeyboardInterrupt:
        _fail("interrupted (what runs in the workers goes on)", EXIT_INTERRUPTED)


def _url(ctx: typer.Context) -> str:
    remote = ctx.find_object(Remote)
    return remote.url if remote is not None else DEFAULT_URL


def _client(ctx: typer.Context) -> Client:
    remote = ctx.find_object(Remote) or Remote()
    try:
        url = httpx.URL(remote.url)
    except httpx.InvalidURL:
        url = None
    if url is None or url.scheme not in ("http", "https") or not url.host:
        _fail(
            f"invalid API URL {remote.url!r} (--url or GALERA_DOE_URL): expected http://HOST:PORT",
            EXIT_USAGE,
        )
    return remote.client()


def _stdout() -> Console:
    return Console()


cli = typer.Typer(
    cls=_ReportingGroup,
    help="Design-of-experiments optimizer for Galera cluster benchmarks.",
    no_args_is_help=True,
)
design_cli = typer.Typer(help="Plan designs without storing anything.", no_args_is_help=True)
cli.add_typer(design_cli, name="design")

ExperimentId = Annotated[int, typer.Argument(metavar="ID", help="experiment id", min=1)]
SpecFile = Annotated[
    Path, typer.Argument(metavar="FILE.yaml", help="experiment file (YAML)", show_default=False)
]
Timeout = Annotated[
    float, typer.Option(help="seconds to wait with --wait before giving up (the work goes on)")
]
Model = Annotated[
    str, typer.Option(help="model to fit: linear, interaction, quadratic or auto (AICc)")
]


@cli.callback()
def _global_options(
    ctx: typer.Context,
    url: Annotated[
        str, typer.Option(envvar="GALERA_DOE_URL", help="base URL of the galera-doe API")
    ] = DEFAULT_URL,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar="GALERA_DOE_API_KEY",
            help="API key, sent as `Authorization: Bearer <key>`",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Design-of-experiments optimizer for Galera cluster benchmarks."""
    ctx.obj = Remote(url=url.rstrip("/"), api_key=api_key or None)


# Experiments over the API -----------------------------------------------------------------------


@cli.command()
def submit(
    ctx: typer.Context,
    file: SpecFile,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait", help="follow the trials with a progress bar, then print the results"
        ),
    ] = False,
    start: Annotated[
        bool, typer.Option("--start/--no-start", help="queue the trials right away")
    ] = True,
    target: Annotated[
        str | None,
        typer.Option(help="run on this target instead of the file's, e.g. simulated"),
    ] = None,
    timeout: Timeout = 3600.0,
    model: Model = "quadratic",
) -> None:
    """Submit an experiment from a YAML file, start its trials and print its id.

    On a target that runs nothing itself (`manual`), the trials await their observations
    (POST /experiments/ID/observations) and nothing is started.
    """
    spec = show.load_spec(file)
    if target is not None:
        spec["target"] = target
    console = _stdout()
    with _client(ctx) as client:
        targets = {t["name"]: t for t in client.targets()}
        created = client.create_experiment(spec)
        experiment_id = created["id"]
        console.print(
            f"experiment {experiment_id} {created['name']!r} on target {created['target']!r}: "
            f"{len(created['trials'])} planned trials",
            markup=False,
        )
        kind = targets.get(created["target"], {})
        if kind.get("kind") == "manual" or kind.get("runnable") is False:
            console.print(
                f"target {created['target']!r} runs nothing itself: the trials await their "
                f"observations (POST /experiments/{experiment_id}/observations); not started",
                markup=False,
            )
            return
        if not start:
            console.print(f"not started; start it with `galera-doe start {experiment_id}`")
            return
        _start_and_follow(client, experiment_id, console, wait=wait, timeout=timeout, model=model)


@cli.command("start")
def start_experiment(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait", help="follow the trials with a progress bar, then print the results"
        ),
    ] = False,
    timeout: Timeout = 3600.0,
    model: Model = "quadratic",
) -> None:
    """Queue an experiment's pending trials, in run order."""
    with _client(ctx) as client:
        _start_and_follow(client, experiment_id, _stdout(), wait=wait, timeout=timeout, model=model)


def _start_and_follow(
    client: Client, experiment_id: int, console: Console, *, wait: bool, timeout: float, model: str
) -> None:
    started = client.start(experiment_id)
    console.print(f"started: {started['progress']['queued']} trials queued")
    if not wait:
        return
    final = show.follow(client, experiment_id, console, timeout=timeout)
    console.print(f"experiment {experiment_id} {final['status']}")
    try:
        analysis = client.analysis(experiment_id, model=model)
    except ApiError as error:  # e.g. every trial failed: the run still ended
        console.print(f"no analysis: {error}", markup=False)
        return
    show.print_results(console, final, analysis)


@cli.command()
def cancel(ctx: typer.Context, experiment_id: ExperimentId) -> None:
    """Cancel every trial of an experiment that has not started (and its optimization loop)."""
    with _client(ctx) as client:
        show.print_experiment(_stdout(), client.cancel(experiment_id))


@cli.command()
def status(ctx: typer.Context, experiment_id: ExperimentId) -> None:
    """Show an experiment: status, target, trial counts by status, best so far, its loop."""
    with _client(ctx) as client:
        show.print_experiment(_stdout(), client.experiment(experiment_id))


@cli.command()
def trials(ctx: typer.Context, experiment_id: ExperimentId) -> None:
    """List an experiment's trials in run order: config, status, objective value, error."""
    with _client(ctx) as client:
        experiment = client.experiment(experiment_id)
        show.print_trials(_stdout(), experiment, client.trials(experiment_id))


@cli.command()
def analysis(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    response: Annotated[
        str | None,
        typer.Option(help="response to model, e.g. tps (default: the objective's)"),
    ] = None,
    model: Model = "quadratic",
) -> None:
    """Fit a model of one response: fit statistics, coefficients, ranked factors, optimum."""
    with _client(ctx) as client:
        experiment = client.experiment(experiment_id)
        report = client.analysis(experiment_id, response=response, model=model)
        show.print_analysis(_stdout(), experiment, report)


@cli.command()
def suggest(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    strategy: Annotated[
        str, typer.Option(help="auto, augment, steepest_ascent, bayes or replicate")
    ] = "auto",
    count: Annotated[
        int, typer.Option(min=1, help="sequential picks (auto's design steps come whole)")
    ] = 1,
) -> None:
    """Suggest what to run next, with predictions and reasons; stored, nothing runs."""
    with _client(ctx) as client:
        experiment = client.experiment(experiment_id)
        plan = client.suggest(experiment_id, strategy=strategy, count=count)
        show.print_plan(_stdout(), experiment, plan)


@cli.command()
def optimize(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    budget: Annotated[int, typer.Option(min=1, help="trials the loop may run (required)")],
    strategy: Annotated[str, typer.Option(help="auto or bayes")] = "auto",
    batch_size: Annotated[int, typer.Option(min=1, help="trials per round")] = 1,
    stop_below: Annotated[
        float | None,
        typer.Option(
            help="stop when no configuration is expected to gain this much (objective units)",
            show_default=False,
        ),
    ] = None,
    wait: Annotated[
        bool,
        typer.Option("--wait", help="follow the loop until it ends, then print its stop reason"),
    ] = False,
    timeout: Timeout = 3600.0,
) -> None:
    """Run the closed optimization loop in the workers until its budget or its stopping rule.

    Each round suggests a batch, runs it and refits; follow it with --wait or `status ID`.
    """
    console = _stdout()
    with _client(ctx) as client:
        loop = client.optimize(
            experiment_id,
            budget=budget,
            strategy=strategy,
            batch_size=batch_size,
            stop_when_expected_improvement_below=stop_below,
        )
        console.print(
            f"optimization loop {loop['id']} {loop['status']}: {loop['strategy']}, "
            f"budget {loop['budget']} trials, {loop['batch_size']} per round"
        )
        if not wait:
            return
        final = show.follow(
            client,
            experiment_id,
            console,
            timeout=timeout,
            until=show.loop_finished(loop["id"]),
        )
    ended = final["optimization"]
    show.print_optimization(console, ended)
    console.print(
        f"loop {ended['status']}: {ended.get('stop_reason') or 'no stop reason'}", markup=False
    )
    if ended["status"] == "failed":
        raise CommandError(f"optimization loop {ended['id']} failed: {ended.get('error')}")


@design_cli.command("preview")
def design_preview(ctx: typer.Context, file: SpecFile) -> None:
    """Plan the design of an experiment file: its run table and quality report; nothing is
    stored."""
    spec = show.load_spec(file)
    request = {k: spec[k] for k in ("factors", "design", "constraints", "target") if k in spec}
    with _client(ctx) as client:
        show.print_design(_stdout(), client.preview_design(request))


class ExportFormat(StrEnum):
    """What `export` writes."""

    csv = "csv"
    json = "json"


@cli.command()
def export(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    fmt: Annotated[
        ExportFormat,
        typer.Option(
            "--format", help="csv: the run table, to run trials by hand; json: the trials"
        ),
    ] = ExportFormat.csv,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="file to write (default: stdout)", dir_okay=False),
    ] = None,
) -> None:
    """Export an experiment's run table as CSV, or its trials as JSON."""
    with _client(ctx) as client:
        if fmt is ExportFormat.csv:
            text = client.design_csv(experiment_id)
        else:
            text = json.dumps(client.trials(experiment_id), indent=2) + "\n"
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as error:
        raise CommandError(f"cannot write {output}: {error.strerror or error}") from None
    typer.echo(f"wrote {output}", err=True)


@cli.command()
def plot(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    kind: Annotated[
        str,
        typer.Argument(
            metavar="KIND",
            help="contour, surface, interaction, main_effects, pareto, half_normal, residuals "
            "or progress",
        ),
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="PNG file to write", dir_okay=False)
    ],
    x: Annotated[
        str | None, typer.Option(help="factor on the x axis (default: most important)")
    ] = None,
    y: Annotated[str | None, typer.Option(help="factor on the y axis (default: next one)")] = None,
    response: Annotated[
        str | None, typer.Option(help="response to plot (default: the objective's)")
    ] = None,
    model: Annotated[
        str, typer.Option(help="linear, interaction, quadratic or auto (AICc selection)")
    ] = "auto",
    width: Annotated[int, typer.Option(help="pixels")] = 800,
    height: Annotated[int, typer.Option(help="pixels")] = 600,
) -> None:
    """Save a plot of the fitted model, rendered by the server, as a PNG file."""
    with _client(ctx) as client:
        image = client.plot(
            experiment_id, kind, x=x, y=y, response=response, model=model, width=width,
            height=height,
        )  # fmt: skip
    try:
        output.write_bytes(image)
    except OSError as error:
        raise CommandError(f"cannot write {output}: {error.strerror or error}") from None
    typer.echo(f"wrote {output} ({width} x {height})", err=True)


# API keys, straight on the metadata database -----------------------------------------------------

keys_cli = typer.Typer(
    help="Manage API keys on the metadata database (GALERA_DOE_DATABASE_URL): run it where the "
    "API runs; it needs no key and does not use --url.",
    no_args_is_help=True,
)
cli.add_typer(keys_cli, name="keys")


def _database_url() -> str:
    return Settings().database_url


@keys_cli.command("create")
def keys_create(
    owner: Annotated[
        str, typer.Argument(help="who the key is for; their experiments are theirs alone")
    ],
    admin: Annotated[
        bool, typer.Option("--admin", help="the key sees and manages everybody's experiments")
    ] = False,
) -> None:
    """Make a key and print its token: shown this once, stored only hashed."""
    made = keys.create_key(_database_url(), owner, admin=admin)
    typer.echo(made.token)
    typer.echo(
        f"key {made.key.id} ({made.key.prefix}…) for {made.key.owner}, role {made.key.role}; "
        "keep the token: it cannot be shown again",
        err=True,
    )


@keys_cli.command("list")
def keys_list() -> None:
    """List every key: id, owner, role, prefix, when made and revoked (never a token)."""
    show.print_keys(_stdout(), keys.list_keys(_database_url()))


@keys_cli.command("revoke")
def keys_revoke(
    key: Annotated[str, typer.Argument(metavar="ID|PREFIX", help="the key's id or prefix")],
) -> None:
    """Revoke a key: requests with it are refused (401) from now on."""
    revoked = keys.revoke_key(_database_url(), key)
    typer.echo(f"key {revoked.id} ({revoked.prefix}…) of {revoked.owner} revoked")


# The service itself -----------------------------------------------------------------------------


@cli.command()
def serve(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8000,
) -> None:
    """Run the REST API (OpenAPI at /docs)."""
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
        _fail(
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
    model: Model = "quadratic",
    target: Annotated[
        str | None, typer.Option(help="run on this target instead, e.g. simulated (instant)")
    ] = None,
) -> None:
    """Start the API and a worker, run an experiment end to end, print the optimum.

    It starts its own API on a free port (--url is not used) and stops what it started.
    """
    try:
        run_demo(file, timeout=timeout, model=model, target=target)
    except KeyboardInterrupt:
        _fail("interrupted: the API and the worker were stopped", EXIT_INTERRUPTED)


@cli.command()
def lab(
    action: Annotated[str, typer.Argument(help="up, down or status")],
    nodes: Annotated[int, typer.Option(help="node count for `up`")] = 3,
) -> None:
    """Manage the local lab Galera cluster by hand: up [--nodes N], down, status."""
    if action not in ("up", "down", "status"):
        _fail("the action is one of up, down, status", EXIT_USAGE)
    # The lab lives on the worker side; the CLI runs it as a module, importing no worker code.
    argv = [sys.executable, "-m", "worker.lab", action]
    if action == "up":
        argv += ["--nodes", str(nodes)]
    raise typer.Exit(subprocess.run(argv, check=False).returncode)


def main() -> None:
    """Console-script entry point."""
    cli()
