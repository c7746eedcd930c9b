"""Today's configuration beside the optimum and the configuration to deploy.

The baseline is what the cluster runs now (`experiments.baseline`). The view says what its runs
measured and what the fitted model predicts there (by the robust aim with noise factors), and how
far the model's predicted optimum and the configuration to deploy are predicted to be from it,
in the response's units and in percent, so a report shows the gain a change would bring before a
confirmation on the cluster measures it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from experiments.analysis.aim_prediction import aim_prediction
from experiments.analysis.model import FittedModel
from experiments.factors import Config, FactorSpace
from experiments.numbers import describe_config, significant
from experiments.robust import RobustAim

__all__ = ["BaselineView", "Gain", "baseline_view"]

_DIGITS = 4


@dataclass(frozen=True)
class Gain:
    """How much better `of` ("the predicted optimum", "the configuration to deploy") is
    predicted to be than the baseline: `predicted` in the response's units, positive when
    better for the goal, and `percent` of the baseline's prediction (None when that is 0)."""

    of: str
    config: Config
    predicted: float
    percent: float | None


@dataclass(frozen=True)
class BaselineView:
    """The baseline's configuration, its runs (`runs`, their `measured_mean`), the model's
    prediction there with its 95 % confidence interval, the predicted gains of the optimum and
    of the configuration to deploy over it, and all of it in one sentence (`summary`)."""

    config: Config
    runs: int
    measured_mean: float | None
    predicted: float | None
    ci_low: float | None
    ci_high: float | None
    gains: list[Gain]
    summary: str

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)


def baseline_view(
    space: FactorSpace,
    baseline: Config,
    *,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    goal: str,
    response: str,
    model: FittedModel | None,
    aim: RobustAim | None = None,
    against: Sequence[tuple[str, Config]] = (),
) -> BaselineView:
    """The view of `baseline` (a control configuration): the runs among `configs` (with their
    `values` of `response`) at it, and with a fitted `model` its prediction and the predicted
    gain of each configuration in `against` (a label and a control configuration)."""
    control = [f.name for f in space.factors if not f.noise]
    at = [
        float(v)
        for c, v in zip(configs, values, strict=True)
        if all(c.get(n) == baseline[n] for n in control)
    ]
    measured = float(np.mean(at)) if at else None
    sign = 1.0 if goal == "maximize" else -1.0
    predicted = ci_low = ci_high = None
    gains: list[Gain] = []
    if model is not None:
        here = aim_prediction(model, baseline, aim, goal)
        predicted, ci_low, ci_high = here.predicted, here.ci_low, here.ci_high
        for label, config in against:
            there = aim_prediction(model, config, aim, goal).predicted
            gain = sign * (there - predicted)
            percent = 100.0 * gain / abs(predicted) if predicted else None
            gains.append(Gain(label, dict(config), gain, percent))
    summary = _summary(space, baseline, response, len(at), measured, predicted, gains)
    return BaselineView(
        config=dict(baseline),
        runs=len(at),
        measured_mean=measured,
        predicted=predicted,
        ci_low=ci_low,
        ci_high=ci_high,
        gains=gains,
        summary=summary,
    )


def _summary(
    space: FactorSpace,
    baseline: Config,
    response: str,
    runs: int,
    measured: float | None,
    predicted: float | None,
    gains: Sequence[Gain],
) -> str:
    """E.g. "Today's configuration (nodes 3, ...) measured 812 tps (1 run); the model predicts
    830 there. The configuration to deploy is predicted 21.4 % better (+178 tps)."."""
    parts = [f"Today's configuration ({describe_config(baseline, space.units)})"]
    if measured is not None:
        times = "1 run" if runs == 1 else f"mean of {runs} runs"
        parts.append(f" measured {response} {significant(measured, _DIGITS)} ({times})")
    else:
        parts.append(" is not measured yet")
    if predicted is not None:
        parts.append(f"; the model predicts {significant(predicted, _DIGITS)} there")
    sentences = ["".join(parts) + "."]
    for gain in gains:
        word = "better" if gain.predicted >= 0 else "worse"
        amount = (
            f"{significant(abs(gain.percent), 3)} % {word}" if gain.percent is not None else word
        )
        sign = "+" if gain.predicted >= 0 else "-"
        sentences.append(
            f"{gain.of[0].upper()}{gain.of[1:]} is predicted {amount}"
            f" ({sign}{significant(abs(gain.predicted), _DIGITS)} {response})."
        )
    return " ".join(sentences)
