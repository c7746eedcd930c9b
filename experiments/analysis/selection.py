"""Term selection for the "auto" model: hierarchical backward elimination by AICc or p-value."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import statsmodels.api as sm

from experiments.errors import DomainError
from experiments.numbers import finite_or_none
from experiments.terms import BLOCK

__all__ = ["ALPHA", "CRITERIA", "Selection", "SelectionStep", "select_terms", "separable_terms"]

# Significance level of backward elimination by p-value.
ALPHA = 0.05
CRITERIA: tuple[str, ...] = ("aicc", "p")
# A column the runs cannot separate from the earlier ones: what is left of it after projecting
# it onto them is below this share of its length (floating-point noise, not information).
_SEPARABLE = 1e-8


@dataclass(frozen=True)
class SelectionStep:
    """One step of backward elimination: the term dropped (None for the starting model) and the
    criterion value: AICc of the model after the step, or the p-value of the dropped term."""

    dropped: str | None
    value: float | None


@dataclass(frozen=True)
class Selection:
    """The terms kept by hierarchical backward elimination, and how it went.

    `start` is the model order elimination started from and `aliased` the terms of that order
    the runs cannot separate from others, left out before it started; `kept` indexes the
    columns it started from (the intercept, index 0, always stays); `alpha` is the significance
    level for criterion "p", None for "aicc".
    """

    criterion: str
    alpha: float | None
    kept: list[int]
    kept_names: list[str]
    dropped: list[str]
    path: list[SelectionStep]
    start: str = "quadratic"
    aliased: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)


def select_terms(
    x: np.ndarray,
    y: np.ndarray,
    term_names: Sequence[str],
    term_factors: Sequence[set[int] | frozenset[int]],
    *,
    criterion: str = "aicc",
) -> Selection:
    """Hierarchical backward elimination of model terms.

    `x` is the full model matrix (a column per term, the intercept first), `term_factors` the
    factors each term contains (as `ModelTerms.factors`). A term may be dropped only while no
    kept term of higher order contains it (a main effect stays while its square or an
    interaction with it stays); the intercept always stays.

    criterion "aicc": at each step drop the term whose removal gives the lowest AICc, while
    that lowers it. AICc = -2 log L + 2p + 2p(p+1)/(n-p-1), with the Gaussian log-likelihood at
    the least-squares fit and p = coefficients + 1 (the error variance), Hurvich & Tsai (1989);
    it is infinite when n <= p + 1. criterion "p": drop the removable term with the largest
    t-test p-value while it exceeds ALPHA (0.05).
    """
    if criterion not in CRITERIA:
        raise DomainError("criterion", f"must be one of {', '.join(CRITERIA)}")
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float).reshape(-1)
    if x.ndim != 2 or x.shape != (len(y), len(term_names)) or len(term_factors) != x.shape[1]:
        raise DomainError("terms", "x must have one row per value and one column per term")
    orders = [_order(name, set(fs)) for name, fs in zip(term_names, term_factors, strict=True)]
    kept = list(range(x.shape[1]))
    path: list[SelectionStep] = []
    dropped: list[str] = []
    current = _aicc(x[:, kept], y) if criterion == "aicc" else math.nan
    path.append(SelectionStep(None, finite_or_none(current)))
    while True:
        removable = _removable(kept, orders, term_factors)
        step = _next_drop(criterion, x, y, kept, removable, current) if removable else None
        if step is None:
            break
        best, value, current = step
        kept.remove(best)
        dropped.append(term_names[best])
        path.append(SelectionStep(term_names[best], finite_or_none(value)))
    return Selection(
        criterion=criterion,
        alpha=ALPHA if criterion == "p" else None,
        kept=kept,
        kept_names=[term_names[j] for j in kept],
        dropped=dropped,
        path=path,
    )


def _removable(
    kept: list[int], orders: list[int], term_factors: Sequence[set[int] | frozenset[int]]
) -> list[int]:
    """The kept terms that no kept term of higher order contains (never the intercept)."""
    return [
        j
        for j in kept
        if orders[j] > 0
        and not any(
            orders[i] > orders[j] and set(term_factors[j]) <= set(term_factors[i]) for i in kept
        )
    ]


def _next_drop(
    criterion: str,
    x: np.ndarray,
    y: np.ndarray,
    kept: list[int],
    removable: list[int],
    current: float,
) -> tuple[int, float, float] | None:
    """(the term to drop, its criterion value, the model's AICc after it) or None to stop:
    the lowest AICc while it falls, or the largest p-value while it exceeds ALPHA."""
    if criterion == "aicc":
        scores = {j: _aicc(x[:, [i for i in kept if i != j]], y) for j in removable}
        best = min(removable, key=lambda j: scores[j])
        return (best, scores[best], scores[best]) if scores[best] < current else None
    p_values = _p_values(x[:, kept], y)
    p_of = {j: p_values[kept.index(j)] for j in removable}
    best = max(removable, key=lambda j: -1.0 if math.isnan(p_of[j]) else p_of[j])
    return (best, p_of[best], current) if p_of[best] > ALPHA else None


def _order(name: str, factors: set[int]) -> int:
    """0 for the intercept and block dummies (never dropped), 1 for a main effect, 2 for an
    interaction or a square."""
    if not factors or factors == {BLOCK}:
        return 0
    return 2 if len(factors) == 2 or name.endswith("^2") else 1


def _aicc(x: np.ndarray, y: np.ndarray) -> float:
    n, columns = x.shape
    fitted = x @ np.linalg.lstsq(x, y, rcond=None)[0]
    rss = float(np.sum((y - fitted) ** 2))
    p = columns + 1
    if n <= p + 1:
        return math.inf
    if rss <= 0.0:
        return -math.inf
    log_likelihood = -n / 2.0 * (math.log(2.0 * math.pi * rss / n) + 1.0)
    return -2.0 * log_likelihood + 2.0 * p + 2.0 * p * (p + 1) / (n - p - 1)


def _p_values(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(sm.OLS(y, x).fit().pvalues, dtype=float)


def separable_terms(
    x: np.ndarray, term_names: Sequence[str], term_factors: Sequence[set[int] | frozenset[int]]
) -> tuple[list[int], list[str]]:
    """The columns the runs can estimate together, and the names of those they cannot.

    Columns are taken in model order (intercept, main effects, then interactions and squares),
    each kept when it is not a linear combination of those kept before it; a higher-order term
    of a factor whose main effect could not be kept is left out too (hierarchy).
    """
    x = np.asarray(x, dtype=float)
    orders = [_order(name, set(fs)) for name, fs in zip(term_names, term_factors, strict=True)]
    kept: list[int] = []
    lost_factors: set[int] = set()
    for j in sorted(range(x.shape[1]), key=lambda j: orders[j]):
        column = x[:, j]
        if orders[j] > 1 and set(term_factors[j]) & lost_factors:
            continue
        rest = column
        if kept:
            basis = x[:, kept]
            rest = column - basis @ np.linalg.lstsq(basis, column, rcond=None)[0]
        if np.linalg.norm(rest) > _SEPARABLE * max(np.linalg.norm(column), 1.0):
            kept.append(j)
        elif orders[j] == 1:
            lost_factors |= set(term_factors[j])
    kept.sort()
    return kept, [term_names[j] for j in range(x.shape[1]) if j not in kept]
