"""The analysis: OLS on coded factors, factors ranked by effect, and the predicted optimum.

Numeric factors enter the model coded (-1..+1 over their range, after their scale), so a
coefficient is half the change from the low to the high end; categorical factors enter as
treatment dummies against their first level.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import scipy.stats
from statsmodels.regression.linear_model import RegressionResults

from experiments.analysis.diagnostics import box_cox, diagnostics
from experiments.analysis.explain import BlockShifts, Explanation, Fit, explain
from experiments.analysis.model import CONFIDENCE, FittedModel, fit_model
from experiments.analysis.optimize import (
    DesirabilityGoal,
    Predictor,
    ResponseBound,
    best_configuration,
    most_desirable,
)
from experiments.analysis.region import DataRegion
from experiments.analysis.results import (
    Analysis,
    FactorEffect,
    Optimum,
    Profile,
    ResponseGoal,
    ResponseLimit,
    Term,
)
from experiments.analysis.screening import Curvature, Lenth, curvature, lenth
from experiments.analysis.selection import Selection
from experiments.analysis.split_plot import SplitPlotFit, fit_split_plot, hard_to_change_terms
from experiments.analysis.statistics import (
    AnovaRow,
    FitStatistics,
    LackOfFit,
    anova,
    fit_statistics,
    lack_of_fit,
    term_label,
)
from experiments.analysis.surface import (
    canonical,
    natural_coefficients,
)
from experiments.constraints import Constraint
from experiments.designs import factor_levels
from experiments.factors import Config, Factor, FactorSpace, Value
from experiments.goals import check_goal
from experiments.lattice import candidate_values
from experiments.numbers import finite_or_none
from experiments.terms import (
    DEFAULT_MODEL,
    MODEL_ORDERS,
    ModelTerms,
    columns_of,
    factor_columns,
    main_columns,
)

MODELS: tuple[str, ...] = MODEL_ORDERS
# Settings of a factor's profile when its range is not a short run of whole numbers.
PROFILE_POINTS = 21


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
    for the average block (Montgomery, Design and Analysis of Experiments, 11.4.3).

    The optimum is the best prediction by `goal` ("maximize" or "minimize") over a lattice that
    honours integer and categorical levels and the factor constraints.
    """
    check_goal(goal)
    fitted = fit_model(space, configs, values, model, blocks)
    observed, y, terms, x, results = (
        fitted.observed,
        fitted.y,
        fitted.terms,
        fitted.x,
        fitted.results,
    )
    labels = list(labels) if labels is not None else [f"run {i + 1}" for i in range(len(y))]
    # A perfect fit leaves t and p undefined: they are reported as None, without warnings.
    with np.errstate(divide="ignore", invalid="ignore"):
        term_list = _terms(results, terms.names)
        best = _optimum(fitted, goal, constraints, limits, desirability)
        table = anova(results, x, terms.names, terms.factors)
        ranked = _ranked_effects(space, terms, results, table, best, goal)
        statistics = fit_statistics(results, x, y)
        split = _split_plot(space, terms, x, y, whole_plots)
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
            curvature=None if fitted.blocks else _curvature(space, observed, y),
            lenth=None if fitted.blocks else _lenth(space, observed, y),
            diagnostics=diagnostics(results, labels),
            box_cox=box_cox(y, x),
            canonical=canonical(results.params[factor_terms], factor_names, space),
            natural_terms=[
                *_natural_terms(results, factor_terms, factor_names, space),
                *(term_list[j] for j in range(len(terms.names)) if j not in factor_terms),
            ],
            split_plot=split,
            method=_method(split),
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
        on_edge=widenable_edges(fitted.space, fitted.observed, best.config),
        blocks=_block_shifts(fitted, terms, table) if fitted.blocks else None,
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


def _ranked_effects(
    space: FactorSpace,
    terms: ModelTerms,
    results: RegressionResults,
    table: Sequence[AnovaRow],
    best: Optimum,
    goal: str,
) -> list[FactorEffect]:
    """Every factor in the model, most important first (share of the sum of squares, then
    size of the effect)."""
    at_optimum = main_columns(space, [best.config])[0]
    effects = [
        _effect(space, terms, results, i, at_optimum, _share(table, terms, i), goal)
        for i, f in enumerate(space.factors)
        if columns_of(f)
    ]
    return sorted(effects, key=lambda e: (-(e.share_of_ss or 0.0), -abs(e.effect)))


def _method(split: SplitPlotFit | None) -> str:
    if split is not None:
        return (
            "ordinary least squares, and a split-plot mixed model (REML, random whole-plot "
            "effect) because the runs came in whole plots"
        )
    return "ordinary least squares (the runs did not come in whole plots)"


def _split_plot(
    space: FactorSpace,
    terms: ModelTerms,
    x: np.ndarray,
    y: np.ndarray,
    whole_plots: Sequence[int | None] | None,
) -> SplitPlotFit | None:
    """The mixed-model fit when the runs came in whole plots; None: ordinary least squares."""
    plots = [p for p in whole_plots or () if p is not None]
    if len(plots) != len(y) or len(set(plots)) < 2:
        return None
    return fit_split_plot(y, x, terms.names, plots, hard_to_change_terms(space, terms))


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


def _centre_mains(space: FactorSpace) -> np.ndarray:
    """Main-effect columns at the centre: numeric factors at 0, categorical levels averaged."""
    return np.concatenate(
        [
            np.zeros(columns_of(f))
            if f.is_numeric
            else np.full(columns_of(f), 1.0 / (columns_of(f) + 1))
            for f in space.factors
        ]
    )


def _effect(
    space: FactorSpace,
    terms: ModelTerms,
    results: RegressionResults,
    index: int,
    at_optimum: np.ndarray,
    share: float | None,
    goal: str,
) -> FactorEffect:
    factor = space.factors[index]
    settings: list[Value]
    if factor.is_numeric:
        settings = [factor.check_value(end) for end in factor.bounds]
    else:
        settings = list(factor.levels or ())
    start = sum(columns_of(f) for f in space.factors[:index])

    def predicted(base: np.ndarray, along: Sequence[Value] = settings) -> np.ndarray:
        block = factor_columns(factor, along)
        rows = np.tile(base, (len(along), 1))
        rows[:, start : start + block.shape[1]] = block
        return np.asarray(terms.matrix(rows) @ results.params)

    centre = predicted(_centre_mains(space))
    low, high = max(
        itertools.combinations(range(len(settings)), 2),
        key=lambda pair: abs(centre[pair[1]] - centre[pair[0]]),
    )
    optimum = predicted(at_optimum)
    change = float(optimum[high] - optimum[low])
    involved = [j for j, factors in enumerate(terms.factors) if index in factors]
    # A factor whose every term the auto model dropped has no test: its effect is zero.
    p_value = results.f_test(np.eye(len(terms.names))[involved]).pvalue if involved else None
    return FactorEffect(
        factor=factor.name,
        effect=float(centre[high] - centre[low]),
        change_at_optimum=change,
        share_of_ss=share,
        p_value=finite_or_none(p_value),
        direction="increases" if change > 0 else "decreases" if change < 0 else "none",
        low=settings[low],
        high=settings[high],
        profile=_profile(factor, lambda along: predicted(at_optimum, along), goal),
    )


def _profile(
    factor: Factor, predicted: Callable[[Sequence[Value]], np.ndarray], goal: str
) -> Profile:
    """The factor's predicted curve with the others at the optimum (see `Profile`)."""
    if not factor.is_numeric:
        settings = list(factor.levels or ())
    elif factor.kind == "integer" and factor.bounds[1] - factor.bounds[0] <= PROFILE_POINTS - 1:
        settings = list(range(int(factor.bounds[0]), int(factor.bounds[1]) + 1))
    else:
        settings = sorted({value for _, value in factor_levels(factor, PROFILE_POINTS)})
    values = [float(v) for v in predicted(settings)]
    pick = int(np.argmax(values) if goal == "maximize" else np.argmin(values))
    return Profile(settings=settings, predicted=values, best=settings[pick])


def _share(table: Sequence[AnovaRow], terms: ModelTerms, index: int) -> float | None:
    """Percent of the total sum of squares from the terms that contain factor `index`."""
    containing = {
        term_label(name) for name, factors in zip(terms.names, terms.factors, strict=True)
        if index in factors
    }  # fmt: skip
    shares = [row.percent for row in table if row.kind == "term" and row.source in containing]
    if not shares or any(share is None for share in shares):
        return None
    return float(sum(shares))  # type: ignore[arg-type]


def _optimum(
    fitted: FittedModel,
    goal: str,
    constraints: Sequence[Constraint],
    limits: Sequence[ResponseLimit],
    desirability: Sequence[ResponseGoal],
) -> Optimum:
    space, terms, results, observed = fitted.space, fitted.terms, fitted.results, fitted.observed
    region = DataRegion(space, observed)
    bounds = _bounds(fitted, limits)
    common: dict[str, Any] = {
        "bounds": bounds,
        "constraints": constraints,
        "starts": _best_observed(observed, results, goal),
        "region": region.contains,
    }
    candidates = candidate_values(space, observed)
    if desirability:
        goals = _desirability_goals(fitted, desirability)
        search = most_desirable(space, candidates, goals, **common)
    else:
        search = best_configuration(
            space, candidates, _predictor(terms, results), goal=goal, **common
        )
    config = search.config
    mains = main_columns(space, [config])
    frame = results.get_prediction(terms.matrix(mains)).summary_frame(alpha=1.0 - CONFIDENCE)
    return Optimum(
        config=config,
        predicted=float(frame["mean"].iloc[0]),
        ci_low=finite_or_none(frame["mean_ci_lower"].iloc[0]),
        ci_high=finite_or_none(frame["mean_ci_upper"].iloc[0]),
        pi_low=finite_or_none(frame["obs_ci_lower"].iloc[0]),
        pi_high=finite_or_none(frame["obs_ci_upper"].iloc[0]),
        on_edge=list(widenable_edges(space, observed, config)),
        search=search.search,
        region="the hull of the observed runs" if region.cut_to_data else "the factor ranges",
        neighbours_checked=search.neighbours_checked,
        limits_met={b.text: search.predictions[b.response] for b in bounds},
        desirability=({"overall": search.score, **search.desirabilities} if desirability else None),
    )


def _bounds(fitted: FittedModel, limits: Sequence[ResponseLimit]) -> list[ResponseBound]:
    """Each limit on another response as bounds on its prediction by the same terms."""
    return [
        ResponseBound(
            response=limit.response,
            predict=_predictor(fitted.terms, fitted.same_terms(limit.values)),
            operator=operator,
            limit=value,
        )
        for limit in limits
        for operator, value in (("<=", limit.max), (">=", limit.min))
        if value is not None
    ]


def _desirability_goals(
    fitted: FittedModel, desirability: Sequence[ResponseGoal]
) -> list[DesirabilityGoal]:
    """Each response goal with its prediction by the same terms."""
    return [
        DesirabilityGoal(
            response=g.response,
            predict=_predictor(fitted.terms, fitted.same_terms(g.values)),
            goal=g.goal,
            low=g.low,
            high=g.high,
            target=g.target,
            weight=g.weight,
            importance=g.importance,
        )
        for g in desirability
    ]


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
    configs = [tuple(c[n] for n in fitted.space.names) for c in fitted.observed]
    if fitted.blocks is None:
        return list(configs)
    return list(zip(fitted.blocks, configs, strict=True))


def _best_observed(
    observed: list[Config], results: RegressionResults, goal: str, count: int = 5
) -> list[Config]:
    """The runs with the best fitted values: where a coordinate search should start."""
    fitted = np.asarray(results.fittedvalues, dtype=float)
    order = np.argsort(-fitted if goal == "maximize" else fitted)
    return [observed[i] for i in order[:count]]


def _predictor(terms: ModelTerms, results: RegressionResults) -> Predictor:
    params = np.asarray(results.params)
    return lambda mains: terms.matrix(mains) @ params


def model_label(model: str, selection: Selection | None, term_names: Sequence[str]) -> str:
    """The model named by its terms, e.g. "auto (selected from the quadratic model by AICc):
    nodes + threads + nodes:threads"."""
    formula = " + ".join(name for name in term_names if name != "Intercept") or "intercept only"
    if selection is None:
        return f"{model}: {formula}"
    criterion = "AICc" if selection.criterion == "aicc" else f"p < {selection.alpha}"
    return f"{model} (selected from the {selection.start} model by {criterion}): {formula}"


def widenable_edges(
    space: FactorSpace, observed: Sequence[Config], config: Mapping[str, Value]
) -> dict[str, str]:
    """The numeric factors `config` sets at an end of their range ("low" or "high") where a
    follow-up could widen the range: not a factor the runs held at one setting, not a count
    at 0 or 1 (no fewer nodes than one), not a non-negative quantity at 0, not a share at 1."""
    edges = {}
    for factor in space.factors:
        if not factor.is_numeric or len({c[factor.name] for c in observed}) < 2:
            continue
        low, high = factor.bounds
        value = float(config[factor.name])
        if value == low and not _at_floor(factor, low):
            edges[factor.name] = "low"
        elif value == high and not (factor.kind == "continuous" and low >= 0 and high == 1):
            edges[factor.name] = "high"
    return edges


def _at_floor(factor: Factor, low: float) -> bool:
    """Whether nothing lies below `low`: a count at 0 or 1, a non-negative quantity at 0."""
    if factor.kind == "integer":
        return low in (0, 1)
    return low == 0
