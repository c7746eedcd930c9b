"""Blocks as a fixed effect, checked against a published blocked central composite design.

The chemical reaction data of Myers, Montgomery & Anderson-Cook (Response Surface Methodology,
3rd ed., Table 7.6; R's rsm package data set `ChemReact`): yield against time and temperature,
a 2^2 factorial with three centre points in block 1 and the axial points with three centre
points in block 2, run on another day. Published fit (rsm, Lenth 2009, "Response-Surface
Methods in R, Using rsm", `rsm(Yield ~ Block + SO(x1, x2))`): intercept 84.095427, block 2
-4.457530, x1 0.932541, x2 0.577712, x1:x2 0.125000, x1^2 -1.308555, x2^2 -0.933442 (standard
errors 0.079631, 0.087226, 0.057699, 0.057699, 0.081592, 0.060064, 0.060064), multiple R^2
0.9981, adjusted 0.9964; lack of fit 3 df (SS 0.053), pure error 4 df (SS 0.133); stationary
point time 86.86148, temp 176.67190; eigenvalues -0.9233027, -1.3186949.
"""

from __future__ import annotations

import pytest

from experiments.analysis import fit
from experiments.factors import FactorSpace

CHEM = [
    (80, 170, 80.5, 1), (80, 180, 81.5, 1), (90, 170, 82.0, 1), (90, 180, 83.5, 1),
    (85, 175, 83.9, 1), (85, 175, 84.3, 1), (85, 175, 84.0, 1),
    (85, 175, 79.7, 2), (85, 175, 79.8, 2), (85, 175, 79.5, 2),
    (92.07, 175, 78.4, 2), (77.93, 175, 75.6, 2), (85, 182.07, 78.5, 2), (85, 167.93, 77.0, 2),
]  # fmt: skip
SPACE = FactorSpace.from_dicts(
    [{"name": "time", "low": 80, "high": 90}, {"name": "temp", "low": 170, "high": 180}]
)
CONFIGS = [{"time": time, "temp": temp} for time, temp, _, _ in CHEM]
YIELD = [row[2] for row in CHEM]
BLOCKS = [row[3] for row in CHEM]


def test_a_blocked_ccd_matches_the_published_fit():
    analysis = fit(SPACE, CONFIGS, YIELD, model="quadratic", blocks=BLOCKS, response="yield")
    by_name = {t.name: t for t in analysis.terms}
    published = {
        "Intercept": (84.095427, 0.079631),
        "block[2]": (-4.457530, 0.087226),
        "time": (0.932541, 0.057699),
        "temp": (0.577712, 0.057699),
        "time:temp": (0.125000, 0.081592),
        "time^2": (-1.308555, 0.060064),
        "temp^2": (-0.933442, 0.060064),
    }
    for name, (coefficient, error) in published.items():
        assert by_name[name].coefficient == pytest.approx(coefficient, abs=5e-7)
        assert by_name[name].std_error == pytest.approx(error, abs=5e-7)
    assert analysis.r_squared == pytest.approx(0.9981, abs=5e-5)
    assert analysis.adj_r_squared == pytest.approx(0.9964, abs=5e-5)
    misfit = analysis.lack_of_fit
    assert misfit is not None
    assert (misfit.lack_of_fit_df, misfit.pure_error_df) == (3, 4)
    assert misfit.lack_of_fit_ss == pytest.approx(0.053, abs=5e-4)
    assert misfit.pure_error_ss == pytest.approx(0.133, abs=5e-4)
    canonical = analysis.canonical
    assert canonical is not None and canonical.stationary_natural is not None
    assert canonical.stationary_natural["time"] == pytest.approx(86.86148, abs=5e-5)
    assert canonical.stationary_natural["temp"] == pytest.approx(176.67190, abs=5e-5)
    assert canonical.eigenvalues == pytest.approx([-0.9233027, -1.3186949], abs=5e-7)


def test_without_blocks_the_block_difference_lands_in_the_residual():
    # The defect this fixes: R^2 0.28 and nothing significant when blocks are ignored.
    ignored = fit(SPACE, CONFIGS, YIELD, model="quadratic")
    assert ignored.r_squared == pytest.approx(0.2826, abs=5e-4)
    blocked = fit(SPACE, CONFIGS, YIELD, model="quadratic", blocks=BLOCKS)
    assert blocked.r_squared == pytest.approx(0.9981, abs=5e-5)


def test_blocks_have_their_anova_row_and_stay_in_the_auto_model():
    analysis = fit(SPACE, CONFIGS, YIELD, blocks=BLOCKS, response="yield")
    assert "block[2]" in [t.name for t in analysis.terms]
    block = next(row for row in analysis.anova if row.source == "block")
    assert block.df == 1
    assert block.p_value is not None and block.p_value < 1e-9
    assert "block" not in [e.factor for e in analysis.ranked_factors]
    assert analysis.explanation.sentences[0] == (
        "The runs came in 2 blocks: yield was in block 2 about 4.46 lower than in block 1"
        " (p < 0.001). That difference is taken out of the factor effects, and predictions are"
        " for the average block."
    )


def test_the_optimum_is_predicted_for_the_average_block():
    analysis = fit(SPACE, CONFIGS, YIELD, model="quadratic", blocks=BLOCKS)
    best = analysis.optimum
    assert best.config["time"] == pytest.approx(86.86, abs=0.05)
    assert best.config["temp"] == pytest.approx(176.67, abs=0.05)
    coefficients = {t.name: t.coefficient for t in analysis.terms}
    x1, x2 = (best.config["time"] - 85) / 5, (best.config["temp"] - 175) / 5
    average_block = (
        coefficients["Intercept"]
        + coefficients["block[2]"] / 2
        + coefficients["time"] * x1
        + coefficients["temp"] * x2
        + coefficients["time:temp"] * x1 * x2
        + coefficients["time^2"] * x1**2
        + coefficients["temp^2"] * x2**2
    )
    assert best.predicted == pytest.approx(average_block, rel=1e-9)


def test_every_run_or_none_has_a_block():
    from experiments.errors import DomainError

    with pytest.raises(DomainError) as error:
        fit(SPACE, CONFIGS, YIELD, blocks=[*BLOCKS[:-1], None])
    assert error.value.field == "blocks.13"
