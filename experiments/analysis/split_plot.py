"""Split-plot analysis: a random intercept per whole plot, fitted by REML, with Satterthwaite's
degrees of freedom as R's lmerTest computes them.

When hard-to-change factors are reset only between whole plots, runs within a whole plot share
its error: y = X b + Z u + e with u ~ N(0, s_wp^2) per whole plot and e ~ N(0, s^2) per run.
The REML criterion is profiled over s^2 and minimised over the ratio s_wp^2 / s^2 (lme4's
theta squared); b is the GLS estimate at that ratio and cov(b) = (X' V^-1 X)^-1.

A contrast l'b has Satterthwaite's degrees of freedom 2 (l'Cl)^2 / (g' A g), with C = cov(b) as
a function of the variance components, g the gradient of l'C l in them and A their asymptotic
covariance, twice the inverse Hessian of the REML deviance at its minimum (lmerTest takes the
Hessian numerically on lme4's (theta, sigma) scale; at an interior minimum that is the same
number, and here both derivatives are exact). Each term's F test takes type III contrasts as
lmerTest's anova(type = 3) builds them for treatment-coded factors (a main effect averaged over
the levels of a categorical factor it interacts with) and pools its decorrelated contrasts'
degrees of freedom as lmerTest does (Fai & Cornelius 1996).

In a balanced split plot these are the classical split-plot ANOVA's degrees of freedom (whole
plots minus whole-plot parameters, or runs minus whole plots minus sub-plot parameters). Where a
term is estimated partly between whole plots, as the square of an easy-to-change factor set at
the centre in whole plots of their own, or a block that holds whole plots, the containment rule
is not exact and overstates significance, so it is not used.

Each term's `stratum` says where it is estimated: "whole-plot" when its columns are constant in
every whole plot, "sub-plot" when its estimate does not involve the whole-plot variance, "both"
otherwise (its degrees of freedom lie between the strata's).

When the mixed model cannot be estimated (not every run labelled with its whole plot, fewer
than 3 whole plots, no whole plot with two runs, a whole-plot or sub-plot variance at 0) the
fit falls back to OLS with a note saying so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Protocol

import numpy as np
import scipy.optimize
import scipy.sparse
import scipy.stats

from experiments.analysis.statistics import term_label
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.numbers import finite_or_none

__all__ = [
    "FixedEffect",
    "SplitPlotFit",
    "TermTest",
    "fit_split_plot",
    "varying_hard_to_change",
]

MIN_WHOLE_PLOTS = 3
# A variance ratio s_wp^2 / s^2 below the first is taken as 0 (no whole-plot variance), above
# the second as no sub-plot variance; the search covers both with room to spare.
_BOUNDARY = 1e-6
_NO_SUB_PLOT = 1e8
_LOG_RATIOS = np.linspace(math.log(1e-9), math.log(1e9), 73)
# lmerTest's tolerances: eigenvalues of a contrast's covariance below this fraction of the
# largest are dropped, and equal degrees of freedom are pooled by their mean.
_EIGEN_TOLERANCE = math.sqrt(np.finfo(float).eps)
_EQUAL_DF = 1e-8
# A term whose variance moves less than this fraction with the whole-plot variance is a
# sub-plot term.
_SUB_PLOT_GRADIENT = 1e-9


@dataclass(frozen=True)
class FixedEffect:
    """One fixed-effect coefficient with its t test; `stratum` is "whole-plot", "sub-plot" or
    "both" (module doc); `df` Satterthwaite's; None where a statistic is undefined."""

    name: str
    coefficient: float
    std_error: float | None
    t: float | None
    df: float | None
    p_value: float | None
    stratum: str


@dataclass(frozen=True)
class TermTest:
    """The F test of one term (all its columns at once) with type III contrasts, as lmerTest's
    anova(type = 3) gives it: `num_df` contrasts, `den_df` Satterthwaite's denominator."""

    source: str
    num_df: int
    den_df: float | None
    f: float | None
    p_value: float | None


@dataclass(frozen=True)
class SplitPlotFit:
    """A split-plot fit: fixed effects, term tests, variance components and how it was made.

    `method` is "REML" (mixed model) or "OLS" (fallback, see `notes`). Under OLS the whole-plot
    variance is None, the sub-plot variance is the residual mean square, and every term is
    tested against it, which overstates the significance of whole-plot terms when whole plots
    differ. `whole_plot_terms`, `sub_plot_terms` and `both_strata_terms` list the columns by
    stratum (the intercept left out).
    """

    method: str
    effects: list[FixedEffect]
    tests: list[TermTest]
    whole_plot_variance: float | None
    sub_plot_variance: float | None
    whole_plot_terms: list[str]
    sub_plot_terms: list[str]
    both_strata_terms: list[str]
    n_observations: int
    n_whole_plots: int
    converged: bool
    notes: list[str]

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)


def varying_hard_to_change(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    whole_plots: Sequence[int | None],
) -> tuple[int, str, int] | None:
    """The first run whose hard-to-change factor differs from an earlier run of its whole plot:
    (its index, the factor, the index of that earlier run); None when every whole plot holds
    one setting of each hard-to-change factor."""
    hard = [f.name for f in space.factors if f.hard_to_change]
    first: dict[int, int] = {}
    for i, (config, plot) in enumerate(zip(configs, whole_plots, strict=True)):
        if plot is None:
            continue
        j = first.setdefault(plot, i)
        for name in hard:
            if configs[j][name] != config[name]:
                return i, name, j
    return None


def fit_split_plot(
    y: np.ndarray,
    x: np.ndarray,
    term_names: Sequence[str],
    whole_plots: Sequence[int | None],
) -> SplitPlotFit:
    """Fit a split-plot model: `x` is the model matrix (intercept first, one column per name in
    `term_names`, categorical levels in brackets as `ModelTerms` names them), `whole_plots` the
    whole-plot id of each run (None: not labelled, which leaves the runs to OLS)."""
    y = np.asarray(y, dtype=float)
    x = np.asarray(x, dtype=float)
    names = list(term_names)
    if x.ndim != 2 or x.shape != (len(y), len(names)):
        raise DomainError("response", "the model matrix needs one row per run, one column per term")
    if len(whole_plots) != len(y):
        raise DomainError("whole_plots", f"{len(whole_plots)} ids were given for {len(y)} runs")
    if not np.all(np.isfinite(y)):
        raise DomainError("response", "values must be finite numbers")
    labelled = [p for p in whole_plots if p is not None]
    # An unlabelled run is a whole plot of its own for the strata.
    groups = np.unique(
        [f"plot {p}" if p is not None else f"run {i}" for i, p in enumerate(whole_plots)],
        return_inverse=True,
    )[1]
    n_plots = len(set(labelled))
    sizes = np.bincount(groups)
    notes: list[str] = []
    if len(labelled) < len(y):
        notes.append(
            f"{len(labelled)} of {len(y)} runs carry whole_plot: analysed by OLS; label all"
            " runs to get the split-plot analysis"
        )
    elif n_plots < MIN_WHOLE_PLOTS:
        notes.append(
            f"only {n_plots} whole plots: at least {MIN_WHOLE_PLOTS} are needed to estimate "
            "the whole-plot variance, so the runs were fitted by OLS"
        )
    elif sizes.max() < 2:
        notes.append(
            "no whole plot has two runs, so whole-plot and sub-plot error cannot be separated: "
            "fitted by OLS"
        )
    elif np.linalg.matrix_rank(x) < x.shape[1] or len(y) <= x.shape[1]:
        notes.append(
            "the model matrix is rank deficient or leaves no residual degrees of freedom:"
            " fitted by OLS"
        )
    else:
        reml = _Reml.fit(y, x, groups, notes)
        if reml is not None:
            return _fit(reml, x, names, groups, n_plots, notes)
    return _fit(_Ols.fit(y, x), x, names, groups, n_plots, notes)


class _Estimates(Protocol):
    """Coefficients, their covariance and each contrast's degrees of freedom."""

    method: str
    params: np.ndarray
    cov: np.ndarray
    whole_plot_variance: float | None
    sub_plot_variance: float | None

    def df(self, contrast: np.ndarray) -> float | None:
        """Degrees of freedom of the contrast's estimate."""

    def whole_plot_share(self, contrast: np.ndarray) -> float:
        """How much of the contrast's variance moves with the whole-plot variance (0: none)."""


class _Ols:
    method = "OLS"

    def __init__(self, params: np.ndarray, cov: np.ndarray, residual_df: int, mse: float) -> None:
        self.params, self.cov, self.residual_df = params, cov, residual_df
        self.whole_plot_variance: float | None = None
        self.sub_plot_variance = finite_or_none(mse) if residual_df > 0 else None

    @classmethod
    def fit(cls, y: np.ndarray, x: np.ndarray) -> _Ols:
        params, _, rank, _ = np.linalg.lstsq(x, y, rcond=None)
        residual = y - x @ params
        df = len(y) - int(rank)
        mse = float(residual @ residual) / df if df > 0 else math.nan
        with np.errstate(invalid="ignore"):
            cov = mse * np.linalg.pinv(x.T @ x)
        return cls(params, cov, df, mse)

    def df(self, contrast: np.ndarray) -> float | None:
        return float(self.residual_df) if self.residual_df > 0 else None

    def whole_plot_share(self, contrast: np.ndarray) -> float:
        return 0.0


@dataclass(frozen=True)
class _Plots:
    """The whole-plot incidence matrix Z (sparse, one column per whole plot) and the plots'
    sizes: V / s^2 = I + ratio Z Z', so V^-1 = (I - Z diag(gamma) Z') / s^2 with
    gamma = ratio / (1 + ratio * size), applied without forming an n x n matrix."""

    z: scipy.sparse.csr_matrix
    sizes: np.ndarray

    @classmethod
    def of(cls, groups: np.ndarray) -> _Plots:
        n = len(groups)
        z = scipy.sparse.csr_matrix((np.ones(n), (np.arange(n), groups)))
        return cls(z, np.bincount(groups).astype(float))

    def gamma(self, ratio: float) -> np.ndarray:
        return ratio / (1.0 + ratio * self.sizes)

    def sums(self, a: np.ndarray) -> np.ndarray:
        """Z' a: the sum of each whole plot's rows."""
        return np.asarray(self.z.T @ a)

    def solve(self, a: np.ndarray, ratio: float, scale: float) -> np.ndarray:
        """V^-1 a."""
        gamma = self.gamma(ratio)
        weighted = gamma[:, None] * self.sums(a) if a.ndim == 2 else gamma * self.sums(a)
        return (a - np.asarray(self.z @ weighted)) / scale


class _Reml:
    """The REML fit and what Satterthwaite's degrees of freedom need: the derivatives of
    cov(b) in (s_wp^2, s^2) and the asymptotic covariance of their estimates, twice the inverse
    of the observed Hessian of the REML deviance, H_ij = -tr(P V_i P V_j) + 2 y'P V_i P V_j P y
    with P = V^-1 - V^-1 X C X' V^-1, V_wp = Z Z' and V_e = I."""

    method = "REML"

    def __init__(self, y: np.ndarray, x: np.ndarray, plots: _Plots, ratio: float) -> None:
        n, p = x.shape
        _, self.params, rss, inverse = _profile(y, x, plots, ratio)
        scale = rss / (n - p)
        self.sub_plot_variance: float | None = scale
        self.whole_plot_variance: float | None = ratio * scale
        self.cov = scale * inverse
        cov = self.cov

        def solve(a: np.ndarray) -> np.ndarray:
            return plots.solve(a, ratio, scale)

        def project(a: np.ndarray) -> np.ndarray:
            return solve(a) - w @ (cov @ (w.T @ a))

        w = solve(x)
        k = plots.sums(w)  # Z' V^-1 X
        wtw = w.T @ w
        self.derivatives = (cov @ k.T @ k @ cov, cov @ wtw @ cov)
        # Z' V^-1 Z is diagonal: size * (1 - gamma * size) / s^2.
        c = (1.0 - plots.gamma(ratio) * plots.sizes) / scale
        kck = k @ cov @ k.T
        zpz = np.diag(c * plots.sizes) - kck
        u = solve(y - x @ self.params)  # P y
        pu = project(u)
        a = plots.sums(u)
        pz_squared = (
            np.sum(plots.sizes * c**2)
            - 2 * np.sum(c * np.diag(kck))
            + np.trace(k @ cov @ wtw @ cov @ k.T)
        )
        gamma = plots.gamma(ratio)
        vinv_squared = (n - 2 * gamma @ plots.sizes + gamma**2 @ plots.sizes**2) / scale**2
        p_squared = (
            vinv_squared - 2 * np.trace(cov @ (w.T @ solve(w))) + np.trace(cov @ wtw @ cov @ wtw)
        )
        cross = -pz_squared + 2 * a @ plots.sums(pu)
        hessian = np.array(
            [
                [-np.sum(zpz**2) + 2 * a @ zpz @ a, cross],
                [cross, -p_squared + 2 * u @ pu],
            ]
        )
        self.positive = bool(np.all(np.linalg.eigvalsh(hessian) > 0))
        self.variance_cov = 2.0 * np.linalg.inv(hessian) if self.positive else None

    @classmethod
    def fit(
        cls, y: np.ndarray, x: np.ndarray, groups: np.ndarray, notes: list[str]
    ) -> _Reml | None:
        """The REML fit, or None (with a note) when a variance is estimated at 0."""
        plots = _Plots.of(groups)

        def deviance(log_ratio: float) -> float:
            return _profile(y, x, plots, math.exp(log_ratio))[0]

        best = int(np.argmin([deviance(t) for t in _LOG_RATIOS]))
        low, high = _LOG_RATIOS[max(best - 1, 0)], _LOG_RATIOS[min(best + 1, len(_LOG_RATIOS) - 1)]
        found = scipy.optimize.minimize_scalar(
            deviance, bounds=(low, high), method="bounded", options={"xatol": 1e-10}
        )
        ratio = math.exp(float(found.x))
        if ratio <= _BOUNDARY or _profile(y, x, plots, 0.0)[0] <= float(found.fun):
            notes.append(
                "the whole-plot variance is estimated at 0 (whole plots differ no more than runs "
                "within them): fitted by OLS"
            )
            return None
        if ratio >= _NO_SUB_PLOT:
            notes.append(
                "the sub-plot variance is estimated at 0 (the model fits the runs within each "
                "whole plot exactly): fitted by OLS"
            )
            return None
        reml = cls(y, x, plots, ratio)
        if not reml.positive:
            notes.append(
                "the REML criterion is not curved at its minimum: Satterthwaite's degrees of "
                "freedom are undefined"
            )
        return reml

    def df(self, contrast: np.ndarray) -> float | None:
        if self.variance_cov is None:
            return None
        variance = contrast @ self.cov @ contrast
        gradient = np.array([contrast @ d @ contrast for d in self.derivatives])
        denominator = gradient @ self.variance_cov @ gradient
        return finite_or_none(2 * variance**2 / denominator) if denominator > 0 else None

    def whole_plot_share(self, contrast: np.ndarray) -> float:
        variance = contrast @ self.cov @ contrast
        moved = self.whole_plot_variance * (contrast @ self.derivatives[0] @ contrast)
        return float(moved / variance) if variance > 0 else 0.0


def _profile(
    y: np.ndarray, x: np.ndarray, plots: _Plots, ratio: float
) -> tuple[float, np.ndarray, float, np.ndarray]:
    """The REML deviance profiled over s^2 at `ratio` = s_wp^2 / s^2 (up to a constant), the GLS
    coefficients, the weighted residual sum of squares and (X' L^-1 X)^-1, L = V / s^2."""
    n, p = x.shape
    gamma = plots.gamma(ratio)
    zx, zy = plots.sums(x), plots.sums(y)
    xlx = x.T @ x - (zx.T * gamma) @ zx
    xly = x.T @ y - (zx.T * gamma) @ zy
    inverse = np.linalg.inv(xlx)
    params = inverse @ xly
    residual = y - x @ params
    rss = float(residual @ residual - gamma @ plots.sums(residual) ** 2)
    deviance = (
        (n - p) * math.log(rss)
        + float(np.sum(np.log1p(ratio * plots.sizes)))
        + float(np.linalg.slogdet(xlx)[1])
    )
    return deviance, params, rss, inverse


def _fit(
    estimates: _Estimates,
    x: np.ndarray,
    names: list[str],
    groups: np.ndarray,
    n_plots: int,
    notes: list[str],
) -> SplitPlotFit:
    identity = np.eye(len(names))
    strata = [_stratum(estimates, x[:, j], groups, j) for j in range(len(names))]
    effects = [_effect(estimates, identity[j], name, strata[j]) for j, name in enumerate(names)]
    return SplitPlotFit(
        method=estimates.method,
        effects=effects,
        tests=[_term_test(estimates, label, rows) for label, rows in _type3(names).items()],
        whole_plot_variance=finite_or_none(estimates.whole_plot_variance),
        sub_plot_variance=finite_or_none(estimates.sub_plot_variance),
        whole_plot_terms=_named(names, strata, "whole-plot"),
        sub_plot_terms=_named(names, strata, "sub-plot"),
        both_strata_terms=_named(names, strata, "both"),
        n_observations=len(groups),
        n_whole_plots=n_plots,
        converged=estimates.method == "REML",
        notes=notes,
    )


def _named(names: list[str], strata: list[str], stratum: str) -> list[str]:
    return [n for n, s in zip(names, strata, strict=True) if s == stratum and n != "Intercept"]


def _stratum(estimates: _Estimates, column: np.ndarray, groups: np.ndarray, j: int) -> str:
    """Where column `j` is estimated (module doc)."""
    means = np.bincount(groups, weights=column) / np.bincount(groups)
    if np.allclose(column, means[groups], rtol=0.0, atol=1e-12 * max(np.abs(column).max(), 1)):
        return "whole-plot"
    contrast = np.eye(len(estimates.params))[j]
    return "sub-plot" if estimates.whole_plot_share(contrast) <= _SUB_PLOT_GRADIENT else "both"


def _effect(estimates: _Estimates, contrast: np.ndarray, name: str, stratum: str) -> FixedEffect:
    coefficient = float(contrast @ estimates.params)
    se = finite_or_none(math.sqrt(max(float(contrast @ estimates.cov @ contrast), 0.0)))
    t = finite_or_none(coefficient / se) if se else None
    df = estimates.df(contrast)
    p = finite_or_none(2 * scipy.stats.t.sf(abs(t), df)) if t is not None and df else None
    return FixedEffect(
        name=name,
        coefficient=coefficient,
        std_error=se,
        t=t,
        df=df,
        p_value=p,
        stratum=stratum,
    )


def _term_test(estimates: _Estimates, label: str, contrasts: np.ndarray) -> TermTest:
    """lmerTest's multi-degree-of-freedom test: the contrasts decorrelated by the eigenvectors
    of their covariance, F the mean of their squared t statistics, the denominator degrees of
    freedom pooled from theirs."""
    covariance = contrasts @ estimates.cov @ contrasts.T
    values, vectors = np.linalg.eigh(covariance)
    order = np.argsort(values)[::-1]
    values, vectors = values[order], vectors[:, order]
    kept = values > max(_EIGEN_TOLERANCE * values[0], 0.0)
    q = int(kept.sum())
    if q == 0:
        return TermTest(source=label, num_df=0, den_df=None, f=None, p_value=None)
    rotated = vectors[:, kept].T @ contrasts
    f = float(np.sum((rotated @ estimates.params) ** 2 / values[kept])) / q
    dfs = [estimates.df(row) for row in rotated]
    den = None if any(d is None for d in dfs) else _pooled_df([d for d in dfs if d is not None])
    p = finite_or_none(scipy.stats.f.sf(f, q, den)) if den else None
    return TermTest(source=label, num_df=q, den_df=den, f=finite_or_none(f), p_value=p)


def _pooled_df(dfs: list[float]) -> float:
    """lmerTest's get_Fstat_ddf: one F's denominator degrees of freedom from its contrasts'."""
    nu = np.asarray(dfs)
    if len(nu) == 1:
        return float(nu[0])
    if np.all(np.abs(np.diff(nu)) < _EQUAL_DF):
        return float(nu.mean())
    if np.any(nu <= 2):
        return 2.0
    expected = float(np.sum(nu / (nu - 2)))
    return 2 * expected / (expected - len(nu))


def _parts(name: str) -> frozenset[str]:
    """The factors a column multiplies, each with its level in brackets: "a:engine[x]" is
    {"a", "engine[x]"}."""
    return frozenset(re.findall(r"(?:[^:\[]|\[[^\]]*\])+", name))


def _type3(names: list[str]) -> dict[str, np.ndarray]:
    """Type III contrasts of each term (the intercept has none), as lmerTest builds them for
    treatment coding: a column's own coefficient plus, for every term that multiplies it by
    categorical factors only, the average over those factors' levels (the reference level's
    coefficient 0), which is the column's effect averaged over the levels."""
    parts = [_parts(n) for n in names]
    levels: dict[str, set[str]] = {}
    for part in set().union(*parts):
        if "[" in part:
            levels.setdefault(part.split("[", 1)[0], set()).add(part)
    terms: dict[str, list[int]] = {}
    for j, name in enumerate(names):
        if name != "Intercept":
            terms.setdefault(term_label(name), []).append(j)
    contrasts = {}
    for label, columns in terms.items():
        rows = np.zeros((len(columns), len(names)))
        for r, j in enumerate(columns):
            rows[r, j] = 1.0
            for k, other in enumerate(parts):
                extra = other - parts[j]
                if k == j or not parts[j] < other or not all("[" in e for e in extra):
                    continue
                rows[r, k] = math.prod(1.0 / (len(levels[e.split("[", 1)[0]]) + 1) for e in extra)
        contrasts[label] = rows
    return contrasts
