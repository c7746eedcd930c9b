"""How an analysis is shown: what the runs cover, the answer to deploy, the fit, the coefficients,
the ranked factors, the predicted optimum and the stationary point."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from client.cells import config_text, ends, facts_table, num, p_text, sig
from experiments.numbers import format_value

RANKED_LEGEND = (
    "effect at centre: the change from low to high with the other factors at the centre of"
    " their ranges (twice the coded coefficient of a numeric factor); change at optimum: the"
    " same with the others at the predicted optimum, the number the explanation states; share"
    " of SS: what the model loses without every term of the factor (an interaction counts for"
    " each of its factors, so the shares overlap and need not add up to 100)"
)


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
    baseline = analysis.get("baseline")
    if baseline is not None:
        console.print(f"[bold]against today's:[/] {escape(baseline['summary'])}")
    _print_ranked(console, analysis)
    console.print(
        f"R² {num(analysis['r_squared'], '.3f')}  "
        f"adj. R² {num(analysis['adj_r_squared'], '.3f')}  "
        f"RMSE {num(analysis['rmse'])}  from {analysis['trials_used']} trials "
        f"({analysis['trials_failed']} failed, left out)"
    )


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
    table = facts_table("Fit")
    rows = [
        ("observations", fit.get("n_observations", analysis.get("n_observations"))),
        ("parameters", fit.get("n_parameters")),
        ("residual df", fit.get("residual_df", analysis.get("residual_df"))),
        ("R²", num(analysis.get("r_squared"), ".4f")),
        ("adjusted R²", num(analysis.get("adj_r_squared"), ".4f")),
        ("predicted R²", num(fit.get("predicted_r_squared"), ".4f")),
        ("RMSE", sig(analysis.get("rmse"), 4)),
        ("AICc", sig(fit.get("aicc"), 4)),
    ]
    lack_of_fit = analysis.get("lack_of_fit") or {}
    if lack_of_fit.get("p_value") is not None:
        rows.append(("lack of fit p", p_text(lack_of_fit["p_value"])))
    curvature = analysis.get("curvature") or {}
    if curvature.get("p_value") is not None:
        rows.append(("curvature p", p_text(curvature["p_value"])))
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
            sig(term["coefficient"], 4),
            sig(term.get("std_error"), 3),
            sig(term.get("t"), 3),
            p_text(term.get("p_value")),
            escape(f"[{sig(term.get('ci_low'), 4)}, {sig(term.get('ci_high'), 4)}]"),
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
                num(item.get("share_of_ss")),
                p_text(item.get("p_value")),
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
        f"95% CI \\[{num(optimum['ci_low'])}, {num(optimum['ci_high'])}]  "
        f"95% PI \\[{num(optimum['pi_low'])}, {num(optimum['pi_high'])}]"
    )
    if optimum.get("on_edge"):
        console.print(
            f"on the edge of the region: {escape(ends(optimum['on_edge']))} "
            "(consider widening the range)"
        )


def stationary_sentence(canonical: Mapping[str, Any]) -> str:
    """The canonical analysis in one line. A ridge is placed by its point nearest the centre;
    a surface with no single stationary point says so instead of naming none."""
    nature = canonical["nature"]
    if nature == "ridge" and canonical.get("ridge_point_natural"):
        across = f", a {canonical['ridge_of']} across it" if canonical.get("ridge_of") else ""
        return (
            f"stationary point: a ridge{across}; its point nearest the centre is at"
            f" {config_text(canonical['ridge_point_natural'])}"
        )
    point = canonical.get("stationary_natural")
    if not point:
        return f"stationary point: none (the surface is a {nature} with no single stationary point)"
    where = "inside" if canonical.get("inside") else "outside"
    return f"stationary point: a {nature} {where} the region at {config_text(point)}"
