"""A confirmation on the terminal: its plan, a progress bar of its pairs, and its result."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from client.cells import config_text
from client.console import WaitTimeoutError, progress_columns
from client.http import Client

Json = dict[str, Any]
FINAL = {"succeeded", "failed", "cancelled"}


def print_plan(console: Console, confirmation: Mapping[str, Any]) -> None:
    """What the confirmation runs and why this many pairs."""
    console.print(
        f"confirmation {confirmation['id']}: {confirmation['pairs']} interleaved pairs of"
        f" {config_text(confirmation['candidate'], ', ')} (to deploy) against"
        f" {config_text(confirmation['baseline'], ', ')} (today's)",
        markup=False,
    )
    reason = confirmation["plan"].get("reason")
    if reason:
        console.print(reason, markup=False)


def follow(
    client: Client,
    experiment_id: int,
    confirmation_id: int,
    console: Console,
    *,
    timeout: float,
    interval: float = 0.5,
    check_alive: Callable[[], None] | None = None,
) -> Json:
    """A progress bar of the confirmation's runs until it ended; returns it then. Raises
    WaitTimeoutError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    with Progress(*progress_columns("pairs"), console=console) as progress:
        task = progress.add_task("pairs", total=None, detail="")
        while True:
            if check_alive is not None:
                check_alive()
            found = client.confirmation(experiment_id, confirmation_id)
            runs = found["trials"]
            done = sum(t["status"] in FINAL for t in runs)
            progress.update(task, total=len(runs), completed=done, detail=escape(_latest(found)))
            if found["status"] != "running":
                return found
            if time.monotonic() > deadline:
                raise WaitTimeoutError(
                    f"confirmation {confirmation_id} did not end in {timeout:.0f} s; it goes on"
                    f" in the workers (see `galera-doe confirmations {experiment_id}`)"
                )
            time.sleep(interval)


def _latest(confirmation: Mapping[str, Any]) -> str:
    """The last finished run: its pair, arm and measured response."""
    response = confirmation["response"]
    ended = [t for t in confirmation["trials"] if t["status"] == "succeeded"]
    if not ended:
        return ""
    last = max(ended, key=lambda t: t["finished_at"] or "")
    value = (last["responses"] or {}).get(response)
    shown = "?" if value is None else f"{value:.4g}"
    return f"pair {last['pair']} {last['arm']}: {response} {shown}"


def print_result(console: Console, confirmation: Mapping[str, Any]) -> None:
    """The sentence to paste, then the pairs measured, or why there is no result."""
    if confirmation["status"] == "failed" or confirmation.get("result") is None:
        console.print(
            f"confirmation {confirmation['id']} {confirmation['status']}:"
            f" {confirmation.get('error') or 'no result yet'}",
            markup=False,
        )
        return
    console.print(confirmation["sentence"], markup=False)
    response = confirmation["response"]
    table = Table(title=f"{response} by pair (run order)")
    for column in ("pair", "first", "candidate", "baseline"):
        table.add_column(column)
    for pair, runs in sorted(_pairs(confirmation).items()):
        first = min(runs.values(), key=lambda t: t["run_order"])["arm"]
        table.add_row(
            str(pair),
            first,
            *(_value(runs.get(arm), response) for arm in ("candidate", "baseline")),
        )
    console.print(table)


def _pairs(confirmation: Mapping[str, Any]) -> dict[int, dict[str, Json]]:
    pairs: dict[int, dict[str, Json]] = {}
    for trial in confirmation["trials"]:
        pairs.setdefault(trial["pair"], {})[trial["arm"]] = trial
    return pairs


def _value(trial: Json | None, response: str) -> str:
    if trial is None or trial["status"] != "succeeded":
        return "-" if trial is None else trial["status"]
    value = (trial["responses"] or {}).get(response)
    return "?" if value is None else f"{value:.4g}"
