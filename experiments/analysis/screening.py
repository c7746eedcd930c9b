"""Screening statistics of a two-level design: the curvature test with centre points, and
Lenth's method with its half-normal plot for an unreplicated design.

Results are frozen dataclasses whose `as_dict()` is JSON-friendly (None, never NaN).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import scipy.optimize
import scipy.stats

from experiments.analysis.statistics import f_test
from experiments.errors import DomainError


@dataclass(frozen=True)
class Curvature:
    """Single-degree-of-freedom curvature test of a two-level design with centre points.

    SS_curvature = nF nC (mean_F - mean_C)^2 / (nF + nC), tested against the pure error of
    the centre points (nC - 1 df). `difference` is mean_F - mean_C: it estimates the sum of
    the pure quadratic coefficients with the opposite sign.
    """

    factorial_mean: float
    centre_mean: float
    difference: float
    sum_sq: float
    pure_error_ms: float
    pure_error_df: int
    f: float | None
    p_value: float | None

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)


def curvature(y_factorial: Sequence[float], y_centre: Sequence[float]) -> Curvature | None:
    """Curvature test from the factorial runs and the centre runs (Montgomery, DAE, 6.8).

    None without at least one factorial run and two centre runs.
    """
    factorial = np.asarray(y_factorial, dtype=float)
    centre = np.asarray(y_centre, dtype=float)
    n_f, n_c = len(factorial), len(centre)
    if n_f < 1 or n_c < 2:
        return None
    difference = float(factorial.mean() - centre.mean())
    ss = n_f * n_c * difference**2 / (n_f + n_c)
    pe_ms = float(np.var(centre, ddof=1))
    f, p = f_test(ss, pe_ms, 1, n_c - 1)
    return Curvature(
        factorial_mean=float(factorial.mean()),
        centre_mean=float(centre.mean()),
        difference=difference,
        sum_sq=ss,
        pure_error_ms=pe_ms,
        pure_error_df=n_c - 1,
        f=f,
        p_value=p,
    )


@dataclass(frozen=True)
class HalfNormalPoint:
    """One point of the half-normal plot: |effect| against its half-normal quantile."""

    name: str
    effect: float
    abs_effect: float
    quantile: float


@dataclass(frozen=True)
class Lenth:
    """Lenth's (1989) analysis of the effects of an unreplicated two-level design.

    s0 = 1.5 median |c|; PSE = 1.5 median of the |c| below 2.5 s0; with d = m / 3 degrees of
    freedom, ME = t(1 - alpha/2, d) PSE and SME = t(gamma, d) PSE with
    gamma = (1 + (1 - alpha)^(1/m)) / 2. `active` are the effects beyond ME, largest first;
    `simultaneously_active` those beyond SME. `half_normal` is sorted by |effect|, quantiles
    Phi^-1(0.5 + 0.5 (i - 0.5) / m).
    """

    pse: float
    margin_of_error: float
    simultaneous_margin_of_error: float
    df: float
    alpha: float
    active: list[str]
    simultaneously_active: list[str]
    half_normal: list[HalfNormalPoint]

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)


def lenth(effects: Mapping[str, float], *, alpha: float = 0.05) -> Lenth:
    """Lenth's pseudo standard error, margins of error, active effects and half-normal plot.

    `effects` are the effects (twice the coded coefficients) of the distinct contrasts, at
    least three; aliased terms must be given once.
    """
    if len(effects) < 3:
        raise DomainError("effects", "Lenth's method needs at least 3 effects")
    if not 0 < alpha < 1:
        raise DomainError("alpha", "must lie between 0 and 1")
    names = list(effects)
    values = np.array([float(effects[n]) for n in names])
    if not np.all(np.isfinite(values)):
        raise DomainError("effects", "every effect must be a finite number")
    magnitudes = np.abs(values)
    m = len(values)
    s0 = 1.5 * float(np.median(magnitudes))
    trimmed = magnitudes[magnitudes < 2.5 * s0]
    pse = 1.5 * float(np.median(trimmed)) if len(trimmed) else 0.0
    d = m / 3.0
    me = float(scipy.stats.t.ppf(1 - alpha / 2, d)) * pse
    gamma = (1 + (1 - alpha) ** (1 / m)) / 2
    sme = float(scipy.stats.t.ppf(gamma, d)) * pse
    by_size = sorted(range(m), key=lambda i: -magnitudes[i])
    ascending = list(reversed(by_size))
    quantiles = scipy.stats.norm.ppf(0.5 + 0.5 * (np.arange(1, m + 1) - 0.5) / m)
    return Lenth(
        pse=pse,
        margin_of_error=me,
        simultaneous_margin_of_error=sme,
        df=d,
        alpha=alpha,
        active=[names[i] for i in by_size if magnitudes[i] > me],
        simultaneously_active=[names[i] for i in by_size if magnitudes[i] > sme],
        half_normal=[
            HalfNormalPoint(
                name=names[i],
                effect=float(values[i]),
                abs_effect=float(magnitudes[i]),
                quantile=float(q),
            )
            for i, q in zip(ascending, quantiles, strict=True)
        ],
    )
