"""Terminal views of the experiment list and of one trial in full (raw output included)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from experiments.numbers import format_value, measured


def print_experiment_list(console: Console, experiments: Iterable[Mapping[str, Any]]) -> None:
    """One row per experiment: id, name, target, status, trials done of all, best, created."""
    table = Table(title="Experiments, newest first")
    for name, justify in (("id", "right"), ("name", "left"), ("target", "left"),
                          ("status", "left"), ("done", "right"), ("best", "right"),
                          ("created", "left")):  # fmt: skip
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for experiment in experiments:
        counts = experiment["progress"]
        done = counts["succeeded"] + counts["failed"] + counts["cancelled"]
        best = experiment["best"]
        response = experiment["objective"]["response"]
        table.add_row(
            str(experiment["id"]),
            escape(experiment["name"]),
            escape(experiment["target"]),
            experiment["status"],
            f"{done}/{counts['total']}",
            "" if best is None else escape(f"{response} {measured(best['value'])}"),
            str(experiment["created_at"])[:16].replace("T", " "),
        )
    console.print(table)


def print_trial(console: Console, trial: Mapping[str, Any]) -> None:
    """A trial in full: where it sits, its configuration, responses, timings, attempts, error,
    and the raw output of the tools that measured it."""
    facts = Table(title=f"Trial {trial['id']} of experiment {trial['experiment_id']}",
                  show_header=False)  # fmt: skip
    facts.add_column("field")
    facts.add_column("value", overflow="fold")
    rows = [
        ("status", trial["status"]),
        ("run order", trial["run_order"]),
        ("point", f"{trial['point_type']} (from {trial['source']})"),
        ("block", trial["block"]),
        ("whole plot", trial.get("whole_plot")),
        ("attempts", trial["attempts"]),
        ("worker", trial.get("worker")),
        ("queued", trial.get("queued_at")),
        ("started", trial.get("started_at")),
        ("finished", trial.get("finished_at")),
        ("error", trial.get("error")),
    ]
    for name, value in rows:
        if value is not None:
            facts.add_row(name, escape(str(value)))
    console.print(facts)
    for title, values in (
        ("configuration", trial["config"]),
        ("responses", trial.get("responses")),
    ):
        if not values:
            continue
        table = Table(title=title)
        table.add_column("name")
        table.add_column("value", justify="right")
        for name, value in values.items():
            shown = measured(value) if title == "responses" else format_value(value)
            table.add_row(escape(name), escape(shown))
        console.print(table)
    kept = trial.get("record")
    if kept:
        print_record(console, kept)
    raw = trial.get("raw_output")
    console.print("raw output:" if raw else "raw output: none stored")
    if raw:
        console.print(raw, markup=False, highlight=False, soft_wrap=True)


def print_record(console: Console, kept: Mapping[str, Any]) -> None:
    """What the trial ran on: versions, the plan and the variables it set, the commands, and
    per node how many variables were configured and its wsrep counters that moved."""
    table = Table(title="reproducibility record", show_header=False)
    table.add_column("field")
    table.add_column("value", overflow="fold")
    for name, value in (kept.get("versions") or {}).items():
        table.add_row(f"{name} version", escape(str(value)))
    plan = dict(kept.get("plan") or {})
    variables = plan.pop("variables", {}) or {}
    table.add_row("plan", escape(", ".join(f"{k}={v}" for k, v in plan.items())))
    table.add_row("variables set", escape(", ".join(f"{k}={v}" for k, v in variables.items())))
    for command in kept.get("commands") or []:
        table.add_row("command", escape(command))
    for node in kept.get("nodes") or []:
        before, after = node.get("wsrep_status_before", {}), node.get("wsrep_status_after", {})
        moved = sum(1 for name, value in after.items() if before.get(name) != value)
        table.add_row(
            f"{node['node']} ({node['address']})",
            f"{len(node.get('variables') or {})} configured variables, {moved} wsrep counters"
            " moved (GET /trials/ID has them all)",
        )
    console.print(table)
