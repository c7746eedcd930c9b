"""Confirming the recommended configuration against today's in randomized, interleaved pairs:
the pair count from the paired t-test's power, the run orders, the paired t-test with the gain
in percent, the model's prediction checked, and the sentence for a change ticket. Checked
against Student's sleep data as R analyses it, G*Power's published power figures, and hand
computations."""

import json
import math
import re

import numpy as np
import pytest
import scipy.integrate
import scipy.stats

from experiments.analysis.confirmation import (
    CONFIDENCE,
    PredictionAt,
    confirmation,
    model_check,
    pair_orders,
    planned_pairs,
)
from experiments.errors import DomainError

# Student (1908), "The probable error of a mean", as R's datasets::sleep: the extra hours of
# sleep of 10 patients under drug 1 (group 1) and drug 2 (group 2). R 4.x:
# t.test(extra ~ group, data = sleep, paired = TRUE) prints t = -4.0621, df = 9,
# p-value = 0.002833, 95 percent confidence interval -2.4598858 -0.7001142,
# mean difference -1.58.
SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]

BASELINE_TPS = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1002.0]


def _sleep(goal):
    return confirmation(SLEEP_1, SLEEP_2, response="extra", goal=goal)


def test_the_paired_t_test_matches_r_on_students_sleep_data():
    found = _sleep("maximize")
    assert found.pairs == 10 and found.df == 9
    assert found.gain == pytest.approx(-1.58, abs=1e-12)
    assert round(found.t, 4) == -4.0621
    assert round(found.p_value, 6) == 0.002833
    assert round(found.gain_low, 7) == -2.4598858 and round(found.gain_high, 7) == -0.7001142
    assert found.significant and found.sd_difference == pytest.approx(1.2299955, abs=1e-7)
    assert found.candidate_mean == pytest.approx(0.75)
    assert found.baseline_mean == pytest.approx(2.33)


def test_minimizing_mirrors_the_gain_and_its_interval():
    found = _sleep("minimize")
    assert found.gain == pytest.approx(1.58, abs=1e-12)
    assert round(found.gain_low, 7) == 0.7001142 and round(found.gain_high, 7) == 2.4598858
    assert round(found.t, 4) == 4.0621 and round(found.p_value, 6) == 0.002833


def test_values_at_or_below_zero_give_the_percent_over_the_baseline_mean():
    # Some sleep values are <= 0, so no log ratio: the gain and its ends over the mean of
    # group 2 (2.33 hours).
    found = _sleep("maximize")
    assert found.pct_method == "difference_over_baseline_mean"
    assert found.gain_pct == pytest.approx(-1.58 / 2.33 * 100)
    assert found.gain_pct_low == pytest.approx(-2.4598858 / 2.33 * 100, abs=1e-5)
    assert found.gain_pct_high == pytest.approx(-0.7001142 / 2.33 * 100, abs=1e-5)
    # Worse for a maximized response: 1.58 / 2.33 = 67.8 % lower, the interval's ends
    # 0.7001142 / 2.33 = 30.0 and 2.4598858 / 2.33 = 106 (3 digits), p 0.002833 to 2 digits.
    assert found.sentence == (
        "The recommended configuration gave 67.8 % lower extra than today's (95 % CI 30-106 %,"
        " 10 interleaved pairs, paired t-test p = 0.0028)."
    )
    mirrored = _sleep("minimize")
    assert mirrored.gain_pct == pytest.approx(1.58 / 2.33 * 100)
    assert mirrored.gain_pct_low == pytest.approx(0.7001142 / 2.33 * 100, abs=1e-5)


def test_positive_values_give_the_percent_from_the_log_ratio():
    # Candidate = 2 x baseline times (1 + e_i): log ratios log 2 + log(1 + e_i), whose mean m
    # and t interval give 100 (exp(m) - 1) near 100 %, worked out here by hand.
    noise = [0.004, -0.003, 0.002, -0.001, 0.0, -0.002]
    candidate = [2 * b * (1 + e) for b, e in zip(BASELINE_TPS, noise, strict=True)]
    found = confirmation(candidate, BASELINE_TPS, response="tps", goal="maximize")
    logs = [math.log(2) + math.log1p(e) for e in noise]
    m = sum(logs) / 6
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / 5)
    half = scipy.stats.t.ppf(0.975, 5) * sd / math.sqrt(6)
    assert found.pct_method == "log_ratio"
    assert found.gain_pct == pytest.approx(100 * (math.exp(m) - 1))
    assert found.gain_pct_low == pytest.approx(100 * (math.exp(m - half) - 1))
    assert found.gain_pct_high == pytest.approx(100 * (math.exp(m + half) - 1))
    assert 99 < found.gain_pct_low < found.gain_pct < found.gain_pct_high < 101


def test_an_exact_ratio_gives_that_percent_both_ways():
    double = confirmation([2 * b for b in BASELINE_TPS], BASELINE_TPS, response="tps",
                          goal="maximize")  # fmt: skip
    assert double.gain_pct == pytest.approx(100) and double.gain_pct_low == pytest.approx(100)
    halved = confirmation([b / 2 for b in BASELINE_TPS], BASELINE_TPS,
                          response="latency_p95_ms", goal="minimize")  # fmt: skip
    assert halved.gain_pct == pytest.approx(50) and halved.gain_pct_high == pytest.approx(50)
    assert halved.gain == pytest.approx(sum(BASELINE_TPS) / 12)


def test_the_power_matches_g_power_for_a_medium_effect():
    # G*Power 3 (Faul et al. 2007), t tests, "Means: Difference from constant (one sample
    # case)", a priori, two tails, d = 0.5, alpha 0.05, power 0.80: total sample size 34, actual
    # power 0.808 (R's power.t.test(delta = 0.5, type = "one.sample", power = 0.8): n = 33.37).
    # A pair difference has sd sqrt(2) * run_sd, so a gain of 0.5 sqrt(2) run sds is d = 0.5.
    # The integration below gives the same power at 33 pairs (0.795) and 34 (0.808).
    plan = planned_pairs(0.5 * math.sqrt(2), 1.0, power=0.8, max_pairs=100)
    assert plan.pairs == 34 and plan.pairs_needed == 34
    assert plan.power == pytest.approx(0.808, abs=0.001)
    assert plan.sd_difference == pytest.approx(math.sqrt(2))
    fewer = planned_pairs(0.5 * math.sqrt(2), 1.0, min_pairs=33, max_pairs=33)
    assert fewer.power < 0.8 and "the most allowed" in fewer.reason
    assert _two_sided_power(0.5, 33) == pytest.approx(0.7954, abs=1e-4)
    assert _two_sided_power(0.5, 34) == pytest.approx(0.8078, abs=1e-4)


def test_the_power_of_a_fixed_count_matches_g_power_post_hoc():
    # "G*Power: t Tests" (course handout GPower3-T.docx, copy at docest.com/doc/194539), one
    # sample t, post hoc, two tails, d = 1/3, alpha 0.05, N = 25: power = 0.360.
    plan = planned_pairs(math.sqrt(2) / 3, 1.0, min_pairs=25, max_pairs=25)
    assert plan.pairs == 25 and round(plan.power, 3) == 0.360
    assert "only 35 % power" in plan.reason


def _two_sided_power(effect, pairs, alpha=0.05):
    """The paired t-test's power by integrating the normal over the chi distribution of the
    sample sd: independent of scipy's noncentral t."""
    df, shift = pairs - 1, effect * math.sqrt(pairs)
    critical = scipy.stats.t.isf(alpha / 2, df)

    def rejects(s):
        scaled = critical * s / math.sqrt(df)
        tails = scipy.stats.norm.sf(scaled - shift) + scipy.stats.norm.cdf(-scaled - shift)
        return tails * scipy.stats.chi.pdf(s, df)

    return scipy.integrate.quad(rejects, 0, np.inf, limit=200)[0]


@pytest.mark.parametrize(("gain", "sd"), [(120, 45), (500, 45), (5000, 45), (40, 45)])
def test_the_power_agrees_with_integration_even_where_the_noncentral_t_fails(gain, sd):
    # At d = 500 / (45 sqrt 2) and 3 pairs scipy's noncentral t returns nan for the lower tail
    # and statsmodels passes it on: the plan still has the true power, near 1.
    plan = planned_pairs(gain, sd, max_pairs=100)
    assert plan.power == pytest.approx(
        _two_sided_power(gain / (sd * math.sqrt(2)), plan.pairs), abs=1e-6
    )


def test_the_plan_is_the_smallest_count_with_the_power_asked_for():
    plan = planned_pairs(120, 45, response="tps")
    assert plan.pairs == 5 and plan.power >= 0.8
    assert planned_pairs(120, 45, min_pairs=4, max_pairs=4).power < 0.8
    assert plan.reason == (
        "5 pairs: a paired t-test on 5 pairs has 87 % power to detect the predicted gain of"
        " 120 tps at a run-to-run sd of 45 tps (alpha 0.05)."
    )
    assert planned_pairs(-120, 45, response="tps").pairs == 5  # the sign does not matter


def test_capped_floor_and_unknown_plans_say_so():
    capped = planned_pairs(120, 120, response="tps")
    assert capped.pairs == 10 and capped.power < 0.8 and capped.pairs_needed == 18
    assert capped.reason.startswith("10 pairs, the most allowed: a paired t-test on 10 pairs")
    assert "has only 51 % power" in capped.reason and "80 % would take 18 pairs" in capped.reason
    floor = planned_pairs(5000, 45, response="tps")
    assert floor.pairs == 3 and floor.pairs_needed == 2
    assert floor.reason.startswith("3 pairs, the fewest allowed:")
    assert "already has over 99 % power" in floor.reason
    tiny = planned_pairs(0.001, 45)
    assert tiny.pairs_needed is None and "more than 10000 pairs" in tiny.reason
    for plan in (planned_pairs(120, None), planned_pairs(120, 0.0), planned_pairs(0, 45)):
        assert plan.pairs == 10 and math.isnan(plan.power) and plan.pairs_needed is None
        assert plan.reason.startswith("10 pairs, the most allowed:")
        assert plan.reason.endswith("cannot be computed.")
        assert json.loads(json.dumps(plan.as_dict(), allow_nan=False))["power"] is None
    assert planned_pairs(120, None).sd_difference is None


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.0}, "alpha"),
        ({"power": 1.0}, "power"),
        ({"power": float("nan")}, "power"),
        ({"min_pairs": 1}, "pairs"),
        ({"min_pairs": 6, "max_pairs": 5}, "pairs"),
        ({"max_pairs": 4.5}, "pairs"),
        ({"run_sd": -1.0}, "run_sd"),
        ({"run_sd": float("inf")}, "run_sd"),
        ({"predicted_gain": float("nan")}, "predicted_gain"),
    ],
)
def test_bad_plan_arguments_are_refused_naming_the_field(arguments, field):
    given = {"predicted_gain": 120.0, "run_sd": 45.0, **arguments}
    with pytest.raises(DomainError) as refused:
        planned_pairs(given.pop("predicted_gain"), given.pop("run_sd"), **given)
    assert refused.value.field == field


@pytest.mark.parametrize("pairs", [1, 2, 5, 6, 7, 10, 11])
def test_pair_orders_are_balanced_and_fixed_by_the_seed(pairs):
    orders = pair_orders(pairs, seed=42)
    assert orders == pair_orders(pairs, seed=42)
    assert len(orders) == pairs
    assert set(orders) <= {("candidate", "baseline"), ("baseline", "candidate")}
    first = sum(order[0] == "candidate" for order in orders)
    assert first in {pairs // 2, pairs - pairs // 2}


def test_pair_orders_vary_with_the_seed_and_both_orders_occur():
    drawn = [tuple(pair_orders(6, seed)) for seed in range(40)]
    assert all(len(set(orders)) == 2 for orders in drawn)  # 3 pairs start with each arm
    assert len(set(drawn)) > 5  # 20 arrangements of 6 pairs: the seed changes them
    extra = {pair_orders(5, seed).count(("candidate", "baseline")) for seed in range(40)}
    assert extra == {2, 3}  # the odd pair starts with either arm


@pytest.mark.parametrize(
    ("pairs", "seed", "field"),
    [(0, 1, "pairs"), (True, 1, "pairs"), (3, -1, "seed"), (3, 1.5, "seed")],
)
def test_bad_pair_orders_arguments_are_refused(pairs, seed, field):
    with pytest.raises(DomainError) as refused:
        pair_orders(pairs, seed)
    assert refused.value.field == field


PREDICTION = PredictionAt(mean=1000.0, se_mean=10.0, residual_sd=30.0, df=8)
# The mean of 6 new runs: 1000 ± t(0.975, 8) sqrt(10² + 30² / 6) = 1000 ± 2.306004 * 15.81139.
HALF = scipy.stats.t.ppf(0.975, 8) * math.sqrt(10**2 + 30**2 / 6)


def test_the_model_check_is_the_prediction_interval_of_the_mean_of_the_runs():
    assert CONFIDENCE == 0.95
    assert pytest.approx(36.4612, abs=1e-4) == HALF
    held = model_check(PREDICTION, [1030.0] * 6)
    assert held.low == pytest.approx(1000 - HALF) and held.high == pytest.approx(1000 + HALF)
    assert held.held and held.runs == 6 and held.observed == 1030 and held.predicted == 1000
    missed = model_check(PREDICTION, [1040.0, 1035.0, 1045.0, 1040.0, 1038.0, 1042.0])
    assert not missed.held and missed.observed == pytest.approx(1040)
    assert not model_check(PREDICTION, [960.0] * 6).held


@pytest.mark.parametrize(
    ("prediction", "field"),
    [
        (PredictionAt(float("nan"), 10.0, 30.0, 8), "prediction.mean"),
        (PredictionAt(1000.0, -1.0, 30.0, 8), "prediction.se_mean"),
        (PredictionAt(1000.0, 10.0, float("inf"), 8), "prediction.residual_sd"),
        (PredictionAt(1000.0, 10.0, 30.0, 0), "prediction.df"),
    ],
)
def test_a_bad_prediction_is_refused_naming_its_field(prediction, field):
    with pytest.raises(DomainError) as refused:
        confirmation([1.0, 2.0], [1.5, 2.1], response="tps", goal="maximize",
                     prediction=prediction)  # fmt: skip
    assert refused.value.field == field


def test_a_clear_gain_in_throughput_reads_faster_with_the_model_check():
    # Candidate 1.124 x baseline in every pair: 12.4 % faster, interval 12.4-12.4. The mean of
    # 6 runs: 1120 ± t(0.975, 8) sqrt(10² + 20² / 6) = 1120 ± 29.77, 1090-1150 to 4 digits.
    candidate = [1.124 * b for b in BASELINE_TPS]
    found = confirmation(candidate, BASELINE_TPS, response="tps", goal="maximize",
                         prediction=PredictionAt(1120.0, 10.0, 20.0, 8))  # fmt: skip
    check = found.model_check
    assert check is not None and check.held
    assert found.sentence == (
        "The recommended configuration ran 12.4 % faster than today's (95 % CI 12.4-12.4 %,"
        " 6 interleaved pairs, paired t-test p < 0.001). The model predicted 1120 tps (95 %"
        " interval for the mean of 6 runs 1090-1150); it measured 1124: the prediction held."
    )
    assert json.loads(json.dumps(found.as_dict(), allow_nan=False))["model_check"]["held"]


def _noisy(factor, baseline=BASELINE_TPS):
    wobble = [0.01, -0.012, 0.008, -0.006, 0.011, -0.009]
    return [factor * b * (1 + w) for b, w in zip(baseline, wobble, strict=True)]


def _numbers(found, low, high):
    ends = f"{low:.3g}-{high:.3g} %"
    p = "< 0.001" if found.p_value < 0.001 else f"= {found.p_value:.2g}"
    return f"(95 % CI {ends}, 6 interleaved pairs, paired t-test p {p})."


def test_a_clear_loss_in_throughput_reads_slower():
    found = confirmation(_noisy(0.9), BASELINE_TPS, response="tps", goal="maximize")
    assert found.significant and found.gain < 0
    size = f"{-found.gain_pct:.3g}"
    assert found.sentence == (
        f"The recommended configuration ran {size} % slower than today's "
        + _numbers(found, -found.gain_pct_high, -found.gain_pct_low)
    )


@pytest.mark.parametrize(
    ("factor", "response", "goal", "word"),
    [
        (1.1, "rows_per_query", "maximize", "higher"),
        (0.9, "rows_per_query", "maximize", "lower"),
        (0.9, "latency_p95_ms", "minimize", "lower"),
        (1.1, "latency_p95_ms", "minimize", "higher"),
        (0.9, "tps", "minimize", "lower"),  # a minimized throughput is no speed
    ],
)
def test_other_responses_read_higher_or_lower(factor, response, goal, word):
    found = confirmation(_noisy(factor), BASELINE_TPS, response=response, goal=goal)
    better = found.gain > 0
    assert found.significant and better == ((factor > 1) == (goal == "maximize"))
    size, low, high = (found.gain_pct, found.gain_pct_low, found.gain_pct_high)
    if not better:
        size, low, high = -size, -high, -low
    assert found.sentence == (
        f"The recommended configuration gave {size:.3g} % {word} {response} than today's "
        + _numbers(found, low, high)
    )


def test_no_clear_difference_says_so_with_the_responses_own_change():
    wobble = [0.01, -0.012, 0.006, -0.002, 0.004, -0.003]
    candidate = [b * (1 + w) for b, w in zip(BASELINE_TPS, wobble, strict=True)]
    found = confirmation(candidate, BASELINE_TPS, response="tps", goal="maximize")
    assert not found.significant and found.gain_pct_low < 0 < found.gain_pct_high
    pattern = (
        r"The recommended configuration did not differ clearly from today's:"
        r" tps changed by ([+-]?[\d.]+) %"
        r" \(95 % CI (-[\d.]+) to ([\d.]+) %, 6 interleaved pairs, p = ([\d.]+)\)\."
    )
    matched = re.fullmatch(pattern, found.sentence)
    assert matched is not None, found.sentence
    assert float(matched[1]) == pytest.approx(found.gain_pct, rel=1e-2)
    assert float(matched[2]) == pytest.approx(found.gain_pct_low, rel=1e-2)
    assert float(matched[4]) == pytest.approx(found.p_value, rel=5e-2)
    # Minimized, the sentence gives the latency's own change: the candidate 0.1 % higher reads
    # as a positive change though the goal-signed gain is negative.
    latency = confirmation(candidate, BASELINE_TPS, response="latency_p95_ms", goal="minimize")
    assert latency.gain_pct == pytest.approx(-found.gain_pct)
    assert f"latency_p95_ms changed by +{found.gain_pct:.3g} %" in latency.sentence


def test_a_prediction_outside_the_interval_says_the_model_is_off_with_the_unit():
    latency = [10.4, 10.6, 10.5, 10.5, 10.45, 10.55]
    found = confirmation(latency, [12.0] * 6, response="latency_p95_ms", goal="minimize",
                         prediction=PredictionAt(9.0, 0.2, 0.4, 10), unit="ms")  # fmt: skip
    check = found.model_check
    assert check is not None and not check.held and check.observed == pytest.approx(10.5)
    half = scipy.stats.t.ppf(0.975, 10) * math.sqrt(0.2**2 + 0.4**2 / 6)
    assert found.sentence.startswith("The recommended configuration gave 12.5 % lower")
    assert found.sentence.endswith(
        f" The model predicted latency_p95_ms 9 ms (95 % interval for the mean of 6 runs"
        f" {9 - half:.4g}-{9 + half:.4g} ms); it measured 10.5 ms: outside the interval: the"
        " model is off here."
    )


def test_a_baseline_mean_of_zero_has_no_percent_and_the_sentence_gives_the_difference():
    found = confirmation([0.0, 2.2, 1.1], [-1.0, 1.0, 0.0], response="rows", goal="maximize")
    assert found.pct_method == "undefined" and math.isnan(found.gain_pct)
    assert json.loads(json.dumps(found.as_dict(), allow_nan=False))["gain_pct"] is None
    assert found.gain == pytest.approx(1.1)
    assert found.sentence.startswith("The recommended configuration gave 1.1 higher rows than")


@pytest.mark.parametrize(
    ("candidate", "baseline", "goal", "field"),
    [
        ([1.0, 2.0, 3.0], [1.0, 2.0], "maximize", "pairs"),
        ([1.0], [2.0], "maximize", "pairs"),
        ([1.0, 2.0], [1.5, 2.6], "max", "goal"),
        ([1.0, 2.0], [1.5, "fast"], "maximize", "baseline.1"),
        ([1.0, 2.0, float("nan")], [1.5, 2.6, 3.0], "maximize", "candidate.2"),
        ([1.0, 2.0], [float("inf"), 2.6], "minimize", "baseline.0"),
    ],
)
def test_bad_runs_are_refused_naming_the_field(candidate, baseline, goal, field):
    with pytest.raises(DomainError) as refused:
        confirmation(candidate, baseline, response="tps", goal=goal)
    assert refused.value.field == field


def test_pairs_that_all_differ_alike_give_the_tests_limit():
    """A target without run-to-run noise: every pair differs by the same amount. The interval
    shrinks to that difference and p is 0 (1 when the difference is 0)."""
    found = confirmation([0.0, 2.0, 3.0], [0.5, 2.5, 3.5], response="tps", goal="minimize")
    assert found.gain == found.gain_low == found.gain_high == pytest.approx(0.5)
    assert found.p_value == 0.0 and found.t == math.inf and found.significant
    same = confirmation([2.0, 3.0], [2.0, 3.0], response="tps", goal="maximize")
    assert same.gain == 0.0 and same.p_value == 1.0 and not same.significant
    assert "did not differ clearly" in same.sentence


def test_throughput_whose_noise_scales_with_it_is_judged_by_its_ratios():
    """Measured on the lab under load: point selects against read-write, their tps swinging
    with the machine's load. The differences (19300 to 39500 tps) leave a paired t-test on them
    at p 0.059; the ratios (21 to 40 times) are steady, and the test is on the scale of the
    percent the sentence gives."""
    candidate, baseline = [20293.98, 20445.7, 40503.21], [962.26, 829.88, 1021.9]
    found = confirmation(candidate, baseline, response="tps", goal="maximize")
    assert found.pct_method == "log_ratio" and found.gain_pct_low > 1000
    ratios = np.log(np.array(candidate) / np.array(baseline))
    t = ratios.mean() / (ratios.std(ddof=1) / np.sqrt(3))
    assert found.t == pytest.approx(t) and found.p_value == pytest.approx(
        2 * scipy.stats.t.sf(t, 2)
    )
    assert found.significant and found.sentence.startswith("The recommended configuration ran")
    assert found.gain_low < 0  # the differences alone would not say it
