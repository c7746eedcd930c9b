"""The contract of a suggestion strategy (`Strategy`), in the style of a scikit-learn estimator:
configured with a `Problem`, `fit` to the runs (the Gaussian processes every strategy shares
are fitted there, once), then asked to `suggest`, `predict` and `recommend` from what it fitted.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import ClassVar, Self

from experiments.errors import DomainError
from experiments.factors import Config, Value
from experiments.numbers import describe_config, format_value
from experiments.suggest.bayes.incumbent import MODEL_NAME
from experiments.suggest.bayes.models import Models
from experiments.suggest.bayes.robust_deploy import robust_recommendation
from experiments.suggest.noise import control_of, crossed_plan
from experiments.suggest.problem import Problem
from experiments.suggest.values import Plan, Recommendation, Runs


class NotFitted(DomainError):
    """A strategy asked to suggest, predict or recommend before it was fitted to the runs."""

    def __init__(self, name: str) -> None:
        super().__init__(
            "strategy", f"{name} must be fitted to the runs (fit) before it is asked anything"
        )


class Strategy(ABC):
    """A way of choosing the next runs.

    ``Bayes(Problem(space, goal="minimize", seed=3), budget=20).fit(runs).suggest(4)``

    `budget` is the number of trials the caller can still afford (None: unlimited); a strategy
    that plans whole designs (`auto`) chooses its path by it. `time_left` is, with a budget of
    trial time, the share of it not yet spent (None: no such budget); Bayesian optimization
    plays the end of either budget for the final recommendation.

    `fit` sets `runs_` and `models_`: the Gaussian processes of the runs (None while they cannot
    be modelled: fewer than two, or all equal), which predict every suggestion a strategy has no
    model of its own for, and give the recommendation. Each subclass names itself in `name`, the
    word clients use, says what it does in `summary`, and is listed in
    `experiments.suggest.STRATEGIES`; it implements `_plan`.
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    # Whether its suggestions need the search's model besides the judge (Bayesian optimization).
    searches: ClassVar[bool] = False
    # Whether it can drive a closed loop alone: it keeps choosing until its budget or a stopping
    # rule, and says when to stop; the others take one step a person asked for.
    closes_loop: ClassVar[bool] = False

    def __init__(
        self, problem: Problem, *, budget: int | None = None, time_left: float | None = None
    ) -> None:
        self.problem = problem
        self.budget = budget
        self.time_left = time_left

    def fit(self, runs: Runs) -> Self:
        """Fit the models to the runs so far; returns the strategy itself, for chaining."""
        self.models_ = Models.fitted(self.problem, runs, search=self.searches)
        self.runs_ = runs
        return self

    def suggest(self, count: int) -> Plan:
        """The next runs, at most `count` of them where the strategy picks one by one, each with
        its prediction and reason, named by the strategy (never a configuration whose trial
        failed); or, in `Plan.stop_reason`, why nothing is worth running. With noise factors
        `count` counts control configurations, each run at every noise level
        (`experiments.suggest.noise`): every strategy's plan is crossed here."""
        self._check_fitted()
        plan = crossed_plan(self.problem, self._plan(count), self.runs_.configs)
        space = self.problem.space
        failed = {space.key(space.check_config(c, in_region=False)) for c in self.runs_.failed}
        kept = [s for s in plan.suggestions if space.key(s.config) not in failed]
        plan = dataclasses.replace(plan, suggestions=kept)
        missing = [s for s in plan.suggestions if s.predicted is None]
        filled = iter(self.predict([s.config for s in missing]) or [])
        suggestions = []
        for s in plan.suggestions:
            if s.predicted is None and self.models_ is not None:
                mean, sd = next(filled)
                s = dataclasses.replace(s, predicted=mean, uncertainty=sd, predicted_by=MODEL_NAME)
            suggestions.append(dataclasses.replace(s, strategy=self.name))
        return dataclasses.replace(plan, strategy=self.name, suggestions=suggestions)

    def predict(self, configs: Sequence[Mapping[str, Value]]) -> list[tuple[float, float]] | None:
        """The Gaussian process's mean and standard deviation of the mean at `configs`; None
        while the runs cannot be modelled."""
        self._check_fitted()
        if self.models_ is None:
            return None
        return self.models_.predict(configs, self.problem.sign)

    def recommend(self) -> Recommendation | None:
        """What to deploy now: the run configuration of best Gaussian-process mean less one
        standard deviation (`experiments.suggest.bayes`), or the first measured while the runs
        cannot be modelled; None before any run succeeded. With noise factors, a control
        configuration judged across the noise levels by the problem's robust aim
        (`experiments.suggest.bayes.robust_deploy`)."""
        self._check_fitted()
        return recommended(self.problem, self.runs_, self.models_)

    @abstractmethod
    def _plan(self, count: int) -> Plan:
        """The strategy's own plan (suggestions without a prediction are predicted by
        `models_`)."""

    def _check_fitted(self) -> None:
        if not hasattr(self, "runs_"):
            raise NotFitted(self.name)


def recommended(problem: Problem, runs: Runs, models: Models | None) -> Recommendation | None:
    """The recommendation of `models` fitted to `runs` (with noise factors, robust across their
    levels); while there are none (or, with noise factors, no run is at a noise level), the
    first run measured (one run, or every run equal: the first is as good as any; with noise
    factors its control configuration); None without runs."""
    if models is not None and not problem.noisy:
        return models.recommendation(problem.sign)
    # With noise factors, runs none of which is at a noise level fall to the first run's.
    found = None if models is None else robust_recommendation(problem, runs, models)
    if found is not None:
        return found
    if len(runs) == 0:
        return None
    space = problem.space
    pick = control_of if problem.noisy else _whole
    config, value = pick(problem, runs.configs[0]), float(runs.values[0])
    note = (
        " A noise factor is not chosen: the answer holds its control factors only."
        if problem.noisy
        else ""
    )
    why = (
        "no model can be fitted yet (one run, or every run measured the same)"
        if models is None
        else "no run is at a noise level yet, where control configurations are judged"
    )
    reason = (
        f"Deploy {describe_config(config, space.units)}: it measured {format_value(value)}, and"
        f" {why}.{note}"
    )
    same = [c for c in runs.configs if pick(problem, c) == config]
    return Recommendation(config, value, None, len(same), value, None, reason)


def _whole(problem: Problem, config: Mapping[str, object]) -> Config:
    return problem.space.check_config(config, in_region=False)
