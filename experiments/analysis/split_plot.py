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

import numpy as np
import scipy.stats

from experiments.analysis.split_plot_estimates import Estimates, Ols, Reml
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
        reml = Reml.fit(y, x, groups, notes)
        if reml is not None:
            return _fit(reml, x, names, groups, n_plots, notes)
    return _fit(Ols.fit(y, x), x, names, groups, n_plots, notes)


def _fit(
    estimates: Estimates,
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


def _stratum(estimates: Estimates, column: np.ndarray, groups: np.ndarray, j: int) -> str:
    """Where column `j` is estimated (module doc)."""
    means = np.bincount(groups, weights=column) / np.bincount(groups)
    if np.allclose(column, means[groups], rtol=0.0, atol=1e-12 * max(np.abs(column).max(), 1)):
        return "whole-plot"
    contrast = np.eye(len(estimates.params))[j]
    return "sub-plot" if estimates.whole_plot_share(contrast) <= _SUB_PLOT_GRADIENT else "both"


def _effect(estimates: Estimates, contrast: np.ndarray, name: str, stratum: str) -> FixedEffect:
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


def _term_test(estimates: Estimates, label: str, contrasts: np.ndarray) -> TermTest:
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
