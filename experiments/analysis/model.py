"""The regression model behind an analysis: the terms of a model order, fitted by OLS on coded
factors, and its predictions anywhere in the factor space."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import statsmodels.api as sm
from statsmodels.regression.linear_model import RegressionResults

from experiments.analysis.surface import Selection, select_terms
from experiments.errors import DomainError
from experiments.factors import Config, FactorSpace, Value
from experiments.terms import MODEL_ORDERS, ModelTerms, distinct_levels, main_columns

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Prediction:
    """Predicted means at some configurations with their 95 % confidence intervals (None where
    the fit leaves no residual degrees of freedom)."""

    mean: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray


@dataclass(frozen=True)
class FittedModel:
    """OLS on the model matrix of `terms`; `observed` are the checked configurations."""

    space: FactorSpace
    observed: list[Config]
    y: np.ndarray
    terms: ModelTerms
    selection: Selection | None
    x: np.ndarray
    results: RegressionResults

    def matrix(self, configs: Sequence[Mapping[str, Value]]) -> np.ndarray:
        """The model matrix of some configurations."""
        return self.terms.matrix(main_columns(self.space, configs))

    def predict(self, configs: Sequence[Mapping[str, Value]]) -> Prediction:
        """Predicted means with 95 % confidence intervals."""
        frame = self.results.get_prediction(self.matrix(configs)).summary_frame(
            alpha=1.0 - CONFIDENCE
        )
        return Prediction(
            mean=frame["mean"].to_numpy(dtype=float),
            ci_low=frame["mean_ci_lower"].to_numpy(dtype=float),
            ci_high=frame["mean_ci_upper"].to_numpy(dtype=float),
        )

    def same_terms(self, values: Sequence[float]) -> RegressionResults:
        """Another response of the same runs fitted with the same terms (limits, desirability)."""
        return sm.OLS(np.asarray(values, dtype=float), self.x).fit()


def fit_model(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    model: str,
) -> FittedModel:
    """Check the observations and fit `model` ("auto" selects terms from the quadratic model
    hierarchically by AICc); raise DomainError when the runs cannot support it."""
    if model not in MODEL_ORDERS:
        raise DomainError("model", f"must be one of {', '.join(MODEL_ORDERS)}")
    if len(configs) != len(values):
        raise DomainError(
            "response", f"{len(values)} values were given for {len(configs)} configurations"
        )
    observed = [_checked_config(space, i, config) for i, config in enumerate(configs)]
    y = np.array([_checked_value(i, value) for i, value in enumerate(values)])
    terms = ModelTerms(
        space, "quadratic" if model == "auto" else model, distinct_levels(space, observed)
    )
    if len(y) < len(terms.names) + 1 and model != "auto":
        raise DomainError(
            "response",
            f"the {model} model has {len(terms.names)} parameters, so it needs at least "
            f"{len(terms.names) + 1} observations; {len(y)} given",
        )
    mains = main_columns(space, observed)
    selection = None
    if model == "auto":
        selection = select_terms(terms.matrix(mains), y, terms.names, terms.factors)
        terms = terms.restricted(selection.kept)
    x = terms.matrix(mains)
    _check_estimable(x, terms.names)
    return FittedModel(
        space=space,
        observed=observed,
        y=y,
        terms=terms,
        selection=selection,
        x=x,
        results=sm.OLS(y, x).fit(),
    )


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


def _check_estimable(x: np.ndarray, names: list[str]) -> None:
    """Refuse a model matrix whose columns are linearly dependent (terms not separable)."""
    _, r, order = scipy.linalg.qr(x, mode="economic", pivoting=True)
    diagonal = np.abs(np.diag(r))
    rank = int(np.sum(diagonal > diagonal[0] * max(x.shape) * np.finfo(float).eps))
    if rank < x.shape[1]:
        dependent = ", ".join(names[j] for j in sorted(order[rank:]))
        raise DomainError(
            "response",
            f"the observations cannot separate {dependent} from the other terms: "
            "add runs that vary these factors independently",
        )
