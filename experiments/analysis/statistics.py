"""Statistics of a fitted OLS model: ANOVA (type II), fit statistics and lack of fit.

Pure functions over a statsmodels `RegressionResults`, its model matrix (intercept column first)
and the observations. Every result is a frozen dataclass whose `as_dict()` is JSON-friendly: an
undefined number (a perfect fit, no residual degrees of freedom) is None, never NaN. The
screening statistics of two-level designs are in `screening`, residual diagnostics and Box-Cox
in `diagnostics`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import scipy.optimize
import scipy.stats
from statsmodels.regression.linear_model import RegressionResults

from experiments.errors import DomainError
from experiments.numbers import finite_or_none

# A shared sum of squares below this share of the total is rounding: the design is orthogonal.
_SHARED_TOLERANCE = 1e-9


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator > 0 else None


def f_test(
    ms: float | None, ms_error: float | None, df: float, df_error: float
) -> tuple[float | None, float | None]:
    """F = ms / ms_error and its upper-tail p-value; (None, None) when undefined."""
    if ms is None or ms_error is None or ms_error <= 0 or df <= 0 or df_error <= 0:
        return None, None
    f = ms / ms_error
    return finite_or_none(f), finite_or_none(scipy.stats.f.sf(f, df, df_error))


@dataclass(frozen=True)
class AnovaRow:
    """One row of the ANOVA table.

    For a model term (`kind` "term") the sum of squares is of type II: the increase in the
    residual sum of squares when the term is dropped from the model that already lacks every
    term containing it (a term is contained in another of higher degree whose factors include
    all of its factors: A in A:B and in A^2). All columns of one term (the dummies of a
    categorical factor) are tested together, with as many degrees of freedom as columns. F and
    p test the term against the residual mean square. `percent` is the share of the total
    corrected sum of squares.

    Type II sums of squares are partial: on a non-orthogonal design (runs added where a model
    pointed, a design cut short) they need not add up to the model's sum of squares. The row
    "Shared" (`kind` "shared") then holds the difference, the part of the model's sum of
    squares no single term accounts for on its own because the terms are correlated in these
    runs (negative when the partial sums of squares add up to more), so the percents of the
    terms, "Shared" and "Residual" add up to 100. An orthogonal design has no such row. The
    rows "Residual" (`kind` "residual") and "Total" (`kind` "total", corrected for the mean)
    close the table; "Shared", "Residual" and "Total" have no F or p.
    """

    source: str
    kind: str
    df: int
    sum_sq: float
    mean_sq: float | None
    f: float | None
    p_value: float | None
    percent: float | None

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)


def term_label(column: str) -> str:
    """The term a model-matrix column belongs to: its name less every level in brackets.

    ``engine[myrocks]`` and ``engine[aria]`` belong to ``engine``; ``a:engine[x]`` to
    ``a:engine``; numeric columns (``a``, ``a:b``, ``a^2``) are terms of their own.
    """
    return re.sub(r"\[[^\]]*\]", "", column)


def _degree(label: str) -> int:
    """How many factors a term multiplies, counted with repetition: a 1, a:b 2, a^2 2."""
    degree = 0
    for part in label.split(":"):
        power = re.fullmatch(r".*\^(\d+)", part)
        degree += int(power.group(1)) if power else 1
    return degree


def residual_ss(x: np.ndarray, y: np.ndarray) -> tuple[float, int]:
    """Residual sum of squares of y on the columns of x, and the rank of x."""
    if x.shape[1] == 0:
        return float(y @ y), 0
    coef, _, rank, _ = np.linalg.lstsq(x, y, rcond=None)
    residual = y - x @ coef
    return float(residual @ residual), int(rank)


def anova(
    results: RegressionResults,
    x: np.ndarray,
    term_names: Sequence[str],
    term_factors: Sequence[set[int]],
    *,
    term_labels: Sequence[str] | None = None,
) -> list[AnovaRow]:
    """Type II ANOVA table of a fitted model, one row per term, then "Residual" and "Total".

    `x` is the model matrix the model was fitted on (intercept column first, which gets no
    row), `term_names` and `term_factors` name each column and give the factors it contains (as
    `ModelTerms.names` and `ModelTerms.factors`). Columns are grouped into terms by
    `term_labels` (one label per column) or else by `term_label` of their names, so the dummy
    columns of a categorical factor form one term.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(results.model.endog, dtype=float)
    labels = _term_labels(x, term_names, term_factors, term_labels)
    groups, factors = _term_groups(labels, term_factors)
    ss_resid = float(results.ssr)
    df_resid = round(results.df_resid)
    ms_resid = _ratio(ss_resid, df_resid)
    ss_total = float(np.sum((y - y.mean()) ** 2))
    rows = []
    for label, columns in groups.items():
        df, ss = _type_two(x, y, groups, factors, label, columns)
        ms = _ratio(ss, df)
        f, p = f_test(ms, ms_resid, df, df_resid)
        rows.append(
            AnovaRow(
                source=label, kind="term", df=df, sum_sq=ss, mean_sq=ms, f=f, p_value=p,
                percent=_ratio(100.0 * ss, ss_total),
            )
        )  # fmt: skip
    return rows + _closing_rows(rows, ss_resid, df_resid, ss_total, len(y))


def _term_labels(
    x: np.ndarray,
    term_names: Sequence[str],
    term_factors: Sequence[set[int]],
    term_labels: Sequence[str] | None,
) -> list[str]:
    """The term of every model-matrix column, checked to pair up with the names and factors."""
    if x.shape[1] != len(term_names) or len(term_names) != len(term_factors):
        raise DomainError("terms", "the model matrix, term names and factor sets must pair up")
    labels = list(term_labels) if term_labels is not None else [term_label(n) for n in term_names]
    if len(labels) != len(term_names):
        raise DomainError("terms", "give one term label per model-matrix column")
    return labels


def _closing_rows(
    terms: Sequence[AnovaRow], ss_resid: float, df_resid: int, ss_total: float, n: int
) -> list[AnovaRow]:
    """The rows after the terms' of `n` runs: "Shared" when the terms' type II sums of squares
    and the residual do not add up to the total (correlated terms), then "Residual" and
    "Total"."""
    rows = []
    shared = ss_total - ss_resid - sum(row.sum_sq for row in terms)
    if terms and abs(shared) > _SHARED_TOLERANCE * ss_total:
        rows.append(
            AnovaRow(
                source="Shared", kind="shared", df=0, sum_sq=shared, mean_sq=None, f=None,
                p_value=None, percent=_ratio(100.0 * shared, ss_total),
            )
        )  # fmt: skip
    rows.append(
        AnovaRow(
            source="Residual", kind="residual", df=df_resid, sum_sq=ss_resid,
            mean_sq=_ratio(ss_resid, df_resid), f=None, p_value=None,
            percent=_ratio(100.0 * ss_resid, ss_total),
        )
    )  # fmt: skip
    rows.append(
        AnovaRow(
            source="Total", kind="total", df=n - 1, sum_sq=ss_total,
            mean_sq=_ratio(ss_total, n - 1), f=None, p_value=None,
            percent=100.0 if ss_total > 0 else None,
        )
    )  # fmt: skip
    return rows


def _term_groups(
    labels: Sequence[str], term_factors: Sequence[set[int]]
) -> tuple[dict[str, list[int]], dict[str, set[int]]]:
    """The model-matrix columns of every term (the intercept has none) and its factors."""
    groups: dict[str, list[int]] = {}
    factors: dict[str, set[int]] = {}
    for j, (label, found) in enumerate(zip(labels, term_factors, strict=True)):
        if not found:
            continue  # the intercept
        groups.setdefault(label, []).append(j)
        factors.setdefault(label, set()).update(found)
    return groups, factors


def _type_two(
    x: np.ndarray,
    y: np.ndarray,
    groups: dict[str, list[int]],
    factors: dict[str, set[int]],
    label: str,
    columns: list[int],
) -> tuple[int, float]:
    """Degrees of freedom and type II sum of squares of one term: what it adds to the model
    without the terms that contain it."""
    containing = {
        other
        for other in groups
        if other != label and factors[label] <= factors[other] and _degree(label) < _degree(other)
    }
    kept = [j for j in range(x.shape[1]) if not any(j in groups[c] for c in containing)]
    without = [j for j in kept if j not in columns]
    ss_with, rank_with = residual_ss(x[:, kept], y)
    ss_without, rank_without = residual_ss(x[:, without], y)
    return rank_with - rank_without, max(ss_without - ss_with, 0.0)


@dataclass(frozen=True)
class FitStatistics:
    """How well the model fits and predicts.

    `predicted_r_squared` is 1 - PRESS / SS_total, with PRESS the sum of squared leave-one-out
    prediction errors e_i / (1 - h_ii); None when a run has leverage 1 (the model cannot
    predict it without itself). `aicc` is the small-sample corrected AIC of the Gaussian
    likelihood, counting the coefficients and the error variance as parameters.
    """

    n_observations: int
    n_parameters: int
    r_squared: float | None
    adj_r_squared: float | None
    predicted_r_squared: float | None
    press: float | None
    rmse: float | None
    residual_df: int
    aicc: float | None

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)


def leverages(x: np.ndarray) -> np.ndarray:
    """Diagonal of the hat matrix of model matrix `x` (full column rank)."""
    q, _ = np.linalg.qr(np.asarray(x, dtype=float), mode="reduced")
    return np.sum(q**2, axis=1)


def fit_statistics(results: RegressionResults, x: np.ndarray, y: Sequence[float]) -> FitStatistics:
    """R^2, adjusted and predicted R^2, PRESS, RMSE, residual df and AICc of a fitted model."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    n, p = x.shape
    residuals = y - x @ np.asarray(results.params, dtype=float)
    sse = float(residuals @ residuals)
    sst = float(np.sum((y - y.mean()) ** 2))
    df_resid = n - p
    h = leverages(x)
    press: float | None = None
    if np.all(h < 1.0 - 1e-10):
        press = float(np.sum((residuals / (1.0 - h)) ** 2))
    k = p + 1
    aicc: float | None = None
    if sse > 0 and n - k - 1 > 0:
        log_likelihood = -0.5 * n * (math.log(2 * math.pi) + math.log(sse / n) + 1.0)
        aicc = -2.0 * log_likelihood + 2.0 * k + 2.0 * k * (k + 1) / (n - k - 1)
    return FitStatistics(
        n_observations=n,
        n_parameters=p,
        r_squared=None if sst <= 0 else 1.0 - sse / sst,
        adj_r_squared=(
            None if sst <= 0 or df_resid <= 0 else 1.0 - (sse / df_resid) / (sst / (n - 1))
        ),
        predicted_r_squared=None if press is None or sst <= 0 else 1.0 - press / sst,
        press=press,
        rmse=None if df_resid <= 0 else math.sqrt(sse / df_resid),
        residual_df=df_resid,
        aicc=aicc,
    )


@dataclass(frozen=True)
class LackOfFit:
    """The residual split into pure error (between replicates of one configuration) and lack of
    fit; F = MS_lack_of_fit / MS_pure_error. F and p are None when pure error is zero."""

    lack_of_fit_ss: float
    lack_of_fit_df: int
    lack_of_fit_ms: float
    pure_error_ss: float
    pure_error_df: int
    pure_error_ms: float
    f: float | None
    p_value: float | None

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)


def lack_of_fit(
    configs: Sequence[Hashable], y: Sequence[float], results: RegressionResults
) -> LackOfFit | None:
    """Lack-of-fit test from replicated runs (runs whose configurations compare equal).

    `configs` are one hashable per run, e.g. a tuple of factor values. None when no
    configuration is replicated or the model leaves no degree of freedom for lack of fit.
    """
    y = np.asarray(y, dtype=float)
    if len(configs) != len(y):
        raise DomainError("response", f"{len(y)} values were given for {len(configs)} runs")
    groups: dict[Hashable, list[float]] = {}
    for config, value in zip(configs, y, strict=True):
        groups.setdefault(config, []).append(float(value))
    pe_df = len(y) - len(groups)
    df_resid = round(results.df_resid)
    lof_df = df_resid - pe_df
    if pe_df <= 0 or lof_df <= 0:
        return None
    pe_ss = float(sum(np.sum((np.array(v) - np.mean(v)) ** 2) for v in groups.values()))
    lof_ss = max(float(results.ssr) - pe_ss, 0.0)
    pe_ms, lof_ms = pe_ss / pe_df, lof_ss / lof_df
    f, p = f_test(lof_ms, pe_ms, lof_df, pe_df)
    return LackOfFit(
        lack_of_fit_ss=lof_ss,
        lack_of_fit_df=lof_df,
        lack_of_fit_ms=lof_ms,
        pure_error_ss=pe_ss,
        pure_error_df=pe_df,
        pure_error_ms=pe_ms,
        f=f,
        p_value=p,
    )
