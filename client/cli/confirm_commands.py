"""Confirm the configuration to deploy against today's, over REST (`client.http` only)."""

from __future__ import annotations

from typing import Annotated

import typer

from client import confirmation_view
from client.cli.base import CommandError, ExperimentId, Timeout, api_client, cli, stdout


@cli.command()
def confirm(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    pairs: Annotated[
        int | None,
        typer.Option(
            min=2,
            help="pairs to run; unset: enough for --power from the measured noise",
            show_default=False,
        ),
    ] = None,
    max_pairs: Annotated[int, typer.Option(min=2, help="the most pairs chosen")] = 10,
    power: Annotated[
        float, typer.Option(min=0.01, max=0.99, help="power to detect the predicted gain")
    ] = 0.8,
    fresh: Annotated[
        bool | None,
        typer.Option(
            "--fresh/--no-fresh",
            help="restart every node before each run; unset: wherever the target can",
            show_default=False,
        ),
    ] = None,
    seed: Annotated[int, typer.Option(min=0, help="seeds the pairs' order")] = 0,
    wait: Annotated[
        bool, typer.Option("--wait", help="follow the pairs, then print the result")
    ] = False,
    timeout: Timeout = 3600.0,
) -> None:
    """Run the configuration to deploy against the baseline in randomized interleaved pairs.

    The result is the gain with its 95 % interval and paired p, in a sentence to paste.
    """
    console = stdout()
    with api_client(ctx) as client:
        started = client.confirm(
            experiment_id, pairs=pairs, max_pairs=max_pairs, power=power, fresh=fresh, seed=seed
        )
        confirmation_view.print_plan(console, started)
        if not wait:
            console.print(f"follow it with `galera-doe confirmations {experiment_id}`")
            return
        ended = confirmation_view.follow(
            client, experiment_id, started["id"], console, timeout=timeout
        )
        confirmation_view.print_result(console, ended)
        if ended["status"] == "failed":
            raise CommandError(f"confirmation {ended['id']} failed: {ended.get('error')}")


@cli.command()
def confirmations(ctx: typer.Context, experiment_id: ExperimentId) -> None:
    """Show an experiment's confirmations, newest first, with their results."""
    console = stdout()
    with api_client(ctx) as client:
        found = client.confirmations(experiment_id)
        if not found:
            console.print(f"experiment {experiment_id} has no confirmation yet")
        for confirmation in found:
            confirmation_view.print_plan(console, confirmation)
            confirmation_view.print_result(console, confirmation)
