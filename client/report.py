"""An experiment's report for a ticket or a wiki: what to deploy first (the one answer, with its
evidence, and the other candidates labelled), the best measured run, its design, run table,
model, ANOVA, ranked factors, the model's predicted optimum and the explanation, with the
review plots, as Markdown (plots written beside it) or as one self-contained HTML file (plots
inline). Everything comes from the REST API; runs are named by their run numbers throughout."""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from client.analysis_view import RANKED_LEGEND, optimum_label
from client.http import ApiError, Client
from experiments.numbers import format_value, measured

# The review plots a report shows, in order; a plot the data cannot support is left out.
PLOTS = ("contour", "main_effects", "pareto", "residuals", "progress")
ANOVA_NOTE = (
    "Type II (partial) sums of squares, each term against the residual; % of the total sum of"
    " squares. On a design that is not orthogonal the partial sums of squares need not add up"
    " to the model's: the row Shared holds the part no single term accounts for on its own (the"
    " terms are correlated in these runs), so the terms, Shared and Residual add up to 100 %."
)


@dataclass
class Report:
    """The report's text and the PNG images it refers to by file name."""

    text: str
    images: dict[str, bytes] = field(default_factory=dict)


def build_report(
    client: Client, experiment_id: int, *, html_format: bool, image_prefix: str = ""
) -> Report:
    """The report of one experiment; `image_prefix` goes before each image's file name in a
    Markdown report (the directory the images are written to)."""
    experiment = client.experiment(experiment_id)
    trials = client.trials(experiment_id)
    try:
        analysis: Mapping[str, Any] | None = client.analysis(experiment_id)
        refusal = ""
    except ApiError as error:
        analysis, refusal = None, str(error)
    images = {}
    for kind in PLOTS if analysis is not None else ("progress",):
        try:
            images[f"{kind}.png"] = client.plot(experiment_id, kind, width=800, height=560)
        except ApiError:
            continue
    sections = _sections(experiment, trials, analysis, refusal)
    confirmed = _confirmation(client.confirmations(experiment_id))
    if confirmed is not None:
        sections.insert(0, confirmed)
    if html_format:
        return Report(_html(experiment, sections, images))
    figures = [f"![{name[:-4]}]({image_prefix}{name})" for name in images]
    return Report(_markdown(experiment, sections, figures), images)


Section = tuple[str, list[str], list[list[str]] | None, list[str] | None]


def _sections(
    experiment: Mapping[str, Any],
    trials: Sequence[Mapping[str, Any]],
    analysis: Mapping[str, Any] | None,
    refusal: str,
) -> list[Section]:
    """(title, paragraphs, table header, table rows) per section, format-free."""
    response = experiment["objective"]["response"]
    sections: list[Section] = [("Experiment", _overview(experiment, trials), None, None)]
    if analysis is None:
        sections += [
            _best_run(experiment, trials),
            _run_table(experiment, trials),
            ("Analysis", [f"No analysis yet: {refusal}"], None, None),
        ]
        return sections
    sections += [
        _deploy(analysis),
        _best_run(experiment, trials),
        _run_table(experiment, trials),
        _model(analysis, trials, response),
        _anova(analysis),
        (
            "Factors ranked by effect",
            [RANKED_LEGEND],
            ["factor", "effect at centre", "change at optimum", "share of SS %", "p"],
            [_ranked_row(item) for item in analysis["ranked_factors"]],
        ),
        ("The model's predicted optimum", [_optimum(analysis, response)], None, None),
        ("Explanation", list(analysis["explanation"]["sentences"]), None, None),
    ]
    return sections


def _confirmation(found: Sequence[Mapping[str, Any]]) -> Section | None:
    """The latest confirmation on the cluster, first: the sentence to paste, why that many
    pairs, and every pair measured; None before any."""
    if not found:
        return None
    latest = found[0]
    title = "Confirmed on the cluster against today's configuration"
    if latest["result"] is None:
        ended = sum(t["status"] in ("succeeded", "failed", "cancelled") for t in latest["trials"])
        state = latest["error"] or f"{ended} of {len(latest['trials'])} runs ended"
        return (title, [f"Confirmation {latest['id']} is {latest['status']}: {state}."], None, None)
    response = latest["response"]
    pairs: dict[int, dict[str, str]] = {}
    for trial in latest["trials"]:
        pairs.setdefault(trial["pair"], {})[trial["arm"]] = (
            f"run {trial['run_order']}: {_response(trial, response)}"
        )
    rows = [
        [str(p), arms.get("candidate", ""), arms.get("baseline", "")]
        for p, arms in sorted(pairs.items())
    ]
    paragraphs = [latest["sentence"], latest["plan"].get("reason") or ""]
    return (title, [p for p in paragraphs if p], ["pair", "to deploy", "today's"], rows)


def _overview(experiment: Mapping[str, Any], trials: Sequence[Mapping[str, Any]]) -> list[str]:
    """The target, the objective, the status and the design, with the design's notes."""
    response = experiment["objective"]["response"]
    design = experiment.get("design") or {}
    return [
        f"Target {experiment['target']}, {experiment['objective']['goal']} {response};"
        f" status {experiment['status']}.",
        f"Design: {design.get('kind', 'none (imported observations)')}; {len(trials)} trials.",
        *(str(note) for note in experiment.get("design_notes") or []),
    ]


def _run_table(experiment: Mapping[str, Any], trials: Sequence[Mapping[str, Any]]) -> Section:
    """Every trial in run order: its whole plot (in a split-plot run order), status, settings
    and response."""
    factors = [f["name"] for f in experiment["factors"]]
    response = experiment["objective"]["response"]
    split = any(t.get("whole_plot") is not None for t in trials)
    runs = [
        [
            str(t["run_order"]),
            *([format_value(t.get("whole_plot"))] if split else []),
            t["status"],
            *(format_value(t["config"].get(name)) for name in factors),
            _response(t, response),
        ]
        for t in trials
    ]
    header = ["run", *(["whole plot"] if split else []), "status", *factors, response]
    return ("Run table", [], header, runs)


def _model(
    analysis: Mapping[str, Any], trials: Sequence[Mapping[str, Any]], response: str
) -> Section:
    """The model fitted, how well and by which method, and its coefficients."""
    return (
        "Model",
        [
            f"{response} ~ {analysis['model_label']}",
            _fit_line(analysis),
            _method(analysis, trials),
        ],
        ["term", "coefficient", "std error", "p"],
        [
            [t["name"], format_value(t["coefficient"]), _opt(t["std_error"]), _p(t["p_value"])]
            for t in analysis["terms"]
        ],
    )


def _anova(analysis: Mapping[str, Any]) -> Section:
    """The type II ANOVA table."""
    return (
        "ANOVA (type II)",
        [ANOVA_NOTE],
        ["source", "df", "sum of squares", "F", "p", "% of total"],
        [
            [
                r["source"],
                str(r["df"]),
                format_value(r["sum_sq"]),
                _opt(r["f"]),
                _p(r["p_value"]),
                _opt(r["percent"], ".1f"),
            ]
            for r in analysis["anova"]
        ],
    )


def _markdown(experiment: Mapping[str, Any], sections: list[Section], figures: list[str]) -> str:
    lines = [f"# Experiment {experiment['id']}: {experiment['name']}", ""]
    for title, paragraphs, header, rows in sections:
        lines += [f"## {title}", ""]
        for paragraph in paragraphs:
            lines += [paragraph, ""]
        if header is not None and rows is not None:
            lines.append("| " + " | ".join(header) + " |")
            lines.append("|" + "|".join("---" for _ in header) + "|")
            lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
            lines.append("")
    if figures:
        lines += ["## Plots", "", *(f"{figure}\n" for figure in figures)]
    return "\n".join(lines).rstrip() + "\n"


def _html(experiment: Mapping[str, Any], sections: list[Section], images: dict[str, bytes]) -> str:
    title = html.escape(f"Experiment {experiment['id']}: {experiment['name']}")
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{title}</title>",
        "<style>body{font-family:sans-serif;max-width:60em;margin:auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
        "img{max-width:100%}</style></head><body>",
        f"<h1>{title}</h1>",
    ]
    for heading, paragraphs, header, rows in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        parts += [f"<p>{html.escape(p)}</p>" for p in paragraphs]
        if header is not None and rows is not None:
            parts.append("<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header))
            parts += [
                "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                for row in rows
            ]
            parts.append("</table>")
    if images:
        parts.append("<h2>Plots</h2>")
        for name, png in images.items():
            data = base64.b64encode(png).decode("ascii")
            parts.append(
                f'<p><img alt="{html.escape(name[:-4])}" src="data:image/png;base64,{data}"></p>'
            )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _response(trial: Mapping[str, Any], response: str) -> str:
    value = (trial.get("responses") or {}).get(response)
    return "" if value is None else measured(value)


def _fit_line(analysis: Mapping[str, Any]) -> str:
    fit = analysis["fit"]
    return (
        f"{analysis['n_observations']} runs; R² {_opt(fit['r_squared'], '.4f')}, adjusted"
        f" {_opt(fit['adj_r_squared'], '.4f')}, predicted"
        f" {_opt(fit['predicted_r_squared'], '.4f')}; RMSE {_opt(fit['rmse'])};"
        f" residual df {fit['residual_df']}."
    )


def _method(analysis: Mapping[str, Any], trials: Sequence[Mapping[str, Any]]) -> str:
    """How the model was fitted, read off what the analysis did: ordinary least squares, and
    the split-plot mixed model only when it was fitted (with the reason when it fell back).
    Runs of one whole plot only get no split-plot fit: the report says so, not that the runs
    came in none."""
    split = analysis.get("split_plot")
    plots = {
        t["whole_plot"]
        for t in trials
        if t["status"] == "succeeded" and t.get("whole_plot") is not None
    }
    if split is None and len(plots) == 1:
        return (
            f"Fitted by ordinary least squares only: every run so far lies in whole plot"
            f" {format_value(next(iter(plots)))}, so the whole-plot error cannot be estimated yet"
            " and the hard-to-change factors are not tested against it."
        )
    if split is None:
        return f"Fitted by {analysis['method']}."
    if split["method"] == "REML":
        return (
            f"Fitted by ordinary least squares, and as a split-plot mixed model (REML) over"
            f" {split['n_whole_plots']} whole plots: the hard-to-change factors' terms"
            f" ({', '.join(split['whole_plot_terms']) or 'none'}) are tested against the"
            " whole-plot error."
        )
    notes = "; ".join(split["notes"]) or "the mixed model could not be estimated"
    return f"Fitted by ordinary least squares only, not as a split-plot model: {notes}."


def _deploy(analysis: Mapping[str, Any]) -> Section:
    """The one answer to deploy first: what the runs cover, the answer with its evidence and
    reason, then the other candidates, each labelled as what it is."""
    warnings = list((analysis.get("coverage") or {}).get("sentences") or [])
    answer = analysis.get("deploy")
    if answer is None:
        return (
            "What to deploy",
            [*warnings, "Nothing yet: no run measured the objective."],
            None,
            None,
        )
    paragraphs = [*warnings, answer["summary"], answer["reason"], *answer["caveats"]]
    baseline = analysis.get("baseline")
    if baseline is not None:
        paragraphs.append(baseline["summary"])
    rows = [[a["label"], a["summary"]] for a in answer["alternatives"]]
    if rows:
        paragraphs.append("Not the answer, for comparison:")
    return ("What to deploy", paragraphs, ["candidate", "configuration and evidence"], rows)


def _best_run(experiment: Mapping[str, Any], trials: Sequence[Mapping[str, Any]]) -> Section:
    """The best single measurement of the objective, by its run number: one run, its noise
    included."""
    best = experiment.get("best")
    if best is None:
        return ("Best measured run", ["No run has measured the objective yet."], None, None)
    run = next(t["run_order"] for t in trials if t["id"] == best["trial_id"])
    settings = ", ".join(f"{k} = {format_value(v)}" for k, v in best["config"].items())
    response = experiment["objective"]["response"]
    return (
        "Best measured run",
        [
            f"Run {run}: {settings}; {response} {measured(best['value'])} (one measurement, its"
            " noise included; the answer to deploy above weighs every run)."
        ],
        None,
        None,
    )


def _ranked_row(item: Mapping[str, Any]) -> list[str]:
    if item["settings_run"] < 2:
        return [item["factor"], "never varied", "", "", ""]
    if not item["in_model"]:
        return [item["factor"], "not in the model", "", "", ""]
    return [
        item["factor"],
        f"{item['effect']:+.4g}",
        f"{item['change_at_optimum']:+.4g}",
        _opt(item["share_of_ss"], ".1f"),
        _p(item["p_value"]),
    ]


def _optimum(analysis: Mapping[str, Any], response: str) -> str:
    best = analysis["optimum"]
    settings = ", ".join(f"{k} = {format_value(v)}" for k, v in best["config"].items())
    interval = ""
    if best["pi_low"] is not None and best["pi_high"] is not None:
        interval = f", 95 % prediction interval {_opt(best['pi_low'])} to {_opt(best['pi_high'])}"
    return (
        f"{settings}: predicted {response} {_opt(best['predicted'])}{interval}"
        f" ({optimum_label(analysis)})."
    )


def _opt(value: float | None, spec: str | None = None) -> str:
    if value is None:
        return "n/a"
    return format(value, spec) if spec else format_value(value)


def _p(value: float | None) -> str:
    if value is None:
        return "n/a"
    return "< 0.001" if value < 0.001 else f"{value:.3g}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")
