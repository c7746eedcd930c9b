"""Statistics of a fitted OLS model: ANOVA, fit statistics, lack of fit, curvature, Lenth's method,
residual diagnostics and the Box-Cox transformation.

Pure functions over a statsmodels `RegressionResults`, its model matrix (intercept column first)
and the observations. Every result is a frozen dataclass whose `as_dict()` is JSON-friendly: an
undefined number (a perfect fit, no residual degrees of freedom) is None, never NaN.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import scipy.optimize
import scipy.stats
from statsmodels.regression.linear_model import RegressionResults
from statsmodels.stats.outliers_influence import OLSInfluence

from experiments.errors import DomainError
from experiments.numbers import finite_or_none

__all__ = [
    "BOX_COX_CONFIDENCE",
    "AnovaRow",
    "BoxCox",
    "Curvature",
    "Diagnostics",
    "FitStatistics",
    "HalfNormalPoint",
    "LackOfFit",
    "Lenth",
    "RunDiagnostic",
    "Standout",
    "anova",
    "box_cox",
    "curvature",
    "diagnostics",
    "fit_statistics",
    "lack_of_fit",
    "lenth",
    "leverages",
    "term_label",
]

BOX_COX_CONFIDENCE = 0.95
# Box-Cox lambda is searched in this range; the usual transformations all lie well inside it.
BOX_COX_RANGE = (-5.0, 5.0)
# Named transformations suggested by Box-Cox, by their lambda.
_BOX_COX_NAMES = {
    -1.0: "inverse",
    -0.5: "inverse square root",
    0.0: "log",
    0.5: "square root",
    2.0: "square",
}
# Standout rules of the residual diagnostics.
STUDENTIZED_LIMIT = 3.0
COOKS_LIMIT = 1.0


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator > 0 else None


def _f_test(
    ms: float | None, ms_error: float | None, df: float, df_error: float
) -> tuple[float | None, float | None]:
    """F = ms / ms_error and its upper-tail p-value; (None, None) when undefined."""
    if ms is None or ms_error is None or ms_error <= 0 or df <= 0 or df_error <= 0:
        return None, None
    f = ms / ms_error
    return finite_or_none(f), finite_or_none(scipy.stats.f.sf(f, df, df_error))


# --- ANOVA ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnovaRow:
    """One row of the ANOVA table.

    For a model term (`kind` "term") the sum of squares is of type II: the increase in the
    residual sum of squares when the term is dropped from the model that already lacks every
    term containing it (a term is contained in another of higher degree whose factors include
    all of its factors: A in A:B and in A^2). All columns of one term (the dummies of a
    categorical factor) are tested together, with as many degrees of freedom as columns. F and
    p test the term against the residual mean square. `percent` is the share of the total
    corrected sum of squares. The rows "Residual" (`kind` "residual") and "Total" (`kind`
    "total", corrected for the mean) close the table; they have no F or p.
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


def _ssr(x: np.ndarray, y: np.ndarray) -> tuple[float, int]:
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
    if x.shape[1] != len(term_names) or len(term_names) != len(term_factors):
        raise DomainError("terms", "the model matrix, term names and factor sets must pair up")
    labels = list(term_labels) if term_labels is not None else [term_label(n) for n in term_names]
    if len(labels) != len(term_names):
        raise DomainError("terms", "give one term label per model-matrix column")
    groups, factors = _term_groups(labels, term_factors)
    ss_resid = float(results.ssr)
    df_resid = round(results.df_resid)
    ms_resid = _ratio(ss_resid, df_resid)
    ss_total = float(np.sum((y - y.mean()) ** 2))
    rows = []
    for label, columns in groups.items():
        df, ss = _type_two(x, y, groups, factors, label, columns)
        ms = _ratio(ss, df)
        f, p = _f_test(ms, ms_resid, df, df_resid)
        rows.append(
            AnovaRow(
                source=label, kind="term", df=df, sum_sq=ss, mean_sq=ms, f=f, p_value=p,
                percent=_ratio(100.0 * ss, ss_total),
            )
        )  # fmt: skip
    rows.append(
        AnovaRow(
            source="Residual", kind="residual", df=df_resid, sum_sq=ss_resid, mean_sq=ms_resid,
            f=None, p_value=None, percent=_ratio(100.0 * ss_resid, ss_total),
        )
    )  # fmt: skip
    rows.append(
        AnovaRow(
            source="Total", kind="total", df=len(y) - 1, sum_sq=ss_total,
            mean_sq=_ratio(ss_total, len(y) - 1), f=None, p_value=None,
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
    ss_with, rank_with = _ssr(x[:, kept], y)
    ss_without, rank_without = _ssr(x[:, without], y)
    return rank_with - rank_without, max(ss_without - ss_with, 0.0)


# --- Fit statistics ---------------------------------------------------------------------------


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


# --- Lack of fit and curvature ----------------------------------------------------------------


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
    f, p = _f_test(lof_ms, pe_ms, lof_df, pe_df)
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
    f, p = _f_test(ss, pe_ms, 1, n_c - 1)
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


# --- Lenth's method ---------------------------------------------------------------------------


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


# --- Residual diagnostics ---------------------------------------------------------------------


@dataclass(frozen=True)
class RunDiagnostic:
    """Residual diagnostics of one run; None where undefined (a perfect fit, leverage 1)."""

    label: str
    fitted: float
    residual: float
    studentized_residual: float | None
    leverage: float
    cooks_distance: float | None


@dataclass(frozen=True)
class Standout:
    """A run that stands out, with the reasons."""

    label: str
    reasons: list[str]


@dataclass(frozen=True)
class Diagnostics:
    """Per-run diagnostics and the runs that stand out.

    A run stands out when its externally studentized residual exceeds 3 in magnitude (a
    possible outlier), its leverage exceeds 2p/n (far from the other runs in factor space), or
    its Cook's distance exceeds 1 (removing it moves the fit a lot; Montgomery's rule).
    """

    runs: list[RunDiagnostic]
    standouts: list[Standout]
    leverage_limit: float
    studentized_limit: float
    cooks_limit: float

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)


def diagnostics(results: RegressionResults, run_labels: Sequence[str]) -> Diagnostics:
    """Externally studentized residuals, leverage and Cook's distance per run, and standouts."""
    n = int(results.nobs)
    if len(run_labels) != n:
        raise DomainError("runs", f"{len(run_labels)} labels were given for {n} runs")
    p = int(np.asarray(results.model.exog).shape[1])
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        influence = OLSInfluence(results)
        h = np.asarray(influence.hat_matrix_diag, dtype=float)
        if results.df_resid > 1:
            studentized = np.asarray(influence.resid_studentized_external, dtype=float)
        else:
            studentized = np.full(n, np.nan)
        if results.df_resid > 0:
            cooks = np.asarray(influence.cooks_distance[0], dtype=float)
        else:
            cooks = np.full(n, np.nan)
    residuals = np.asarray(results.resid, dtype=float)
    fitted = np.asarray(results.fittedvalues, dtype=float)
    leverage_limit = 2.0 * p / n
    runs, standouts = [], []
    for i, label in enumerate(run_labels):
        run = RunDiagnostic(
            label=str(label),
            fitted=float(fitted[i]),
            residual=float(residuals[i]),
            studentized_residual=None if h[i] >= 1 - 1e-10 else finite_or_none(studentized[i]),
            leverage=float(h[i]),
            cooks_distance=None if h[i] >= 1 - 1e-10 else finite_or_none(cooks[i]),
        )
        runs.append(run)
        reasons = []
        t = run.studentized_residual
        if t is not None and abs(t) > STUDENTIZED_LIMIT:
            reasons.append(f"studentized residual {t:+.2f} beyond ±{STUDENTIZED_LIMIT:g}")
        if run.leverage > leverage_limit + 1e-12:
            reasons.append(f"leverage {run.leverage:.2f} above 2p/n = {leverage_limit:.2f}")
        if run.cooks_distance is not None and run.cooks_distance > COOKS_LIMIT:
            reasons.append(f"Cook's distance {run.cooks_distance:.2f} above {COOKS_LIMIT:g}")
        if reasons:
            standouts.append(Standout(label=run.label, reasons=reasons))
    return Diagnostics(
        runs=runs,
        standouts=standouts,
        leverage_limit=leverage_limit,
        studentized_limit=STUDENTIZED_LIMIT,
        cooks_limit=COOKS_LIMIT,
    )


# --- Box-Cox ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BoxCox:
    """The Box-Cox power lambda that maximizes the profile log-likelihood of the linear model.

    `ci_low`/`ci_high` bound the 95 % likelihood interval {lambda: 2 (L(best) - L(lambda)) <=
    chi2(0.95, 1)}; None where it reaches past the searched range (-5..5). `suggestion` is
    "none: 1 lies in the CI" when lambda = 1 (no transformation) is inside the interval, else
    the named transformation inside the interval nearest `lambda_` ("log", "square root",
    "inverse", "inverse square root", "square"), else "power <lambda>".
    """

    lambda_: float
    ci_low: float | None
    ci_high: float | None
    log_likelihood: float
    suggestion: str

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)


def box_cox(y: Sequence[float], x: np.ndarray) -> BoxCox | None:
    """Box-Cox analysis of response `y` for model matrix `x` (with its intercept column).

    None when some y is not positive, y is constant, or the model leaves no residual degrees
    of freedom. The log-likelihood is that of y (Jacobian included), up to a constant.
    """
    y = np.asarray(y, dtype=float)
    x = np.asarray(x, dtype=float)
    if len(y) != x.shape[0] or np.any(~np.isfinite(y)) or np.any(y <= 0):
        return None
    if len(y) - np.linalg.matrix_rank(x) <= 0 or np.ptp(y) == 0:
        return None
    # Scaled by the geometric mean the Jacobian term vanishes; the profile is unchanged.
    log_u = np.log(y) - np.mean(np.log(y))
    n = len(y)

    def profile(lam: float) -> float:
        z = log_u if abs(lam) < 1e-12 else np.expm1(lam * log_u) / lam
        sse, _ = _ssr(x, z)
        return -math.inf if sse <= 0 else -0.5 * n * math.log(sse / n)

    low, high = BOX_COX_RANGE
    grid = np.linspace(low, high, 201)
    values = np.array([profile(g) for g in grid])
    if not np.all(np.isfinite(values)):
        return None
    start = int(np.argmax(values))
    bracket = (grid[max(start - 1, 0)], grid[min(start + 1, len(grid) - 1)])
    found = scipy.optimize.minimize_scalar(
        lambda lam: -profile(lam), bounds=bracket, method="bounded", options={"xatol": 1e-10}
    )
    best = float(found.x)
    best_ll = profile(best)
    cut = best_ll - 0.5 * float(scipy.stats.chi2.ppf(BOX_COX_CONFIDENCE, 1))

    def edge(end: float) -> float | None:
        if profile(end) >= cut:
            return None
        return float(scipy.optimize.brentq(lambda lam: profile(lam) - cut, *sorted((best, end))))

    ci_low, ci_high = edge(low), edge(high)
    lo = low if ci_low is None else ci_low
    hi = high if ci_high is None else ci_high
    if lo <= 1.0 <= hi:
        suggestion = "none: 1 lies in the CI"
    else:
        inside = [lam for lam in _BOX_COX_NAMES if lo <= lam <= hi]
        if inside:
            suggestion = _BOX_COX_NAMES[min(inside, key=lambda lam: abs(lam - best))]
        else:
            suggestion = f"power {best:.2g}"
    return BoxCox(
        lambda_=best,
        ci_low=ci_low,
        ci_high=ci_high,
        log_likelihood=best_ll,
        suggestion=suggestion,
    )
