"""The full report of `fit`: Lenth, canonical analysis, automatic terms, and the explanation."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from experiments.analysis import fit
from experiments.factors import FactorSpace
from tests.experiments.test_analysis import CCD_YIELD, CODED_2_4, FILTRATION


def yates(names: str) -> list[dict[str, float]]:
    return [
        dict(zip(names, reversed(levels), strict=True))
        for levels in itertools.product([-1.0, 1.0], repeat=len(names))
    ]


def test_an_unreplicated_two_level_design_gets_lenths_analysis():
    # Montgomery DAE Example 6.2: Lenth's method flags A, C, D, AC and AD.
    analysis = fit(CODED_2_4, yates("ABCD"), FILTRATION, model="interaction")
    assert analysis.lenth is not None
    assert set(analysis.lenth.active) == {"A", "C", "D", "A:C", "A:D"}
    assert analysis.lenth.pse == pytest.approx(2.625)
    assert len(analysis.lenth.half_normal) == 15  # every contrast of the 2^4
    assert analysis.curvature is None and analysis.lack_of_fit is None


def test_a_central_composite_design_gets_its_canonical_analysis():
    # Montgomery DAE Example 11.2: a maximum at x1 = 0.389, x2 = 0.306.
    factors = FactorSpace.from_dicts(
        [{"name": n, "kind": "continuous", "low": -1, "high": 1} for n in ("x1", "x2")]
    )
    analysis = fit(
        factors,
        [{"x1": a, "x2": b} for a, b, _ in CCD_YIELD],
        [y for _, _, y in CCD_YIELD],
        model="quadratic",
        response="yield",
    )
    canonical = analysis.canonical
    assert canonical is not None and canonical.nature == "maximum" and canonical.inside
    assert canonical.stationary_coded == pytest.approx({"x1": 0.389, "x2": 0.306}, abs=5e-4)
    # Five centre points: pure error, and a lack-of-fit test on the remaining df.
    assert analysis.lack_of_fit is not None and analysis.lack_of_fit.pure_error_df == 4
    assert analysis.fit.predicted_r_squared is not None
    assert analysis.explanation.confident
    assert any("yield about 80.2" in s for s in analysis.explanation.sentences)
    json.dumps(analysis.as_dict(), allow_nan=False)


def test_auto_keeps_the_terms_the_data_supports():
    factors = FactorSpace.from_dicts(
        [{"name": n, "kind": "continuous", "low": -1, "high": 1} for n in "abc"]
    )
    configs = [dict(zip("abc", p, strict=True)) for p in itertools.product([-1, 0, 1], repeat=3)]
    rng = np.random.default_rng(3)
    values = [
        50 + 8 * c["a"] - 5 * c["b"] + 4 * c["a"] * c["b"] - 6 * c["a"] ** 2 + rng.normal(0, 0.5)
        for c in configs
    ]
    analysis = fit(factors, configs, values, model="auto")
    assert analysis.selection is not None and analysis.selection.criterion == "aicc"
    names = {t.name for t in analysis.terms}
    assert {"a", "b", "a:b", "a^2"} <= names
    # AICc is a lenient criterion: it may keep one null term by chance, not most of them.
    assert len({"c^2", "a:c", "b:c"} & names) <= 1


def test_the_explanation_admits_when_the_data_cannot_tell():
    factors = FactorSpace.from_dicts(
        [{"name": n, "kind": "continuous", "low": -1, "high": 1} for n in "ab"]
    )
    rng = np.random.default_rng(0)
    configs = yates("ab") * 3
    noise = fit(factors, configs, list(rng.normal(100, 10, len(configs))), model="linear")
    assert not noise.explanation.confident
    assert any("Do not trust the optimum" in s for s in noise.explanation.sentences)


def test_centre_points_in_a_two_level_design_give_a_curvature_test():
    factors = FactorSpace.from_dicts(
        [{"name": n, "kind": "continuous", "low": -1, "high": 1} for n in "ab"]
    )
    configs = [*yates("ab"), *[{"a": 0.0, "b": 0.0}] * 4]
    values = [39.3, 40.9, 40.0, 41.5, 40.3, 40.5, 40.7, 40.2]
    analysis = fit(factors, configs, values, model="interaction")
    assert analysis.curvature is not None and analysis.curvature.pure_error_df == 3


def test_runs_in_whole_plots_are_also_fitted_as_a_split_plot():
    factors = FactorSpace.from_dicts(
        [
            {"name": "nodes", "kind": "integer", "low": 1, "high": 5, "hard_to_change": True},
            {"name": "threads", "kind": "continuous", "low": -1, "high": 1},
        ]
    )
    rng = np.random.default_rng(7)
    configs, values, plots = [], [], []
    for plot, nodes in enumerate([1, 3, 5, 1, 3, 5], start=1):
        shift = rng.normal(0, 3)  # the whole plot's own error: the cluster as built that time
        for threads in (-1.0, 0.0, 1.0):
            configs.append({"nodes": nodes, "threads": threads})
            values.append(100 - 4 * (nodes - 3) + 6 * threads + shift + rng.normal(0, 1))
            plots.append(plot)
    analysis = fit(factors, configs, values, model="linear", whole_plots=plots)
    split = analysis.split_plot
    assert split is not None and split.n_whole_plots == 6
    strata = {e.name: e.stratum for e in split.effects}
    assert strata["nodes"] == "whole-plot" and strata["threads"] == "sub-plot"
    assert "split-plot mixed model" in analysis.method
    ordinary = fit(factors, configs, values, model="linear")
    assert ordinary.split_plot is None and ordinary.method.startswith("ordinary least squares")


def test_factors_are_ranked_by_their_share_of_the_sum_of_squares():
    analysis = fit(CODED_2_4, yates("ABCD"), FILTRATION, model="interaction")
    by_factor = {e.factor: e for e in analysis.ranked_factors}
    total = sum((y - np.mean(FILTRATION)) ** 2 for y in FILTRATION)
    # A's terms in the 2FI model: A, AB, AC, AD; each SS = 16 (effect / 2)^2 (Montgomery 6.2).
    expected = 100 * 16 * sum((e / 2) ** 2 for e in (21.625, 0.125, -18.125, 16.625)) / total
    assert by_factor["A"].share_of_ss == pytest.approx(expected)
    assert analysis.ranked_factors[0].factor == "A"
    shares = [e.share_of_ss for e in analysis.ranked_factors]
    assert shares == sorted(shares, reverse=True)
    # At the optimum (A high, C low, D high) raising C lowers the rate: the AC interaction.
    assert by_factor["C"].change_at_optimum < 0 < by_factor["C"].effect


def test_natural_coefficients_carry_their_uncertainty():
    # Montgomery DAE §6.2 (yield, 2^2, 3 replicates): in natural units
    # y = 18.33 + 0.8333 Conc - 5.00 Catalyst. A t test of a coefficient does not depend on
    # its units, so each main effect's t equals the coded one.
    factors = FactorSpace.from_dicts(
        [
            {"name": "conc", "kind": "continuous", "low": 15, "high": 25},
            {"name": "catalyst", "kind": "continuous", "low": 1, "high": 2},
        ]
    )
    runs = [(15, 1, 28), (25, 1, 36), (15, 2, 18), (25, 2, 31)]
    replicates = {(15, 1): [28, 25, 27], (25, 1): [36, 32, 32], (15, 2): [18, 19, 23],
                  (25, 2): [31, 30, 29]}  # fmt: skip
    configs = [{"conc": c, "catalyst": k} for c, k, _ in runs for _ in range(3)]
    values = [y for c, k, _ in runs for y in replicates[(c, k)]]
    analysis = fit(factors, configs, values, model="linear")
    natural = {t.name: t for t in analysis.natural_terms}
    coded = {t.name: t for t in analysis.terms}
    assert natural["Intercept"].coefficient == pytest.approx(18.33, abs=0.005)
    assert natural["conc"].coefficient == pytest.approx(0.8333, abs=5e-5)
    assert natural["catalyst"].coefficient == pytest.approx(-5.00, abs=0.005)
    for name in ("conc", "catalyst"):
        assert natural[name].t == pytest.approx(coded[name].t)
        assert natural[name].ci_low < natural[name].coefficient < natural[name].ci_high


def test_a_factors_share_is_the_sum_of_squares_of_its_joint_test_on_an_unbalanced_design():
    # Issue 54, item 7: on runs that are not orthogonal (a 3^2 grid with three runs added near
    # the top), summing each term's type II sum of squares double-counts what the terms share.
    # A factor's share is what the model loses without every term containing it, the numerator
    # of the F-test its p-value comes from; checked against statsmodels' formula fits.
    import pandas as pd
    import statsmodels.formula.api as smf

    factors = FactorSpace.from_dicts(
        [{"name": n, "kind": "continuous", "low": -1, "high": 1} for n in ("a", "b")]
    )
    grid = [(a, b) for a in (-1.0, 0.0, 1.0) for b in (-1.0, 0.0, 1.0)]
    points = [*grid, (0.5, 0.5), (0.75, 0.25), (0.5, 0.75)]
    wobble = [0.3, -0.2, 0.1, -0.4, 0.2, 0.0, 0.5, -0.3, 0.1, -0.1, 0.2, -0.2]
    values = [
        10 + 3 * a + 2 * b + 4 * a * b - 2 * a**2 + e
        for (a, b), e in zip(points, wobble, strict=True)
    ]
    configs = [{"a": a, "b": b} for a, b in points]
    analysis = fit(factors, configs, values, model="quadratic")
    frame = pd.DataFrame(configs).assign(y=values)
    full = smf.ols("y ~ a + b + a:b + I(a**2) + I(b**2)", data=frame).fit()
    without_a = smf.ols("y ~ b + I(b**2)", data=frame).fit()
    share = 100 * (without_a.ssr - full.ssr) / full.centered_tss
    a = next(e for e in analysis.ranked_factors if e.factor == "a")
    assert a.share_of_ss == pytest.approx(share)
    test = full.compare_f_test(without_a)
    assert a.p_value == pytest.approx(test[1])
    by_term = {row.source: row.percent for row in analysis.anova}
    summed = sum(by_term[t] for t in ("a", "a:b", "a^2"))
    assert abs(summed - share) > 0.5  # what summing the terms' shares would have said
