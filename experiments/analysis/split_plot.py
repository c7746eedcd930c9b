"""Split-plot analysis: a random intercept per whole plot, fitted by REML.

When hard-to-change factors are reset only between whole plots, runs within a whole plot share
its error, so terms of hard-to-change factors alone are tested against the (larger) whole-plot
error and the other terms against the sub-plot error. statsmodels' MixedLM estimates both
variance components by REML; each fixed effect gets a t statistic with containment degrees of
freedom (whole-plot terms: whole plots minus whole-plot parameters; sub-plot terms: runs minus
whole plots minus sub-plot parameters), as in the classical split-plot ANOVA.

When the mixed model cannot be estimated (fewer than 3 whole plots, no whole plot with two runs,
a whole-plot variance at 0, or no convergence) the fit falls back to OLS with a note saying so.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import scipy.stats
import statsmodels.api as sm

from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.numbers import finite_or_none
from experiments.terms import BLOCK, ModelTerms

__all__ = ["FixedEffect", "SplitPlotFit", "fit_split_plot", "hard_to_change_terms"]

MIN_WHOLE_PLOTS = 3
# A whole-plot variance below this fraction of the residual variance is taken as 0, or below
# the second when statsmodels warns that the estimate may be on the boundary.
_BOUNDARY = 1e-6
_NEAR_BOUNDARY = 1e-2


@dataclass(frozen=True)
class FixedEffect:
    """One fixed-effect term; `stratum` is "whole-plot" or "sub-plot" (the error it is tested
    against); None where a statistic is undefined."""

    name: str
    coefficient: float
    std_error: float | None
    t: float | None
    df: int | None
    p_value: float | None
    stratum: str


@dataclass(frozen=True)
class SplitPlotFit:
    """A split-plot fit: fixed effects, variance components and how the fit was made.

    `method` is "REML" (mixed model) or "OLS" (fallback, see `notes`). Under OLS the whole-plot
    variance is None, the sub-plot variance is the residual mean square, and every term is
    tested against it, which overstates the significance of whole-plot terms when whole plots
    differ.
    """

    method: str
    effects: list[FixedEffect]
    whole_plot_variance: float | None
    sub_plot_variance: float | None
    whole_plot_terms: list[str]
    sub_plot_terms: list[str]
    n_observations: int
    n_whole_plots: int
    converged: bool
    notes: list[str]

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)


def hard_to_change_terms(space: FactorSpace, terms: ModelTerms) -> set[str]:
    """Names of the terms whose factors are all hard to change (the whole-plot terms)."""
    return {
        name
        for name, factors in zip(terms.names, terms.factors, strict=True)
        if factors
        and BLOCK not in factors
        and all(space.factors[i].hard_to_change for i in factors)
    }


def fit_split_plot(
    y: np.ndarray,
    x: np.ndarray,
    term_names: Sequence[str],
    whole_plots: Sequence[int],
    whole_plot_terms: set[str],
) -> SplitPlotFit:
    """Fit a split-plot model: `x` is the model matrix (intercept first, one column per name in
    `term_names`), `whole_plots` the whole-plot id of each run, `whole_plot_terms` the names of
    the terms that contain hard-to-change factors only."""
    y = np.asarray(y, dtype=float)
    x = np.asarray(x, dtype=float)
    names = list(term_names)
    if x.ndim != 2 or x.shape != (len(y), len(names)):
        raise DomainError("response", "the model matrix needs one row per run, one column per term")
    if len(whole_plots) != len(y):
        raise DomainError("whole_plots", f"{len(whole_plots)} ids were given for {len(y)} runs")
    if not np.all(np.isfinite(y)):
        raise DomainError("response", "values must be finite numbers")
    unknown = sorted(set(whole_plot_terms) - set(names))
    if unknown:
        raise DomainError("whole_plot_terms", f"not terms of the model: {', '.join(unknown)}")
    groups = np.asarray(whole_plots)
    plots, sizes = np.unique(groups, return_counts=True)
    whole = [n for n in names if n in whole_plot_terms or n == "Intercept"]
    sub = [n for n in names if n not in whole]
    notes: list[str] = []
    if len(plots) < MIN_WHOLE_PLOTS:
        notes.append(
            f"only {len(plots)} whole plots: at least {MIN_WHOLE_PLOTS} are needed to estimate "
            "the whole-plot variance, so the runs were fitted by OLS"
        )
    elif sizes.max() < 2:
        notes.append(
            "no whole plot has two runs, so whole-plot and sub-plot error cannot be separated: "
            "fitted by OLS"
        )
    else:
        mixed = _reml(y, x, groups, notes)
        if mixed is not None:
            return _mixed_fit(mixed, y, names, whole, sub, len(plots), notes)
    return _ols_fit(y, x, names, whole, sub, len(plots), notes)


def _reml(y: np.ndarray, x: np.ndarray, groups: np.ndarray, notes: list[str]) -> object | None:
    """The REML fit, or None (with a note) when it failed or the whole-plot variance is 0."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = sm.MixedLM(y, x, groups=groups).fit(reml=True)
        except (np.linalg.LinAlgError, ValueError) as error:
            notes.append(f"the mixed model could not be fitted ({error}): fitted by OLS")
            return None
    messages = list(dict.fromkeys(str(w.message) for w in caught))
    ratio = float(np.squeeze(result.cov_re)) / result.scale if result.scale > 0 else 0.0
    on_boundary = any("boundary" in m for m in messages)
    if ratio <= _BOUNDARY or (on_boundary and ratio <= _NEAR_BOUNDARY):
        notes.append(
            "the whole-plot variance is estimated at 0 (whole plots differ no more than runs "
            "within them): fitted by OLS"
        )
        return None
    if not result.converged:
        detail = "; ".join(messages) or "no convergence"
        notes.append(f"the mixed model did not converge ({detail}): fitted by OLS")
        return None
    notes += [f"statsmodels: {m}" for m in messages]
    return result


def _mixed_fit(
    result: object,
    y: np.ndarray,
    names: list[str],
    whole: list[str],
    sub: list[str],
    n_plots: int,
    notes: list[str],
) -> SplitPlotFit:
    params = np.asarray(result.fe_params)  # type: ignore[attr-defined]
    errors = np.asarray(result.bse_fe)  # type: ignore[attr-defined]
    # Containment degrees of freedom, as in the classical split-plot ANOVA.
    whole_df = n_plots - len(whole)
    sub_df = len(y) - n_plots - len(sub)
    effects = [
        _effect(
            name,
            params[j],
            errors[j],
            whole_df if name in whole else sub_df,
            "whole-plot" if name in whole else "sub-plot",
        )
        for j, name in enumerate(names)
    ]
    return SplitPlotFit(
        method="REML",
        effects=effects,
        whole_plot_variance=finite_or_none(np.squeeze(result.cov_re)),  # type: ignore[attr-defined]
        sub_plot_variance=finite_or_none(result.scale),  # type: ignore[attr-defined]
        whole_plot_terms=[n for n in whole if n != "Intercept"],
        sub_plot_terms=sub,
        n_observations=len(y),
        n_whole_plots=n_plots,
        converged=True,
        notes=notes,
    )


def _ols_fit(
    y: np.ndarray,
    x: np.ndarray,
    names: list[str],
    whole: list[str],
    sub: list[str],
    n_plots: int,
    notes: list[str],
) -> SplitPlotFit:
    results = sm.OLS(y, x).fit()
    df = round(results.df_resid)
    with np.errstate(divide="ignore", invalid="ignore"):
        effects = [
            _effect(
                name,
                results.params[j],
                results.bse[j],
                df,
                "whole-plot" if name in whole else "sub-plot",
            )
            for j, name in enumerate(names)
        ]
        variance = finite_or_none(results.mse_resid) if df > 0 else None
    return SplitPlotFit(
        method="OLS",
        effects=effects,
        whole_plot_variance=None,
        sub_plot_variance=variance,
        whole_plot_terms=[n for n in whole if n != "Intercept"],
        sub_plot_terms=sub,
        n_observations=len(y),
        n_whole_plots=n_plots,
        converged=False,
        notes=notes,
    )


def _effect(name: str, coefficient: float, error: float, df: int, stratum: str) -> FixedEffect:
    se = finite_or_none(error)
    t = coefficient / se if se else None
    p = float(2 * scipy.stats.t.sf(abs(t), df)) if t is not None and df > 0 else None
    return FixedEffect(
        name=name,
        coefficient=float(coefficient),
        std_error=se,
        t=finite_or_none(t) if t is not None else None,
        df=df if df > 0 else None,
        p_value=p,
        stratum=stratum,
    )
