"""Plain sentences about a fitted model, for a DBA to paste into a ticket.

Every number a sentence states comes from the analysis it explains: an effect is read off the
factor's profile (the prediction along the factor with the others at the optimum), so a peak
inside the range is named as a peak and not described by its two ends. Numbers are rounded to
three significant digits and written out in full (1490, not 1.49e+03); factor names are kept
as they were given (identifiers, never capitalised).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from experiments.numbers import format_value, significant

ALPHA = 0.05
# Below these the model is too weak to name an optimum with confidence.
MIN_R_SQUARED = 0.5
MIN_PREDICTED_R_SQUARED = 0.5
# From here on the model "predicts new runs well"; between the two, "fairly well".
GOOD_PREDICTED_R_SQUARED = 0.8
# A profile counts as a slope when no step goes against its overall direction by more than
# this share of its range (rounding noise of a flat stretch is not a peak).
_MONOTONE_TOLERANCE = 1e-9
_MOST_IMPORTANT = 3
_LEVELS_NAMED = 3


class _Profile(Protocol):
    settings: list[Any]
    predicted: list[float]
    best: Any


class _Effect(Protocol):
    factor: str
    in_model: bool
    settings_run: int
    p_value: float | None
    profile: _Profile


class _Term(Protocol):
    name: str
    p_value: float | None


@dataclass(frozen=True)
class Explanation:
    """What matters, how sure the model is, and whether its optimum can be trusted."""

    sentences: list[str]
    confident: bool

    def as_dict(self) -> dict[str, object]:
        """Plain dict."""
        return asdict(self)


@dataclass(frozen=True)
class Fit:
    """How well the model fits, as the confidence sentence needs it."""

    model: str
    r_squared: float | None
    predicted_r_squared: float | None
    residual_df: int
    lack_of_fit_p: float | None


@dataclass(frozen=True)
class NoiseRange:
    """How the robust optimum's prediction ranges across the noise factors' levels: the aim
    in words, the lowest and highest predictions with the scenario of each, and the scenario
    the factor profiles hold the noise factors at."""

    aim: str
    low: float
    low_at: Mapping[str, Any]
    high: float
    high_at: Mapping[str, Any]
    held: Mapping[str, Any]


def explain(
    *,
    response: str,
    goal: str,
    effects: Sequence[_Effect],
    terms: Sequence[_Term],
    fit: Fit,
    optimum: Mapping[str, Any],
    predicted: float,
    interval: tuple[float | None, float | None],
    on_edge: Mapping[str, str],
    blocks: BlockShifts | None = None,
    noise: NoiseRange | None = None,
) -> Explanation:
    """Rank the factors in words, name notable interactions, say how sure the model is.

    `on_edge` maps each factor whose optimum sits at an end of a range that could be widened
    to that end ("low" or "high"); `blocks` the block effects when the runs came in blocks;
    `noise` how the prediction ranges across the noise levels when `optimum` holds the control
    factors of an experiment with noise factors.
    A factor that never varied in the runs is said to be untested, first: the optimum holds
    at its one setting only, and the model is not confident of it.
    """
    fixed = {e.factor for e in effects if e.settings_run < 2}
    settings = {**(noise.held if noise is not None else {}), **optimum}
    sentences = [_never_varied(sorted(fixed, key=list(settings).index), settings)] if fixed else []
    sentences += _effect_sentences(
        response, goal, [e for e in effects if e.factor not in fixed], terms
    )
    if blocks is not None:
        sentences.insert(0, block_sentence(response, blocks))
    confident, confidence = _confidence(fit)
    confident = confident and not fixed
    sentences.append(confidence)
    if fit.lack_of_fit_p is not None and fit.lack_of_fit_p < ALPHA:
        sentences.append(_lack_of_fit(fit.model, fit.lack_of_fit_p))
    left_out = {e.factor for e in effects if not e.in_model}
    sentences.append(
        _optimum_sentence(response, optimum, predicted, interval, confident, fixed, left_out)
    )
    if noise is not None:
        sentences.append(noise_sentence(response, noise))
    if on_edge:
        sentences.append(_edge_sentence(optimum, on_edge))
    return Explanation(sentences=sentences, confident=confident)


def _optimum_sentence(
    response: str,
    optimum: Mapping[str, Any],
    predicted: float,
    interval: tuple[float | None, float | None],
    confident: bool,
    fixed: set[str],
    left_out: set[str],
) -> str:
    """The optimum's settings, each `fixed` or `left_out` factor's marked so, and its
    prediction with the prediction interval: "best predicted" only when the model is
    confident."""
    settings = ", ".join(
        f"{name} = {format_value(value)}"
        + (
            " (the only setting run)"
            if name in fixed
            else " (any setting: not in the model)"
            if name in left_out
            else ""
        )
        for name, value in optimum.items()
    )
    low, high = interval
    band = (
        f" (95 % prediction interval {significant(low)} to {significant(high)})"
        if low is not None and high is not None
        else ""
    )
    verb = "Best predicted" if confident else "The model's best guess"
    return f"{verb}: {settings}, {response} about {significant(predicted)}{band}."


def noise_sentence(response: str, noise: NoiseRange) -> str:
    """Which aim the robust configuration serves and how its prediction ranges across the
    noise levels."""
    names = ", ".join(noise.held)
    return (
        f"Those settings are chosen for {noise.aim} ({names}): across them {response} is"
        f" predicted from about {significant(noise.low)} ({_settings(noise.low_at)}) to about"
        f" {significant(noise.high)} ({_settings(noise.high_at)}); the factor effects above are"
        f" read at {_settings(noise.held)}."
    )


def _settings(config: Mapping[str, Any]) -> str:
    return ", ".join(f"{name} = {format_value(value)}" for name, value in config.items())


def _edge_sentence(optimum: Mapping[str, Any], on_edge: Mapping[str, str]) -> str:
    """Which factors' optimum sits at an end of a range that could be widened."""
    ends = ", ".join(
        f"{name} (at the {end} end, {format_value(optimum[name])})" for name, end in on_edge.items()
    )
    return (
        f"That optimum sits at the edge of the range of {ends}: the best may lie beyond it;"
        " widen the range in a follow-up experiment."
    )


@dataclass(frozen=True)
class BlockShifts:
    """How much each block differs from the first (the block coefficients), and the p-value
    of the block term."""

    reference: str
    shifts: dict[str, float]
    p_value: float | None


def block_sentence(response: str, blocks: BlockShifts) -> str:
    """The block effect in words: each block against the first, then what the rest means."""
    count = len(blocks.shifts) + 1
    parts = ", ".join(
        f"in block {label} about {significant(abs(shift))}"
        f" {'higher' if shift > 0 else 'lower'} than in block {blocks.reference}"
        for label, shift in blocks.shifts.items()
    )
    return (
        f"The runs came in {count} blocks: {response} was {parts} ({_p(blocks.p_value)}). That"
        " difference is taken out of the factor effects, and predictions are for the average"
        " block."
    )


def _never_varied(names: Sequence[str], optimum: Mapping[str, Any]) -> str:
    """The factors every run held at one setting: untested, whatever the fit says."""
    held = ", ".join(f"{name} = {format_value(optimum[name])}" for name in names)
    which = "that factor matters" if len(names) == 1 else "those factors matter"
    return (
        f"Every run so far had {held}: the runs cannot tell how {which}, so the optimum below"
        f" holds there only. Run other settings of {', '.join(names)} before choosing one."
    )


def _effect_sentences(
    response: str, goal: str, effects: Sequence[_Effect], terms: Sequence[_Term]
) -> list[str]:
    """The most important significant factors, the quiet ones, the interactions."""
    sentences = []
    significant_effects = [e for e in effects if e.p_value is not None and e.p_value < ALPHA]
    for rank, effect in enumerate(significant_effects[:_MOST_IMPORTANT]):
        lead = (
            f"The factor that matters most is {effect.factor}"
            if rank == 0
            else f"Next comes {effect.factor}"
        )
        sentences.append(
            f"{lead}: {profile_phrase(response, goal, effect.factor, effect.profile)}, with the"
            f" other factors at the predicted optimum ({_p(effect.p_value)})."
        )
    quiet = [e.factor for e in effects if e not in significant_effects]
    if quiet:
        sentences.append(
            f"No clear effect of {', '.join(quiet)} at the {ALPHA:g} level in this experiment."
        )
    for term in terms:
        if ":" in term.name and term.p_value is not None and term.p_value < ALPHA:
            a, b = term.name.split(":", 1)
            sentences.append(
                f"{a} and {b} interact ({_p(term.p_value)}): the effect of one depends on the "
                "setting of the other."
            )
    return sentences


def profile_phrase(response: str, goal: str, factor: str, profile: _Profile) -> str:
    """What a factor does to the response along its profile, in numbers read off it.

    A slope is told by its ends ("going from 1 to 9 raises tps by about 245"); a best setting
    inside the range by where it is and how much lower (higher, when minimizing) each end is;
    a categorical factor by its best level and the others.
    """
    settings, values = profile.settings, profile.predicted
    best = settings.index(profile.best)
    top = values[best]
    most, less = ("highest", "lower") if goal == "maximize" else ("lowest", "higher")
    if not _is_numeric(settings):
        others = sorted(
            (i for i in range(len(settings)) if i != best),
            key=lambda i: abs(top - values[i]),
            reverse=True,
        )[:_LEVELS_NAMED]
        rest = ", ".join(
            f"about {significant(abs(top - values[i]))} {less} with {format_value(settings[i])}"
            for i in others
        )
        return (
            f"{response} is {most} with {factor} = {format_value(profile.best)}"
            f" (about {significant(top)}); {rest}"
        )
    first, last = values[0], values[-1]
    if _monotone(values):
        change = last - first
        verb = "raises" if change > 0 else "lowers"
        return (
            f"going from {format_value(settings[0])} to {format_value(settings[-1])} {verb}"
            f" {response} by about {significant(abs(change))}"
        )
    if 0 < best < len(values) - 1:
        return (
            f"{response} is {most} near {factor} = {format_value(profile.best)}"
            f" (about {significant(top)}); it is about {significant(abs(top - first))} {less}"
            f" at {format_value(settings[0])} and about {significant(abs(top - last))} {less}"
            f" at {format_value(settings[-1])}"
        )
    # Best at one end, but the curve turns inside: its far end is not its worst point.
    other = len(values) - 1 if best == 0 else 0
    worst = max(range(len(values)), key=lambda i: abs(top - values[i]))
    return (
        f"{response} is {most} at {factor} = {format_value(profile.best)}"
        f" (about {significant(top)}); it is about {significant(abs(top - values[worst]))}"
        f" {less} near {format_value(settings[worst])} and about"
        f" {significant(abs(top - values[other]))} {less} at {format_value(settings[other])}"
    )


def _is_numeric(settings: Sequence[Any]) -> bool:
    return all(isinstance(s, int | float) and not isinstance(s, bool) for s in settings)


def _monotone(values: Sequence[float]) -> bool:
    """Whether the profile only rises or only falls (up to rounding noise)."""
    span = max(values) - min(values)
    tolerance = _MONOTONE_TOLERANCE * max(span, 1.0)
    steps = [b - a for a, b in itertools.pairwise(values)]
    return all(s >= -tolerance for s in steps) or all(s <= tolerance for s in steps)


def _confidence(fit: Fit) -> tuple[bool, str]:
    """Whether the model can be trusted to place the optimum, and the sentence that says so."""
    if fit.residual_df <= 0:
        return False, (
            "The model has as many terms as runs: nothing is left to measure noise, so its "
            "optimum is a guess. Add runs before acting on it."
        )
    r_squared, predicted = fit.r_squared, fit.predicted_r_squared
    if r_squared is None or r_squared < MIN_R_SQUARED:
        return False, (
            f"The model explains only {_share(r_squared)} of the variation: the runs are noisy "
            "or the factors miss what drives the response. Do not trust the optimum yet."
        )
    if predicted is not None and predicted < MIN_PREDICTED_R_SQUARED:
        return False, (
            f"The model fits these runs ({_share(r_squared)} of the variation) but predicts new "
            f"ones poorly (predicted R² {predicted:.2f}): confirm the optimum with runs."
        )
    if predicted is None:
        return True, f"The model explains {_share(r_squared)} of the variation."
    how = "well" if predicted >= GOOD_PREDICTED_R_SQUARED else "fairly well"
    return True, (
        f"The model explains {_share(r_squared)} of the variation and predicts new runs {how}"
        f" (predicted R² {predicted:.2f})."
    )


def _lack_of_fit(model: str, p_value: float) -> str:
    """What to try when replicated runs show the model's shape is wrong: a higher order only
    when the model has none yet."""
    if model in ("linear", "interaction"):
        remedy = "try the quadratic model (with runs at three or more levels of each factor)"
    else:
        remedy = (
            "try a transform of the response (see the Box-Cox suggestion), a log2 scale on a"
            " factor that spans orders of magnitude, or check the runs for an outlier"
        )
    return (
        f"Replicated runs show lack of fit ({_p(p_value)}): the model's shape misses something;"
        f" {remedy}."
    )


def _p(p_value: float | None) -> str:
    if p_value is None:
        return "p not defined"
    return "p < 0.001" if p_value < 0.001 else f"p = {p_value:.2g}"


def _share(value: float | None) -> str:
    return "an undefined share" if value is None else f"{value:.0%}"
