"""Residual diagnostics of a fitted OLS model (studentized residuals, leverage, Cook's distance
and the runs that stand out) and the Box-Cox transformation it may call for.

Results are frozen dataclasses whose `as_dict()` is JSON-friendly (None, never NaN).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import scipy.optimize
import scipy.stats
from statsmodels.regression.linear_model import RegressionResults
from statsmodels.stats.outliers_influence import OLSInfluence

from experiments.analysis.statistics import residual_ss
from experiments.errors import DomainError
from experiments.numbers import finite_or_none

# Standout rules of the residual diagnostics.
STUDENTIZED_LIMIT = 3.0


COOKS_LIMIT = 1.0


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
        sse, _ = residual_ss(x, z)
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
