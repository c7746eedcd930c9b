"""The single-step strategies: augment a factorial, climb the path of steepest ascent, replicate
the incumbent, and Bayesian optimization. Each configures one algorithm of `sequential` or
`bayes` with the problem it was given; `auto` (its own module) chooses among them."""

from __future__ import annotations

import numpy as np

from experiments.suggest.augment import augment
from experiments.suggest.base import Strategy
from experiments.suggest.bayes import bayes_batch
from experiments.suggest.initial import initial_runs, space_filling
from experiments.suggest.replicate import replicate_incumbent
from experiments.suggest.steepest_ascent import steepest_ascent
from experiments.suggest.values import Plan


class Augment(Strategy):
    """Axial and centre points that complete a two-level factorial into a central composite."""

    name = "augment"

    def suggest(self, count: int) -> Plan:
        """The composite design's new points, the first `count` of them."""
        found = augment(self.space, self.runs.configs, constraints=self.constraints)[:count]
        return Plan(
            self.name,
            "augment",
            "Axial and centre points complete the two-level factorial into a central composite"
            " design, which can estimate the curvature of the response.",
            found,
        )


class SteepestAscent(Strategy):
    """Points along the path of steepest ascent of the first-order model."""

    name = "steepest_ascent"

    def suggest(self, count: int) -> Plan:
        """`count` steps along the path."""
        found = steepest_ascent(
            self.space,
            self.runs.configs,
            self.runs.values,
            goal=self.goal,
            count=count,
            constraints=self.constraints,
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

    def suggest(self, count: int) -> Plan:
        """`count` replicates of the incumbent."""
        found = replicate_incumbent(
            self.space, self.runs.configs, self.runs.values, goal=self.goal, count=count
        )
        return Plan(self.name, "replicate", "Replicates of the best configuration so far.", found)


class Bayes(Strategy):
    """Bayesian optimization: a Gaussian process on the runs and expected improvement
    (`experiments.suggest.bayes`), started by a space-filling design while there is nothing
    to model."""

    name = "bayes"
    # How many quasi-random points start the search of a lattice too large to score whole.
    candidates = 4096

    def suggest(self, count: int) -> Plan:
        """A space-filling start, or the batch of highest expected improvement."""
        runs = self.runs
        if len(runs) < 2 or np.ptp(np.asarray(runs.values, dtype=float)) == 0:
            n = max(initial_runs(self.space) - len(runs), 1)
            reason = (
                f"Start of Bayesian optimization: {n} space-filling runs (maximin Latin"
                " hypercube) give the Gaussian process a first picture of the whole region."
            )
            already = [*runs.configs, *runs.failed]
            found = space_filling(
                self.space, n, self.constraints, self.seed, reason, already=already
            )
            return Plan(self.name, "initial", reason, found)
        return self.batch(
            count,
            strategy=self.name,
            explanation="Bayesian optimization: a Gaussian process fitted to the runs picks the"
            " configurations of highest expected improvement.",
        )

    def batch(self, count: int, *, strategy: str, explanation: str) -> Plan:
        """The batch of highest expected improvement as a plan of stage "bayes", with its
        largest expected improvement (for stopping rules), under the name of `strategy`."""
        runs = self.runs
        found, recommendation = bayes_batch(
            self.space,
            runs.configs,
            runs.values,
            goal=self.goal,
            scale=self.scale,
            count=count,
            constraints=self.constraints,
            limits=self.limits,
            responses=runs.responses,
            failed=runs.failed,
            point_types=runs.types,
            seed=self.seed,
            candidates=self.candidates,
            budget_left=self.budget,
            time_left=self.time_left,
        )
        gains = [s.expected_improvement for s in found if s.expected_improvement is not None]
        return Plan(
            strategy,
            "bayes",
            explanation,
            found,
            expected_improvement=max(gains, default=None),
            recommendation=recommendation,
        )
