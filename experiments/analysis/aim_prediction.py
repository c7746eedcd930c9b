"""What the fitted model predicts for a control configuration by the robust aim, with intervals.

Each aim is a weighted sum of the predictions at the noise levels: equal weights for the mean,
all on the worst level, or split between the two levels a quantile falls between (as
`numpy.quantile` interpolates). With the levels' order held where the predictions put it, the
aim's prediction is the linear combination `weights @ rows` of the model's coefficients, so its
standard error, confidence and prediction intervals are those of that contrast. Without noise
factors there is one level and the prediction is the model's at the configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from experiments.analysis.model import CONFIDENCE, FittedModel
from experiments.factors import Value
from experiments.numbers import finite_or_none
from experiments.robust import RobustAim, crossed, noise_scenarios

__all__ = ["AimPrediction", "aim_prediction", "aim_row", "aim_weights"]


@dataclass(frozen=True)
class AimPrediction:
    """The model's prediction by the aim: the mean with its standard error, 95 % confidence
    and prediction intervals (None without residual degrees of freedom), the residual standard
    deviation of one run and the residual degrees of freedom."""

    predicted: float
    se_mean: float | None
    ci_low: float | None
    ci_high: float | None
    pi_low: float | None
    pi_high: float | None
    residual_sd: float | None
    df: int


def aim_weights(values: np.ndarray, aim: RobustAim, goal: str) -> np.ndarray:
    """The weights (one row) that make the aim of `values` (one per noise level) their
    weighted sum."""
    count = len(values)
    weights = np.zeros((1, count))
    if aim.aim == "mean":
        return np.full((1, count), 1.0 / count)
    order = np.argsort(values, kind="stable")
    if aim.aim == "worst":
        weights[0, order[0] if goal == "maximize" else order[-1]] = 1.0
        return weights
    position = (count - 1) * float(aim.quantile or 0.0)
    below = int(np.floor(position))
    share = position - below
    weights[0, order[below]] += 1.0 - share
    weights[0, order[min(below + 1, count - 1)]] += share
    return weights


def aim_row(
    fitted: FittedModel, control: Mapping[str, Value], aim: RobustAim | None, goal: str
) -> np.ndarray:
    """The model row (one row) whose prediction is the aim of `control` across the noise
    levels; `aim` None is the mean."""
    rows = fitted.matrix(crossed([control], noise_scenarios(fitted.space)))
    means = np.asarray(fitted.results.predict(rows), dtype=float)
    return np.asarray(aim_weights(means, aim or RobustAim(), goal) @ rows)


def aim_prediction(
    fitted: FittedModel, control: Mapping[str, Value], aim: RobustAim | None, goal: str
) -> AimPrediction:
    """The prediction by the aim at a control configuration (module docstring)."""
    row = aim_row(fitted, control, aim, goal)
    frame = fitted.results.get_prediction(row).summary_frame(alpha=1.0 - CONFIDENCE)
    df = round(float(fitted.results.df_resid))
    residual = float(np.sqrt(fitted.results.scale)) if df > 0 else None
    return AimPrediction(
        predicted=float(frame["mean"].iloc[0]),
        se_mean=finite_or_none(frame["mean_se"].iloc[0]) if df > 0 else None,
        ci_low=finite_or_none(frame["mean_ci_lower"].iloc[0]),
        ci_high=finite_or_none(frame["mean_ci_upper"].iloc[0]),
        pi_low=finite_or_none(frame["obs_ci_lower"].iloc[0]),
        pi_high=finite_or_none(frame["obs_ci_upper"].iloc[0]),
        residual_sd=residual,
        df=df,
    )
