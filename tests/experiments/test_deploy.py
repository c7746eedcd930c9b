"""One answer to "what do I deploy" (issue 54, item 7): the strategy's recommendation, a measured
configuration, with its measurements and the regression model's prediction, and every other
configuration a report names labelled as what it is."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from experiments.analysis import fit
from experiments.analysis.deploy import deploy_answer
from experiments.analysis.model import fit_model
from experiments.factors import FactorSpace
from experiments.suggest import Limit, Problem, Runs, recommendation

SPACE = FactorSpace.from_dicts(
    [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "threads", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
    ]
)
# A 3 x 3 grid around a top near nodes 6, threads 16, and the centre run three times.
GRID = [{"nodes": n, "threads": t} for n in (1, 5, 9) for t in (4, 16, 64)]
CONFIGS = [*GRID, {"nodes": 5, "threads": 16}, {"nodes": 5, "threads": 16}]
WOBBLE = [3.0, -2.0, 1.5, -1.0, 4.0, -3.0, 2.0, -1.5, 0.5, 0.0, -4.0]


def tps(config: dict) -> float:
    coded_nodes = (config["nodes"] - 5) / 4
    coded_threads = (math.log2(config["threads"]) - 4) / 2
    return 1000 + 60 * coded_nodes - 150 * coded_nodes**2 - 200 * coded_threads**2


VALUES = [tps(c) + e for c, e in zip(CONFIGS, WOBBLE, strict=True)]
LABELS = [f"run {i + 1}" for i in range(len(CONFIGS) + 1)]


def answer(configs=CONFIGS, values=VALUES, **extra):
    runs = Runs(configs=configs, values=values, responses=extra.pop("responses", {}))
    found = recommendation(Problem(SPACE, goal="maximize", limits=extra.get("limits", ())), runs)
    analysed = fit(SPACE, configs, values, model="quadratic", response="tps")
    model = fit_model(SPACE, configs, values, "quadratic")
    given = deploy_answer(
        SPACE, configs, values, goal="maximize", recommendation=found, measure="tps",
        response="tps", labels=LABELS[: len(configs)], analysis=analysed, model=model,
        responses=runs.responses, **extra,
    )  # fmt: skip
    return given, found, analysed


def test_the_answer_is_the_strategys_recommendation_with_what_was_measured_there():
    given, found, _ = answer()
    assert given.config == found.config and given.source == "recommendation"
    assert given.config in CONFIGS  # measured, never a prediction alone
    assert given.judged_by == "gaussian process" and given.reason.startswith(found.reason)
    assert given.runs_used == len(CONFIGS)
    runs = [i for i, c in enumerate(CONFIGS) if c == given.config]
    measured = given.measured
    assert measured is not None and measured.runs == len(runs)
    assert measured.labels == [LABELS[i] for i in runs]
    y = [VALUES[i] for i in runs]
    assert measured.mean == pytest.approx(sum(y) / len(y))
    if len(y) > 1:  # the sample standard deviation over the square root of the count
        spread = math.sqrt(sum((v - measured.mean) ** 2 for v in y) / (len(y) - 1))
        assert measured.std_error == pytest.approx(spread / math.sqrt(len(y)))
    assert given.summary.startswith(f"Deploy nodes={given.config['nodes']}, threads=")


def test_the_centre_run_three_times_has_a_mean_and_its_standard_error():
    # The centre (5, 16) measured 1004.0, 1000.0 and 996.0: mean 1000, sd 4, SE 4 / sqrt(3).
    values = list(VALUES)
    for i, e in ((4, 4.0), (9, 0.0), (10, -4.0)):
        values[i] = tps(CONFIGS[i]) + e
    given, _, _ = answer(values=values)
    centre = (
        given.measured
        if given.config == {"nodes": 5, "threads": 16}
        else next(a.measured for a in given.alternatives if a.config == {"nodes": 5, "threads": 16})
    )
    assert centre is not None and centre.runs == 3
    assert centre.labels == ["run 5", "run 10", "run 11"]
    assert centre.mean == pytest.approx(1000.0)
    assert centre.std_error == pytest.approx(4 / math.sqrt(3))


def test_the_models_prediction_at_the_answer_is_ols_with_both_intervals():
    given, _, analysed = answer()
    # Independently: statsmodels' formula interface on the coded factors, by hand.
    frame = pd.DataFrame(CONFIGS).assign(y=VALUES)
    frame["a"] = (frame["nodes"] - 5) / 4
    frame["b"] = (np.log2(frame["threads"]) - 4) / 2
    ols = smf.ols("y ~ a + b + a:b + I(a**2) + I(b**2)", data=frame).fit()
    at = pd.DataFrame(
        {
            "a": [(given.config["nodes"] - 5) / 4],
            "b": [(math.log2(given.config["threads"]) - 4) / 2],
        }
    )
    reference = ols.get_prediction(at).summary_frame(alpha=0.05).iloc[0]
    view = given.model
    assert view is not None and view.response == "tps" and view.model == analysed.model_label
    assert view.predicted == pytest.approx(reference["mean"])
    assert (view.ci_low, view.ci_high) == pytest.approx(
        (reference["mean_ci_lower"], reference["mean_ci_upper"])
    )
    assert (view.pi_low, view.pi_high) == pytest.approx(
        (reference["obs_ci_lower"], reference["obs_ci_upper"])
    )


def test_the_predicted_optimum_and_the_best_single_run_are_labelled_as_what_they_are():
    given, _, analysed = answer()
    optimum = analysed.optimum.config
    assert optimum not in CONFIGS  # the model's optimum lies between the runs
    kinds = {a.kind: a for a in given.alternatives}
    predicted = kinds["predicted_optimum"]
    assert predicted.config == optimum and predicted.measured is None
    assert predicted.label == "the model's predicted optimum, not yet measured"
    assert predicted.model is not None and predicted.model.predicted == analysed.optimum.predicted
    best = max(range(len(VALUES)), key=VALUES.__getitem__)
    if CONFIGS[best] == given.config:
        assert f"It also gave the best single run ({LABELS[best]})." in given.reason
    else:
        single = kinds["best_run"]
        assert single.config == CONFIGS[best] and single.measured.labels == [LABELS[best]]
        assert single.label.startswith("the best single run: one measurement")
    assert all(a.config != given.config for a in given.alternatives)


def test_a_predicted_optimum_that_was_run_is_said_to_be_measured():
    analysed = fit(SPACE, CONFIGS, VALUES, model="quadratic", response="tps")
    optimum = analysed.optimum.config
    configs, values = [*CONFIGS, optimum], [*VALUES, tps(optimum) - 1.0]
    given, _, analysed = answer(configs=configs, values=values)
    found = [a for a in given.alternatives if a.kind == "predicted_optimum"]
    if given.config == analysed.optimum.config:
        assert "It is also the regression model's predicted optimum." in given.reason
    else:
        assert found and found[0].label.startswith("the model's predicted optimum, measured")


def test_a_best_single_run_that_breaks_a_limit_says_so():
    # A lucky run at 1 node (the grid's run there measured 792) with the worst latency: the
    # best single run, named with the limit it breaks; not the answer.
    configs, values = [*CONFIGS, {"nodes": 1, "threads": 16}], [*VALUES, 1100.0]
    latency = [20.0] * len(CONFIGS) + [80.0]
    limit = Limit(response="latency_p95_ms", max=50.0)
    given, _, _ = answer(configs, values, limits=[limit], responses={"latency_p95_ms": latency})
    single = next(a for a in given.alternatives if a.kind == "best_run")
    assert single.config == {"nodes": 1, "threads": 16} and single.measured.labels == ["run 12"]
    assert single.label == (
        "the best single run: one measurement, its noise included; it breaks"
        " latency_p95_ms <= 50 (measured 80)"
    )


def test_a_factor_no_run_varied_is_a_caveat_of_the_answer():
    configs = [c for c in CONFIGS if c["nodes"] == 5]
    values = [v for c, v in zip(CONFIGS, VALUES, strict=True) if c["nodes"] == 5]
    runs = Runs(configs=configs, values=values)
    found = recommendation(Problem(SPACE, goal="maximize"), runs)
    given = deploy_answer(
        SPACE, configs, values, goal="maximize", recommendation=found, measure="tps"
    )
    assert given.caveats == [
        "Every run had nodes = 5: this answer holds there only; no other setting of nodes was"
        " tried."
    ]
    assert given.model is None and [a.kind for a in given.alternatives] in ([], ["best_run"])
