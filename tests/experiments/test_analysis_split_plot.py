"""Split-plot fits by REML, checked against the classical split-plot ANOVA and simulations.

For a balanced split-plot, REML variance components equal the ANOVA (expected mean square)
estimates, whole-plot effects equal OLS on the whole-plot means, and sub-plot effects equal OLS
within whole plots; the tests compute those independently with numpy / statsmodels OLS.
"""

import json
import warnings

import numpy as np
import pytest
import statsmodels.api as sm

from experiments.analysis.split_plot import fit_split_plot, hard_to_change_terms
from experiments.factors import FactorSpace
from experiments.terms import ModelTerms

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


def stroup_model():
    block, a, b, y = STROUP.T
    # B coded -1 / +1 as the analysis codes a two-level factor, so that the whole-plot columns
    # (Intercept, Block, A) are orthogonal to the sub-plot ones (B, A:B).
    a_dummies, b_coded = dummies(a, [2, 3]), 2 * b - 3
    whole = np.column_stack([np.ones(len(y)), dummies(block, [2, 3, 4]), a_dummies])
    x = np.column_stack([whole, b_coded, a_dummies * b_coded[:, None]])
    names = ["Intercept", "Block2", "Block3", "Block4", "A2", "A3", "B", "A2:B", "A3:B"]
    plots = (10 * block + a).astype(int)
    return y, x, names, plots, whole


def test_stroup_split_plot_matches_the_classical_anova():
    y, x, names, plots, whole = stroup_model()
    fit = fit_split_plot(y, x, names, plots, {"Block2", "Block3", "Block4", "A2", "A3"})
    assert fit.method == "REML"
    assert fit.n_whole_plots == 12
    assert fit.whole_plot_terms == ["Block2", "Block3", "Block4", "A2", "A3"]
    assert fit.sub_plot_terms == ["B", "A2:B", "A3:B"]
    effects = {e.name: e for e in fit.effects}

    # Sub-plot stratum: OLS within whole plots (whole-plot dummies + sub-plot terms); its
    # residual mean square is the sub-plot error (B*Block + A*B*Block pooled, 9 df).
    ids = np.unique(plots)
    within = sm.OLS(y, np.column_stack([dummies(plots, list(ids)), x[:, 6:]])).fit()
    assert within.df_resid == 9
    assert fit.sub_plot_variance == pytest.approx(within.mse_resid, rel=1e-3)
    for j, name in enumerate(["B", "A2:B", "A3:B"]):
        assert effects[name].coefficient == pytest.approx(within.params[len(ids) + j], abs=1e-6)
        assert effects[name].std_error == pytest.approx(within.bse[len(ids) + j], rel=1e-3)
        assert effects[name].df == 9
        assert effects[name].stratum == "sub-plot"

    # Whole-plot stratum: OLS on the whole-plot means (Block + A, 6 df); the mean square of
    # its residual estimates var(whole plot) + var(sub plot) / 2.
    means = np.array([y[plots == i].mean() for i in ids])
    rows = np.array([whole[plots == i][0] for i in ids])
    between = sm.OLS(means, rows).fit()
    assert between.df_resid == 6
    expected = between.mse_resid - within.mse_resid / 2
    assert fit.whole_plot_variance == pytest.approx(expected, rel=1e-3)
    for j, name in enumerate(["Intercept", "Block2", "Block3", "Block4", "A2", "A3"]):
        assert effects[name].coefficient == pytest.approx(between.params[j], abs=1e-6)
        assert effects[name].std_error == pytest.approx(between.bse[j], rel=1e-3)
        assert effects[name].p_value == pytest.approx(between.pvalues[j], rel=1e-2)
        assert effects[name].df == 6
        assert effects[name].stratum == "whole-plot"
    assert json.loads(json.dumps(fit.as_dict()))["method"] == "REML"


def simulated(plots: int, whole_sd: float, seed: int):
    """A split-plot with one hard-to-change factor w (set per whole plot) and one easy factor s
    (four runs per whole plot), y = 10 + 2 w + 3 s + 1 w s + whole-plot error + run error."""
    rng = np.random.default_rng(seed)
    w = np.repeat(np.tile([-1.0, 1.0], plots // 2), 4)
    s = np.tile([-1.0, -1.0, 1.0, 1.0], plots)
    groups = np.repeat(np.arange(plots), 4)
    y = 10 + 2 * w + 3 * s + w * s + np.repeat(rng.normal(0, whole_sd, plots), 4)
    x = np.column_stack([np.ones_like(y), w, s, w * s])
    return y, x, groups, rng


def test_reml_recovers_a_known_whole_plot_variance():
    y, x, groups, rng = simulated(plots=200, whole_sd=2.0, seed=7)
    y = y + rng.normal(0, 1.0, len(y))
    fit = fit_split_plot(y, x, ["Intercept", "w", "s", "w:s"], groups, {"w"})
    assert fit.method == "REML"
    # True components 4 and 1; standard errors about 0.42 and 0.05 with 200 whole plots.
    assert fit.whole_plot_variance == pytest.approx(4.0, abs=1.2)
    assert fit.sub_plot_variance == pytest.approx(1.0, abs=0.15)
    effects = {e.name: e for e in fit.effects}
    assert effects["w"].stratum == "whole-plot"
    assert effects["w"].df == 200 - 2
    assert effects["s"].df == effects["w:s"].df == 800 - 200 - 2
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
        fit = fit_split_plot(y, x, ["Intercept", "w", "s", "w:s"], groups, {"w"})
    assert fit.method == "OLS"
    assert fit.whole_plot_variance is None
    assert any("whole-plot variance is estimated at 0" in note for note in fit.notes)
    ols = sm.OLS(y, x).fit()
    assert [e.coefficient for e in fit.effects] == pytest.approx(list(ols.params), abs=1e-9)
    assert [e.std_error for e in fit.effects] == pytest.approx(list(ols.bse), rel=1e-9)
    assert fit.sub_plot_variance == pytest.approx(ols.mse_resid)


def test_too_few_whole_plots_fall_back_to_ols():
    y, x, groups, rng = simulated(plots=2, whole_sd=1.0, seed=5)
    y = y + rng.normal(0, 1.0, len(y))
    fit = fit_split_plot(y, x, ["Intercept", "w", "s", "w:s"], groups, {"w"})
    assert fit.method == "OLS"
    assert "only 2 whole plots" in fit.notes[0]


def test_hard_to_change_terms_contain_only_hard_to_change_factors():
    space = FactorSpace.from_dicts(
        [
            {"name": "nodes", "kind": "integer", "low": 1, "high": 9, "hard_to_change": True},
            {"name": "engine", "kind": "categorical", "levels": ["a", "b"], "hard_to_change": True},
            {"name": "threads", "low": 1, "high": 64},
        ]
    )
    terms = ModelTerms(space, "interaction", [3, 2, 3])
    assert hard_to_change_terms(space, terms) == {"nodes", "engine[b]", "nodes:engine[b]"}
