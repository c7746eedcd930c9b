"""The rules that lead a batch with a run of a configuration measured before, or with a
space-filling pick, instead of the point of highest expected improvement.

- promotion: with a fidelity, a recommendation only shorter runs have measured is measured at
  the full length first;
- final run: in the last `FINAL_SHARE` of a budget, the run of greatest knowledge gradient
  (`experiments.suggest.knowledge_gradient`) among a replicate of each contender and the point
  of highest expected improvement;
- challenge: the configuration of best mean that the recommendation passes over for its
  uncertainty alone is measured again, at most `MAX_CHALLENGE_RUNS` times (as SMAC's racing
  runs a challenger until it has as many runs as the incumbent);
- replicate: the incumbent, when the runner-up has a fair chance of being better and its
  uncertainty is twice what any new point is expected to gain;
- exploration: a search model that puts more than a third of its variance in the noise, whose
  expected improvement peaks on the region's faces, gets the next unrun point of a scrambled
  Sobol sequence instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.stats import norm
from sklearn.gaussian_process import GaussianProcessRegressor

from experiments.factors import FactorSpace, Value
from experiments.numbers import describe_config
from experiments.suggest.bayes import reasons
from experiments.suggest.bayes.incumbent import RECOMMENDATION_RISK, Incumbent, measured_again
from experiments.suggest.bayes.models import Models
from experiments.suggest.gaussian_process import (
    noise_variance,
    posterior_covariance,
    signal_variance,
)
from experiments.suggest.knowledge_gradient import recommendation_gain
from experiments.suggest.values import Suggestion

# The replicate rule: the incumbent is run at most this often, and only while the runner-up has
# at least this chance of being truly better.
MAX_REPLICATES = 2
_RUNNER_UP_CHANCE = 0.3
# ... only while the incumbent's uncertainty is this many times what a new point may gain, and
# not within this many runs of the last replicate: learning where the optimum is comes first.
_UNCERTAINTY_OVER_GAIN = 2.0
_REPLICATE_SPACING = 5
# A configuration of best mean that the recommendation passes over for its uncertainty is
# measured again until it has as many runs as the recommendation, at most this many, and not
# within this many runs of the last replicate.
MAX_CHALLENGE_RUNS = 3
_CHALLENGE_SPACING = 2
# The last share of a budget's trials in which the first pick of a batch is chosen for the
# recommendation at the end (the knowledge gradient).
FINAL_SHARE = 0.2
# Exploration: while the search's model puts more than this share of its variance in the noise
# ... once the runs leave this many degrees of freedom beyond the model's hyperparameters (a
# length scale per column, the signal and the noise): with fewer, noise and shape look alike.
_NOISE_SHARE_TO_EXPLORE = 1.0 / 3.0
_DEGREES_TO_EXPLORE = 10


def leading_run(
    models: Models,
    sign: float,
    first: list[Value] | None,
    point_types: Sequence[str],
    gain: float,
    final: bool,
) -> Suggestion | None:
    """The run of a configuration measured before that leads the batch, or None: a promotion,
    else (once noise can be judged) the final run near a budget's end, else a challenge or a
    replicate, each spaced from the last replicate. `first` is the point of highest expected
    improvement, `gain` the judge's expected improvement there."""
    lead = promotion(models, sign)
    if lead is not None or first is None or not models.judged:
        return lead
    if final:
        return final_run(models, first, sign)
    if "replicate" not in point_types[-_CHALLENGE_SPACING:]:
        lead = challenge(models, sign)
    if lead is None and "replicate" not in point_types[-_REPLICATE_SPACING:]:
        lead = replicate(models.space, models.incumbent, sign, gain)
    return lead


def promotion(models: Models, sign: float) -> Suggestion | None:
    """A full-length run of the recommendation when only shorter runs have measured it."""
    fidelity, deploy = models.fidelity, models.deploy
    if fidelity is None or models.space.key(deploy.config) in models.measured:
        return None
    reason = reasons.promotion(models.space, fidelity, deploy, sign)
    return deploy.measured_again(sign, reason, "full_length")


def challenge(models: Models, sign: float) -> Suggestion | None:
    """A replicate of the configuration of best mean when the recommendation passes it over
    for its uncertainty alone."""
    top, deploy = models.incumbent, models.deploy
    if top.config == deploy.config or top.runs >= min(deploy.runs, MAX_CHALLENGE_RUNS):
        return None
    return top.measured_again(sign, reasons.challenge(models.space, top, deploy, sign))


def replicate(
    space: FactorSpace, incumbent: Incumbent, sign: float, best_gain: float
) -> Suggestion | None:
    """A replicate of the incumbent when noise makes it uncertain."""
    if (
        incumbent.runs >= MAX_REPLICATES
        or incumbent.runner_up is None
        or incumbent.sd <= _UNCERTAINTY_OVER_GAIN * best_gain
    ):
        return None
    _, mean, sd = incumbent.runner_up
    spread = math.hypot(incumbent.sd, sd)
    chance = float(norm.cdf((mean - incumbent.mean) / spread)) if spread > 0 else 0.0
    if chance < _RUNNER_UP_CHANCE:
        return None
    reason = reasons.replicate(space, incumbent, incumbent.runner_up, chance, (sign, best_gain))
    return incumbent.measured_again(sign, reason)


def final_run(models: Models, pick: list[Value], sign: float) -> Suggestion | None:
    """A run of the contender whose measurement is expected to raise the true value of the
    recommendation most (the knowledge gradient), when that beats a run of `pick` (the
    point of highest expected improvement); None when it does not. With a fidelity the
    contenders run at the full length, and gains are compared per second of trial."""
    space, fidelity, contenders = models.space, models.fidelity, models.deploy.ranked
    rows = models.encoder.of_configs(contenders)
    run = models.encoder.features([pick])
    judged = run if fidelity is None else fidelity.targeted(run)
    mean, covariance, noise = posterior_covariance(models.model, np.vstack([rows, judged, run]))
    variance, m = np.diag(covariance), len(contenders)
    gains = [
        recommendation_gain(
            mean[:m], variance[:m], covariance[:m, j], variance[j] + noise, RECOMMENDATION_RISK
        )
        for j in range(m)
    ]
    # The pick contends too once run, unless its predicted means break a limit.
    members = list(range(m + 1 if all(g.slack(judged)[0] >= 0.0 for g in models.guards) else m))
    pick_gain = recommendation_gain(
        mean[members],
        variance[members],
        covariance[members, m + 1],
        variance[m + 1] + noise,
        RECOMMENDATION_RISK,
    )
    if fidelity is not None:
        cost = fidelity.cost(np.array([1.0, run[0, fidelity.column]]))
        pick_gain *= float(cost[0] / cost[1])
    # The contenders are never empty: the recommendation is always among them.
    j = int(np.argmax(gains))
    if gains[j] <= pick_gain:
        return None
    config, sd = contenders[j], math.sqrt(max(float(variance[j]), 0.0))
    again = space.key(config) in models.measured
    what = "again" if again else "at the full length"
    per = "" if fidelity is None else " per second of trial"
    where = describe_config(config, space.units)
    reason = reasons.final_run(where, what, per, (gains[j], pick_gain), sign * mean[j], sd)
    point_type = "replicate" if again else "full_length"
    return measured_again(config, sign * float(mean[j]), sd, reason, point_type)


def explores(models: Models, search: GaussianProcessRegressor, first: list[Value]) -> bool:
    """Whether the batch's first pick is a space-filling one: with noise judged, degrees of
    freedom to spare, the point of highest expected improvement on the faces and the search's
    model mostly noise."""
    # Why: a model that sees mostly noise is flat, and its expected improvement is highest
    # where the runs are farthest apart, at faces and corners, where its picks then stayed.
    return (
        models.judged
        and len(models.x_fit) - search.kernel_.theta.size >= _DEGREES_TO_EXPLORE
        and _on_faces(models.space, first)
        and noise_share(search) > _NOISE_SHARE_TO_EXPLORE
    )


def _on_faces(space: FactorSpace, values: Sequence[Value]) -> bool:
    """Whether more than half of the point's numeric factors are at an end of their range."""
    ends = [
        abs(f.encode(v)) > 1.0 - 1e-9
        for f, v in zip(space.factors, values, strict=True)
        if f.is_numeric
    ]
    return sum(ends) > len(ends) / 2


def noise_share(model: GaussianProcessRegressor) -> float:
    """The share of the model's variance it puts in the run-to-run noise."""
    noise = noise_variance(model)
    return noise / (noise + signal_variance(model))
