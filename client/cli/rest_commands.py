"""The commands that read and change experiments: each is REST calls through `client.http` only."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from client import analysis_view
from client import console as show
from client.cli.base import (
    CommandError,
    ExperimentId,
    Model,
    RestartReplicates,
    SpecFile,
    Timeout,
    api_client,
    cli,
    stdout,
)
from client.http import ApiError, Client

design_cli = typer.Typer(help="Plan designs without storing anything.", no_args_is_help=True)
cli.add_typer(design_cli, name="design")


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
    restart_replicates: RestartReplicates = False,
    timeout: Timeout = 3600.0,
    model: Model = None,
) -> None:
    """Submit an experiment from a YAML file, start its trials and print its id.

    On a target that runs nothing itself (`manual`), the trials await their observations
    (POST /experiments/ID/observations) and nothing is started.
    """
    spec = show.load_spec(file)
    if target is not None:
        spec["target"] = target
    console = stdout()
    with api_client(ctx) as client:
        targets = {t["name"]: t for t in client.targets()}
        created = client.create_experiment(spec)
        experiment_id = created["id"]
        console.print(
            f"experiment {experiment_id} {created['name']!r} on target {created['target']!r}: "
            f"{len(created['trials'])} planned trials",
            markup=False,
        )
        show.print_design_notes(console, created)
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
        _start_and_follow(
            client,
            experiment_id,
            console,
            wait=wait,
            timeout=timeout,
            model=model,
            restart_replicates=restart_replicates,
        )


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
    restart_replicates: RestartReplicates = False,
    timeout: Timeout = 3600.0,
    model: Model = None,
) -> None:
    """Queue an experiment's pending trials, in run order."""
    with api_client(ctx) as client:
        _start_and_follow(
            client,
            experiment_id,
            stdout(),
            wait=wait,
            timeout=timeout,
            model=model,
            restart_replicates=restart_replicates,
        )


def _start_and_follow(
    client: Client,
    experiment_id: int,
    console: Console,
    *,
    wait: bool,
    timeout: float,
    model: str | None,
    restart_replicates: bool,
) -> None:
    started = client.start(experiment_id, restart_replicates=restart_replicates)
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
    analysis_view.print_results(console, final, analysis)


@cli.command()
def cancel(ctx: typer.Context, experiment_id: ExperimentId) -> None:
    """Cancel every trial of an experiment that has not started (and its optimization loop)."""
    with api_client(ctx) as client:
        show.print_experiment(stdout(), client.cancel(experiment_id))


@cli.command()
def status(ctx: typer.Context, experiment_id: ExperimentId) -> None:
    """Show an experiment: status, target, trial counts by status, best so far, its loop."""
    with api_client(ctx) as client:
        show.print_experiment(stdout(), client.experiment(experiment_id))


@cli.command()
def strategies(ctx: typer.Context) -> None:
    """List the strategies `suggest` and `optimize` take, as the server's registry names them."""
    with api_client(ctx) as client:
        show.print_strategies(stdout(), client.strategies())


@cli.command()
def trials(ctx: typer.Context, experiment_id: ExperimentId) -> None:
    """List an experiment's trials in run order: config, status, objective value, error."""
    with api_client(ctx) as client:
        experiment = client.experiment(experiment_id)
        show.print_trials(stdout(), experiment, client.trials(experiment_id))


@cli.command()
def analysis(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    response: Annotated[
        str | None,
        typer.Option(help="response to model, e.g. tps (default: the objective's)"),
    ] = None,
    model: Model = None,
) -> None:
    """Fit a model of one response: fit statistics, coefficients, ranked factors, optimum."""
    with api_client(ctx) as client:
        experiment = client.experiment(experiment_id)
        report = client.analysis(experiment_id, response=response, model=model)
        analysis_view.print_analysis(stdout(), experiment, report)


@cli.command()
def suggest(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    strategy: Annotated[
        str, typer.Option(help="a strategy's name (`galera-doe strategies` lists them)")
    ] = "auto",
    count: Annotated[
        int, typer.Option(min=1, help="sequential picks (auto's design steps come whole)")
    ] = 1,
) -> None:
    """Suggest what to run next, with predictions and reasons; stored, nothing runs."""
    with api_client(ctx) as client:
        experiment = client.experiment(experiment_id)
        plan = client.suggest(experiment_id, strategy=strategy, count=count)
        show.print_plan(stdout(), experiment, plan)


@cli.command()
def optimize(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    budget: Annotated[int, typer.Option(min=1, help="trials the loop may run (required)")],
    budget_seconds: Annotated[
        float | None,
        typer.Option(
            help="seconds of trial time the loop may spend beside its trials (each trial's wall"
            " time); it stops at whichever budget is spent first",
            show_default=False,
        ),
    ] = None,
    strategy: Annotated[
        str, typer.Option(help="a strategy that closes a loop (`galera-doe strategies`)")
    ] = "auto",
    batch_size: Annotated[int, typer.Option(min=1, help="trials per round")] = 1,
    stop_below: Annotated[
        float | None,
        typer.Option(
            help="stop when no configuration is expected to gain this much (objective units)",
            show_default=False,
        ),
    ] = None,
    restart_replicates: RestartReplicates = False,
    wait: Annotated[
        bool,
        typer.Option("--wait", help="follow the loop until it ends, then print its stop reason"),
    ] = False,
    timeout: Timeout = 3600.0,
) -> None:
    """Run the closed optimization loop in the workers until its budget or its stopping rule.

    Each round suggests a batch, runs it and refits; follow it with --wait or `status ID`.
    """
    console = stdout()
    with api_client(ctx) as client:
        loop = client.optimize(
            experiment_id,
            budget=budget,
            budget_seconds=budget_seconds,
            strategy=strategy,
            batch_size=batch_size,
            stop_when_expected_improvement_below=stop_below,
            restart_replicates=restart_replicates,
        )
        _print_loop_started(console, loop)
        if wait:
            _follow_loop(client, experiment_id, loop["id"], console, timeout=timeout)


def _print_loop_started(console: Console, loop: Mapping[str, Any]) -> None:
    """The loop's id, status, strategy, budgets and batch size."""
    timed = loop.get("budget_seconds")
    seconds = "" if timed is None else f" or {timed:g} s of trial time"
    console.print(
        f"optimization loop {loop['id']} {loop['status']}: {loop['strategy']}, "
        f"budget {loop['budget']} trials{seconds}, {loop['batch_size']} per round"
    )


def _follow_loop(
    client: Client, experiment_id: int, loop_id: int, console: Console, *, timeout: float
) -> None:
    """Follow the loop until it ends, print how and why it stopped, then the results; a
    CommandError when the loop failed."""
    final = show.follow(
        client,
        experiment_id,
        console,
        timeout=timeout,
        until=show.loop_finished(loop_id),
        loop_id=loop_id,
    )
    ended = final["optimization"]
    show.print_optimization(console, ended)
    console.print(
        f"loop {ended['status']}: {ended.get('stop_reason') or 'no stop reason'}",
        markup=False,
    )
    if ended["status"] == "failed":
        raise CommandError(f"optimization loop {ended['id']} failed: {ended.get('error')}")
    try:
        analysis = client.analysis(experiment_id)
    except ApiError as error:
        console.print(f"no analysis: {error}", markup=False)
        return
    analysis_view.print_results(console, final, analysis)


@design_cli.command("preview")
def design_preview(ctx: typer.Context, file: SpecFile) -> None:
    """Plan the design of an experiment file: its run table and quality report; nothing is
    stored."""
    spec = show.load_spec(file)
    request = {k: spec[k] for k in ("factors", "design", "constraints", "target") if k in spec}
    with api_client(ctx) as client:
        show.print_design(stdout(), client.preview_design(request))


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
    model: Model = None,
    width: Annotated[int, typer.Option(help="pixels")] = 800,
    height: Annotated[int, typer.Option(help="pixels")] = 600,
) -> None:
    """Save a plot of the fitted model, rendered by the server, as a PNG file."""
    with api_client(ctx) as client:
        image = client.plot(
            experiment_id, kind, x=x, y=y, response=response, model=model, width=width,
            height=height,
        )  # fmt: skip
    try:
        output.write_bytes(image)
    except OSError as error:
        raise CommandError(f"cannot write {output}: {error.strerror or error}") from None
    typer.echo(f"wrote {output} ({width} x {height})", err=True)
