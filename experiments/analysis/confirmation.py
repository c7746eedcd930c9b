"""Confirming a recommended configuration ("candidate") against today's ("baseline") on the real
cluster: how many randomized, interleaved pairs to run (one pair = one run of each, in a random
order), in which order, and what they showed: the gain with its 95 % confidence interval, the
paired t-test, and whether the regression model's prediction for the candidate held.

A pair's two runs share the cluster's state of the moment, so the test is paired (Student 1908;
R's ``t.test(x, y, paired = TRUE)``): on the log ratios of positive throughput, whose noise
scales with its level, else on the differences. `as_dict()` is JSON-friendly (never NaN).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np
import scipy.stats
from statsmodels.stats.power import TTestPower

from experiments.errors import DomainError
from experiments.goals import check_goal
from experiments.numbers import significant

CONFIDENCE = 0.95
# Percentages to three significant digits, response values to four (runs a few percent apart
# must read apart), p to two.
_PCT_DIGITS = 3
_VALUE_DIGITS = 4
_P_DIGITS = 2
_SMALLEST_P = 0.001
# The most pairs searched to say what the power asked for would take beyond the allowed most.
_MOST_PAIRS_SEARCHED = 10_000
# Responses whose gain reads as speed ("ran 12 % faster"), by a word of their name.
_THROUGHPUT_WORDS = frozenset({"tps", "qps", "throughput"})

ARMS = ("candidate", "baseline")

__all__ = [
    "ARMS",
    "CONFIDENCE",
    "Confirmation",
    "ModelCheck",
    "PairPlan",
    "PredictionAt",
    "confirmation",
    "model_check",
    "pair_orders",
    "planned_pairs",
]


def _plain(value: object) -> object:
    """`value` with every non-finite float replaced by None, dicts and lists walked."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return None if isinstance(value, float) and not math.isfinite(value) else value


@dataclass(frozen=True)
class PairPlan:
    """How many pairs to run: `pairs`, and the `power` of the two-sided paired t-test at that
    count to detect `predicted_gain` at level `alpha` (nan without a noise estimate or a gain),
    `target_power` asked for. `run_sd` is the run-to-run sd assumed, `sd_difference` that of a
    pair's difference (sqrt(2) * run_sd); `pairs_needed` the fewest pairs (at least 2) reaching
    `target_power` without the bounds (None: not computable or over 10000)."""

    pairs: int
    power: float
    predicted_gain: float
    run_sd: float | None
    sd_difference: float | None
    reason: str
    alpha: float
    target_power: float
    pairs_needed: int | None

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict (a nan power is None)."""
        return _plain(asdict(self))  # type: ignore[return-value]


def planned_pairs(
    predicted_gain: float,
    run_sd: float | None,
    *,
    response: str = "response",
    alpha: float = 0.05,
    power: float = 0.8,
    min_pairs: int = 3,
    max_pairs: int = 10,
) -> PairPlan:
    """The smallest pair count in [`min_pairs`, `max_pairs`] whose two-sided paired t-test at
    level `alpha` reaches `power` to detect `predicted_gain` (its sign does not matter), the
    effect size being |gain| / (sqrt(2) * `run_sd`). Without a noise estimate (`run_sd` None
    or 0) or without a predicted gain: `max_pairs`, the reason saying why. `response` names
    the unit the reason writes numbers in ("120 tps"). DomainError on bad arguments, naming
    "predicted_gain", "run_sd", "alpha", "power" or "pairs" (the pair bounds)."""
    gain, sd = _checked_plan(predicted_gain, run_sd, alpha, power, min_pairs, max_pairs)
    amount = f"{'gain' if gain >= 0 else 'loss'} of {significant(abs(gain), _VALUE_DIGITS)}"
    given = f"the predicted {amount} {response}"
    sd_difference = None if sd is None else math.sqrt(2) * sd
    if sd is None or sd == 0 or gain == 0:
        if sd is None:
            why = f"no run-to-run sd of {response} is known, so the power to detect {given}"
        elif sd == 0:
            why = f"the runs show no run-to-run variation of {response} (sd 0), so the power"
            why += f" to detect {given}"
        else:
            why = "the model predicts no gain, so the power to detect one"
        reason = f"{max_pairs} pairs, the most allowed: {why} cannot be computed."
        return PairPlan(max_pairs, math.nan, gain, sd, sd_difference, reason, alpha, power, None)
    effect = abs(gain) / (math.sqrt(2) * sd)
    needed = _pairs_needed(effect, alpha, power)
    pairs = max_pairs if needed is None else min(max(needed, min_pairs), max_pairs)
    reached = _power(effect, pairs, alpha)
    detect = (
        f"{_percent_floor(reached)} power to detect {given} at a run-to-run sd of"
        f" {significant(sd, _VALUE_DIGITS)} {response} (alpha {significant(alpha)})"
    )
    test = f"a paired t-test on {pairs} pairs"
    if reached < power:
        more = f"more than {_MOST_PAIRS_SEARCHED}" if needed is None else str(needed)
        reason = (
            f"{pairs} pairs, the most allowed: {test} has only {detect};"
            f" {significant(100 * power)} % would take {more} pairs."
        )
    elif needed is not None and needed < min_pairs:
        reason = f"{pairs} pairs, the fewest allowed: {test} already has {detect}."
    else:
        reason = f"{pairs} pairs: {test} has {detect}."
    return PairPlan(pairs, reached, gain, sd, sd_difference, reason, alpha, power, needed)


def _checked_plan(
    predicted_gain: float,
    run_sd: float | None,
    alpha: float,
    power: float,
    min_pairs: int,
    max_pairs: int,
) -> tuple[float, float | None]:
    """The predicted gain and run-to-run sd as floats, every argument checked."""
    gain = _finite(predicted_gain, "predicted_gain", "must be a finite number")
    sd = None if run_sd is None else _finite(run_sd, "run_sd", "must be a finite number or None")
    if sd is not None and sd < 0:
        raise DomainError("run_sd", f"must be 0 or more, got {sd}")
    for field, level in (("alpha", alpha), ("power", power)):
        value = _finite(level, field, "must be a number between 0 and 1")
        if not 0 < value < 1:
            raise DomainError(field, f"must be between 0 and 1 (exclusive), got {value}")
    for name, count in (("min_pairs", min_pairs), ("max_pairs", max_pairs)):
        _whole(count, 2, "pairs", f"{name} must be")
    if max_pairs < min_pairs:
        raise DomainError(
            "pairs", f"max_pairs ({max_pairs}) must be at least min_pairs ({min_pairs})"
        )
    return gain, sd


def _finite(value: object, field: str, rule: str) -> float:
    """`value` as a finite float, or DomainError(`field`, `rule`)."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise DomainError(field, f"{rule}, got {value!r}") from None
    if not math.isfinite(number):
        raise DomainError(field, f"{rule}, got {value!r}")
    return number


def _whole(value: object, least: int, field: str, subject: str = "must be") -> None:
    """DomainError(`field`) unless `value` is a whole number (not a bool) of at least `least`."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
        raise DomainError(field, f"{subject} a whole number of at least {least}, got {value!r}")


def _power(effect: float, pairs: int, alpha: float) -> float:
    """Power of the two-sided one-sample t-test on `pairs` differences at effect size `effect`."""
    test = TTestPower()
    found = float(test.power(effect_size=effect, nobs=pairs, alpha=alpha, alternative="two-sided"))
    if math.isfinite(found):
        return found
    # scipy's noncentral t gives nan far out in a tail (a large effect), and statsmodels passes
    # it on: then each tail alone, a nan upper tail being 1 and a nan lower tail 0 to within
    # 1e-14 (checked against integrating over the chi distribution).
    upper, lower = (
        float(test.power(effect_size=e, nobs=pairs, alpha=alpha / 2, alternative="larger"))
        for e in (effect, -effect)
    )
    return min(1.0, (1.0 if math.isnan(upper) else upper) + (0.0 if math.isnan(lower) else lower))


def _pairs_needed(effect: float, alpha: float, power: float) -> int | None:
    """The smallest pair count (at least 2) whose test reaches `power`, None above the most
    searched. Power grows with the count: double until enough, then bisect."""

    def enough(pairs: int) -> bool:
        return _power(effect, pairs, alpha) >= power

    if enough(2):
        return 2
    low, high = 2, 4  # enough(low) is False throughout
    while not enough(high):
        if high >= _MOST_PAIRS_SEARCHED:
            return None
        low, high = high, min(2 * high, _MOST_PAIRS_SEARCHED)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return high


def _percent_floor(fraction: float) -> str:
    """A power as whole percent, rounded down: 0.797 is "79 %", never a flattering "80 %"."""
    return "over 99 %" if fraction > 0.99 else f"{math.floor(fraction * 100 + 1e-9)} %"


def pair_orders(pairs: int, seed: int) -> list[tuple[str, str]]:
    """For each pair, the order its two runs go in: ("candidate", "baseline") or ("baseline",
    "candidate"). Balanced, as many pairs starting with each arm as `pairs` allows (an odd
    count's extra pair starts with a random arm), and the pairs' order a random permutation
    drawn by numpy's default_rng(`seed`): the same seed gives the same orders."""
    _whole(pairs, 1, "pairs")
    _whole(seed, 0, "seed")
    rng = np.random.default_rng(int(seed))
    forward, backward = ARMS, (ARMS[1], ARMS[0])
    orders = [forward, backward] * (int(pairs) // 2)
    if pairs % 2:
        orders.append(forward if rng.integers(2) == 0 else backward)
    return [orders[i] for i in rng.permutation(len(orders))]


@dataclass(frozen=True)
class PredictionAt:
    """What the regression model predicts for the candidate's mean: `mean`, the standard error
    of that mean (`se_mean`), the residual sd of one run (`residual_sd`) and the residual
    degrees of freedom (`df`)."""

    mean: float
    se_mean: float
    residual_sd: float
    df: int

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return _plain(asdict(self))  # type: ignore[return-value]


@dataclass(frozen=True)
class ModelCheck:
    """The model's prediction for the candidate against what its confirmation runs measured:
    `low`-`high` is the 95 % prediction interval of the mean of `runs` new runs,
    mean ± t(df) * sqrt(se_mean² + residual_sd² / runs); `held` says `observed`, the runs'
    mean, lies in it."""

    predicted: float
    low: float
    high: float
    observed: float
    runs: int
    held: bool

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return _plain(asdict(self))  # type: ignore[return-value]


def model_check(prediction: PredictionAt, observed: Sequence[float]) -> ModelCheck:
    """Whether the mean of the `observed` runs lies in the model's 95 % prediction interval for
    the mean of that many new runs. DomainError naming "prediction.<field>" for a prediction
    that is not finite, a negative standard error or sd, or fewer than 1 degree of freedom."""
    mean = _finite(prediction.mean, "prediction.mean", "must be a finite number")
    spreads = []
    for name in ("se_mean", "residual_sd"):
        value = _finite(getattr(prediction, name), f"prediction.{name}", "must be a finite number")
        if value < 0:
            raise DomainError(f"prediction.{name}", f"must be 0 or more, got {value}")
        spreads.append(value)
    df = prediction.df
    _whole(df, 1, "prediction.df")
    runs = len(observed)
    if runs < 1:
        raise DomainError("observed", "needs at least one run")
    quantile = float(scipy.stats.t.ppf(0.5 + CONFIDENCE / 2, int(df)))
    half = quantile * math.sqrt(spreads[0] ** 2 + spreads[1] ** 2 / runs)
    seen = float(np.mean(observed))
    low, high = mean - half, mean + half
    return ModelCheck(mean, low, high, seen, runs, bool(low <= seen <= high))


@dataclass(frozen=True)
class Confirmation:
    """What the confirmation pairs of `response` (optimized to `goal`) showed. `gain` is the
    mean of the pair differences signed so positive is better for the goal, `gain_low`-
    `gain_high` its 95 % t interval. `gain_pct` is the gain in percent of the baseline by
    `pct_method`: "log_ratio" when every value is positive (the t interval of log(candidate /
    baseline), as 100 * (exp(x) - 1), signed for the goal), "difference_over_baseline_mean"
    otherwise, "undefined" (nan) for a baseline mean of 0. `t`, `df`, `p_value` and
    `significant` (p below 0.05) are the two-sided paired t-test on the scale of that percent:
    the log ratios, or the signed differences (R's ``t.test(paired = TRUE)``). `sd_difference`
    is the sd of one pair's difference; `sentence` says it all for a change ticket."""

    response: str
    goal: str
    pairs: int
    candidate_mean: float
    baseline_mean: float
    gain: float
    gain_low: float
    gain_high: float
    gain_pct: float
    gain_pct_low: float
    gain_pct_high: float
    pct_method: str
    t: float
    df: int
    p_value: float
    significant: bool
    sd_difference: float
    model_check: ModelCheck | None
    unit: str
    sentence: str

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict (an undefined percentage is None)."""
        return _plain(asdict(self))  # type: ignore[return-value]


@dataclass(frozen=True)
class _MeanInterval:
    """The mean of a sample, its 95 % t interval and its sd."""

    mean: float
    low: float
    high: float
    sd: float


def _mean_interval(values: np.ndarray) -> _MeanInterval:
    mean, sd = float(values.mean()), float(values.std(ddof=1))
    quantile = float(scipy.stats.t.ppf(0.5 + CONFIDENCE / 2, len(values) - 1))
    half = quantile * sd / math.sqrt(len(values))
    return _MeanInterval(mean, mean - half, mean + half, sd)


def confirmation(
    candidate: Sequence[float],
    baseline: Sequence[float],
    *,
    response: str,
    goal: str,
    prediction: PredictionAt | None = None,
    unit: str = "",
) -> Confirmation:
    """The gain of `candidate` over `baseline`, pair i being (candidate[i], baseline[i]), with
    the model's `prediction` for the candidate checked when given; `unit` is written after
    response values in the sentence ("ms"). DomainError("pairs", ...) when the lengths differ
    or for fewer than 2 pairs (differences all equal give the test's limit: p 0, or 1 for none),
    DomainError("goal", ...) for a goal other than maximize/minimize, and a non-finite run
    refused naming it ("candidate.3": pair 4's candidate run)."""
    goal = check_goal(goal)
    if not isinstance(response, str) or not response:
        raise DomainError("response", "must name the response, e.g. 'tps'")
    ours, theirs = _checked_pairs(candidate, baseline)
    sign = 1.0 if goal == "maximize" else -1.0
    differences = sign * (ours - theirs)
    gain = _mean_interval(differences)
    pct, pct_low, pct_high, method = _relative(ours, theirs, sign, gain)
    # The test is on the scale of the interval the sentence gives: the log ratios when every
    # run is above 0 (throughput noise scales with the level), else the differences (as R).
    tested = sign * np.log(ours / theirs) if method == "log_ratio" else differences
    t, p, df = _paired_t(tested)
    check = None if prediction is None else model_check(prediction, ours.tolist())
    found = Confirmation(
        response=response, goal=goal, pairs=len(ours),
        candidate_mean=float(ours.mean()), baseline_mean=float(theirs.mean()),
        gain=gain.mean, gain_low=gain.low, gain_high=gain.high,
        gain_pct=pct, gain_pct_low=pct_low, gain_pct_high=pct_high, pct_method=method,
        t=float(t), df=df, p_value=p, significant=bool(p < 1.0 - CONFIDENCE),
        sd_difference=gain.sd, model_check=check, unit=unit, sentence="",
    )  # fmt: skip
    sentence = " ".join(filter(None, [_gain_sentence(found), _check_sentence(found)]))
    return replace(found, sentence=sentence)


def _paired_t(values: np.ndarray) -> tuple[float, float, int]:
    """Two-sided t-test of `values` against 0: t, p, df (all alike: the limit, p 0, or 1 at 0)."""
    mean, df = float(values.mean()), len(values) - 1
    se = float(values.std(ddof=1)) / math.sqrt(len(values))
    if se == 0 or se < 10 * np.finfo(float).eps * abs(mean):
        return (math.copysign(math.inf, mean) if mean else 0.0), float(mean == 0), df
    t = mean / se
    return t, float(2 * scipy.stats.t.sf(abs(t), df)), df


def _checked_pairs(
    candidate: Sequence[float], baseline: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """The two arms' runs as float arrays, one of each per pair, every run finite."""
    if len(candidate) != len(baseline):
        raise DomainError(
            "pairs",
            f"needs one baseline run per candidate run: {len(candidate)} candidate runs,"
            f" {len(baseline)} baseline runs",
        )
    if len(candidate) < 2:
        raise DomainError("pairs", f"needs at least 2 pairs, got {len(candidate)}")
    ours, theirs = (
        np.array([_finite(v, f"{arm}.{i}", f"pair {i + 1}'s {arm} run must be a finite number")
                  for i, v in enumerate(runs)])
        for arm, runs in zip(ARMS, (candidate, baseline), strict=True)
    )  # fmt: skip
    return ours, theirs


def _relative(
    ours: np.ndarray, theirs: np.ndarray, sign: float, gain: _MeanInterval
) -> tuple[float, float, float, str]:
    """The gain in percent of the baseline with its interval, and the method that gave it."""
    if bool(np.all(ours > 0)) and bool(np.all(theirs > 0)):
        ratio = _mean_interval(np.log(ours / theirs))
        ends = [sign * 100 * math.expm1(x) for x in (ratio.mean, ratio.low, ratio.high)]
        low, high = sorted(ends[1:])
        return ends[0], low, high, "log_ratio"
    scale = abs(float(theirs.mean()))
    if scale == 0:
        return math.nan, math.nan, math.nan, "undefined"
    pct = [100 * x / scale for x in (gain.mean, gain.low, gain.high)]
    return pct[0], pct[1], pct[2], "difference_over_baseline_mean"


def _gain_sentence(found: Confirmation) -> str:
    """The measured gain in one sentence, in percent (absolute when no percent is defined)."""
    in_pct = math.isfinite(found.gain_pct)
    if in_pct:
        middle, low, high = found.gain_pct, found.gain_pct_low, found.gain_pct_high
    else:
        middle, low, high = found.gain, found.gain_low, found.gain_high
    digits = _PCT_DIGITS if in_pct else _VALUE_DIGITS
    after = " %" if in_pct else (f" {found.unit}" if found.unit else "")
    lead = "The recommended configuration"
    if not found.significant:
        # The response's own change (candidate against baseline), not the goal-signed gain: a
        # latency "-0.8 %" went down.
        sign = 1.0 if found.goal == "maximize" else -1.0
        change = ("+" if sign * middle > 0 else "") + significant(sign * middle, digits)
        spread = _span(*sorted((sign * low, sign * high)), digits, after)
        return (
            f"{lead} did not differ clearly from today's:"
            f" {found.response} changed by {change}{after} (95 % CI {spread},"
            f" {found.pairs} interleaved pairs, p {_p_text(found.p_value)})."
        )
    better = found.gain > 0
    size, size_low, size_high = (middle, low, high) if better else (-middle, -high, -low)
    words = found.response.lower().replace("-", "_").split("_")
    if found.goal == "maximize" and _THROUGHPUT_WORDS.intersection(words):
        verb, how = "ran", "faster" if better else "slower"
    else:
        higher = better == (found.goal == "maximize")
        verb, how = "gave", f"{'higher' if higher else 'lower'} {found.response}"
    return (
        f"{lead} {verb} {significant(size, digits)}{after} {how} than today's"
        f" (95 % CI {_span(size_low, size_high, digits, after)}, {found.pairs} interleaved"
        f" pairs, paired t-test p {_p_text(found.p_value)})."
    )


def _check_sentence(found: Confirmation) -> str:
    """The model's prediction against the measured mean, or "" without a prediction."""
    check = found.model_check
    if check is None:
        return ""

    def value(number: float) -> str:
        return significant(number, _VALUE_DIGITS)

    after = f" {found.unit}" if found.unit else ""
    what = f"{found.response} {value(check.predicted)}{after}" if after else (
        f"{value(check.predicted)} {found.response}"
    )  # fmt: skip
    verdict = "the prediction held" if check.held else "outside the interval: the model is off here"
    return (
        f"The model predicted {what} (95 % interval for the mean of {check.runs} runs"
        f" {_span(check.low, check.high, _VALUE_DIGITS, after)}); it measured"
        f" {value(check.observed)}{after}: {verdict}."
    )


def _span(low: float, high: float, digits: int, after: str) -> str:
    """An interval as "8.1-16.7 %", or "-3.1 to 4.7 %" when an end is negative."""
    joint = " to " if low < 0 or high < 0 else "-"
    return f"{significant(low, digits)}{joint}{significant(high, digits)}{after}"


def _p_text(p: float) -> str:
    return f"< {_SMALLEST_P}" if p < _SMALLEST_P else f"= {significant(p, _P_DIGITS)}"
