"""The analysis: OLS on coded factors, factors ranked by effect, and the predicted optimum.

Numeric factors enter the model coded (-1..+1 over their range, after their scale), so a
coefficient is half the change from the low to the high end; categorical factors enter as
treatment dummies against their first level.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace

import numpy as np
import scipy.stats
from statsmodels.regression.linear_model import RegressionResults

from experiments.analysis.diagnostics import box_cox, diagnostics
from experiments.analysis.effects import ranked_effects
from experiments.analysis.explain import BlockShifts, Explanation, Fit, NoiseRange, explain
from experiments.analysis.model import CONFIDENCE, FittedModel, fit_model
from experiments.analysis.predicted_optimum import predicted_optimum
from experiments.analysis.results import (
    Analysis,
    FactorEffect,
    Optimum,
    ResponseGoal,
    ResponseLimit,
    RobustOptimum,
    Term,
)
from experiments.analysis.screening import Curvature, Lenth, curvature, lenth
from experiments.analysis.selection import Selection
from experiments.analysis.split_plot import SplitPlotFit, fit_split_plot
from experiments.analysis.statistics import (
    AnovaRow,
    FitStatistics,
    LackOfFit,
    anova,
    fit_statistics,
    lack_of_fit,
)
from experiments.analysis.steepest import steepest_path
from experiments.analysis.surface import (
    canonical,
    natural_coefficients,
)
from experiments.constraints import Constraint
from experiments.factors import Config, FactorSpace
from experiments.goals import check_goal
from experiments.numbers import finite_or_none
from experiments.robust import RobustAim
from experiments.terms import (
    DEFAULT_MODEL,
    MODEL_ORDERS,
    ModelTerms,
)

MODELS: tuple[str, ...] = MODEL_ORDERS


def fit(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    *,
    goal: str = "maximize",
    model: str = DEFAULT_MODEL,
    constraints: Sequence[Constraint] = (),
    labels: Sequence[str] | None = None,
    response: str = "the response",
    limits: Sequence[ResponseLimit] = (),
    whole_plots: Sequence[int | None] | None = None,
    desirability: Sequence[ResponseGoal] = (),
    blocks: Sequence[Hashable | None] | None = None,
    robust: RobustAim | None = None,
) -> Analysis:
    """Fit `model` to the observed configurations and values.

    "linear" has the main effects, "interaction" adds every two-factor interaction,
    "quadratic" adds the square of every numeric factor observed at three or more levels, and
    "auto" starts from the quadratic model and drops terms by AICc, never an effect while a term
    containing it stays. `labels` name the runs in the diagnostics (default "run i"). ANOVA sums
    of squares are type II. With `whole_plots` (the whole plot of each run, from a split-plot run
    order) the model is also fitted as a mixed model with a random whole-plot effect (REML), so
    hard-to-change factors are tested against the whole-plot error. With `desirability` the
    optimum maximizes the overall Derringer-Suich desirability of those responses instead.
    With `blocks` (each run's block) in two or more blocks, the block is a fixed effect of the
    model: its own ANOVA row, pure error within blocks, and the optimum and every prediction
    for the average block (Montgomery, Design and Analysis of Experiments, 11.4.3). With noise
    factors in `space` the optimum is a configuration of the control factors, judged across
    the noise levels by `robust` (the objective's aim; None: the mean over the levels), see
    `experiments.analysis.robust_optimum`.

    The optimum is the best prediction by `goal` ("maximize" or "minimize") over a lattice that
    honours integer and categorical levels and the factor constraints.
    """
    check_goal(goal)
    fitted = fit_model(space, configs, values, model, blocks)
    names = list(labels) if labels is not None else [f"run {i + 1}" for i in range(len(fitted.y))]
    # A perfect fit leaves t and p undefined: they are reported as None, without warnings.
    with np.errstate(divide="ignore", invalid="ignore"):
        best = predicted_optimum(fitted, goal, constraints, limits, desirability, robust)
        split = _split_plot(fitted.terms, fitted.x, fitted.y, whole_plots)
        return _analysis(
            fitted,
            model,
            goal,
            best,
            labels=names,
            response=response,
            split=split,
            method=_method(split, whole_plots),
        )


def _analysis(
    fitted: FittedModel,
    model: str,
    goal: str,
    best: Optimum,
    *,
    labels: list[str],
    response: str,
    split: SplitPlotFit | None,
    method: str,
) -> Analysis:
    """What `fit` reports of the fitted model and its optimum `best`: coefficients, ANOVA, fit
    statistics, screening tests, diagnostics, the canonical analysis and the explanation."""
    space, terms, results, x, y = fitted.space, fitted.terms, fitted.results, fitted.x, fitted.y
    term_list = _terms(results, terms.names)
    table = anova(results, x, terms.names, terms.factors)
    # The profiles and the path need every factor: the noise factors at the scenario held.
    full = best if best.robust is None else replace(best, config=best.config | best.robust.held)
    ranked = ranked_effects(space, terms, results, table, full, goal)
    statistics = fit_statistics(results, x, y)
    misfit = lack_of_fit(_replicate_keys(fitted), y, results)
    factor_terms = terms.factor_term_columns
    factor_names = [terms.names[j] for j in factor_terms]
    return Analysis(
        model=model,
        model_label=model_label(model, fitted.selection, terms.names),
        goal=goal,
        n_observations=len(y),
        terms=term_list,
        r_squared=finite_or_none(results.rsquared),
        adj_r_squared=finite_or_none(results.rsquared_adj),
        rmse=finite_or_none(math.sqrt(results.mse_resid)),
        residual_df=round(results.df_resid),
        ranked_factors=ranked,
        optimum=best,
        selection=fitted.selection,
        anova=table,
        fit=statistics,
        lack_of_fit=misfit,
        curvature=None if fitted.blocks else _curvature(space, fitted.observed, y),
        lenth=None if fitted.blocks else _lenth(space, fitted.observed, y),
        diagnostics=diagnostics(results, labels),
        box_cox=box_cox(y, x),
        canonical=canonical(results.params[factor_terms], factor_names, space),
        steepest=steepest_path(fitted, goal, full.config),
        natural_terms=[
            *_natural_terms(results, factor_terms, factor_names, space),
            *(term_list[j] for j in range(len(terms.names)) if j not in factor_terms),
        ],
        split_plot=split,
        method=method,
        explanation=_explanation(
            response, goal, fitted, (ranked, term_list, statistics, misfit, best, table)
        ),
    )


def _explanation(
    response: str,
    goal: str,
    fitted: FittedModel,
    parts: tuple[
        list[FactorEffect], list[Term], FitStatistics, LackOfFit | None, Optimum, list[AnovaRow]
    ],
) -> Explanation:
    """The analysis in sentences, from the parts `fit` computed."""
    ranked, terms, statistics, misfit, best, table = parts
    selection = fitted.selection
    return explain(
        response=response,
        goal=goal,
        effects=ranked,
        terms=terms,
        fit=Fit(
            model=selection.start if selection is not None else fitted.order,
            r_squared=statistics.r_squared,
            predicted_r_squared=statistics.predicted_r_squared,
            residual_df=statistics.residual_df,
            lack_of_fit_p=misfit.p_value if misfit is not None else None,
        ),
        optimum=best.config,
        predicted=best.predicted,
        interval=(best.pi_low, best.pi_high),
        on_edge=best.on_edge,
        blocks=_block_shifts(fitted, terms, table) if fitted.blocks else None,
        noise=_noise_range(best.robust),
    )


def _noise_range(robust: RobustOptimum | None) -> NoiseRange | None:
    """The robust optimum's lowest and highest prediction across the noise levels."""
    if robust is None:
        return None
    low = min(robust.levels, key=lambda level: level.predicted)
    high = max(robust.levels, key=lambda level: level.predicted)
    return NoiseRange(
        aim=robust.aim,
        low=low.predicted,
        low_at=low.scenario,
        high=high.predicted,
        high_at=high.scenario,
        held=robust.held,
    )


def _block_shifts(fitted: FittedModel, terms: list[Term], table: list[AnovaRow]) -> BlockShifts:
    """The block coefficients against the first block, and the block term's p-value."""
    reference, *others = fitted.terms.blocks
    shifts = {str(b): terms[fitted.terms.names.index(f"block[{b}]")].coefficient for b in others}
    p_value = next((row.p_value for row in table if row.source == "block"), None)
    return BlockShifts(reference=str(reference), shifts=shifts, p_value=p_value)


def _terms(results: RegressionResults, names: Sequence[str]) -> list[Term]:
    """The coefficient table in coded units; None where a statistic is undefined."""
    intervals = results.conf_int(alpha=1.0 - CONFIDENCE)
    return [
        Term(
            name=name,
            coefficient=float(results.params[j]),
            std_error=finite_or_none(results.bse[j]),
            t=finite_or_none(results.tvalues[j]),
            p_value=finite_or_none(results.pvalues[j]),
            ci_low=finite_or_none(intervals[j, 0]),
            ci_high=finite_or_none(intervals[j, 1]),
        )
        for j, name in enumerate(names)
    ]


def _method(split: SplitPlotFit | None, whole_plots: Sequence[int | None] | None) -> str:
    if split is None:
        if any(p is not None for p in whole_plots or ()):
            # Every run in one whole plot: no between-plot variance to estimate yet.
            return "ordinary least squares (every run so far lies in one whole plot)"
        return "ordinary least squares (the runs did not come in whole plots)"
    if split.method == "REML":
        return (
            "ordinary least squares, and a split-plot mixed model (REML, random whole-plot "
            "effect, Satterthwaite's degrees of freedom) because the runs came in whole plots"
        )
    return f"ordinary least squares ({'; '.join(split.notes)})"


def _split_plot(
    terms: ModelTerms,
    x: np.ndarray,
    y: np.ndarray,
    whole_plots: Sequence[int | None] | None,
) -> SplitPlotFit | None:
    """The mixed-model fit when the runs came in whole plots, or its OLS fallback with the
    reason when they cannot support it (some runs unlabelled); None when no run carries a whole
    plot or every run the same one."""
    plots = list(whole_plots or ())
    labelled = {p for p in plots if p is not None}
    if not labelled or (len(labelled) < 2 and None not in plots):
        return None
    return fit_split_plot(y, x, terms.names, plots)


def _two_level(space: FactorSpace, observed: list[Config]) -> tuple[list[int], list[int]] | None:
    """Indices of factorial and centre runs when every numeric factor sits at -1, 0 or +1 and
    the non-centre runs at the ends only (a two-level design, with or without centre points)."""
    numeric = [f for f in space.factors if f.is_numeric]
    if not numeric:
        return None
    coded = np.array([[f.encode(c[f.name]) for f in numeric] for c in observed])
    centre = np.all(np.isclose(coded, 0.0), axis=1)
    ends = np.all(np.isclose(np.abs(coded), 1.0), axis=1)
    if not np.all(centre | ends):
        return None
    return [int(i) for i in np.flatnonzero(ends)], [int(i) for i in np.flatnonzero(centre)]


def _curvature(space: FactorSpace, observed: list[Config], y: np.ndarray) -> Curvature | None:
    runs = _two_level(space, observed)
    return None if runs is None else curvature(y[runs[0]], y[runs[1]])


def _lenth(space: FactorSpace, observed: list[Config], y: np.ndarray) -> Lenth | None:
    """Every estimable effect of an unreplicated two-level design (the saturated model: main
    effects and interactions of every order, one per independent contrast) with Lenth's pseudo
    standard error: without replicates there is no pure error to test effects against."""
    runs = _two_level(space, observed)
    if (
        runs is None
        or runs[1]
        or not all(f.is_numeric for f in space.factors)
        or len({tuple(c.values()) for c in observed}) < len(observed)
    ):
        return None
    coded = np.array([[f.encode(c[f.name]) for f in space.factors] for c in observed])
    columns, names = [np.ones(len(observed))], []
    for order in range(1, len(space) + 1):
        for combo in itertools.combinations(range(len(space)), order):
            column = np.prod(coded[:, combo], axis=1)
            # An aliased contrast adds nothing: the first (lowest-order) name keeps it.
            if np.linalg.matrix_rank(np.column_stack([*columns, column])) > len(columns):
                columns.append(column)
                names.append(":".join(space.names[i] for i in combo))
    if len(names) < 3:
        return None
    params = np.linalg.lstsq(np.column_stack(columns), y, rcond=None)[0]
    return lenth({name: 2.0 * float(b) for name, b in zip(names, params[1:], strict=True)})


def _natural_terms(
    results: RegressionResults, columns: list[int], names: list[str], space: FactorSpace
) -> list[Term]:
    """The coefficients of the factor terms (`columns`, named `names`) rewritten in natural
    units (a log2 factor as log2 of its value), with SE, t, p and CI carried through the
    linear map from coded to natural coefficients."""
    params = np.asarray(results.params, dtype=float)[columns]
    natural = natural_coefficients(params, names, space)
    # The rewrite is linear in the coded coefficients: its matrix, one basis vector at a time.
    basis = [natural_coefficients(np.eye(len(params))[j], names, space) for j in range(len(params))]
    keys = list(natural)
    transform = np.array([[column[key] for column in basis] for key in keys])
    with np.errstate(divide="ignore", invalid="ignore"):
        coded_covariance = np.asarray(results.cov_params())[np.ix_(columns, columns)]
        covariance = transform @ coded_covariance @ transform.T
        errors = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
        t = np.array([natural[k] for k in keys]) / errors
    df = results.df_resid
    quantile = scipy.stats.t.ppf(0.5 + CONFIDENCE / 2, df) if df > 0 else math.nan
    return [
        Term(
            name=key,
            coefficient=float(natural[key]),
            std_error=finite_or_none(errors[i]),
            t=finite_or_none(t[i]),
            p_value=finite_or_none(2 * scipy.stats.t.sf(abs(t[i]), df)) if df > 0 else None,
            ci_low=finite_or_none(natural[key] - quantile * errors[i]),
            ci_high=finite_or_none(natural[key] + quantile * errors[i]),
        )
        for i, key in enumerate(keys)
    ]


def _replicate_keys(fitted: FittedModel) -> list[Hashable]:
    """What makes two runs replicates: the same configuration, in the same block."""
    configs = [fitted.space.key(c) for c in fitted.observed]
    if fitted.blocks is None:
        return list(configs)
    return list(zip(fitted.blocks, configs, strict=True))


def model_label(model: str, selection: Selection | None, term_names: Sequence[str]) -> str:
    """The model named by its terms, e.g. "auto (selected from the quadratic model by AICc):
    nodes + threads + nodes:threads"."""
    formula = " + ".join(name for name in term_names if name != "Intercept") or "intercept only"
    if selection is None:
        return f"{model}: {formula}"
    criterion = "AICc" if selection.criterion == "aicc" else f"p < {selection.alpha}"
    return f"{model} (selected from the {selection.start} model by {criterion}): {formula}"
