"""The regression model behind an analysis: the terms of a model order, fitted by OLS on coded
factors, and its predictions anywhere in the factor space."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import statsmodels.api as sm
from statsmodels.regression.linear_model import RegressionResults

from experiments.analysis.selection import Selection, select_terms, separable_terms
from experiments.errors import DomainError
from experiments.factors import Config, FactorSpace, Value
from experiments.terms import MODEL_ORDERS, ModelTerms, distinct_levels, main_columns

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Prediction:
    """Predicted means at some configurations with their 95 % confidence intervals and the 95 %
    prediction intervals of one new run (NaN where the fit leaves no residual degrees of
    freedom)."""

    mean: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    pi_low: np.ndarray
    pi_high: np.ndarray


@dataclass(frozen=True)
class FittedModel:
    """OLS on the model matrix of `terms`; `observed` are the checked configurations and
    `order` the model order asked for."""

    space: FactorSpace
    order: str
    observed: list[Config]
    blocks: list[Hashable] | None
    y: np.ndarray
    terms: ModelTerms
    selection: Selection | None
    x: np.ndarray
    results: RegressionResults

    def matrix(self, configs: Sequence[Mapping[str, Value]]) -> np.ndarray:
        """The model matrix of some configurations (for the average block)."""
        return self.terms.matrix(main_columns(self.space, configs))

    def predict(self, configs: Sequence[Mapping[str, Value]]) -> Prediction:
        """Predicted means with 95 % confidence and prediction intervals."""
        frame = self.results.get_prediction(self.matrix(configs)).summary_frame(
            alpha=1.0 - CONFIDENCE
        )
        return Prediction(
            mean=frame["mean"].to_numpy(dtype=float),
            ci_low=frame["mean_ci_lower"].to_numpy(dtype=float),
            ci_high=frame["mean_ci_upper"].to_numpy(dtype=float),
            pi_low=frame["obs_ci_lower"].to_numpy(dtype=float),
            pi_high=frame["obs_ci_upper"].to_numpy(dtype=float),
        )

    def same_terms(self, values: Sequence[float]) -> RegressionResults:
        """Another response of the same runs fitted with the same terms (limits, desirability)."""
        return sm.OLS(np.asarray(values, dtype=float), self.x).fit()


def fit_model(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    model: str,
    blocks: Sequence[Hashable | None] | None = None,
) -> FittedModel:
    """Check the observations and fit `model`; raise DomainError when the runs cannot support it.

    "auto" starts from the highest order (quadratic, interaction, linear) that leaves at least
    one residual degree of freedom once the terms the runs cannot separate are left out, then
    selects terms hierarchically by AICc. An explicit order must be estimable as it is.
    `blocks` gives each run's block: with two or more blocks, a fixed block effect enters
    every model (see `ModelTerms`).
    """
    if model not in MODEL_ORDERS:
        raise DomainError("model", f"must be one of {', '.join(MODEL_ORDERS)}")
    if len(configs) != len(values):
        raise DomainError(
            "response", f"{len(values)} values were given for {len(configs)} configurations"
        )
    observed = [_checked_config(space, i, config) for i, config in enumerate(configs)]
    y = np.array([_checked_value(i, value) for i, value in enumerate(values)])
    mains = main_columns(space, observed)
    distinct = distinct_levels(space, observed)
    runs = _checked_blocks(blocks, len(y))
    levels = sorted(set(runs), key=runs.index) if runs is not None else []
    selection = None
    if model == "auto":
        terms, selection = _auto_terms(space, (mains, runs), y, distinct, levels)
    else:
        terms = _explicit_terms(
            ModelTerms(space, model, distinct, levels), model, (mains, runs), len(y)
        )
    x = terms.matrix(mains, runs)
    return FittedModel(
        space=space,
        order=model,
        observed=observed,
        blocks=runs if len(levels) >= 2 else None,
        y=y,
        terms=terms,
        selection=selection,
        x=x,
        results=sm.OLS(y, x).fit(),
    )


def _explicit_terms(
    terms: ModelTerms, model: str, rows: tuple[np.ndarray, list[Hashable] | None], runs: int
) -> ModelTerms:
    """The terms of an explicit order, refused when the runs are too few or cannot separate them."""
    needed = len(terms.names) + 1
    if runs < needed:
        raise DomainError(
            "model",
            f"the {model} model has {len(terms.names)} parameters, so it needs at least"
            f" {needed} successful runs; {runs} given (model=auto fits what the runs support)",
        )
    _, aliased = separable_terms(terms.matrix(*rows), terms.names, terms.factors)
    if aliased:
        raise DomainError(
            "model",
            f"the runs cannot separate {', '.join(aliased)} from the other terms of the"
            f" {model} model: add runs that vary these factors independently, or use model=auto",
        )
    return terms


def _auto_terms(
    space: FactorSpace,
    rows: tuple[np.ndarray, list[Hashable] | None],
    y: np.ndarray,
    distinct: Sequence[int],
    blocks: Sequence[Hashable],
) -> tuple[ModelTerms, Selection]:
    """The terms "auto" keeps and how it chose them (see `fit_model`)."""
    needed = 0
    for order in ("quadratic", "interaction", "linear"):
        full = ModelTerms(space, order, distinct, blocks)
        kept, aliased = separable_terms(full.matrix(*rows), full.names, full.factors)
        needed = len(kept) + 1
        if len(y) >= needed:
            start = full.restricted(kept)
            selection = select_terms(start.matrix(*rows), y, start.names, start.factors)
            selection = replace(selection, start=order, aliased=aliased)
            return start.restricted(selection.kept), selection
    raise DomainError(
        "model",
        f"needs at least {needed} successful runs to fit even the linear model of the factors"
        f" the runs vary; {len(y)} given",
    )


def _checked_blocks(blocks: Sequence[Hashable | None] | None, runs: int) -> list[Hashable] | None:
    """Each run's block, or None when no run has one; every run or none must have one."""
    if blocks is None or all(b is None for b in blocks):
        return None
    if len(blocks) != runs:
        raise DomainError("blocks", f"{len(blocks)} blocks were given for {runs} runs")
    missing = [i for i, b in enumerate(blocks) if b is None]
    if missing:
        raise DomainError(f"blocks.{missing[0]}", "give a block for every run or for none")
    return list(blocks)  # type: ignore[arg-type]


def _checked_config(space: FactorSpace, index: int, config: Mapping[str, object]) -> Config:
    try:
        return space.check_config(config, in_region=False)
    except DomainError as error:
        raise DomainError(f"configs.{index}.{error.field}", error.rule) from None


def _checked_value(index: int, value: object) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number):
        raise DomainError("response", f"value {index} is not a finite number")
    return number
