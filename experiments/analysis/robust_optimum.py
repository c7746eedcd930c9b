"""The optimum of a combined-array model: the control factors chosen, the noise factors varied.

One model of the control factors x and the noise factors z is fitted (Myers, Montgomery and
Anderson-Cook, "Response Surface Methodology", 3rd ed., ch. 10). A control configuration is
judged by crossing it with every noise scenario (`experiments.robust.noise_scenarios`),
predicting each crossing with the fitted model and reducing those predictions with the aim
(`experiments.robust.aggregate`): their mean (with a numeric noise factor at its coded -1 and
+1, MMA's mean model E_z(y)), a quantile, or the worst. A `Crossing` turns what the optimum
search needs (predictors, the region, the factor constraints, the candidates) into the same
things over the control factors.

Rules:
- A limit on another response must hold at every noise level (the highest prediction across
  them for a `<=` limit, the lowest for `>=`): a limit is a promise the configuration keeps
  whatever the noise does, whatever the aim of the objective.
- A desirability objective reduces the overall desirability of each scenario with the aim.
- A control configuration lies in the region when every crossing does (no prediction the
  optimum rests on is an extrapolation), and meets a factor constraint that names a noise
  factor when every crossing meets it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from experiments.analysis.aim_prediction import aim_weights
from experiments.analysis.model import CONFIDENCE, FittedModel
from experiments.analysis.optimize import (
    DesirabilityGoal,
    Predictor,
    Region,
    overall_desirability,
)
from experiments.analysis.results import RobustLevel, RobustOptimum
from experiments.constraints import Constraint
from experiments.factors import Config, Factor, FactorSpace, Value
from experiments.numbers import finite_or_none
from experiments.robust import RobustAim, aggregate, control_space, crossed, noise_scenarios
from experiments.terms import columns_of, main_columns

# Crossed rows predicted at once: bounds the memory of a large lattice times many scenarios.
_ROWS_AT_ONCE = 50_000


@dataclass(frozen=True)
class Interval:
    """A predicted mean with its 95 % confidence and prediction intervals."""

    predicted: float
    ci_low: float | None
    ci_high: float | None
    pi_low: float | None
    pi_high: float | None


class Crossing:
    """The control configurations of a space with noise factors, each crossed with every
    noise scenario (control-major rows, as `experiments.robust.crossed`)."""

    def __init__(self, space: FactorSpace) -> None:
        self.space = space
        self.control = control_space(space)
        self.scenarios = noise_scenarios(space)
        owner = [i for i, f in enumerate(space.factors) for _ in range(columns_of(f))]
        noise = {i for i, f in enumerate(space.factors) if f.noise}
        self._noise_columns = [j for j, i in enumerate(owner) if i in noise]
        self._control_columns = [j for j, i in enumerate(owner) if i not in noise]
        self._scenario_mains = main_columns(
            space, [{**_any_config(space), **s} for s in self.scenarios]
        )[:, self._noise_columns]
        self._scenario_coded = np.array(
            [[f.encode(s[f.name]) for _, f in _noise(space)] for s in self.scenarios]
        )

    @property
    def size(self) -> int:
        """Number of noise scenarios."""
        return len(self.scenarios)

    def mains(self, control_mains: np.ndarray) -> np.ndarray:
        """Main-effect columns of the full space: every control row at every scenario."""
        count = len(control_mains)
        rows = np.empty((count * self.size, len(self._control_columns) + len(self._noise_columns)))
        rows[:, self._control_columns] = np.repeat(control_mains, self.size, axis=0)
        rows[:, self._noise_columns] = np.tile(self._scenario_mains, (count, 1))
        return rows

    def table(self, predict: Predictor, control_mains: np.ndarray) -> np.ndarray:
        """Predictions, one row per control configuration, one column per scenario."""
        step = max(1, _ROWS_AT_ONCE // self.size)
        parts = [
            np.asarray(predict(self.mains(control_mains[i : i + step])), dtype=float)
            for i in range(0, len(control_mains), step)
        ]
        values = np.concatenate(parts) if parts else np.zeros(0)
        return values.reshape(len(control_mains), self.size)

    def reduced(self, predict: Predictor, aim: RobustAim, goal: str) -> Predictor:
        """A predictor of control configurations: the aim of the predictions across levels."""
        return lambda mains: aggregate(self.table(predict, mains), aim, goal)

    def bounded(self, predict: Predictor, operator: str) -> Predictor:
        """A predictor for a limit: the prediction across levels that decides it (the highest
        for `<=`, the lowest for `>=`), so the limit holds at every noise level."""
        if operator == "<=":
            return lambda mains: self.table(predict, mains).max(axis=1)
        return lambda mains: self.table(predict, mains).min(axis=1)

    def desirable(self, goals: Sequence[DesirabilityGoal], aim: RobustAim) -> Predictor:
        """A predictor of control configurations: the aim of the overall desirability of each
        scenario."""
        return lambda mains: aggregate(self.overall(goals, mains), aim, "maximize")

    def overall(self, goals: Sequence[DesirabilityGoal], mains: np.ndarray) -> np.ndarray:
        """The overall desirability per control row (rows) and scenario (columns)."""
        each = np.stack([np.asarray(g.of(self.table(g.predict, mains))) for g in goals], axis=-1)
        importances = [g.importance for g in goals]
        return np.asarray(overall_desirability(each, importances)).reshape(len(mains), self.size)

    def region(self, contains: Region) -> Region:
        """Coded control rows -> whether every crossing lies in `contains` (a mask over coded
        rows of the full space)."""
        control = [i for i, f in enumerate(self.space.factors) if not f.noise]
        noise = [i for i, _ in _noise(self.space)]

        def inside(coded: np.ndarray) -> np.ndarray:
            full = np.empty((len(coded) * self.size, len(self.space.factors)))
            full[:, control] = np.repeat(coded, self.size, axis=0)
            full[:, noise] = np.tile(self._scenario_coded, (len(coded), 1))
            mask: np.ndarray = np.asarray(contains(full), dtype=bool)
            return mask.reshape(len(coded), self.size).all(axis=1)

        return inside

    def constraints(self, constraints: Sequence[Constraint]) -> list[Constraint]:
        """The factor constraints over the control factors: one naming a noise factor becomes
        one constraint per scenario, with that scenario's values put in."""
        noise = {f.name for f in self.space.factors if f.noise}
        kept: list[Constraint] = []
        for constraint in constraints:
            if not noise & set(constraint.factors):
                kept.append(constraint)
                continue
            for scenario in self.scenarios:
                fixed = _substituted(constraint, scenario)
                if fixed not in kept:
                    kept.append(fixed)
        return kept

    def candidates(self, candidates: Sequence[Sequence[Value]]) -> list[list[Value]]:
        """The candidate values of the control factors, from those of every factor."""
        return [list(c) for f, c in zip(self.space.factors, candidates, strict=True) if not f.noise]

    def held(self, scenario: int, *, centred: bool) -> Config:
        """Where a single configuration holds the noise factors: at scenario `scenario`;
        `centred`, each numeric noise factor without explicit levels at the centre of its
        range instead (the model's prediction there is the mean over its two ends when the
        model has no square of it: MMA's mean model)."""
        held = dict(self.scenarios[scenario])
        if centred:
            held |= {
                f.name: f.decode(0.0)
                for _, f in _noise(self.space)
                if f.is_numeric and f.levels is None
            }
        return held

    def control_config(self, config: Mapping[str, Value]) -> Config:
        """The control factors' settings of a configuration."""
        return {name: config[name] for name in self.control.names}


def _noise(space: FactorSpace) -> list[tuple[int, Factor]]:
    return [(i, f) for i, f in enumerate(space.factors) if f.noise]


def _any_config(space: FactorSpace) -> Config:
    """Some setting of every factor: the noise columns of the scenarios are all that is kept."""
    return {f.name: (f.levels[0] if f.levels else f.bounds[0]) for f in space.factors}


def _substituted(constraint: Constraint, scenario: Mapping[str, Value]) -> Constraint:
    """The constraint with the scenario's noise values put in: a term of noise factors only
    joins the constant, a product with a control factor keeps that factor."""
    terms: dict[tuple[str, ...], float] = {}
    constant = constraint.constant
    for names, coefficient in constraint.terms:
        value = coefficient * float(np.prod([float(scenario[n]) for n in names if n in scenario]))
        rest = tuple(n for n in names if n not in scenario)
        if rest:
            terms[rest] = terms.get(rest, 0.0) + value
        else:
            constant += value
    text = f"{constraint.text} at " + ", ".join(f"{k} = {v}" for k, v in scenario.items())
    return replace(constraint, text=text, terms=tuple(terms.items()), constant=constant)


def robust_report(
    fitted: FittedModel,
    crossing: Crossing,
    config: Config,
    aim: RobustAim,
    goal: str,
    scores: np.ndarray | None = None,
) -> tuple[RobustOptimum, Interval]:
    """The control optimum `config` across the noise levels, and the prediction that stands
    for it: the aim's weighted sum of the scenarios' model rows (`aim_prediction.aim_weights`:
    their average for the mean, the worst scenario's row, or the two a quantile falls between),
    a linear contrast whose intervals are exact. `scores` are what the aim reduced when not the
    response's predictions (the overall desirability of each scenario, maximized)."""
    rows = fitted.matrix(crossed([config], crossing.scenarios))
    each = _intervals(fitted, rows)
    means = np.array([i.predicted for i in each])
    reduced, towards = (means, goal) if scores is None else (np.asarray(scores), "maximize")
    value = float(aggregate(reduced[None, :], aim, towards)[0])
    attained = int(np.argmin(np.abs(reduced - value)))
    standing = _intervals(fitted, aim_weights(reduced, aim, towards) @ rows)[0]
    report = RobustOptimum(
        aim=aim.text(towards),
        aim_value=value,
        levels=[
            RobustLevel(
                scenario=dict(scenario),
                predicted=i.predicted,
                ci_low=i.ci_low,
                ci_high=i.ci_high,
                pi_low=i.pi_low,
                pi_high=i.pi_high,
            )
            for scenario, i in zip(crossing.scenarios, each, strict=True)
        ],
        sd_across_levels=float(np.std(means)),
        held=crossing.held(attained, centred=aim.aim == "mean"),
    )
    return report, standing


def _intervals(fitted: FittedModel, rows: np.ndarray) -> list[Interval]:
    frame = fitted.results.get_prediction(rows).summary_frame(alpha=1.0 - CONFIDENCE)
    return [
        Interval(
            predicted=float(frame["mean"].iloc[k]),
            ci_low=finite_or_none(frame["mean_ci_lower"].iloc[k]),
            ci_high=finite_or_none(frame["mean_ci_upper"].iloc[k]),
            pi_low=finite_or_none(frame["obs_ci_lower"].iloc[k]),
            pi_high=finite_or_none(frame["obs_ci_upper"].iloc[k]),
        )
        for k in range(len(rows))
    ]
