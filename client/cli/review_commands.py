"""The commands that list, look into, import into and write out experiments: REST calls through
`client.http` only."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from client import console as show
from client import listings
from client.cli.base import CommandError, ExperimentId, api_client, cli, stdout
from client.files import ObservationFileError, read_observations, results_csv
from client.http import ApiError
from client.report import build_report


@cli.command("list")
def list_experiments(
    ctx: typer.Context,
    status: Annotated[
        str | None, typer.Option(help="only this status: planned, running, completed, cancelled")
    ] = None,
    target: Annotated[str | None, typer.Option(help="only experiments on this target")] = None,
    limit: Annotated[int, typer.Option(min=1, max=500, help="at most this many")] = 50,
) -> None:
    """List your experiments, newest first: status, target, trials done, best so far."""
    with api_client(ctx) as client:
        experiments = client.experiments(status=status, target=target, limit=limit)
    listings.print_experiment_list(stdout(), experiments)


@cli.command("show-trial")
def show_trial(
    ctx: typer.Context,
    trial_id: Annotated[int, typer.Argument(metavar="TRIAL_ID", help="the trial's id", min=1)],
) -> None:
    """Show one trial in full: configuration, responses, timings, attempts, error, raw output."""
    with api_client(ctx) as client:
        listings.print_trial(stdout(), client.trial(trial_id))


@cli.command()
def accept(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    suggestion_id: Annotated[
        int, typer.Argument(metavar="SUGGESTION_ID", help="a suggestion's id (`suggest`)", min=1)
    ],
) -> None:
    """Turn a suggestion into a trial and queue it (on a manual target: await its result)."""
    with api_client(ctx) as client:
        trial = client.accept(experiment_id, suggestion_id)
    stdout().print(
        f"trial {trial['id']} ({trial['status']}) runs "
        f"{', '.join(f'{k}={v}' for k, v in trial['config'].items())}",
        markup=False,
    )


@cli.command()
def observe(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE.csv|FILE.json",
            help="a CSV with one column per factor and response (block and whole_plot"
            " columns optional), or a JSON list of observations",
            show_default=False,
        ),
    ],
    response: Annotated[
        list[str] | None,
        typer.Option(
            "--response",
            help="a CSV column to import as a response (repeat it; default: every column that"
            " is not a factor, block, whole_plot, label or ignored); any other column is an"
            " error unless ignored",
            show_default=False,
        ),
    ] = None,
    ignore_columns: Annotated[
        list[str] | None,
        typer.Option(
            "--ignore-columns",
            help="CSV columns to leave out (repeat it, or separate them with commas)",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Import measurements: on a manual target they are its results, on any other target
    imported runs that seed the experiment (never run again). All rows or none are stored;
    errors name the file's line (the header is line 1) and column."""
    ignored = [name for names in ignore_columns or () for name in names.split(",") if name]
    with api_client(ctx) as client:
        factors = [f["name"] for f in client.experiment(experiment_id)["factors"]]
        try:
            read = read_observations(file, factors, response or (), ignored)
        except ObservationFileError as error:
            raise CommandError(str(error)) from None
        try:
            recorded = client.record_observations(experiment_id, read.observations)
        except ApiError as error:
            placed = read.explain(error.fields)
            if placed is None:
                raise
            raise CommandError(f"nothing recorded: {placed}") from None
        experiment = client.experiment(experiment_id)
    console = stdout()
    console.print(f"recorded {len(recorded)} observations in experiment {experiment_id}")
    show.print_experiment(console, experiment)


class ExportFormat(StrEnum):
    """What `export` writes."""

    csv = "csv"
    plan = "plan"
    json = "json"


@cli.command()
def export(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    fmt: Annotated[
        ExportFormat,
        typer.Option(
            "--format",
            help="csv: every trial with its factors and responses as columns; plan: the run"
            " table to run trials by hand; json: the trials as the API returns them",
        ),
    ] = ExportFormat.csv,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="file to write (default: stdout)", dir_okay=False),
    ] = None,
) -> None:
    """Export an experiment's trials and results (CSV or JSON), or its run table."""
    with api_client(ctx) as client:
        if fmt is ExportFormat.plan:
            text = client.design_csv(experiment_id)
        elif fmt is ExportFormat.json:
            text = json.dumps(client.trials(experiment_id), indent=2) + "\n"
        else:
            factors = [f["name"] for f in client.experiment(experiment_id)["factors"]]
            text = results_csv(factors, client.trials(experiment_id))
    _write(output, text)


class ReportFormat(StrEnum):
    """What `report` writes."""

    markdown = "markdown"
    html = "html"


@cli.command()
def report(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    output: Annotated[Path, typer.Option("--output", "-o", help="file to write", dir_okay=False)],
    fmt: Annotated[
        ReportFormat,
        typer.Option(
            "--format",
            help="markdown (plots written beside it, in FILE's name + _files/) or html (one"
            " file, plots inline)",
        ),
    ] = ReportFormat.markdown,
) -> None:
    """Write a report: design, run table, model, ANOVA, optimum, explanation and plots."""
    images_dir = output.with_name(output.stem + "_files")
    with api_client(ctx) as client:
        built = build_report(
            client,
            experiment_id,
            html_format=fmt is ReportFormat.html,
            image_prefix=f"{images_dir.name}/",
        )
    try:
        if built.images:
            images_dir.mkdir(parents=True, exist_ok=True)
            for name, png in built.images.items():
                (images_dir / name).write_bytes(png)
        output.write_text(built.text, encoding="utf-8")
    except OSError as error:
        raise CommandError(f"cannot write {output}: {error.strerror or error}") from None
    plots = f" and {len(built.images)} plots in {images_dir}" if built.images else ""
    typer.echo(f"wrote {output}{plots}", err=True)


def _write(output: Path | None, text: str) -> None:
    if output is None:
        typer.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as error:
        raise CommandError(f"cannot write {output}: {error.strerror or error}") from None
    typer.echo(f"wrote {output}", err=True)
