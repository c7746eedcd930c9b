"""The experiment report (issue 54, items 7 and 8): the one answer to deploy first, then the best
measured run, runs named by their run numbers, and a method sentence that says what the analysis
did. Built from real engine results in their JSON form, as the API sends them."""

from __future__ import annotations

import numpy as np

from client.report import _sections
from experiments.analysis import fit
from experiments.analysis.coverage import coverage
from experiments.analysis.deploy import deploy_answer
from experiments.analysis.model import fit_model
from experiments.factors import FactorSpace
from experiments.suggest import Problem, Runs, recommendation

SPACE = FactorSpace.from_dicts(
    [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 5, "hard_to_change": True},
        {"name": "threads", "kind": "integer", "low": 1, "high": 9},
    ]
)


def study(plots: list[int], nodes: list[int], planned: int | None = None) -> tuple[dict, list]:
    """An experiment of runs in whole plots (one node count each, three thread counts), its
    trials as the API lists them (ids far from the run numbers) and its analysis as JSON."""
    rng = np.random.default_rng(7)
    trials, configs, values, labels = [], [], [], []
    for plot, count in zip(plots, nodes, strict=True):
        shift = rng.normal(0, 3)
        for threads in (1, 5, 9):
            run = len(trials) + 1
            config = {"nodes": count, "threads": threads}
            value = 100 - 4 * (count - 3) + 6 * threads - 0.5 * threads**2 + shift
            value += rng.normal(0, 1)
            trials.append(
                {"id": 500 + 7 * run, "run_order": run, "status": "succeeded", "config": config,
                 "responses": {"tps": value}, "whole_plot": plot}
            )  # fmt: skip
            configs.append(config)
            values.append(value)
            labels.append(f"run {run}")
    plots_of_runs = [t["whole_plot"] for t in trials]
    found = fit(SPACE, configs, values, labels=labels, whole_plots=plots_of_runs, response="tps")
    found = found.reviewed(
        coverage(SPACE, configs, planned=planned, model="quadratic", residual_df=found.residual_df),
        deploy_answer(
            SPACE, configs, values, goal="maximize", measure="tps", response="tps",
            recommendation=recommendation(Problem(SPACE), Runs(configs=configs, values=values)),
            labels=labels, analysis=found, model=fit_model(SPACE, configs, values, "auto"),
        ),
    )  # fmt: skip
    analysis = found.as_dict() | {"response": "tps", "trials_used": len(trials)}
    best = max(trials, key=lambda t: t["responses"]["tps"])
    experiment = {
        "id": 1, "name": "report", "target": "manual", "status": "running",
        "factors": [{"name": "nodes"}, {"name": "threads"}],
        "objective": {"response": "tps", "goal": "maximize"}, "design": {"kind": "full_factorial"},
        "design_notes": ["split-plot run order"],
        "best": {"trial_id": best["id"], "value": best["responses"]["tps"],
                 "config": best["config"]},
    }  # fmt: skip
    return experiment, _sections(experiment, trials, analysis, "")


def titled(sections: list, title: str) -> tuple:
    return next(s for s in sections if s[0] == title)


def test_the_answer_to_deploy_comes_first_then_the_best_measured_run_by_its_run_number():
    experiment, sections = study([1, 2, 3, 4, 5, 6], [1, 3, 5, 1, 3, 5])
    assert [s[0] for s in sections] == [
        "Experiment",
        "What to deploy",
        "Best measured run",
        "Run table",
        "Model",
        "ANOVA (type II)",
        "Factors ranked by effect",
        "The model's predicted optimum",
        "Explanation",
    ]
    _, paragraphs, header, rows = titled(sections, "What to deploy")
    assert paragraphs[0].startswith("Deploy nodes=")
    assert header == ["candidate", "configuration and evidence"]
    assert all("run " in row[1] or "the model predicts" in row[1] for row in rows)
    best = next(t for t in range(1, 19) if 500 + 7 * t == experiment["best"]["trial_id"])
    (line,) = titled(sections, "Best measured run")[1]
    assert line.startswith(f"Run {best}: nodes = ") and "one measurement" in line
    assert str(experiment["best"]["trial_id"]) not in line  # a run number, not a trial id
    # The run table has the whole plots beside the run numbers.
    _, _, header, rows = titled(sections, "Run table")
    assert header[:3] == ["run", "whole plot", "status"] and rows[0][:2] == ["1", "1"]
    optimum = titled(sections, "The model's predicted optimum")[1][0]
    assert optimum.endswith("not the configuration to deploy).") or optimum.endswith(
        "(it is also the configuration to deploy)."
    )


def test_the_method_says_a_split_plot_model_was_fitted_when_it_was():
    _, sections = study([1, 2, 3, 4, 5, 6], [1, 3, 5, 1, 3, 5])
    method = titled(sections, "Model")[1][2]
    assert method.startswith(
        "Fitted by ordinary least squares, and as a split-plot mixed model (REML) over 6 whole"
        " plots: the hard-to-change factors' terms (nodes"
    )


def test_runs_of_one_whole_plot_are_not_said_to_come_in_none():
    _, sections = study([1], [3], planned=18)
    method = titled(sections, "Model")[1][2]
    assert method == (
        "Fitted by ordinary least squares only: every run so far lies in whole plot 1, so the"
        " whole-plot error cannot be estimated yet and the hard-to-change factors are not tested"
        " against it."
    )
    assert "did not come in whole plots" not in " ".join(titled(sections, "Model")[1])
    warnings = titled(sections, "What to deploy")[1]
    assert warnings[0].startswith("The design is incomplete: 3 of its 18 planned runs")


def test_a_split_plot_fit_that_fell_back_to_ols_says_why():
    _, sections = study([1, 2], [1, 5])  # two whole plots: no whole-plot variance to estimate
    method = titled(sections, "Model")[1][2]
    assert method.startswith("Fitted by ordinary least squares only, not as a split-plot model: ")
    assert "whole plots" in method


def test_the_anova_percents_add_up_to_100_with_what_the_terms_share():
    _, sections = study([1, 2, 3, 4, 5, 6], [1, 3, 5, 1, 3, 5])
    _, notes, header, rows = titled(sections, "ANOVA (type II)")
    assert header[-1] == "% of total" and "the row Shared holds" in notes[0]
    shares = [float(row[-1]) for row in rows if row[0] != "Total"]
    assert abs(sum(shares) - 100.0) < 0.2  # each rounded to 0.1
