"""The recommendation in a space with noise factors: a control configuration judged across the
noise levels.

Of the control configurations measured at every noise scenario (`experiments.robust`), the one
whose robust aim (`aggregate`: the mean, a quantile or the worst over the scenarios) of the
judge's mean less one standard deviation at each scenario (`RECOMMENDATION_RISK`, today's rule
per scenario) is best. While none is measured at every scenario, the ones measured at the most
scenarios contend, and the reason says so. With limits, the contenders predicted to meet every
limit at every scenario with one standard deviation to spare are preferred, then those predicted
to meet them. Its `config` holds the control factors only; `predicted` is the aim of the means,
`observed` the aim of the scenarios' measured means, `uncertainty` the standard deviation at the
scenario that decides a worst or quantile aim, or the scenarios' average one for the mean (an
upper bound of the average's: the scenarios' predictions are positively correlated).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from experiments.factors import Config
from experiments.numbers import describe_config, format_value
from experiments.robust import aggregate, crossed, noise_factors, noise_scenarios
from experiments.suggest.bayes import reasons
from experiments.suggest.bayes.incumbent import MODEL_NAME, RECOMMENDATION_RISK
from experiments.suggest.bayes.models import Models
from experiments.suggest.gaussian_process import mean_and_sd
from experiments.suggest.noise import MeasuredControl, measured_controls
from experiments.suggest.problem import Problem
from experiments.suggest.values import Recommendation, Runs

__all__ = ["robust_recommendation"]


def robust_recommendation(problem: Problem, runs: Runs, models: Models) -> Recommendation | None:
    """What to deploy in a space with noise factors (module doc); None while no run was at a
    noise scenario (every run between a numeric noise factor's ends)."""
    scenarios = noise_scenarios(problem.space)
    controls = _controls(problem, runs, models)
    if not controls:
        return None
    most = max(len(c.means) for c in controls)
    contenders = [c for c in controls if len(c.means) == most]
    configs = crossed([c.config for c in contenders], scenarios)
    x = models.encoder.of_configs(_targeted(models, configs))
    mean, sd = mean_and_sd(models.model, x)
    shape = (len(contenders), len(scenarios))
    mean, sd = mean.reshape(shape), sd.reshape(shape)
    sign, goal, aim = problem.sign, problem.goal, problem.aim
    judged = aggregate(sign * (mean - RECOMMENDATION_RISK * sd), aim, goal)
    ok = _within_limits(models, x, shape)
    score = np.where(ok, sign * judged, -np.inf) if ok.any() else sign * judged
    top = int(np.argmax(score))
    best, note = _counted(problem, runs, models, contenders[top])
    means = sign * mean[top]
    predicted = float(aggregate(means, aim, goal)[0])
    observed = float(aggregate(np.array(list(best.means.values())), aim, goal)[0])
    uncertainty = _uncertainty(means, sd[top], predicted, aim.aim)
    reason = _reason(problem, best, (means, float(judged[top])), scenarios, len(contenders))
    if bool(ok[top]) and bool(models.guards):
        reason += " It is predicted to meet every limit at every noise level."
    reason += note
    return Recommendation(
        config=best.config,
        predicted=predicted,
        uncertainty=uncertainty,
        runs=best.runs,
        observed=observed,
        predicted_by=MODEL_NAME,
        reason=reason,
    )


def _controls(problem: Problem, runs: Runs, models: Models) -> list[MeasuredControl]:
    """Every control configuration run, in the order first run, with the scenarios it was
    measured at; with a fidelity, every run judged at the full length, as without noise
    factors."""
    fidelity = models.fidelity
    if fidelity is None:
        return measured_controls(problem, runs)
    return measured_controls(problem, runs, at=fidelity.at_target)


def _counted(
    problem: Problem, runs: Runs, models: Models, best: MeasuredControl
) -> tuple[MeasuredControl, str]:
    """`best` counted by its full-length runs when it has any (with a fidelity), and the note
    that says at which length it was measured ("" without a fidelity)."""
    fidelity = models.fidelity
    if fidelity is None:
        return best, ""
    full = measured_controls(problem, runs, full_only=fidelity.at_target)
    mine = [c for c in full if c.config == best.config]
    return (mine[0] if mine else best), reasons.fidelity_note(fidelity, bool(mine))


def _within_limits(models: Models, x: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Which contenders (rows of `shape`) are predicted to meet every limit at every scenario
    with one standard deviation to spare, or, when none is, to meet them at all."""
    slack = np.full(shape, np.inf)
    for guard in models.guards:
        slack = np.minimum(slack, guard.slack(x).reshape(shape))
    worst = slack.min(axis=1)
    spared = worst >= RECOMMENDATION_RISK
    return spared if spared.any() else worst >= 0.0


def _targeted(models: Models, configs: list[Config]) -> list[Config]:
    """The configurations at the fidelity's full length, where they are judged."""
    if models.fidelity is None:
        return configs
    return [models.fidelity.at_target(c) for c in configs]


def _uncertainty(means: np.ndarray, sd: np.ndarray, predicted: float, aim: str) -> float:
    """The standard deviation reported with the aim (module doc)."""
    if aim == "mean":
        return float(sd.mean())
    return float(sd[int(np.argmin(np.abs(means - predicted)))])


def _reason(
    problem: Problem,
    best: MeasuredControl,
    judged: tuple[np.ndarray, float],
    scenarios: Sequence[Config],
    contenders: int,
) -> str:
    """Why `best` is deployed: the aim, its value, and the range of the means across the noise
    levels."""
    means, value = judged
    space, goal = problem.space, problem.goal
    names = ", ".join(f.name for f in noise_factors(space))
    where = describe_config(best.config, space.units)
    if len(best.means) == len(scenarios):
        among = f"of the {contenders} control configuration(s) measured at every {names} level"
    else:
        among = (
            f"no control configuration is measured at every {names} level yet; of the"
            f" {contenders} measured at {len(best.means)} of the {len(scenarios)}"
        )
    low, high = int(np.argmin(means)), int(np.argmax(means))
    spare = "less" if goal == "maximize" else "plus"
    return (
        f"Deploy {where}: {among}, it is best by {problem.aim.text(goal)} of the Gaussian"
        f" process's mean {spare} one standard deviation ({format_value(value)}). Across"
        f" {names} levels the model's means there range from {format_value(float(means[low]))}"
        f" ({describe_config(scenarios[low])}) to {format_value(float(means[high]))}"
        f" ({describe_config(scenarios[high])}); {best.runs} run(s) measured it. A noise factor"
        " is not chosen: the answer holds across its levels."
    )
