"""An experiment's report for a ticket or a wiki: its design, run table, model, ANOVA, optimum
and explanation, with the review plots, as Markdown (plots written beside it) or as one
self-contained HTML file (plots inline). Everything comes from the REST API."""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from client.http import ApiError, Client
from experiments.numbers import format_value, measured

# The review plots a report shows, in order; a plot the data cannot support is left out.
PLOTS = ("contour", "main_effects", "pareto", "residuals", "progress")


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
    factors = [f["name"] for f in experiment["factors"]]
    response = experiment["objective"]["response"]
    design = experiment.get("design") or {}
    overview = [
        f"Target {experiment['target']}, {experiment['objective']['goal']} {response};"
        f" status {experiment['status']}.",
        f"Design: {design.get('kind', 'none (imported observations)')}; {len(trials)} trials.",
        *(str(note) for note in experiment.get("design_notes") or []),
    ]
    runs = [
        [
            str(t["run_order"]),
            t["status"],
            *(format_value(t["config"].get(name)) for name in factors),
            _response(t, response),
        ]
        for t in trials
    ]
    sections: list[Section] = [
        ("Experiment", overview, None, None),
        ("Run table", [], ["run", "status", *factors, response], runs),  # type: ignore[list-item]
    ]
    if analysis is None:
        sections.append(("Analysis", [f"No analysis yet: {refusal}"], None, None))
        return sections
    sections += [
        (
            "Model",
            [f"{response} ~ {analysis['model_label']}", _fit_line(analysis)],
            ["term", "coefficient", "std error", "p"],
            [
                [t["name"], format_value(t["coefficient"]), _opt(t["std_error"]), _p(t["p_value"])]
                for t in analysis["terms"]
            ],
        ),
        (
            "ANOVA (type II)",
            [],
            ["source", "df", "sum of squares", "F", "p"],
            [
                [
                    r["source"],
                    str(r["df"]),
                    format_value(r["sum_sq"]),
                    _opt(r["f"]),
                    _p(r["p_value"]),
                ]
                for r in analysis["anova"]
            ],
        ),
        ("Optimum", [_optimum(analysis, response)], None, None),
        ("Explanation", list(analysis["explanation"]["sentences"]), None, None),
    ]
    return sections


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
        f" {analysis['method']}."
    )


def _optimum(analysis: Mapping[str, Any], response: str) -> str:
    best = analysis["optimum"]
    settings = ", ".join(f"{k} = {format_value(v)}" for k, v in best["config"].items())
    interval = ""
    if best["pi_low"] is not None and best["pi_high"] is not None:
        interval = f", 95 % prediction interval {_opt(best['pi_low'])} to {_opt(best['pi_high'])}"
    return f"{settings}: predicted {response} {_opt(best['predicted'])}{interval}."


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
