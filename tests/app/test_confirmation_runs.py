"""A confirmation's internal pilot (issue 57): after the planned pairs, the spread of their own
differences re-estimates the count once (Wittes and Brittain 1990)."""

from __future__ import annotations

from statsmodels.stats.power import TTestPower

from app.db.models import Confirmation
from app.services.confirmation_runs import _more_pairs

PLAN = {"predicted_gain": 100.0, "target_power": 0.8, "alpha": 0.05, "max_pairs": 10}


def row(**plan: object) -> Confirmation:
    return Confirmation(pairs=3, seed=0, response="tps", goal="maximize", plan=PLAN | plan)


def pairs(*differences: float) -> dict[int, dict[str, float]]:
    return {i: {"candidate": 1000.0 + d, "baseline": 1000.0} for i, d in enumerate(differences, 1)}


def test_a_spread_wider_than_planned_adds_the_pairs_it_calls_for():
    # Differences of sd 40 around a predicted 100: effect size 2.5, for which a two-sided
    # paired t-test has 62 % power on 3 pairs and 90 % on 4 (statsmodels TTestPower).
    measured = pairs(60.0, 100.0, 140.0)
    power = TTestPower()
    assert power.power(effect_size=2.5, nobs=3, alpha=0.05) < 0.8
    assert power.power(effect_size=2.5, nobs=4, alpha=0.05) > 0.8
    assert _more_pairs(row(), measured) == 1


def test_the_count_grows_to_max_pairs_at_most():
    assert _more_pairs(row(), pairs(100.0, 300.0, -100.0)) == 7


def test_no_growth_when_fixed_grown_already_or_enough():
    wide = pairs(100.0, 300.0, -100.0)
    assert _more_pairs(row(fixed=True), wide) == 0
    assert _more_pairs(row(stage=2), wide) == 0
    assert _more_pairs(row(), pairs(99.0, 100.0, 101.0)) == 0  # the spread is tiny
    assert _more_pairs(row(), pairs(100.0)) == 0  # one pair: no spread to measure
    assert _more_pairs(row(predicted_gain=0.0), wide) == 0  # nothing to detect
