"""The deploy answer in a space with noise factors: a control configuration, its evidence at each
noise level, and its measurements and the regression model's prediction reduced by the aim.

The runs are those of tests/experiments/test_suggest_robust.py: threads 4 or 16 (control) by
workload read or write (noise), each cell measured three times at its value -5, +0, +5:

    threads  read  write
    4        1000   600
    16       1400   400

The model with the threads x workload interaction fits the four cell means exactly; its residual
variance is the pooled within-cell variance, s^2 = (25 + 0 + 25) / 2 = 25 on 12 - 4 = 8 degrees
of freedom, so a cell's mean has standard error 5 / sqrt(3), and t(0.975, 8) = 2.306 (Student's
t table, e.g. Montgomery, Design and Analysis of Experiments, table A.4)."""

from __future__ import annotations

import math

import pytest

from experiments.analysis import fit
from experiments.analysis.deploy import deploy_answer
from experiments.analysis.model import fit_model
from experiments.factors import FactorSpace
from experiments.robust import RobustAim
from experiments.suggest import Problem, Recommendation, recommendation
from tests.experiments.test_suggest_robust import SPACE, toy_runs

T_8 = 2.306
S = 5.0
SE_CELL = S / math.sqrt(3.0)


def answer(aim: RobustAim | None, recommended: Recommendation | None = None):
    runs = toy_runs()
    found = recommended or recommendation(Problem(SPACE, robust=aim), runs)
    assert found is not None
    return deploy_answer(
        SPACE, runs.configs, runs.values, goal="maximize", recommendation=found, measure="tps",
        response="tps", analysis=fit(SPACE, runs.configs, runs.values, model="interaction"),
        model=fit_model(SPACE, runs.configs, runs.values, "interaction"), robust=aim,
    )  # fmt: skip


def test_the_worst_aim_answer_shows_each_noise_level_and_the_worst():
    given = answer(RobustAim("worst"))
    assert given.config == {"threads": 4}
    assert given.aim == "the worst noise level"
    assert given.summary.startswith(
        "Deploy threads=4 across workload levels, judged by the worst noise level: measured 6"
        " times (run 1, run 2, run 3, run 4, run 5, run 6), tps 600 by the aim; the model"
        " predicts tps 600 (95 % CI 593.3 to 606.7"
    )
    assert given.summary.endswith("; measured from 600 at workload=write to 1000 at workload=read.")
    read, write = given.noise_levels
    assert (read.kind, read.label) == ("noise_level", "the answer at workload=read")
    assert read.config == {"threads": 4, "workload": "read"}
    assert read.measured is not None and write.measured is not None
    assert (read.measured.runs, read.measured.mean) == (3, pytest.approx(1000.0))
    assert read.measured.labels == ["run 1", "run 2", "run 3"]
    assert write.measured.mean == pytest.approx(600.0)
    assert write.measured.std_error == pytest.approx(SE_CELL)  # sd 5 over sqrt(3)
    for level, mean in ((read, 1000.0), (write, 600.0)):
        assert level.model is not None
        assert level.model.predicted == pytest.approx(mean)
        assert level.model.ci_low == pytest.approx(mean - T_8 * SE_CELL, abs=0.01)
    # The aim's evidence is the worst level's: measured over the answer's six runs.
    assert given.measured is not None and given.measured.runs == 6
    assert given.measured.mean == pytest.approx(600.0) and given.measured.std_error is None
    assert given.model is not None and given.model.predicted == pytest.approx(600.0)
    assert given.model.ci_high == pytest.approx(600.0 + T_8 * SE_CELL, abs=0.01)
    assert given.reason.startswith("Deploy threads=4: of the 2 control configuration(s)")


def test_the_mean_aim_has_the_exact_interval_of_the_average_of_the_levels():
    given = answer(None)
    assert given.config == {"threads": 16} and given.aim == "the mean over the noise levels"
    # The mean of two independent cell means: standard error sqrt(2 * 25 / 3) / 2; one new run
    # adds s^2 to its variance for the prediction interval.
    se = math.sqrt(2 * S**2 / 3) / 2
    seen = given.model
    assert seen is not None and seen.predicted == pytest.approx(900.0)
    assert (seen.ci_low, seen.ci_high) == (
        pytest.approx(900.0 - T_8 * se, abs=0.01),
        pytest.approx(900.0 + T_8 * se, abs=0.01),
    )
    assert seen.pi_high == pytest.approx(900.0 + T_8 * math.sqrt(S**2 + se**2), abs=0.01)
    assert given.measured is not None and given.measured.mean == pytest.approx(900.0)
    assert "across workload levels, judged by the mean over the noise levels" in given.summary


def test_a_quantile_aim_is_the_interpolation_of_two_levels_with_its_interval():
    # The 0.25 quantile of (600, 1000) is 0.75 x 600 + 0.25 x 1000 = 700.
    given = answer(RobustAim("quantile", 0.25))
    assert given.config == {"threads": 4}
    se = math.sqrt((0.75**2 + 0.25**2) * SE_CELL**2)
    seen = given.model
    assert seen is not None and seen.predicted == pytest.approx(700.0)
    assert seen.ci_low == pytest.approx(700.0 - T_8 * se, abs=0.01)
    assert given.measured is not None and given.measured.mean == pytest.approx(700.0)


def test_the_best_single_run_at_another_control_configuration_is_an_alternative():
    given = answer(RobustAim("worst"))
    best = [c for c in given.alternatives if c.kind == "best_run"]
    assert len(best) == 1 and best[0].config == {"threads": 16, "workload": "read"}
    assert best[0].measured is not None and best[0].measured.labels == ["run 9"]


def test_a_full_configuration_recommended_is_answered_as_its_control_configuration():
    old = Recommendation({"threads": 4, "workload": "read"}, 600.0, 3.0, 6, 600.0, "gp", "Why.")
    given = answer(RobustAim("worst"), old)
    assert given.config == {"threads": 4} and len(given.noise_levels) == 2


def test_a_control_configuration_never_measured_says_so():
    space = FactorSpace.from_dicts(
        [
            {"name": "threads", "kind": "integer", "levels": [4, 8, 16]},
            {"name": "workload", "kind": "categorical", "levels": ["read", "write"], "noise": True},
        ]
    )
    runs = toy_runs()
    unmeasured = Recommendation({"threads": 8}, 700.0, 30.0, 0, 700.0, "gp", "Why.")
    given = deploy_answer(
        space, runs.configs, runs.values, goal="maximize", recommendation=unmeasured,
        measure="tps",
    )  # fmt: skip
    assert given.measured is None and given.model is None
    assert given.summary == (
        "Deploy threads=8 across workload levels, judged by the mean over the noise levels: not"
        " yet measured at any level."
    )
    assert [level.measured for level in given.noise_levels] == [None, None]


def test_without_noise_factors_the_answer_has_no_aim_and_no_levels():
    space = FactorSpace.from_dicts([{"name": "threads", "kind": "integer", "low": 1, "high": 9}])
    configs, values = [{"threads": 2}, {"threads": 5}, {"threads": 5}], [10.0, 20.0, 22.0]
    found = Recommendation({"threads": 5}, 21.0, 1.0, 2, 21.0, "gp", "Why.")
    given = deploy_answer(
        space, configs, values, goal="maximize", recommendation=found, measure="tps"
    )
    assert given.aim is None and given.noise_levels == []
    assert given.summary.startswith("Deploy threads=5: measured 2 times (run 2, run 3)")
