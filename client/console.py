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
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from client.http import Client
from experiments.numbers import format_value, significant

Json = dict[str, Any]

FINAL_EXPERIMENT_STATUSES = frozenset({"completed", "cancelled"})
TRIAL_STATUSES = ("pending", "queued", "running", "succeeded", "failed", "cancelled")
# Factor names up to this long stay whole in a narrow table; longer ones become initials.
SHORT_NAME = 6
RANKED_LEGEND = (
    "effect at centre: the change from low to high with the other factors at the centre of"
    " their ranges (twice the coded coefficient of a numeric factor); change at optimum: the"
    " same with the others at the predicted optimum, the number the explanation states; share"
    " of SS: what the model loses without every term of the factor (an interaction counts for"
    " each of its factors, so the shares overlap and need not add up to 100)"
)


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
    columns = (
        TextColumn("[bold]trials"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
    )
    deadline = time.monotonic() + timeout
    with Progress(*columns, console=console) as progress:
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
            f"{best['value']:.1f} at {escape(_settings(best['config']))}"
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
    table = _facts(f"Optimization loop {loop['id']}")
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
            None if timed is None else f"{_sig(loop.get('seconds_used'), 4)} of {_sig(timed, 6)} s",
        ),
        ("last expected improvement", _sig(loop.get("expected_improvement"), 4)),
        ("stop when improvement below", _sig(stop_rule, 4)),
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
    spread = "" if found.get("uncertainty") is None else f" ± {_sig(found['uncertainty'], 3)}"
    return (
        f"{_settings(found['config'])}: predicted {_sig(found['predicted'], 4)}{spread}"
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
            escape(_settings(trial["config"])),
            _num(value),
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
        facts = _facts(f"{design['kind']} facts")
        for name, value in family.items():
            facts.add_row(escape(str(name)), escape(_listed(value)))
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
    report = _facts(f"Quality for the {design['model']} model")
    rows = [
        ("runs", quality.get("runs", design["runs"])),
        ("parameters", quality.get("parameters")),
        ("residual df", quality.get("residual_df")),
        ("D-efficiency", _num(quality.get("d_efficiency"), ".1f")),
        ("max VIF", _sig(quality.get("max_vif"), 3)),
        ("not estimable", ", ".join(quality.get("not_estimable") or []) or "none"),
        ("removed by constraints", design.get("removed_by_constraints", 0)),
    ]
    for name, value in rows:
        if value is not None:
            report.add_row(name, escape(str(value)))
    for term, aliases in (quality.get("aliased_with") or {}).items():
        report.add_row(f"{escape(term)} aliased with", escape(_listed(aliases)))
    console.print(report)


def print_analysis(
    console: Console, experiment: Mapping[str, Any], analysis: Mapping[str, Any]
) -> None:
    """The whole model, after what the runs cover and the one answer to deploy: fit
    statistics, coefficients, ranked factors, the model's predicted optimum with its
    intervals, the stationary point, and the explanation."""
    console.print(
        f"[bold]{escape(analysis['response'])}[/] ~ {escape(analysis['model_label'])}; from "
        f"{analysis['trials_used']} trials ({analysis['trials_failed']} failed, left out); "
        f"{escape(str(analysis.get('method') or 'ordinary least squares'))}"
    )
    warnings = _print_coverage(console, analysis)
    print_deploy(console, analysis.get("deploy"))
    _print_fit(console, analysis)
    _print_coefficients(console, analysis)
    selection = analysis.get("selection")
    if selection and selection.get("dropped"):
        dropped = ", ".join(selection["dropped"])
        console.print(f"terms dropped by {selection['criterion']}: {escape(dropped)}")
    _print_ranked(console, analysis)
    _print_optimum(console, experiment, analysis)
    canonical = analysis.get("canonical")
    if canonical and canonical.get("nature"):
        console.print(escape(stationary_sentence(canonical)))
    explanation = analysis.get("explanation") or {}
    for sentence in explanation.get("sentences") or []:
        if sentence not in warnings:  # printed first
            console.print(escape(sentence))


def print_results(
    console: Console, experiment: Mapping[str, Any], analysis: Mapping[str, Any]
) -> None:
    """The short report at the end of a run: what the runs cover, the one answer to deploy with
    the other candidates labelled (the model's predicted optimum, the best single run), the
    ranked factors and how well the model fits."""
    _print_coverage(console, analysis)
    print_deploy(console, analysis.get("deploy"))
    _print_ranked(console, analysis)
    console.print(
        f"R² {_num(analysis['r_squared'], '.3f')}  "
        f"adj. R² {_num(analysis['adj_r_squared'], '.3f')}  "
        f"RMSE {_num(analysis['rmse'])}  from {analysis['trials_used']} trials "
        f"({analysis['trials_failed']} failed, left out)"
    )


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
            escape(_settings(suggestion["config"])),
            _num(suggestion.get("predicted")),
            _num(suggestion.get("uncertainty")),
            escape(suggestion.get("predicted_by") or ""),
            "as above" if reason == plan["explanation"] else escape(reason),
        )
    console.print(table)


def print_deploy(console: Console, answer: Mapping[str, Any] | None) -> None:
    """The one answer to deploy, with its evidence and why, then the other configurations
    named, each as what it is (the model's predicted optimum, the best single run)."""
    if answer is None:
        console.print("deploy: nothing yet (no run has measured the objective)")
        return
    console.print(f"[bold]{escape(answer['summary'])}[/]")
    console.print(f"why: {escape(answer['reason'])}")
    for caveat in answer.get("caveats") or []:
        console.print(f"[bold]note:[/] {escape(caveat)}")
    alternatives = answer.get("alternatives") or []
    if alternatives:
        console.print("not the answer, for comparison:")
        for other in alternatives:
            console.print(f"  {escape(other['label'])}: {escape(other['summary'])}")


def _print_coverage(console: Console, analysis: Mapping[str, Any]) -> list[str]:
    """What the runs do not cover yet (a design cut short, terms not yet estimable), first;
    returns the sentences printed."""
    sentences = list((analysis.get("coverage") or {}).get("sentences") or [])
    for sentence in sentences:
        console.print(f"[bold]warning:[/] {escape(sentence)}")
    return sentences


def optimum_label(analysis: Mapping[str, Any]) -> str:
    """What the predicted optimum is beside the answer to deploy."""
    answer = analysis.get("deploy")
    if answer is None:
        return "a prediction of the model"
    if answer["config"] == analysis["optimum"]["config"]:
        return "it is also the configuration to deploy"
    # The deploy answer's own fit is of the objective: an analysis of another response has
    # another optimum, which the answer does not list.
    labels = [a["label"] for a in answer["alternatives"] if a["kind"] == "predicted_optimum"]
    what = labels[0] if labels else "a prediction of the model"
    return f"{what}: not the configuration to deploy"


def _print_fit(console: Console, analysis: Mapping[str, Any]) -> None:
    fit = analysis.get("fit") or {}
    table = _facts("Fit")
    rows = [
        ("observations", fit.get("n_observations", analysis.get("n_observations"))),
        ("parameters", fit.get("n_parameters")),
        ("residual df", fit.get("residual_df", analysis.get("residual_df"))),
        ("R²", _num(analysis.get("r_squared"), ".4f")),
        ("adjusted R²", _num(analysis.get("adj_r_squared"), ".4f")),
        ("predicted R²", _num(fit.get("predicted_r_squared"), ".4f")),
        ("RMSE", _sig(analysis.get("rmse"), 4)),
        ("AICc", _sig(fit.get("aicc"), 4)),
    ]
    lack_of_fit = analysis.get("lack_of_fit") or {}
    if lack_of_fit.get("p_value") is not None:
        rows.append(("lack of fit p", _p(lack_of_fit["p_value"])))
    curvature = analysis.get("curvature") or {}
    if curvature.get("p_value") is not None:
        rows.append(("curvature p", _p(curvature["p_value"])))
    for name, value in rows:
        if value is not None:
            table.add_row(name, str(value))
    console.print(table)


def _print_coefficients(console: Console, analysis: Mapping[str, Any]) -> None:
    table = Table(title="Coefficients (coded units)")
    for name in ("term", "coefficient", "SE", "t", "p", "95% CI"):
        table.add_column(
            name,
            justify="left" if name == "term" else "right",
            overflow="fold" if name == "term" else "ellipsis",
            no_wrap=name != "term",
        )
    for term in analysis.get("terms") or []:
        table.add_row(
            escape(term["name"]),
            _sig(term["coefficient"], 4),
            _sig(term.get("std_error"), 3),
            _sig(term.get("t"), 3),
            _p(term.get("p_value")),
            escape(f"[{_sig(term.get('ci_low'), 4)}, {_sig(term.get('ci_high'), 4)}]"),
        )
    console.print(table)


def _print_ranked(console: Console, analysis: Mapping[str, Any]) -> None:
    response = analysis["response"]
    table = Table(
        title=f"Factors ranked by effect on {escape(response)} ({analysis['model']} model)"
    )
    table.add_column("factor")
    table.add_column("effect at centre", justify="right")
    table.add_column("change at optimum", justify="right")
    table.add_column("share of SS %", justify="right")
    table.add_column("p", justify="right")
    for item in analysis["ranked_factors"]:
        if item["settings_run"] < 2:
            table.add_row(escape(item["factor"]), "never varied", "", "", "")
        elif not item["in_model"]:
            table.add_row(escape(item["factor"]), "not in the model", "", "", "")
        else:
            table.add_row(
                escape(item["factor"]),
                f"{item['effect']:+.1f}",
                f"{item['change_at_optimum']:+.1f}",
                _num(item.get("share_of_ss")),
                _p(item.get("p_value")),
            )
    console.print(table)
    console.print(escape(RANKED_LEGEND), style="dim")


def _left_out(analysis: Mapping[str, Any]) -> set[str]:
    """The factors the model left out (AICc dropped every term): nothing was estimated or
    tested, and their setting in the optimum is arbitrary."""
    return {item["factor"] for item in analysis["ranked_factors"] if not item["in_model"]}


def _print_optimum(
    console: Console, experiment: Mapping[str, Any], analysis: Mapping[str, Any]
) -> None:
    response = analysis["response"]
    optimum = analysis["optimum"]
    units = {f["name"]: f.get("unit") or "" for f in experiment["factors"]}
    table = Table(
        title=f"The model's predicted optimum ({experiment['objective']['goal']}"
        f" {escape(response)})",
        caption=escape(optimum_label(analysis)),
    )
    table.add_column("factor")
    table.add_column("value", justify="right")
    table.add_column("unit")
    left_out = _left_out(analysis)
    fixed = {item["factor"] for item in analysis["ranked_factors"] if item["settings_run"] < 2}
    for name, value in optimum["config"].items():
        note = (
            " (the only setting run)"
            if name in fixed
            else " (not in the model: any)"
            if name in left_out
            else ""
        )
        table.add_row(escape(name), escape(format_value(value) + note), escape(units.get(name, "")))
    console.print(table)
    console.print(
        f"predicted {escape(response)} {optimum['predicted']:.1f}  "
        f"95% CI \\[{_num(optimum['ci_low'])}, {_num(optimum['ci_high'])}]  "
        f"95% PI \\[{_num(optimum['pi_low'])}, {_num(optimum['pi_high'])}]"
    )
    if optimum.get("on_edge"):
        console.print(
            f"on the edge of the region: {escape(_ends(optimum['on_edge']))} "
            "(consider widening the range)"
        )


def _ends(on_edge: Mapping[str, str]) -> str:
    """E.g. "threads (high), nodes (low)"."""
    return ", ".join(f"{name} ({end})" for name, end in on_edge.items())


def _facts(title: str) -> Table:
    """A two-column table of names and values."""
    table = Table(title=title, show_header=False)
    table.add_column("name", style="bold")
    table.add_column("value")
    return table


def shorten(text: str | None, width: int = 60) -> str:
    """The first line of `text`, cut to `width` characters with an ellipsis."""
    if not text:
        return ""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def _settings(config: Mapping[str, Any], sep: str = " ") -> str:
    return sep.join(f"{name}={format_value(value)}" for name, value in config.items())


def _listed(value: object) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {_listed(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_listed(v) for v in value)
    return format_value(value)


def _num(value: float | None, spec: str = ".1f") -> str:
    return "n/a" if value is None else format(value, spec)


def _sig(value: float | None, digits: int) -> str:
    """`value` to `digits` significant digits, written out in full (never 1.49e+03)."""
    return "n/a" if value is None else significant(value, digits)


def _p(value: float | None) -> str:
    if value is None:
        return "n/a"
    return "< 0.001" if value < 0.001 else f"{value:.3g}"


def stationary_sentence(canonical: Mapping[str, Any]) -> str:
    """The canonical analysis in one line. A ridge is placed by its point nearest the centre;
    a surface with no single stationary point says so instead of naming none."""
    nature = canonical["nature"]
    if nature == "ridge" and canonical.get("ridge_point_natural"):
        across = f", a {canonical['ridge_of']} across it" if canonical.get("ridge_of") else ""
        return (
            f"stationary point: a ridge{across}; its point nearest the centre is at"
            f" {_settings(canonical['ridge_point_natural'])}"
        )
    point = canonical.get("stationary_natural")
    if not point:
        return f"stationary point: none (the surface is a {nature} with no single stationary point)"
    where = "inside" if canonical.get("inside") else "outside"
    return f"stationary point: a {nature} {where} the region at {_settings(point)}"
