"""The single-step strategies: augment a factorial, climb the path of steepest ascent, replicate
the incumbent, and Bayesian optimization. Each runs one algorithm of its own module on the
problem it was given; `auto` (its own module) chooses among them."""

from __future__ import annotations

from experiments.suggest.augment import augment
from experiments.suggest.base import Strategy
from experiments.suggest.bayes import CANDIDATES, bayes_batch
from experiments.suggest.bayes.models import unmodellable
from experiments.suggest.initial import space_filling
from experiments.suggest.noise import start_size
from experiments.suggest.replicate import replicate_incumbent, replicate_robust
from experiments.suggest.steepest_ascent import steepest_ascent
from experiments.suggest.values import Plan


class Augment(Strategy):
    """Axial and centre points that complete a two-level factorial into a central composite."""

    name = "augment"
    summary = (
        "axial and centre points that complete a two-level factorial into a central composite"
        " design"
    )

    def _plan(self, count: int) -> Plan:
        """The composite design's new points, the first `count` of them."""
        problem = self.problem
        found = augment(problem.space, self.runs_.configs, constraints=problem.constraints)
        return Plan(
            self.name,
            "augment",
            "Axial and centre points complete the two-level factorial into a central composite"
            " design, which can estimate the curvature of the response.",
            found[:count],
        )


class SteepestAscent(Strategy):
    """Points along the path of steepest ascent of the first-order model."""

    name = "steepest_ascent"
    summary = "points along the path of steepest ascent of the first-order model"

    def _plan(self, count: int) -> Plan:
        """`count` steps along the path."""
        found = steepest_ascent(
            self.problem.space,
            self.runs_.configs,
            self.runs_.values,
            goal=self.problem.goal,
            count=count,
            constraints=self.problem.constraints,
        )
        return Plan(
            self.name,
            "steepest_ascent",
            "Points along the path of steepest ascent of the first-order model.",
            found,
        )


class Replicate(Strategy):
    """Replicates of the best configuration so far."""

    name = "replicate"
    summary = "replicates of the best configuration so far"

    def _plan(self, count: int) -> Plan:
        """`count` replicates of the incumbent (with noise factors, of the best control
        configuration by the problem's aim)."""
        if self.problem.noisy:
            found = replicate_robust(self.problem, self.runs_, count)
            return Plan(
                self.name,
                "replicate",
                "Replicates of the best control configuration so far.",
                found,
            )
        found = replicate_incumbent(
            self.problem.space,
            self.runs_.configs,
            self.runs_.values,
            goal=self.problem.goal,
            count=count,
        )
        return Plan(self.name, "replicate", "Replicates of the best configuration so far.", found)


class Bayes(Strategy):
    """Bayesian optimization: a Gaussian process on the runs and expected improvement
    (`experiments.suggest.bayes`), started by a space-filling design while there is nothing
    to model."""

    name = "bayes"
    summary = (
        "Bayesian optimization: a Gaussian process of the runs and expected improvement, from a"
        " space-filling start"
    )
    searches = True
    closes_loop = True
    # How many quasi-random points start the search of a lattice too large to score whole.
    candidates = CANDIDATES

    def _plan(self, count: int) -> Plan:
        """A space-filling start, or the batch of highest expected improvement."""
        if self.models_ is None:
            return self.start()
        return self.batch(
            count,
            explanation="Bayesian optimization: a Gaussian process fitted to the runs picks the"
            " configurations of highest expected improvement.",
        )

    def start(self) -> Plan:
        """The space-filling start, while the runs cannot be modelled."""
        runs, problem = self.runs_, self.problem
        n = start_size(problem, runs.configs)
        what = "control configurations" if problem.noisy else "runs"
        reason = (
            f"Start of Bayesian optimization: {n} space-filling {what} (maximin Latin"
            " hypercube) give the Gaussian process a first picture of the whole region."
        )
        already = [*runs.configs, *runs.failed]
        found = space_filling(
            problem.space, n, problem.constraints, problem.seed, reason, already=already
        )
        return Plan(self.name, "initial", reason, found)

    def batch(self, count: int, *, explanation: str) -> Plan:
        """The batch of highest expected improvement as a plan of stage "bayes", with its
        largest expected improvement (for stopping rules) and the recommendation."""
        if self.models_ is None:
            raise unmodellable(self.problem.space, self.runs_)
        found = bayes_batch(
            self.problem,
            self.models_,
            self.runs_,
            count,
            budget_left=self.budget,
            time_left=self.time_left,
            candidates=self.candidates,
        )
        gains = [s.expected_improvement for s in found if s.expected_improvement is not None]
        return Plan(
            self.name,
            "bayes",
            explanation,
            found,
            expected_improvement=max(gains, default=None),
            recommendation=self.recommend(),
        )
