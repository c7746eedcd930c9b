"""Plain sentences about a fitted model, for a DBA to paste into a ticket."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

ALPHA = 0.05
# Below these the model is too weak to name an optimum with confidence.
MIN_R_SQUARED = 0.5
MIN_PREDICTED_R_SQUARED = 0.3


class _Effect(Protocol):
    factor: str
    change_at_optimum: float
    p_value: float | None
    low: Any
    high: Any


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


def explain(
    *,
    response: str,
    effects: Sequence[_Effect],
    terms: Sequence[_Term],
    r_squared: float | None,
    predicted_r_squared: float | None,
    residual_df: int,
    lack_of_fit_p: float | None,
    optimum: Mapping[str, Any],
    predicted: float,
    interval: tuple[float | None, float | None],
    on_edge: Sequence[str],
) -> Explanation:
    """Rank the factors in words, name notable interactions, say how sure the model is."""
    sentences = _effect_sentences(response, effects, terms)
    confident, confidence = _confidence(r_squared, predicted_r_squared, residual_df)
    sentences.append(confidence)
    if lack_of_fit_p is not None and lack_of_fit_p < ALPHA:
        sentences.append(
            f"Replicated runs show lack of fit ({_p(lack_of_fit_p)}): the model's shape misses "
            "something; try the quadratic model or a transform of the response."
        )
    settings = ", ".join(f"{name} = {_value(value)}" for name, value in optimum.items())
    low, high = interval
    band = f" (95 % prediction interval {low:.3g} to {high:.3g})" if low is not None else ""
    verb = "Best predicted" if confident else "The model's best guess"
    sentences.append(f"{verb}: {settings}, {response} about {predicted:.3g}{band}.")
    if on_edge:
        sentences.append(
            f"That optimum sits at the edge of the range of {', '.join(on_edge)}: the best may "
            "lie beyond it; widen the range in a follow-up experiment."
        )
    return Explanation(sentences=sentences, confident=confident)


def _effect_sentences(
    response: str, effects: Sequence[_Effect], terms: Sequence[_Term]
) -> list[str]:
    """The three most important significant factors, the quiet ones, the interactions."""
    sentences = []
    significant = [e for e in effects if e.p_value is not None and e.p_value < ALPHA]
    for rank, effect in enumerate(significant[:3]):
        lead = f"{_label(effect.factor)} matters most" if rank == 0 else f"Next, {effect.factor}"
        direction = "raises" if effect.change_at_optimum > 0 else "lowers"
        sentences.append(
            f"{lead}: going from {_value(effect.low)} to {_value(effect.high)} {direction} "
            f"{response} by about {abs(effect.change_at_optimum):.3g} at the best settings of "
            f"the others ({_p(effect.p_value)})."
        )
    quiet = [e.factor for e in effects if e not in significant]
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


def _confidence(
    r_squared: float | None, predicted_r_squared: float | None, residual_df: int
) -> tuple[bool, str]:
    """Whether the model can be trusted to place the optimum, and the sentence that says so."""
    if residual_df <= 0:
        return False, (
            "The model has as many terms as runs: nothing is left to measure noise, so its "
            "optimum is a guess. Add runs before acting on it."
        )
    if r_squared is None or r_squared < MIN_R_SQUARED:
        return False, (
            f"The model explains only {_share(r_squared)} of the variation: the runs are noisy "
            "or the factors miss what drives the response. Do not trust the optimum yet."
        )
    if predicted_r_squared is not None and predicted_r_squared < MIN_PREDICTED_R_SQUARED:
        return False, (
            f"The model fits these runs ({_share(r_squared)} of the variation) but predicts new "
            f"ones poorly (predicted R² {predicted_r_squared:.2f}): confirm the optimum with runs."
        )
    predicts = (
        f" and predicts new runs well (predicted R² {predicted_r_squared:.2f})."
        if predicted_r_squared is not None
        else "."
    )
    return True, f"The model explains {_share(r_squared)} of the variation{predicts}"


def _label(name: str) -> str:
    return name[:1].upper() + name[1:]


def _p(p_value: float | None) -> str:
    if p_value is None:
        return "p not defined"
    return "p < 0.001" if p_value < 0.001 else f"p = {p_value:.2g}"


def _share(value: float | None) -> str:
    return "an undefined share" if value is None else f"{value:.0%}"


def _value(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
