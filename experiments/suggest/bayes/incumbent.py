"""The incumbent: of the configurations run, the one the model puts best, with the runner-up;
judged by its mean (where the search starts) or by its mean less one standard deviation (the
recommendation, `RECOMMENDATION_RISK`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor

from experiments.factors import Config, FactorSpace
from experiments.suggest.bayes import reasons
from experiments.suggest.gaussian_process import mean_and_sd
from experiments.suggest.values import Recommendation, Suggestion

if TYPE_CHECKING:
    from experiments.suggest.bayes.limits import Guard

MODEL_NAME = "gaussian process"
# The recommendation is the run configuration of best mean less this many standard deviations
# of that mean: a configuration measured once beside well-measured ones must be better by more
# than its own uncertainty to be what the user deploys.
RECOMMENDATION_RISK = 1.0
# How many of the configurations run, best first, contend for the recommendation at a
# budget's end (and where expected improvement's search starts).
CONTENDERS = 16


@dataclass(frozen=True)
class Incumbent:
    """The observed configuration of best predicted mean less `risk` standard deviations
    (among those predicted to meet every limit with `risk` standard deviations to spare, when any
    is; else among those predicted to meet them), with the runner-up, for the replicate rule."""

    config: Config
    mean: float
    sd: float
    runs: int
    observed: float  # the mean of its measurements (maximized sense)
    runner_up: tuple[Config, float, float] | None
    meets_limits: bool
    # The best by the same judgement, at most CONTENDERS, that meet the limits when any does:
    # where EI's search starts and what contends for the recommendation at a budget's end.
    ranked: tuple[Config, ...]

    @classmethod
    def of(
        cls,
        space: FactorSpace,
        observed: Sequence[Config],
        target: np.ndarray,
        model: GaussianProcessRegressor,
        x: np.ndarray,
        guards: Sequence[Guard],
        counted: np.ndarray | None = None,
        risk: float = 0.0,
    ) -> Incumbent:
        """The incumbent of the runs `observed` (features `x`, responses `target`); `counted`
        marks the runs its count and mean are of (None: all)."""
        keys = [space.key(c) for c in observed]
        first = {k: i for i, k in reversed(list(enumerate(keys)))}
        distinct = sorted(first.values())
        mean, sd = mean_and_sd(model, x[distinct])
        slack = np.full(len(distinct), np.inf)
        for guard in guards:
            slack = np.minimum(slack, guard.slack(x[distinct]))
        ok, spared = slack >= 0.0, slack >= risk
        # Why the spare: a recommendation at a limit's edge broke it far more often.
        if spared.any():
            ok = spared
        judged = mean - risk * sd
        mean_ok = np.where(ok, judged, -np.inf) if ok.any() else judged
        order = np.argsort(-mean_ok, kind="stable")
        top = int(order[0])
        runner = None
        if len(order) > 1 and np.isfinite(mean_ok[order[1]]):
            j = int(order[1])
            runner = (observed[distinct[j]], float(mean[j]), float(sd[j]))
        mine = [i for i, k in enumerate(keys) if k == keys[distinct[top]]]
        if counted is not None and counted[mine].any():
            mine = [i for i in mine if counted[i]]
        return cls(
            config=observed[distinct[top]],
            mean=float(mean[top]),
            sd=float(sd[top]),
            runs=len(mine),
            observed=float(np.mean(target[mine])),
            runner_up=runner,
            meets_limits=bool(ok[top]) and bool(guards),
            ranked=tuple(
                observed[distinct[int(i)]] for i in order[:CONTENDERS] if np.isfinite(mean_ok[i])
            ),
        )

    def recommendation(self, space: FactorSpace, sign: float, note: str = "") -> Recommendation:
        """The incumbent as the answer to deploy, with the sentences that say why (and `note`)."""
        return Recommendation(
            config=dict(self.config),
            predicted=sign * self.mean,
            uncertainty=self.sd,
            runs=self.runs,
            observed=sign * self.observed,
            predicted_by=MODEL_NAME,
            reason=reasons.deploy(space, self, sign) + note,
        )

    def measured_again(self, sign: float, reason: str, point_type: str = "replicate") -> Suggestion:
        """A replicate of this configuration, for `reason`."""
        return measured_again(self.config, sign * self.mean, self.sd, reason, point_type)


def measured_again(
    config: Config, predicted: float, sd: float, reason: str, point_type: str
) -> Suggestion:
    """A run of a configuration measured before (or, with a fidelity, at another length)."""
    return Suggestion(
        config=dict(config),
        strategy="bayes",
        point_type=point_type,
        reason=reason,
        predicted=predicted,
        uncertainty=sd,
        expected_improvement=None,
        predicted_by=MODEL_NAME,
    )
