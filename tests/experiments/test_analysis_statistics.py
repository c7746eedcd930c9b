"""ANOVA, fit statistics, lack of fit, curvature, Lenth's method, diagnostics and Box-Cox,
checked against published textbook analyses and against independent computations."""

import itertools
import json

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import statsmodels.api as sm
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.outliers_influence import OLSInfluence

from experiments.analysis.diagnostics import box_cox, diagnostics
from experiments.analysis.screening import curvature, lenth
from experiments.analysis.statistics import anova, fit_statistics, lack_of_fit, term_label
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.terms import ModelTerms, distinct_levels, main_columns


def coded_runs(names: str) -> list[dict[str, int]]:
    """A two-level full factorial in standard (Yates) order: first factor fastest."""
    return [
        dict(zip(names, reversed(combo), strict=True))
        for combo in itertools.product([-1, 1], repeat=len(names))
    ]


def column(run: dict[str, int], term: str) -> float:
    return float(np.prod([run[f] for f in term.split(":")]))


def by_source(rows) -> dict:
    return {row.source: row for row in rows}


# Montgomery, Design and Analysis of Experiments (8th ed.), Example 6.2: filtration rate, an
# unreplicated 2^4 (A temperature, B pressure, C concentration, D stirring rate), responses in
# standard order (Table 6.10).
FILTRATION = [45, 71, 48, 65, 68, 60, 80, 65, 43, 100, 45, 104, 75, 86, 70, 96]
ALL_TERMS = [":".join(t) for k in range(1, 5) for t in itertools.combinations("ABCD", k)]


def filtration_effects() -> dict[str, float]:
    runs = coded_runs("ABCD")
    x = np.array([[1.0] + [column(r, t) for t in ALL_TERMS] for r in runs])
    results = sm.OLS(np.array(FILTRATION, float), x).fit()
    return dict(zip(ALL_TERMS, 2 * results.params[1:], strict=True))


def test_lenth_reproduces_montgomery_filtration_rate():
    # Montgomery's Lenth analysis of Example 6.2 reports PSE = 2.625 and ME = 6.75 (values as
    # quoted from the book in a public DoE library's test of the same example). SME is Lenth's
    # t(gamma, m/3) PSE computed here with scipy's t quantile, gamma = (1 + 0.95^(1/15)) / 2.
    effects = filtration_effects()
    assert effects["A"] == pytest.approx(21.625)
    result = lenth(effects)
    assert result.pse == pytest.approx(2.625, abs=5e-4)
    assert result.margin_of_error == pytest.approx(6.75, abs=5e-3)
    assert result.df == pytest.approx(5.0)
    gamma = (1 + 0.95 ** (1 / 15)) / 2
    assert result.simultaneous_margin_of_error == pytest.approx(scipy.stats.t.ppf(gamma, 5) * 2.625)
    assert result.simultaneous_margin_of_error == pytest.approx(13.70, abs=5e-3)
    # Montgomery's conclusion: A, C, D, AC and AD are the active effects.
    assert result.active == ["A", "A:C", "A:D", "D", "C"]
    assert result.simultaneously_active == ["A", "A:C", "A:D", "D"]
    half = result.half_normal
    assert [p.name for p in half[-3:]] == ["A:D", "A:C", "A"]
    assert [p.abs_effect for p in half] == sorted(p.abs_effect for p in half)
    assert half[0].quantile == pytest.approx(scipy.stats.norm.ppf(0.5 + 0.5 * 0.5 / 15))
    assert half[-1].quantile == pytest.approx(scipy.stats.norm.ppf(0.5 + 0.5 * 14.5 / 15))
    json.dumps(result.as_dict(), allow_nan=False)


def test_lenth_needs_three_effects():
    with pytest.raises(DomainError) as error:
        lenth({"A": 1.0, "B": 2.0})
    assert error.value.field == "effects"


# Montgomery, DAE (8th ed.), Example 6.6 and Table 6.24: the filtration 2^4 with four centre
# points added, reduced model in A, C, D, AC, AD plus a "pure quadratic curvature" term. The
# published table: A 1870.56 (F 99.71), C 390.06 (F 20.79), D 855.56 (F 45.61),
# AC 1314.06 (F 70.05), AD 1105.56 (F 58.93), pure quadratic curvature 1.51 (F 0.081,
# p 0.7809), residual 243.87 on 13 df (MS 18.76), lack of fit 195.12 on 10 df (MS 19.51,
# F 1.20, p 0.4942), pure error 48.75 on 3 df (MS 16.25), corrected total 5781.20 on 19 df.
# The centre-point responses 73, 75, 66, 69 are as recalled from the book; they reproduce its
# pure error (48.75) and curvature (1.51) sums of squares exactly. The book cuts values such as
# 243.875 to 243.87, so two-decimal figures are checked to within 0.01.
CENTRE = [73, 75, 66, 69]
REDUCED = ["A", "C", "D", "A:C", "A:D"]


def example_6_6():
    runs = coded_runs("ABCD") + [dict.fromkeys("ABCD", 0)] * len(CENTRE)
    x = np.array([[1.0] + [column(r, t) for t in REDUCED] + [float(r["A"] == 0)] for r in runs])
    y = np.array(FILTRATION + CENTRE, dtype=float)
    names = ["Intercept", *REDUCED, "curvature"]
    factors = [set(), {0}, {2}, {3}, {0, 2}, {0, 3}, {4}]
    return runs, x, y, names, factors, sm.OLS(y, x).fit()


def test_anova_reproduces_montgomery_table_6_24():
    _, x, _, names, factors, results = example_6_6()
    rows = anova(results, x, names, factors)
    assert [r.source for r in rows] == [*REDUCED, "curvature", "Residual", "Total"]
    table = by_source(rows)
    published = {
        "A": (1870.56, 99.71),
        "C": (390.06, 20.79),
        "D": (855.56, 45.61),
        "A:C": (1314.06, 70.05),
        "A:D": (1105.56, 58.93),
        "curvature": (1.51, 0.081),
    }
    for source, (ss, f) in published.items():
        assert table[source].df == 1
        assert table[source].sum_sq == pytest.approx(ss, abs=1e-2), source
        assert table[source].f == pytest.approx(f, abs=5e-3 if f > 1 else 5e-4), source
    assert table["curvature"].p_value == pytest.approx(0.7809, abs=5e-5)
    assert table["A"].p_value < 1e-4
    residual, total = table["Residual"], table["Total"]
    assert (residual.df, total.df) == (13, 19)
    assert residual.sum_sq == pytest.approx(243.87, abs=1e-2)
    assert residual.mean_sq == pytest.approx(18.76, abs=5e-3)
    assert total.sum_sq == pytest.approx(5781.20, abs=5e-3)
    assert table["A"].percent == pytest.approx(100 * 1870.5625 / 5781.2)
    assert residual.f is None and total.p_value is None
    json.dumps([r.as_dict() for r in rows], allow_nan=False)


def test_lack_of_fit_reproduces_montgomery_table_6_24():
    runs, _, y, _, _, results = example_6_6()
    configs = [tuple(r[f] for f in "ABCD") for r in runs]
    test = lack_of_fit(configs, y, results)
    assert test is not None
    assert (test.lack_of_fit_df, test.pure_error_df) == (10, 3)
    assert test.lack_of_fit_ss == pytest.approx(195.12, abs=1e-2)
    assert test.lack_of_fit_ms == pytest.approx(19.51, abs=5e-3)
    assert test.pure_error_ss == pytest.approx(48.75, abs=5e-3)
    assert test.pure_error_ms == pytest.approx(16.25, abs=5e-3)
    assert test.f == pytest.approx(1.20, abs=5e-3)
    assert test.p_value == pytest.approx(0.4942, abs=5e-5)
    json.dumps(test.as_dict(), allow_nan=False)


def test_lack_of_fit_needs_replicates_and_spare_degrees_of_freedom():
    runs = coded_runs("AB")
    x = np.array([[1.0, r["A"], r["B"]] for r in runs])
    y = np.array([1.0, 3.0, 2.0, 5.0])
    configs = [(r["A"], r["B"]) for r in runs]
    assert lack_of_fit(configs, y, sm.OLS(y, x).fit()) is None  # no replicates
    # Replicated, but the interaction model is saturated: no lack-of-fit degree of freedom.
    xi = np.column_stack([x, x[:, 1] * x[:, 2]])
    y2 = np.concatenate([y, y + 0.5])
    assert lack_of_fit(configs * 2, y2, sm.OLS(y2, np.vstack([xi, xi])).fit()) is None


def test_curvature_reproduces_montgomery_example_6_6():
    # Table 6.24: SS pure quadratic curvature 1.51 (centre mean 70.75 against factorial mean
    # 70.06); here tested against the pure error of the centre points, 16.25 on 3 df.
    test = curvature(FILTRATION, CENTRE)
    assert test is not None
    assert test.factorial_mean == pytest.approx(70.0625)
    assert test.centre_mean == pytest.approx(70.75)
    assert test.sum_sq == pytest.approx(1.51, abs=5e-3)
    assert test.pure_error_ms == pytest.approx(16.25)
    assert test.pure_error_df == 3
    assert test.f == pytest.approx(1.5125 / 16.25)
    assert test.p_value == pytest.approx(scipy.stats.f.sf(1.5125 / 16.25, 1, 3))


def test_curvature_of_the_2x2_yield_with_five_centre_points():
    # Montgomery & Runger, Applied Statistics and Probability for Engineers, Example S14-2 (also
    # Montgomery DAE 6.8): 2^2 in reaction time and temperature, yields 39.3, 40.9, 40.0, 41.5
    # and centre points 40.3, 40.5, 40.7, 40.2, 40.6. SS_curvature = nF nC (yF - yC)^2 /
    # (nF + nC) = 20 (0.035)^2 / 9 = 0.0027, computed here from the published data and
    # formula; pure error 0.172 / 4 = 0.043.
    test = curvature([39.3, 40.9, 40.0, 41.5], [40.3, 40.5, 40.7, 40.2, 40.6])
    assert test is not None
    assert test.sum_sq == pytest.approx(0.0027, abs=5e-5)
    assert test.pure_error_ms == pytest.approx(0.0430, abs=5e-5)
    assert test.f == pytest.approx(0.0633, abs=5e-5)
    assert test.p_value > 0.5


def test_curvature_needs_two_centre_points_and_handles_no_pure_error():
    assert curvature([1.0, 2.0, 3.0, 4.0], [2.5]) is None
    flat = curvature([1.0, 2.0, 3.0, 4.0], [2.0, 2.0])
    assert flat is not None and flat.f is None and flat.p_value is None
    json.dumps(flat.as_dict(), allow_nan=False)


# Montgomery, DAE (8th ed.), Example 6.1: plasma etch 2^3 with two replicates. Table 6.6:
# SS_A 41,310.5625, SS_C 374,850.0625, SS_AC 94,402.5625, SS_T 531,420.9375; the other sums of
# squares follow from the published effects (Table 6.5) as SS = 16 (effect / 2)^2.
ETCH = [550, 669, 604, 650, 633, 642, 601, 635, 1037, 749, 1052, 868, 1075, 729, 1063, 860]


def test_anova_reproduces_montgomery_table_6_6():
    corners = coded_runs("ABC")
    runs = [c for k in range(0, 8, 2) for _ in range(2) for c in corners[k : k + 2]]
    terms = ["A", "B", "C", "A:B", "A:C", "B:C", "A:B:C"]
    x = np.array([[1.0] + [column(r, t) for t in terms] for r in runs])
    results = sm.OLS(np.array(ETCH, float), x).fit()
    factors = [set(), {0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}]
    table = by_source(anova(results, x, ["Intercept", *terms], factors))
    published = {
        "A": 41_310.5625,
        "C": 374_850.0625,
        "A:C": 94_402.5625,
        "B": 4 * 7.375**2,
        "A:B": 4 * 24.875**2,
        "B:C": 4 * 2.125**2,
    }
    for source, ss in published.items():
        assert table[source].sum_sq == pytest.approx(ss, abs=5e-5), source
    assert table["Total"].sum_sq == pytest.approx(531_420.9375, abs=5e-5)
    assert table["Residual"].df == 8
    ss_terms = sum(table[t].sum_sq for t in terms)
    assert ss_terms + table["Residual"].sum_sq == pytest.approx(table["Total"].sum_sq)
    assert sum(table[t].percent for t in [*terms, "Residual"]) == pytest.approx(100.0)


def test_term_labels_group_categorical_columns():
    assert term_label("engine[myrocks]") == "engine"
    assert term_label("a:engine[aria]") == "a:engine"
    assert term_label("engine[x:y]:cache[on]") == "engine:cache"
    assert term_label("a^2") == "a^2"


def unbalanced_categorical_data():
    space = FactorSpace.from_dicts(
        [
            {"name": "a", "low": 0, "high": 10},
            {"name": "engine", "kind": "categorical", "levels": ["innodb", "myrocks", "aria"]},
        ]
    )
    rng = np.random.default_rng(7)
    configs = [
        {"a": a, "engine": e}
        for a, e in itertools.product([0.0, 2.0, 5.0, 10.0], ["innodb", "myrocks", "aria"])
        for _ in range(1 + (a == 10.0 and e == "aria"))
    ][:-3]
    offsets = {"innodb": 0.0, "myrocks": 4.0, "aria": -2.0}
    y = np.array(
        [
            3 + 0.8 * c["a"] + offsets[c["engine"]] + (c["engine"] == "aria") * 0.3 * c["a"]
            for c in configs
        ]
    ) + rng.normal(0, 1.0, len(configs))
    return space, configs, y


def test_type_ii_anova_matches_statsmodels_with_a_categorical_factor():
    space, configs, y = unbalanced_categorical_data()
    terms = ModelTerms(space, "interaction", distinct_levels(space, configs))
    x = terms.matrix(main_columns(space, configs))
    results = sm.OLS(y, x).fit()
    table = by_source(anova(results, x, terms.names, terms.factors))
    assert [s for s in table] == ["a", "engine", "a:engine", "Shared", "Residual", "Total"]
    assert (table["engine"].df, table["a:engine"].df) == (2, 2)

    frame = pd.DataFrame(configs).assign(y=y)
    reference = anova_lm(smf.ols("y ~ a * C(engine)", data=frame).fit(), typ=2)
    for ours, theirs in [("a", "a"), ("engine", "C(engine)"), ("a:engine", "a:C(engine)")]:
        assert table[ours].sum_sq == pytest.approx(reference.loc[theirs, "sum_sq"]), ours
        assert table[ours].f == pytest.approx(reference.loc[theirs, "F"]), ours
        assert table[ours].p_value == pytest.approx(reference.loc[theirs, "PR(>F)"]), ours
    assert table["Residual"].sum_sq == pytest.approx(reference.loc["Residual", "sum_sq"])
    # Unbalanced runs: the partial sums of squares miss part of the model's (issue 54, item 7).
    # "Shared" is that part, the model's sum of squares (statsmodels' ess) less statsmodels'
    # type II sums of squares, and it closes the percents to 100.
    fitted = smf.ols("y ~ a * C(engine)", data=frame).fit()
    shared = fitted.ess - reference["sum_sq"].drop("Residual").sum()
    assert abs(shared) > 1e-3 * fitted.centered_tss
    assert table["Shared"].sum_sq == pytest.approx(shared)
    assert table["Shared"].f is None and table["Shared"].p_value is None
    rows = ["a", "engine", "a:engine", "Shared", "Residual"]
    assert sum(table[r].percent for r in rows) == pytest.approx(100.0)


def test_a_main_effect_is_not_adjusted_for_its_own_square():
    a = np.array([-1.0, -1, 0, 0, 1, 1, 1, -1, 0])
    b = np.array([-1.0, 1, -1, 1, -1, 1, 1, 1, 0])
    y = 2 + 1.5 * a - b + 3 * a**2 + np.array([0.1, -0.2, 0.05, 0.3, -0.1, 0.2, -0.15, 0, 0.1])
    x = np.column_stack([np.ones_like(a), a, b, a**2])
    results = sm.OLS(y, x).fit()
    table = by_source(anova(results, x, ["Intercept", "a", "b", "a^2"], [set(), {0}, {1}, {0}]))

    def ssr(cols: list[int]) -> float:
        return float(sm.OLS(y, x[:, cols]).fit().ssr)

    assert table["a"].sum_sq == pytest.approx(ssr([0, 2]) - ssr([0, 1, 2]))
    assert table["a^2"].sum_sq == pytest.approx(ssr([0, 1, 2]) - results.ssr)
    assert table["b"].sum_sq == pytest.approx(ssr([0, 1, 3]) - results.ssr)


def test_a_saturated_model_has_no_f_tests():
    runs = coded_runs("AB")
    x = np.array([[1.0, r["A"], r["B"], r["A"] * r["B"]] for r in runs])
    y = np.array([1.0, 3.0, 2.0, 7.0])
    results = sm.OLS(y, x).fit()
    rows = anova(results, x, ["Intercept", "A", "B", "A:B"], [set(), {0}, {1}, {0, 1}])
    assert all(r.f is None and r.p_value is None for r in rows)
    assert by_source(rows)["Residual"].mean_sq is None
    json.dumps([r.as_dict() for r in rows], allow_nan=False)
    stats = fit_statistics(results, x, y)
    assert stats.residual_df == 0
    assert stats.rmse is None and stats.press is None and stats.predicted_r_squared is None
    assert stats.aicc is None and stats.adj_r_squared is None
    json.dumps(stats.as_dict(), allow_nan=False)


def test_fit_statistics_match_leave_one_out_refits_and_montgomery():
    _, x, y, _, _, results = example_6_6()
    stats = fit_statistics(results, x, y)
    loo = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        refit = sm.OLS(y[keep], x[keep]).fit()
        loo.append(y[i] - float(x[i] @ refit.params))
    press = float(np.sum(np.square(loo)))
    sst = float(np.sum((y - y.mean()) ** 2))
    assert stats.press == pytest.approx(press)
    assert stats.predicted_r_squared == pytest.approx(1 - press / sst)
    # Table 6.24 gives the residual and total: R^2 = 1 - 243.87 / 5781.20.
    assert stats.r_squared == pytest.approx(1 - 243.875 / 5781.2)
    assert stats.adj_r_squared == pytest.approx(results.rsquared_adj)
    assert stats.rmse == pytest.approx(np.sqrt(18.7596), abs=1e-4)
    assert stats.residual_df == 13
    n, k = 20, 8  # seven coefficients and the error variance
    aic = -2 * results.llf + 2 * k
    assert stats.aicc == pytest.approx(aic + 2 * k * (k + 1) / (n - k - 1))


def test_diagnostics_match_statsmodels_influence_and_flag_an_outlier():
    _, x, y, _, _, _ = example_6_6()
    y = y.copy()
    y[5] += 25.0  # a gross error in run 6
    results = sm.OLS(y, x).fit()
    labels = [f"run {i + 1}" for i in range(len(y))]
    result = diagnostics(results, labels)
    influence = OLSInfluence(results)
    assert [r.leverage for r in result.runs] == pytest.approx(influence.hat_matrix_diag)
    assert [r.cooks_distance for r in result.runs] == pytest.approx(influence.cooks_distance[0])
    assert [r.studentized_residual for r in result.runs] == pytest.approx(
        influence.resid_studentized_external
    )
    assert result.leverage_limit == pytest.approx(2 * 7 / 20)
    flagged = {s.label: s.reasons for s in result.standouts}
    assert "run 6" in flagged
    assert any("studentized" in reason for reason in flagged["run 6"])
    json.dumps(result.as_dict(), allow_nan=False)


def test_diagnostics_flag_high_leverage_and_report_none_for_leverage_one():
    a = np.array([-1.0, -1, 1, 1, 0, 0, 0, 6])
    y = np.array([1.0, 1.2, 3.1, 2.9, 2.0, 2.1, 1.9, 9.0])
    x = np.column_stack([np.ones_like(a), a])
    result = diagnostics(sm.OLS(y, x).fit(), list("abcdefgh"))
    reasons = {s.label: s.reasons for s in result.standouts}
    assert any("leverage" in r for r in reasons["h"])

    saturated = np.column_stack([np.ones(3), [0.0, 1, 2], [0.0, 1, 4]])
    perfect = diagnostics(sm.OLS(np.array([1.0, 2, 5]), saturated).fit(), ["p", "q", "r"])
    assert all(r.studentized_residual is None for r in perfect.runs)
    assert all(r.cooks_distance is None for r in perfect.runs)
    json.dumps(perfect.as_dict(), allow_nan=False)


def test_box_cox_matches_scipy_for_an_intercept_only_model():
    rng = np.random.default_rng(3)
    y = rng.lognormal(mean=2.0, sigma=0.6, size=40)
    ours = box_cox(y, np.ones((len(y), 1)))
    _, lam, (low, high) = scipy.stats.boxcox(y, alpha=0.05)
    assert ours is not None
    assert ours.lambda_ == pytest.approx(lam, abs=1e-6)
    assert ours.ci_low == pytest.approx(low, abs=1e-6)
    assert ours.ci_high == pytest.approx(high, abs=1e-6)
    assert ours.suggestion == "log"  # log-normal data: lambda near 0, 1 far outside
    json.dumps(ours.as_dict(), allow_nan=False)


def test_box_cox_profile_of_a_regression_model():
    # y = (linear predictor)^2 with small multiplicative noise: the square root straightens it.
    rng = np.random.default_rng(11)
    a = np.repeat(np.linspace(-1, 1, 9), 3)
    y = (6 + 3 * a) ** 2 * np.exp(rng.normal(0, 0.01, len(a)))
    x = np.column_stack([np.ones_like(a), a])
    ours = box_cox(y, x)
    assert ours is not None
    grid = np.linspace(-2, 3, 5001)

    def profile(lam: float) -> float:
        z = np.log(y) if lam == 0 else (y**lam - 1) / lam
        sse = sm.OLS(z, x).fit().ssr
        return -len(y) / 2 * np.log(sse / len(y)) + (lam - 1) * np.sum(np.log(y))

    brute = grid[np.argmax([profile(g) for g in grid])]
    assert ours.lambda_ == pytest.approx(brute, abs=2e-3)
    assert ours.ci_low < 0.5 < ours.ci_high < 1
    assert ours.suggestion == "square root"


def test_box_cox_needs_positive_responses_and_says_when_no_transformation_is_needed():
    x = np.column_stack([np.ones(6), [-1.0, -1, 0, 0, 1, 1]])
    assert box_cox([1.0, 2.0, 0.0, 3.0, 4.0, 5.0], x) is None
    assert box_cox([1.0, 2.0, -1.0, 3.0, 4.0, 5.0], x) is None
    # Additive normal noise on a linear trend far from zero: no transformation is called for.
    rng = np.random.default_rng(5)
    a = np.repeat([-1.0, 0.0, 1.0], 6)
    y = 100 + 10 * a + rng.normal(0, 1.0, len(a))
    result = box_cox(y, np.column_stack([np.ones_like(a), a]))
    assert result is not None
    assert (result.ci_low or -5) <= 1 <= (result.ci_high or 5)
    assert result.suggestion == "none: 1 lies in the CI"
