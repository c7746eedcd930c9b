"""Split-plot fits by REML with Satterthwaite's degrees of freedom, checked against the
classical split-plot ANOVA, simulations, and R's lmerTest on published split-plot data.

For a balanced split-plot, REML variance components equal the ANOVA (expected mean square)
estimates, whole-plot effects equal OLS on the whole-plot means, and sub-plot effects equal OLS
within whole plots; the tests compute those independently with numpy / statsmodels OLS.

The lmerTest values were computed with R 4.2.2 Patched (2022-11-10 r83330), lme4 1.1.31 and
lmerTest 3.1.3: `lmer(y ~ <the same fixed terms> + (1 | whole plot), REML = TRUE)`, `summary()`
for the coefficients (Satterthwaite's t tests) and `anova(type = 3)` for the term tests, numeric
factors at their coded values (squares as I(x^2)), categorical ones and blocks as R factors
(treatment contrasts). They are written here to 7 significant figures and checked to 4.
"""

import json
import warnings

import numpy as np
import pytest
import scipy.stats
import statsmodels.api as sm

from experiments.analysis import fit
from experiments.analysis.split_plot import fit_split_plot, varying_hard_to_change
from experiments.factors import FactorSpace

# Stroup (1989), the split-plot example of the SAS/STAT PROC MIXED documentation (Example
# "Split-Plot Design", sample program MIXEX1): 4 blocks, whole-plot factor A (3 levels) in each
# block, sub-plot factor B (2 levels) in each whole plot. Rows: Block, A, B, Y.
STROUP = np.array(
    [
        [1, 1, 1, 56], [1, 1, 2, 41], [1, 2, 1, 50], [1, 2, 2, 36], [1, 3, 1, 39], [1, 3, 2, 35],
        [2, 1, 1, 30], [2, 1, 2, 25], [2, 2, 1, 36], [2, 2, 2, 28], [2, 3, 1, 33], [2, 3, 2, 30],
        [3, 1, 1, 32], [3, 1, 2, 24], [3, 2, 1, 31], [3, 2, 2, 27], [3, 3, 1, 15], [3, 3, 2, 19],
        [4, 1, 1, 30], [4, 1, 2, 25], [4, 2, 1, 35], [4, 2, 2, 30], [4, 3, 1, 17], [4, 3, 2, 18],
    ],
    dtype=float,
)  # fmt: skip


def dummies(values: np.ndarray, levels: list[float]) -> np.ndarray:
    return np.column_stack([(values == level).astype(float) for level in levels])


STROUP_NAMES = [
    "Intercept", "block[2]", "block[3]", "block[4]", "A[2]", "A[3]", "B", "A[2]:B", "A[3]:B"
]  # fmt: skip


def stroup_model():
    block, a, b, y = STROUP.T
    # B coded -1 / +1 as the analysis codes a two-level factor, so that the whole-plot columns
    # (Intercept, Block, A) are orthogonal to the sub-plot ones (B, A:B).
    a_dummies, b_coded = dummies(a, [2, 3]), 2 * b - 3
    whole = np.column_stack([np.ones(len(y)), dummies(block, [2, 3, 4]), a_dummies])
    x = np.column_stack([whole, b_coded, a_dummies * b_coded[:, None]])
    plots = (10 * block + a).astype(int)
    return y, x, plots, whole


def test_stroup_split_plot_matches_the_classical_anova():
    y, x, plots, whole = stroup_model()
    fit = fit_split_plot(y, x, STROUP_NAMES, list(plots))
    assert fit.method == "REML"
    assert fit.n_whole_plots == 12
    # Blocks hold whole plots: their columns are constant in every whole plot.
    assert fit.whole_plot_terms == ["block[2]", "block[3]", "block[4]", "A[2]", "A[3]"]
    assert fit.sub_plot_terms == ["B", "A[2]:B", "A[3]:B"]
    effects = {e.name: e for e in fit.effects}

    # Sub-plot stratum: OLS within whole plots (whole-plot dummies + sub-plot terms); its
    # residual mean square is the sub-plot error (B*Block + A*B*Block pooled, 9 df).
    ids = np.unique(plots)
    within = sm.OLS(y, np.column_stack([dummies(plots, list(ids)), x[:, 6:]])).fit()
    assert within.df_resid == 9
    assert fit.sub_plot_variance == pytest.approx(within.mse_resid, rel=1e-6)
    for j, name in enumerate(["B", "A[2]:B", "A[3]:B"]):
        assert effects[name].coefficient == pytest.approx(within.params[len(ids) + j], abs=1e-6)
        assert effects[name].std_error == pytest.approx(within.bse[len(ids) + j], rel=1e-6)
        # Balanced: Satterthwaite's df are the containment df, as exactly as REML converges.
        assert effects[name].df == pytest.approx(9, rel=1e-6)
        assert effects[name].stratum == "sub-plot"

    # Whole-plot stratum: OLS on the whole-plot means (Block + A, 6 df); the mean square of
    # its residual estimates var(whole plot) + var(sub plot) / 2.
    means = np.array([y[plots == i].mean() for i in ids])
    rows = np.array([whole[plots == i][0] for i in ids])
    between = sm.OLS(means, rows).fit()
    assert between.df_resid == 6
    expected = between.mse_resid - within.mse_resid / 2
    assert fit.whole_plot_variance == pytest.approx(expected, rel=1e-6)
    for j, name in enumerate(STROUP_NAMES[:6]):
        assert effects[name].coefficient == pytest.approx(between.params[j], abs=1e-6)
        assert effects[name].std_error == pytest.approx(between.bse[j], rel=1e-6)
        assert effects[name].p_value == pytest.approx(between.pvalues[j], rel=1e-5)
        assert effects[name].df == pytest.approx(6, rel=1e-6)
        assert effects[name].stratum == "whole-plot"
    assert json.loads(json.dumps(fit.as_dict()))["method"] == "REML"


# lmerTest's anova(type = 3) of Stroup's data: (NumDF, DenDF, F, p). B's type III contrast
# averages its slope over the three levels of A (B + (A2:B + A3:B) / 3), so its F is not the
# square of B's t (-3.813).
STROUP_LMERTEST_ANOVA = {
    "block": (3, 5.999999641, 10.33022, 0.0087476),
    "A": (2, 5.999999641, 4.06957, 0.0764160),
    "B": (1, 9.000000174, 19.38872, 0.0017122),
    "A:B": (2, 9.000000174, 4.01929, 0.0565772),
}


def stroup_through_the_analysis():
    """Stroup's data as the service analyses it: A a hard-to-change categorical factor, B a
    two-level numeric one, four blocks that each hold three whole plots."""
    block, a, b, y = STROUP.T
    space = FactorSpace.from_dicts(
        [
            {"name": "A", "kind": "categorical", "levels": ["1", "2", "3"], "hard_to_change": True},
            {"name": "B", "kind": "continuous", "low": 1, "high": 2},
        ]
    )
    configs = [{"A": str(int(i)), "B": float(j)} for i, j in zip(a, b, strict=True)]
    plots = [int(10 * k + i) for k, i in zip(block, a, strict=True)]
    return fit(
        space,
        configs,
        list(y),
        model="interaction",
        blocks=[int(k) for k in block],
        whole_plots=plots,
    )


def test_stroup_with_blocks_and_whole_plots_matches_lmertest():
    split = stroup_through_the_analysis().split_plot
    assert split is not None and split.method == "REML"
    assert [e.name for e in split.effects] == STROUP_NAMES
    # Before Satterthwaite, the block columns were counted in the sub-plot stratum and A in a
    # whole-plot stratum of 12 - 3 = 9 df: here both have the whole plots' 6.
    effects = {e.name: e for e in split.effects}
    for name in ("block[2]", "block[3]", "block[4]", "A[2]", "A[3]"):
        assert effects[name].df == pytest.approx(5.999999641, rel=1e-4)
    assert split.whole_plot_variance == pytest.approx(15.381945476, rel=1e-4)
    assert split.sub_plot_variance == pytest.approx(9.361110834, rel=1e-4)
    tests = {t.source: t for t in split.tests}
    assert list(tests) == list(STROUP_LMERTEST_ANOVA)
    for source, (num_df, den_df, f, p) in STROUP_LMERTEST_ANOVA.items():
        assert tests[source].num_df == num_df
        assert tests[source].den_df == pytest.approx(den_df, rel=1e-4)
        assert tests[source].f == pytest.approx(f, rel=1e-4)
        assert tests[source].p_value == pytest.approx(p, rel=1e-4)


# The ceramic pipe experiment of Vining, Kowalski & Montgomery (2005, J. Quality Technology 37:
# 115-129) as R's daewr 1.2-11 ships it (data set cpipe; Lawson, Design and Analysis of
# Experiments with R, 2015, ch. 10): 12 whole plots of 4 runs, whole-plot factors A and B (the
# furnace's zone temperatures), sub-plot factors P and Q, coded. Whole plots 9-12 are centre
# whole plots; only whole plot 9 varies P and Q, so P^2 and Q^2 are partly estimated between
# whole plots. Rows: whole plot, A, B, P, Q, strength.
CPIPE = [
    (1, -1, -1, -1, -1, 80.40),
    (1, -1, -1, 1, -1, 71.88),
    (1, -1, -1, -1, 1, 89.91),
    (1, -1, -1, 1, 1, 76.87),
    (2, 1, -1, -1, -1, 87.48),
    (2, 1, -1, 1, -1, 84.49),
    (2, 1, -1, -1, 1, 90.84),
    (2, 1, -1, 1, 1, 83.61),
    (3, -1, 1, -1, -1, 62.99),
    (3, -1, 1, 1, -1, 49.95),
    (3, -1, 1, -1, 1, 79.91),
    (3, -1, 1, 1, 1, 63.23),
    (4, 1, 1, -1, -1, 73.06),
    (4, 1, 1, 1, -1, 66.13),
    (4, 1, 1, -1, 1, 84.45),
    (4, 1, 1, 1, 1, 73.29),
    (5, -1, 0, 0, 0, 71.87),
    (5, -1, 0, 0, 0, 71.53),
    (5, -1, 0, 0, 0, 72.08),
    (5, -1, 0, 0, 0, 71.58),
    (6, 1, 0, 0, 0, 82.34),
    (6, 1, 0, 0, 0, 82.20),
    (6, 1, 0, 0, 0, 81.85),
    (6, 1, 0, 0, 0, 81.85),
    (7, 0, -1, 0, 0, 80.07),
    (7, 0, -1, 0, 0, 80.79),
    (7, 0, -1, 0, 0, 80.20),
    (7, 0, -1, 0, 0, 79.95),
    (8, 0, 1, 0, 0, 68.98),
    (8, 0, 1, 0, 0, 68.64),
    (8, 0, 1, 0, 0, 69.24),
    (8, 0, 1, 0, 0, 69.20),
    (9, 0, 0, -1, 0, 78.56),
    (9, 0, 0, 1, 0, 68.63),
    (9, 0, 0, 0, -1, 74.59),
    (9, 0, 0, 0, 1, 82.52),
    (10, 0, 0, 0, 0, 74.86),
    (10, 0, 0, 0, 0, 74.22),
    (10, 0, 0, 0, 0, 74.06),
    (10, 0, 0, 0, 0, 74.82),
    (11, 0, 0, 0, 0, 73.60),
    (11, 0, 0, 0, 0, 73.59),
    (11, 0, 0, 0, 0, 73.34),
    (11, 0, 0, 0, 0, 73.76),
    (12, 0, 0, 0, 0, 75.52),
    (12, 0, 0, 0, 0, 74.74),
    (12, 0, 0, 0, 0, 75.00),
    (12, 0, 0, 0, 0, 74.90),
]

# lmerTest's summary() of the full second-order model: estimate, SE, df, p.
CPIPE_LMERTEST = {
    "Intercept": (74.90545455, 0.5520178492, 5.000000006, 4.123343896e-10),
    "A": (4.557916667, 0.4893115254, 4.999999996, 2.400013069e-04),
    "B": (-6.559166667, 0.4893115254, 4.999999996, 4.134614587e-05),
    "P": (-4.973333333, 0.06482202222, 28.00000000, 4.255059049e-34),
    "Q": (4.092222222, 0.06482202222, 28.00000000, 9.703362243e-32),
    "A:B": (0.8431250000, 0.5992817812, 4.999999997, 2.184718583e-01),
    "A:P": (1.435625000, 0.06875413722, 28.00000000, 1.306362636e-18),
    "A:Q": (-1.479375000, 0.06875413722, 28.00000000, 5.911900808e-19),
    "B:P": (-1.001875000, 0.06875413722, 28.00000000, 1.343287653e-14),
    "B:Q": (1.985625000, 0.06875413722, 28.00000000, 2.207313096e-22),
    "P:Q": (-1.039375000, 0.06875413722, 28.00000000, 5.371023845e-15),
    "A^2": (1.738068182, 0.8974080580, 5.000000005, 1.105280310e-01),
    "B^2": (-0.5406818182, 0.8974080580, 5.000000005, 5.731253581e-01),
    "P^2": (-2.386363636, 0.6059407474, 5.554765142, 8.909343766e-03),
    "Q^2": (2.573636364, 0.6059407474, 5.554765142, 6.417254334e-03),
}


def ceramic_pipe():
    space = FactorSpace.from_dicts(
        [
            *({"name": n, "low": -1, "high": 1, "hard_to_change": True} for n in "AB"),
            *({"name": n, "low": -1, "high": 1} for n in "PQ"),
        ]
    )
    configs = [dict(zip("ABPQ", map(float, row[1:5]), strict=True)) for row in CPIPE]
    values = [row[5] for row in CPIPE]
    return fit(space, configs, values, model="quadratic", whole_plots=[r[0] for r in CPIPE])


def test_ceramic_pipe_second_order_split_plot_matches_lmertest():
    split = ceramic_pipe().split_plot
    assert split is not None and split.method == "REML"
    assert split.whole_plot_variance == pytest.approx(1.417646088, rel=1e-4)
    assert split.sub_plot_variance == pytest.approx(0.07563410217, rel=1e-4)
    effects = {e.name: e for e in split.effects}
    assert list(effects) == list(CPIPE_LMERTEST)
    for name, (coefficient, se, df, p) in CPIPE_LMERTEST.items():
        assert effects[name].coefficient == pytest.approx(coefficient, rel=1e-4)
        assert effects[name].std_error == pytest.approx(se, rel=1e-4)
        assert effects[name].df == pytest.approx(df, rel=1e-4)
        assert effects[name].p_value == pytest.approx(p, rel=1e-4)
    # Single-column numeric terms: the type III F is t squared, with the same df.
    for test in split.tests:
        effect = effects[test.source]
        assert test.num_df == 1 and test.den_df == pytest.approx(effect.df, rel=1e-9)
        assert test.f == pytest.approx(effect.t**2, rel=1e-9)
    assert effects["P^2"].stratum == effects["Q^2"].stratum == "both"
    assert split.both_strata_terms == ["P^2", "Q^2"]
    assert effects["A^2"].stratum == "whole-plot" and effects["P:Q"].stratum == "sub-plot"
    # The containment rule gave P^2 the sub-plot stratum's 28 df: an 18-fold smaller p-value.
    contained = 2 * scipy.stats.t.sf(abs(effects["P^2"].t), 28)
    assert effects["P^2"].p_value / contained == pytest.approx(18.0, abs=0.1)


# The sausage casing experiment as R's daewr 1.2-11 ships it (data set sausage; Lawson, Design
# and Analysis of Experiments with R, 2015, ch. 8, split-plot with RCB in the whole plots): two
# blocks of four whole plots (gelatin batches), whole-plot factors A and B, sub-plot factors C
# and D, all at -1 / +1. Rows: block, batch, A, B, C, D, ys.
SAUSAGE = [
    (1, 1, -1, -1, -1, -1, 2.07),
    (1, 1, -1, -1, 1, -1, 2.07),
    (1, 1, -1, -1, -1, 1, 2.10),
    (1, 1, -1, -1, 1, 1, 2.12),
    (1, 2, 1, -1, -1, -1, 2.02),
    (1, 2, 1, -1, 1, -1, 1.98),
    (1, 2, 1, -1, -1, 1, 2.00),
    (1, 2, 1, -1, 1, 1, 1.95),
    (1, 3, -1, 1, -1, -1, 2.09),
    (1, 3, -1, 1, 1, -1, 2.05),
    (1, 3, -1, 1, -1, 1, 2.08),
    (1, 3, -1, 1, 1, 1, 2.05),
    (1, 4, 1, 1, -1, -1, 1.98),
    (1, 4, 1, 1, 1, -1, 1.96),
    (1, 4, 1, 1, -1, 1, 1.97),
    (1, 4, 1, 1, 1, 1, 1.97),
    (2, 1, -1, -1, -1, -1, 2.08),
    (2, 1, -1, -1, 1, -1, 2.05),
    (2, 1, -1, -1, -1, 1, 2.07),
    (2, 1, -1, -1, 1, 1, 2.05),
    (2, 2, 1, -1, -1, -1, 2.03),
    (2, 2, 1, -1, 1, -1, 1.97),
    (2, 2, 1, -1, -1, 1, 1.99),
    (2, 2, 1, -1, 1, 1, 1.97),
    (2, 3, -1, 1, -1, -1, 2.05),
    (2, 3, -1, 1, 1, -1, 2.02),
    (2, 3, -1, 1, -1, 1, 2.02),
    (2, 3, -1, 1, 1, 1, 2.01),
    (2, 4, 1, 1, -1, -1, 2.01),
    (2, 4, 1, 1, 1, -1, 2.01),
    (2, 4, 1, 1, -1, 1, 1.99),
    (2, 4, 1, 1, 1, 1, 1.97),
]

# lmerTest's summary(): estimate, SE, df, p (A..D numeric -1 / +1, Block a factor).
SAUSAGE_LMERTEST = {
    "Intercept": (2.02875, 0.01068914522, 2.999999517, 3.225310926e-07),
    "block[2]": (-0.010625, 0.01511673415, 2.999999518, 5.327734303e-01),
    "A": (-0.0378125, 0.007558367072, 2.999999518, 1.536939499e-02),
    "B": (-0.0090625, 0.007558367072, 2.999999518, 3.165971170e-01),
    "C": (-0.0109375, 0.003040209968, 17.00000021, 2.220376031e-03),
    "D": (-0.0040625, 0.003040209968, 17.00000021, 1.990776082e-01),
    "A:B": (0.0059375, 0.007558367072, 2.999999518, 4.894584916e-01),
    "A:C": (-0.0021875, 0.003040209968, 17.00000021, 4.815943198e-01),
    "A:D": (-0.0053125, 0.003040209968, 17.00000021, 9.860378106e-02),
    "B:C": (0.0015625, 0.003040209968, 17.00000021, 6.139063529e-01),
    "B:D": (-0.0028125, 0.003040209968, 17.00000021, 3.678601820e-01),
    "C:D": (0.0028125, 0.003040209968, 17.00000021, 3.678601820e-01),
}


def test_blocks_that_hold_whole_plots_are_tested_between_whole_plots_as_lmertest_does():
    space = FactorSpace.from_dicts(
        [
            *({"name": n, "low": -1, "high": 1, "hard_to_change": True} for n in "AB"),
            *({"name": n, "low": -1, "high": 1} for n in "CD"),
        ]
    )
    configs = [dict(zip("ABCD", map(float, row[2:6]), strict=True)) for row in SAUSAGE]
    analysis = fit(
        space,
        configs,
        [row[6] for row in SAUSAGE],
        model="interaction",
        blocks=[row[0] for row in SAUSAGE],
        whole_plots=[10 * row[0] + row[1] for row in SAUSAGE],
    )
    split = analysis.split_plot
    assert split is not None and split.method == "REML"
    assert split.whole_plot_variance == pytest.approx(0.0003830882892, rel=1e-4)
    assert split.sub_plot_variance == pytest.approx(0.0002957720528, rel=1e-4)
    effects = {e.name: e for e in split.effects}
    assert list(effects) == list(SAUSAGE_LMERTEST)
    for name, (coefficient, se, df, p) in SAUSAGE_LMERTEST.items():
        assert effects[name].coefficient == pytest.approx(coefficient, rel=1e-4)
        assert effects[name].std_error == pytest.approx(se, rel=1e-4)
        assert effects[name].df == pytest.approx(df, rel=1e-4)
        assert effects[name].p_value == pytest.approx(p, rel=1e-4)
    # The containment rule counted the block in the sub-plot stratum: 32 - 8 - 8 = 16 df.
    assert effects["block[2]"].stratum == "whole-plot"
    tests = {t.source: t for t in split.tests}
    assert tests["block"].den_df == pytest.approx(2.999999518, rel=1e-4)
    assert tests["block"].f == pytest.approx(0.49402, rel=1e-4)
    assert tests["A"].f == pytest.approx(25.02735, rel=1e-4)


# The cake-baking split-plot response surface as R's daewr 1.2-11 ships it (data set cakeb;
# Lawson, Design and Analysis of Experiments with R, 2015, ch. 10): 4 oven runs (whole plots,
# x1 the oven temperature), x2 varied within them, 11 cakes. Rows: oven run, x1, x2, y.
CAKE = [
    (1, -1, -1, 2.7),
    (1, -1, 1, 2.5),
    (1, -1, 0, 2.7),
    (2, 1, -1, 2.9),
    (2, 1, 1, 1.3),
    (2, 1, 0, 2.2),
    (3, 0, -1, 3.7),
    (3, 0, 1, 2.9),
    (4, 0, 0, 2.9),
    (4, 0, 0, 2.8),
    (4, 0, 0, 2.9),
]
# lmerTest: estimate, SE, df, p. Four whole plots leave the whole-plot terms about 1 df, which
# the containment rule (4 - 3) happens to give, but x2^2 gets 4.05, not the sub-plot's 4.
CAKE_LMERTEST = {
    "Intercept": (3.131184896, 0.2666580130, 0.9997403784, 5.411728089e-02),
    "x1": (-0.25, 0.2655902765, 0.9839356492, 5.212873348e-01),
    "x2": (-0.4333333333, 0.02041241450, 4.000000005, 2.911005741e-05),
    "x1:x2": (-0.35, 0.025, 4.000000005, 1.510114006e-04),
    "x1^2": (-0.6835286458, 0.3758092626, 0.9861193866, 3.226675740e-01),
    "x2^2": (-0.09648437503, 0.04315831759, 4.052894009, 8.817879714e-02),
}


def test_cake_split_plot_with_four_whole_plots_matches_lmertest():
    y, x = np.array([r[3] for r in CAKE]), np.array([r[1:3] for r in CAKE], dtype=float)
    x1, x2 = x.T
    matrix = np.column_stack([np.ones(len(y)), x1, x2, x1 * x2, x1**2, x2**2])
    split = fit_split_plot(y, matrix, list(CAKE_LMERTEST), [r[0] for r in CAKE])
    assert split.whole_plot_variance == pytest.approx(0.1402430567, rel=1e-4)
    assert split.sub_plot_variance == pytest.approx(0.0025, rel=1e-4)
    for effect in split.effects:
        coefficient, se, df, p = CAKE_LMERTEST[effect.name]
        assert effect.coefficient == pytest.approx(coefficient, rel=1e-4)
        assert effect.std_error == pytest.approx(se, rel=1e-4)
        assert effect.df == pytest.approx(df, rel=1e-4)
        assert effect.p_value == pytest.approx(p, rel=1e-4)


def simulated(plots: int, whole_sd: float, seed: int):
    """A split-plot with one hard-to-change factor w (set per whole plot) and one easy factor s
    (four runs per whole plot), y = 10 + 2 w + 3 s + 1 w s + whole-plot error + run error."""
    rng = np.random.default_rng(seed)
    w = np.repeat(np.tile([-1.0, 1.0], plots // 2), 4)
    s = np.tile([-1.0, -1.0, 1.0, 1.0], plots)
    groups = np.repeat(np.arange(plots), 4)
    y = 10 + 2 * w + 3 * s + w * s + np.repeat(rng.normal(0, whole_sd, plots), 4)
    x = np.column_stack([np.ones_like(y), w, s, w * s])
    return y, x, list(groups), rng


def test_reml_recovers_a_known_whole_plot_variance():
    y, x, groups, rng = simulated(plots=200, whole_sd=2.0, seed=7)
    y = y + rng.normal(0, 1.0, len(y))
    fit = fit_split_plot(y, x, ["Intercept", "w", "s", "w:s"], groups)
    assert fit.method == "REML"
    # True components 4 and 1; standard errors about 0.42 and 0.05 with 200 whole plots.
    assert fit.whole_plot_variance == pytest.approx(4.0, abs=1.2)
    assert fit.sub_plot_variance == pytest.approx(1.0, abs=0.15)
    effects = {e.name: e for e in fit.effects}
    assert effects["w"].stratum == "whole-plot"
    # Balanced: Satterthwaite's df are the classical strata's.
    assert effects["w"].df == pytest.approx(200 - 2, rel=1e-6)
    assert effects["s"].df == pytest.approx(800 - 200 - 2, rel=1e-6)
    assert effects["w:s"].df == pytest.approx(800 - 200 - 2, rel=1e-6)
    # The whole-plot term is estimated with the whole-plot error: a larger standard error.
    assert effects["w"].std_error > 3 * effects["s"].std_error
    assert [effects[n].coefficient for n in ("w", "s", "w:s")] == pytest.approx([2, 3, 1], abs=0.35)


def test_no_whole_plot_variance_falls_back_to_ols_without_leaking_warnings():
    y, x, groups, rng = simulated(plots=8, whole_sd=0.0, seed=3)
    # Run errors centred in each whole plot: the whole-plot means carry no extra variation.
    noise = rng.normal(0, 1.0, len(y))
    noise -= np.repeat(noise.reshape(-1, 4).mean(axis=1), 4)
    y = y + noise
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = fit_split_plot(y, x, ["Intercept", "w", "s", "w:s"], groups)
    assert fit.method == "OLS"
    assert fit.whole_plot_variance is None
    assert any("whole-plot variance is estimated at 0" in note for note in fit.notes)
    ols = sm.OLS(y, x).fit()
    assert [e.coefficient for e in fit.effects] == pytest.approx(list(ols.params), abs=1e-9)
    assert [e.std_error for e in fit.effects] == pytest.approx(list(ols.bse), rel=1e-9)
    assert [e.p_value for e in fit.effects] == pytest.approx(list(ols.pvalues), rel=1e-9)
    assert fit.sub_plot_variance == pytest.approx(ols.mse_resid)


def test_too_few_whole_plots_fall_back_to_ols():
    y, x, groups, rng = simulated(plots=2, whole_sd=1.0, seed=5)
    y = y + rng.normal(0, 1.0, len(y))
    fit = fit_split_plot(y, x, ["Intercept", "w", "s", "w:s"], groups)
    assert fit.method == "OLS"
    assert "only 2 whole plots" in fit.notes[0]


def test_partly_labelled_whole_plots_are_analysed_by_ols_with_a_note():
    space = FactorSpace.from_dicts(
        [
            {"name": "nodes", "kind": "integer", "low": 1, "high": 5, "hard_to_change": True},
            {"name": "threads", "low": -1, "high": 1},
        ]
    )
    configs = [{"nodes": n, "threads": t} for n in (1, 3, 5, 1, 5) for t in (-1.0, 0.0, 1.0, 1.0)]
    rng = np.random.default_rng(11)
    values = [100 + 4 * c["nodes"] + 6 * c["threads"] + rng.normal(0, 1) for c in configs]
    plots = [1 + i // 4 if i < 12 else None for i in range(20)]
    analysis = fit(space, configs, values, model="linear", whole_plots=plots)
    split = analysis.split_plot
    assert split is not None and split.method == "OLS"
    note = (
        "12 of 20 runs carry whole_plot: analysed by OLS; label all runs to get the split-plot"
        " analysis"
    )
    assert split.notes == [note]
    assert note in analysis.method


def test_runs_of_one_whole_plot_are_not_said_to_come_in_none():
    space = FactorSpace.from_dicts(
        [
            {"name": "nodes", "kind": "integer", "low": 1, "high": 5, "hard_to_change": True},
            {"name": "threads", "low": -1, "high": 1},
        ]
    )
    configs = [{"nodes": 3, "threads": t} for t in (-1.0, 0.0, 1.0, 1.0)]
    analysis = fit(space, configs, [100.0, 103.0, 107.0, 106.0], whole_plots=[1, 1, 1, 1])
    assert analysis.split_plot is None
    assert analysis.method == "ordinary least squares (every run so far lies in one whole plot)"


def test_a_hard_to_change_factor_that_varies_inside_a_whole_plot_is_found():
    space = FactorSpace.from_dicts(
        [
            {"name": "nodes", "kind": "integer", "low": 1, "high": 5, "hard_to_change": True},
            {"name": "threads", "low": -1, "high": 1},
        ]
    )
    configs = [
        {"nodes": 1, "threads": -1},
        {"nodes": 3, "threads": 1},
        {"nodes": 1, "threads": 1},
        {"nodes": 3, "threads": -1},
    ]
    assert varying_hard_to_change(space, configs, [1, 2, 1, 2]) is None
    assert varying_hard_to_change(space, configs, [1, 2, None, 1]) == (3, "nodes", 0)
    # The easy-to-change factor may vary; runs without a whole plot are not checked.
    assert varying_hard_to_change(space, configs, [1, 1, None, None]) == (1, "nodes", 0)
    assert varying_hard_to_change(space, configs, [None] * 4) is None
