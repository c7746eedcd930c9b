"""What the CLI and the demo show: experiment files read, progress followed, results as tables.

Everything here works on the JSON bodies of the REST API (through `client.http.Client`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from client.cells import config_text, facts_table, listed, num, shorten, sig
from client.http import Client
from experiments.numbers import format_value, significant

Json = dict[str, Any]

FINAL_EXPERIMENT_STATUSES = frozenset({"completed", "cancelled"})
TRIAL_STATUSES = ("pending", "queued", "running", "succeeded", "failed", "cancelled")
# Factor names up to this long stay whole in a narrow table; longer ones become initials.
SHORT_NAME = 6


class SpecFileError(ValueError):
    """An experiment file that is missing, unreadable, not YAML or not a mapping."""


class WaitTimeoutError(RuntimeError):
    """What was followed did not finish in time (it goes on in the service)."""


def load_spec(path: Path) -> Json:
    """The experiment (or design) described by the YAML file at `path`."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise SpecFileError(f"cannot read {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise SpecFileError(f"cannot read {path}: not a UTF-8 text file") from None
    try:
        spec = yaml.safe_load(text)
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or "not valid YAML"
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise SpecFileError(f"{path} is not valid YAML: {problem}{where}") from None
    if not isinstance(spec, dict):
        raise SpecFileError(f"{path} does not hold a YAML mapping (name, target, factors, ...)")
    return spec


# Following progress ----------------------------------------------------------------------------


def experiment_finished(experiment: Mapping[str, Any]) -> bool:
    """Whether every trial of the experiment has ended (or it was cancelled)."""
    return experiment["status"] in FINAL_EXPERIMENT_STATUSES


def loop_finished(loop_id: int) -> Callable[[Mapping[str, Any]], bool]:
    """A test of whether the optimization loop `loop_id` has stopped, failed or been cancelled."""

    def finished(experiment: Mapping[str, Any]) -> bool:
        loop = experiment.get("optimization")
        return loop is not None and loop["id"] == loop_id and loop["status"] != "running"

    return finished


def progress_detail(experiment: Mapping[str, Any]) -> str:
    """One line of what the trials are doing: running, failed, best so far, the loop's round."""
    counts = experiment["progress"]
    detail = f"running {counts['running']}  failed {counts['failed']}"
    best = experiment["best"]
    if best is not None:
        detail += f"  best {experiment['objective']['response']} {best['value']:.1f}"
    loop = experiment.get("optimization")
    if loop is not None and loop["status"] == "running":
        detail += f"  loop round {loop['rounds']}, {loop['trials_used']}/{loop['budget']} trials"
    remaining = (experiment.get("timing") or {}).get("remaining_s")
    if remaining is not None:
        detail += f"  about {_duration(remaining)} left"
    return detail


def _duration(seconds: float) -> str:
    """A time left as people say it: 40 s, 3 min, 1 h 20 min."""
    if seconds < 90:
        return f"{max(round(seconds), 1)} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 90 else f"{minutes // 60} h {minutes % 60} min"


def progress_columns(label: str) -> tuple[ProgressColumn, ...]:
    """The columns of a progress bar of runs: `label`, the bar, done of all, what the last run
    said, the time elapsed."""
    return (
        TextColumn(f"[bold]{label}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
    )


def follow(
    client: Client,
    experiment_id: int,
    console: Console,
    *,
    timeout: float,
    until: Callable[[Mapping[str, Any]], bool] = experiment_finished,
    check_alive: Callable[[], None] | None = None,
    interval: float = 0.3,
    loop_id: int | None = None,
) -> Json:
    """Show a progress bar of the experiment's trials until `until(experiment)` holds; return the
    experiment as it was then. With `loop_id`, the bar counts that optimization loop's trials
    against its budget; the line beside it says what runs, the best so far and the time left.

    `check_alive` is called before every poll (the demo checks its API and worker processes).
    Raises WaitTimeoutError after `timeout` seconds.
    """
    deadline = time.monotonic() + timeout
    with Progress(*progress_columns("trials"), console=console) as progress:
        task = progress.add_task("trials", total=None, detail="")
        while True:
            if check_alive is not None:
                check_alive()
            experiment = client.experiment(experiment_id)
            total, done = _bar(experiment, loop_id)
            progress.update(
                task, total=total, completed=done, detail=escape(progress_detail(experiment))
            )
            if until(experiment):
                return experiment
            if time.monotonic() > deadline:
                raise WaitTimeoutError(
                    f"experiment {experiment_id} did not finish in {timeout:.0f} s; it goes on "
                    f"(see `galera-doe status {experiment_id}`)"
                )
            time.sleep(interval)


def short_names(names: list[str], width: int) -> dict[str, str]:
    """Column headers for factors that fit `width` characters: the names themselves when they
    fit, else the initials of their words (threads_per_client: tpc), made unique with a digit,
    which a legend under the table spells out."""
    if sum(len(name) + 3 for name in names) <= width:
        return {name: name for name in names}
    shorts: dict[str, str] = {}
    for name in names:
        short = name if len(name) <= SHORT_NAME else "".join(p[0] for p in name.split("_") if p)
        candidate, n = short, 2
        while candidate in shorts.values():
            candidate, n = f"{short}{n}", n + 1
        shorts[name] = candidate
    return shorts


def _bar(experiment: Mapping[str, Any], loop_id: int | None) -> tuple[int, int]:
    """(total, done) of the bar: the experiment's trials, or the loop's budget and use."""
    loop = experiment.get("optimization")
    if loop_id is not None and loop is not None and loop["id"] == loop_id:
        return loop["budget"], min(loop["trials_used"], loop["budget"])
    counts = experiment["progress"]
    return counts["total"], counts["succeeded"] + counts["failed"] + counts["cancelled"]


# Tables ----------------------------------------------------------------------------------------


def print_experiment(console: Console, experiment: Mapping[str, Any]) -> None:
    """Name, status, target and objective, trial counts by status, the best so far, the loop."""
    objective = experiment["objective"]
    console.print(
        f"[bold]Experiment {experiment['id']}[/] {escape(repr(experiment['name']))}: "
        f"{experiment['status']}, target {escape(experiment['target'])}, "
        f"{objective['goal']} {escape(objective['response'])}"
    )
    counts = experiment["progress"]
    table = Table(title="Trials by status")
    for status in (*TRIAL_STATUSES, "total"):
        table.add_column(status, justify="right")
    table.add_row(*(str(counts.get(status, 0)) for status in (*TRIAL_STATUSES, "total")))
    console.print(table)
    best = experiment["best"]
    if best is None:
        console.print("best so far: none yet")
    else:
        console.print(
            f"best so far: trial {best['trial_id']}, {escape(objective['response'])} "
            f"{best['value']:.1f} at {escape(config_text(best['config']))}"
        )
    print_design_notes(console, experiment)
    if experiment.get("optimization") is not None:
        print_optimization(console, experiment["optimization"])


def print_design_notes(console: Console, experiment: Mapping[str, Any]) -> None:
    """What the planner chose and noticed (e.g. a face-centred design, runs rounded)."""
    for note in experiment.get("design_notes") or []:
        console.print(f"design: {escape(note)}")


def print_optimization(console: Console, loop: Mapping[str, Any]) -> None:
    """The closed optimization loop: status, stage, rounds, budget used, why it stopped."""
    table = facts_table(f"Optimization loop {loop['id']}")
    stop_rule = loop.get("stop_when_expected_improvement_below")
    timed = loop.get("budget_seconds")
    rows = [
        ("status", loop["status"]),
        ("strategy", loop["strategy"]),
        ("stage", loop.get("stage")),
        ("rounds", loop["rounds"]),
        ("trials used", f"{loop['trials_used']} of {loop['budget']} (batch {loop['batch_size']})"),
        (
            "trial time used",
            None if timed is None else f"{sig(loop.get('seconds_used'), 4)} of {sig(timed, 6)} s",
        ),
        ("last expected improvement", sig(loop.get("expected_improvement"), 4)),
        ("stop when improvement below", sig(stop_rule, 4)),
        ("replicates", "nodes restarted first" if loop.get("restart_replicates") else None),
        ("explanation", loop.get("explanation")),
        ("stop reason", loop.get("stop_reason")),
        ("error", loop.get("error")),
    ]
    answer, found = loop.get("deploy"), loop.get("recommendation")
    if answer is not None:
        rows.insert(5, ("deploy", answer["summary"]))
    elif found is not None:  # a loop from before the deploy answer was kept
        rows.insert(5, ("recommended", _recommended(found)))
    for name, value in rows:
        if value is not None:
            table.add_row(name, escape(str(value)))
    console.print(table)


def _recommended(found: Mapping[str, Any]) -> str:
    """The loop's recommendation in one line: where, what the model predicts, how often run."""
    spread = "" if found.get("uncertainty") is None else f" ± {sig(found['uncertainty'], 3)}"
    return (
        f"{config_text(found['config'])}: predicted {sig(found['predicted'], 4)}{spread}"
        f" ({found['runs']} run(s))"
    )


def print_trials(
    console: Console, experiment: Mapping[str, Any], trials: Iterable[Mapping[str, Any]]
) -> None:
    """The trials in run order: configuration, status, the objective's value, attempts, error."""
    trials = list(trials)
    response = experiment["objective"]["response"]
    table = Table(title=f"Trials of experiment {experiment['id']} ({len(trials)})")
    table.add_column("id", justify="right")
    table.add_column("run", justify="right")
    table.add_column("status")
    table.add_column("config")
    table.add_column(escape(response), justify="right")
    table.add_column("attempts", justify="right")
    table.add_column("error")
    for trial in trials:
        value = (trial.get("responses") or {}).get(response)
        table.add_row(
            str(trial["id"]),
            str(trial["run_order"]),
            trial["status"],
            escape(config_text(trial["config"])),
            num(value),
            str(trial["attempts"]),
            escape(shorten(trial.get("error"))),
        )
    console.print(table)


def print_strategies(console: Console, strategies: Iterable[Mapping[str, Any]]) -> None:
    """The server's strategies: name, what each does, whether `optimize` can run it."""
    table = Table(title="Strategies")
    table.add_column("name")
    table.add_column("what it does")
    table.add_column("closes a loop")
    for strategy in strategies:
        closes = "yes" if strategy["closes_loop"] else "no"
        table.add_row(escape(strategy["name"]), escape(strategy["summary"]), closes)
    console.print(table)


def print_design(console: Console, design: Mapping[str, Any]) -> None:
    """A planned design: the run table, the quality report, the family's facts and notes."""
    _print_run_table(console, design)
    _print_quality(console, design)
    family = design.get("family") or {}
    if family:
        facts = facts_table(f"{design['kind']} facts")
        for name, value in family.items():
            facts.add_row(escape(str(name)), escape(listed(value)))
        console.print(facts)
    for note in design.get("notes") or []:
        console.print(f"note: {escape(note)}")


def _print_run_table(console: Console, design: Mapping[str, Any]) -> None:
    """The design's runs in run order (block and whole plot when it has them), factor columns
    shortened to fit and named in a legend, rounded and duplicate points noted."""
    points = design["points"]
    factors = list(points[0]["config"]) if points else []
    blocked = any(p["block"] != 1 for p in points)
    split = any(p["whole_plot"] is not None for p in points)
    table = Table(title=f"Design: {design['kind']}, {design['runs']} runs")
    table.add_column("run", justify="right")
    if blocked:
        table.add_column("block", justify="right")
    if split:
        table.add_column("whole plot", justify="right")
    table.add_column("point")
    headers = short_names(factors, console.width - 30)
    for name in factors:
        table.add_column(escape(headers[name]), justify="right")
    table.add_column("note")
    for point in points:
        note = []
        if point["rounded"]:
            note.append("rounded")
        if point["duplicate_of"] is not None:
            note.append(f"duplicate of {point['duplicate_of']}")
        row = [str(point["run_order"])]
        if blocked:
            row.append(str(point["block"]))
        if split:
            row.append(format_value(point["whole_plot"]))
        row.append(point["point_type"])
        row += [escape(format_value(point["config"].get(name))) for name in factors]
        row.append(", ".join(note))
        table.add_row(*row)
    console.print(table)
    legend = [f"{short} = {name}" for name, short in headers.items() if short != name]
    if legend:
        console.print(escape("columns: " + ", ".join(legend)))


def _print_quality(console: Console, design: Mapping[str, Any]) -> None:
    """The design's quality report for its model, with the aliases of each term."""
    quality = design.get("quality") or {}
    report = facts_table(f"Quality for the {design['model']} model")
    rows = [
        ("runs", quality.get("runs", design["runs"])),
        ("parameters", quality.get("parameters")),
        ("residual df", quality.get("residual_df")),
        ("D-efficiency", num(quality.get("d_efficiency"), ".1f")),
        ("max VIF", sig(quality.get("max_vif"), 3)),
        ("not estimable", ", ".join(quality.get("not_estimable") or []) or "none"),
        ("removed by constraints", design.get("removed_by_constraints", 0)),
    ]
    for name, value in rows:
        if value is not None:
            report.add_row(name, escape(str(value)))
    for term, aliases in (quality.get("aliased_with") or {}).items():
        report.add_row(f"{escape(term)} aliased with", escape(listed(aliases)))
    console.print(report)


def print_plan(console: Console, experiment: Mapping[str, Any], plan: Mapping[str, Any]) -> None:
    """What a strategy proposes: its stage and why, and the stored suggestions."""
    response = experiment["objective"]["response"]
    console.print(f"[bold]strategy {plan['strategy']}, stage {escape(plan['stage'])}[/]")
    console.print(escape(plan["explanation"]))
    if plan.get("expected_improvement") is not None:
        console.print(f"expected improvement: {significant(plan['expected_improvement'], 4)}")
    if plan.get("stop_reason"):
        console.print(f"stop: {escape(plan['stop_reason'])}")
    suggestions = plan["suggestions"]
    if not suggestions:
        console.print("no suggestion")
        return
    table = Table(title=f"Suggestions ({len(suggestions)})")
    table.add_column("id", justify="right")
    table.add_column("point")
    table.add_column("config")
    table.add_column(f"predicted {escape(response)}", justify="right")
    table.add_column("±", justify="right")
    table.add_column("by")
    table.add_column("reason")
    for suggestion in suggestions:
        reason = suggestion["reason"]
        table.add_row(
            str(suggestion["id"]),
            suggestion["point_type"],
            escape(config_text(suggestion["config"])),
            num(suggestion.get("predicted")),
            num(suggestion.get("uncertainty")),
            escape(suggestion.get("predicted_by") or ""),
            "as above" if reason == plan["explanation"] else escape(reason),
        )
    console.print(table)
