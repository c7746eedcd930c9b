"""The `auto` strategy: the staged path a response-surface expert takes, read off the runs.

Every call looks at what has been run and takes the next step of

1. screening: a two-level factorial with centre points (the full 2^k up to four factors, else the
   smallest resolution V fraction, so that axial points can complete it later);
2. curvature test on the centre points (Montgomery, DAE 6.8): curvature, or a factorial without
   centre points, leads to 3; a plane leads to the path of steepest ascent (Box & Wilson 1951),
   after which Bayesian optimization takes over, since the path ends at the region's edge;
3. augmentation to a central composite design (face-centred when a factor is a whole number);
4. the quadratic model (reduced by AICc): lack of fit (p < 0.05; with replicates that repeat
   exactly, any lack-of-fit sum of squares) or a predicted R² below 0.5 leads to Bayesian
   optimization; otherwise its best configuration in the region (the canonical stationary point
   when it is a maximum inside, the constrained optimum otherwise) gets `CONFIRMATION_RUNS`
   confirmation runs;
5. the confirmation's mean inside the 95 % prediction interval for the mean of that many runs
   confirms the optimum and stops; outside it, Bayesian optimization takes over.

Bayesian optimization also starts at once when the staged path cannot work or does not pay:
categorical factors (axial points mean nothing for a category), a noise factor (varied, never
chosen: the staged path would place its optimum too), a fidelity factor (the trials' length,
which only Bayesian optimization uses as such), factor constraints that cut the
factorial, a budget (a closed loop, which is after the optimum: the staged path's runs come
before any search, and they made the optimum later at every budget measured), or runs that are
no factorial at all (data recorded elsewhere). It then starts from a space-filling design when
there are no runs. Without a budget (suggestions asked for one step at a time) the staged path
is taken whenever it can be built.
Once started it goes on: runs of type "bayes", "exploration", "replicate", "full_length" or
"space_filling" mark that path, and its explanation repeats why it was taken.

Design steps (screening, augmentation, path, confirmation) are proposed whole, whatever the batch
size asked: their statistics need every run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import scipy.stats

from experiments import analysis
from experiments.analysis import Analysis
from experiments.analysis.screening import curvature
from experiments.errors import DomainError
from experiments.factors import Config, FactorSpace
from experiments.numbers import describe_config, format_optional
from experiments.suggest.augment import augment, two_level_split
from experiments.suggest.initial import (
    screening,
    screening_design,
    screening_size,
    space_filling,
)
from experiments.suggest.noise import start_size
from experiments.suggest.problem import Problem
from experiments.suggest.steepest_ascent import steepest_ascent
from experiments.suggest.strategies import Bayes
from experiments.suggest.values import Plan, Runs, Suggestion
from experiments.terms import ModelTerms, distinct_levels

CONFIRMATION_RUNS = 2
SIGNIFICANCE = 0.05
# A quadratic model that predicts left-out runs worse than this does not place an optimum.
MIN_PREDICTED_R_SQUARED = 0.5
PATH_STEPS = 3
# Centre points the composite design should have in all (the screening has 3 of them).
COMPOSITE_CENTRE_POINTS = 4
# Runs of the quadratic model's residual degrees of freedom wanted beyond its parameters.
_SPARE_DF = 2
BAYES_TYPES = frozenset({"bayes", "exploration", "replicate", "full_length", "space_filling"})


class Auto(Bayes):
    """The staged path of a response-surface expert (module doc), read off the runs; Bayesian
    optimization where it ends or cannot be taken."""

    name = "auto"
    summary = (
        "the staged path of a response-surface expert (screening, steepest ascent, composite"
        " design, confirmation), then Bayesian optimization"
    )

    @classmethod
    def _staged(cls, problem: Problem, runs: Runs) -> Auto:
        """An Auto that only reads the staged path off `runs` (no models fitted)."""
        staged = cls(problem)
        staged.runs_, staged.models_ = runs, None
        return staged

    def _plan(self, count: int) -> Plan:
        """The next step of the staged path, with its explanation; design steps come whole."""
        step = self._step(count)
        return self._bayes(step, count) if isinstance(step, str) else step

    def _step(self, count: int) -> Plan | str:
        """The next step, or why Bayesian optimization takes over (a sentence to complete)."""
        if len(self.runs_) == 0:
            return self._start()
        types = self.runs_.types
        if any(t in BAYES_TYPES for t in types):
            return f"Bayesian optimization goes on. It was taken because {self._why(count)}"
        unfit = self._unfit_factor()
        if unfit is not None:
            return unfit
        if "path" in types:
            return (
                "the path of steepest ascent has been climbed to the edge of the region, where"
                " a new local factorial would no longer fit inside the ranges"
            )
        if self._quadratic_estimable():
            return self._response_surface()
        if self.runs_.failed:
            return (
                f"{len(self.runs_.failed)} trial(s) failed, so the factorial is incomplete and"
                " cannot carry a response surface"
            )
        split = two_level_split(self.problem.space, self.runs_.configs)
        if split is None:
            return (
                "the runs are neither a two-level factorial nor a response-surface design, so"
                " the staged path has nothing to build on"
            )
        return self._after_screening(count, *split)

    def _why(self, count: int) -> str:
        """Why Bayesian optimization was taken, from the runs made before it."""
        types = self.runs_.types
        if "space_filling" in types:
            return (
                "the staged path was not taken (a budget) or could not be built, so it started"
                " from a space-filling design"
            )
        staged = [i for i, t in enumerate(types) if t not in BAYES_TYPES]
        if not staged:
            return "every run so far came from it"
        earlier = Auto._staged(self.problem, self.runs_.subset(staged))._step(count)
        return earlier if isinstance(earlier, str) else "the staged path ended"

    def _start(self) -> Plan:
        """Screening, or a space-filling start when the staged path cannot be afforded."""
        blocker = self._staged_blocker()
        if blocker is not None:
            n = start_size(self.problem, [])
            what = "control configurations" if self.problem.noisy else "runs"
            reason = (
                f"Bayesian optimization is the better path here: {blocker}. It starts from a"
                f" space-filling (maximin Latin hypercube) design of {n} {what}."
            )
            found = space_filling(
                self.problem.space,
                n,
                self.problem.constraints,
                self.problem.seed,
                reason,
                already=self.runs_.failed,
            )
            return Plan(self.name, "initial", reason, found)
        reason = (
            "Screening: a two-level factorial with centre points shows which factors matter,"
            " and the centre points test whether the response curves inside the region."
        )
        return Plan(
            self.name,
            "screening",
            reason,
            screening(self.problem.space, self.problem.constraints, self.problem.seed, reason),
        )

    def _staged_blocker(self) -> str | None:
        """Why the staged path cannot work from scratch, or None when it can."""
        unfit = self._unfit_factor()
        if unfit is not None:
            return unfit
        if self.runs_.failed:
            return "trials of this experiment failed before any succeeded"
        size = screening_size(self.problem.space, self.problem.seed)
        if size is None:
            return "the factors cannot be screened by a two-level factorial"
        needed = size + 2 * len(self.problem.space) + 1 + CONFIRMATION_RUNS
        costs = (
            f"screening ({size} runs), the composite design's axial and centre runs"
            f" ({2 * len(self.problem.space) + 1}) and {CONFIRMATION_RUNS} confirmation runs"
            f" ({needed} in all)"
        )
        if self.budget is not None:
            # Why: with a budget the staged path made the recommendation reach the optimum
            # later than Bayesian optimization from the start (benchmarks/README.md).
            return (
                f"a closed loop with a budget of {self.budget} trials is after the optimum, and"
                f" {costs} would come before any search"
            )
        try:
            design = screening_design(
                self.problem.space, self.problem.constraints, self.problem.seed
            )
        except DomainError as error:
            return error.rule
        if design.removed_by_constraints:
            return (
                f"the factor constraints remove {design.removed_by_constraints} runs of the"
                " screening factorial"
            )
        return None

    def _unfit_factor(self) -> str | None:
        """Why a factor of the space rules the staged path out, or None."""
        noise = [f.name for f in self.problem.space.factors if f.noise]
        if noise:
            return (
                f"{noise[0]} is a noise factor: the staged path places the optimum of every"
                " factor, a noise factor's level among them, while Bayesian optimization"
                " chooses the control factors and measures each choice at every noise level"
            )
        categorical = [f.name for f in self.problem.space.factors if not f.is_numeric]
        if categorical:
            return (
                f"{categorical[0]} is categorical, and the composite design's axial points have"
                " no meaning for a category"
            )
        length = self.problem.space.fidelity
        if length is not None:
            return (
                f"{length.name} is the trials' length (the fidelity): the staged path would"
                " treat it as a factor to optimize, while Bayesian optimization runs short"
                " trials where they pay and judges every configuration at the full length"
            )
        return None

    def _after_screening(self, count: int, corners: list[int], centres: list[int]) -> Plan | str:
        values = np.asarray(self.runs_.values, dtype=float)
        test = curvature(values[corners], values[centres])
        if test is None:
            why = (
                "without two centre runs the factorial cannot test for curvature, so axial and"
                " centre points are added, which estimate it directly"
            )
        elif _curved(test.p_value, test.difference):
            evidence = (
                f"curvature test p = {test.p_value:.3g}"
                if test.p_value is not None
                else "the centre runs repeat exactly, so the whole difference is curvature"
            )
            why = (
                f"the centre runs average {test.centre_mean:.4g} against {test.factorial_mean:.4g}"
                f" for the factorial runs: the response curves inside the region ({evidence}),"
                " which a first-order model cannot describe"
            )
        else:
            p_text = "no difference" if test.p_value is None else f"p = {test.p_value:.3g}"
            path = self._path(count, p_text)
            if path is not None:
                return path
            why = (
                f"the curvature test finds no curvature ({p_text}) but the path of steepest"
                " ascent ends at the edge of the region before its first step, so the optimum is"
                " near the factorial's edge"
            )
        found = augment(
            self.problem.space,
            self.runs_.configs,
            centre_points=COMPOSITE_CENTRE_POINTS,
            constraints=self.problem.constraints,
        )
        if self.budget is not None and self.budget < len(found) + CONFIRMATION_RUNS:
            return (
                f"{why}; but the {self.budget} trials left cannot pay for the composite design's"
                f" {len(found)} runs and {CONFIRMATION_RUNS} confirmation runs"
            )
        explanation = f"Augment to a central composite design: {why}."
        return Plan(self.name, "augment", explanation, found)

    def _path(self, count: int, p_text: str) -> Plan | None:
        try:
            found = steepest_ascent(
                self.problem.space,
                self.runs_.configs,
                self.runs_.values,
                goal=self.problem.goal,
                count=max(count, PATH_STEPS),
                constraints=self.problem.constraints,
            )
        except DomainError:
            return None
        explanation = (
            f"Climb the path of steepest ascent: the curvature test finds no curvature"
            f" ({p_text}), so a first-order model describes the region and its gradient points"
            " to better settings."
        )
        return Plan(self.name, "steepest_ascent", explanation, found)

    def _quadratic_estimable(self) -> bool:
        fitted = [i for i, t in enumerate(self.runs_.types) if t != "confirmation"]
        configs = [self.runs_.configs[i] for i in fitted]
        checked = [self.problem.space.check_config(c, in_region=False) for c in configs]
        distinct = distinct_levels(self.problem.space, checked)
        if any(
            d < 3 for f, d in zip(self.problem.space.factors, distinct, strict=True) if f.is_numeric
        ):
            return False
        terms = ModelTerms(self.problem.space, "quadratic", distinct)
        return len(configs) >= len(terms.names) + _SPARE_DF

    def _response_surface(self) -> Plan | str:
        types = self.runs_.types
        fitted = [i for i, t in enumerate(types) if t != "confirmation"]
        model = self._fit(fitted)
        inadequate = _inadequacy(model)
        if inadequate is not None:
            return inadequate
        best = model.optimum
        confirmed = [
            i
            for i, t in enumerate(types)
            if t == "confirmation" and _same(self.problem.space, self.runs_.configs[i], best.config)
        ]
        if not confirmed:
            return self._confirm(model)
        measured = [float(self.runs_.values[i]) for i in confirmed]
        low, high = _mean_interval(model, len(measured))
        mean = float(np.mean(measured))
        where = describe_config(best.config)
        if low <= mean <= high:
            reason = (
                f"The optimum is confirmed: {len(measured)} confirmation run(s) at {where}"
                f" averaged {mean:.4g}, inside the 95 % prediction interval [{low:.4g},"
                f" {high:.4g}] of the quadratic model's {best.predicted:.4g}."
            )
            return Plan(self.name, "confirmed", reason, [], stop_reason=reason)
        return (
            f"the confirmation runs at {where} averaged {mean:.4g}, outside the 95 % prediction"
            f" interval [{low:.4g}, {high:.4g}] of the quadratic model's {best.predicted:.4g}:"
            " the model does not describe the response well enough near its optimum"
        )

    def _confirm(self, model: Analysis) -> Plan:
        best = model.optimum
        shape = ""
        if model.canonical is not None:
            inside = "inside" if model.canonical.inside else "outside"
            shape = (
                f" The fitted surface is a {model.canonical.nature} with its stationary point"
                f" {inside} the region."
            )
        low, high = _mean_interval(model, CONFIRMATION_RUNS)
        explanation = (
            f"Confirm the optimum: the quadratic model ({len(model.terms)} terms, R²"
            f" {format_optional(model.r_squared, '.3f')}, no significant lack of fit) predicts"
            f" {best.predicted:.4g} at {describe_config(best.config)}.{shape} {CONFIRMATION_RUNS}"
            " runs there check the prediction: their mean should fall inside"
            f" [{low:.4g}, {high:.4g}]."
        )
        t = scipy.stats.t.ppf(0.975, max(model.residual_df, 1))
        se = None
        if best.ci_low is not None and best.ci_high is not None:
            se = (best.ci_high - best.ci_low) / (2.0 * t)
        found = [
            Suggestion(
                config=dict(best.config),
                strategy=self.name,
                point_type="confirmation",
                reason=explanation,
                predicted=best.predicted,
                uncertainty=se,
                predicted_by="quadratic model",
            )
            for _ in range(CONFIRMATION_RUNS)
        ]
        return Plan(self.name, "confirmation", explanation, found)

    def _fit(self, keep: Sequence[int]) -> Analysis:
        configs = [self.runs_.configs[i] for i in keep]
        return analysis.fit(
            self.problem.space,
            configs,
            [self.runs_.values[i] for i in keep],
            goal=self.problem.goal,
            model="auto",
            constraints=self.problem.constraints,
            limits=[
                analysis.ResponseLimit(
                    response=limit.response,
                    values=[self.runs_.responses[limit.response][i] for i in keep],
                    min=limit.min,
                    max=limit.max,
                )
                for limit in self.problem.limits
            ],
        )

    def _bayes(self, why: str, count: int) -> Plan:
        if why.startswith("Bayesian optimization goes on"):
            explanation = why if why.endswith(".") else f"{why}."
        else:
            explanation = f"Bayesian optimization: {why}."
        return self.batch(count, explanation=explanation)


def _inadequacy(model: Analysis) -> str | None:
    """Why the quadratic model cannot be trusted to place the optimum, or None when it can."""
    misfit = model.lack_of_fit
    shape = "the response has more shape than a second-order surface can follow"
    if misfit is not None and misfit.p_value is not None and misfit.p_value < SIGNIFICANCE:
        return f"the quadratic model shows lack of fit (p = {misfit.p_value:.3g}): {shape}"
    if misfit is not None and misfit.p_value is None and misfit.lack_of_fit_ss > 0:
        # Replicates that repeat exactly leave no noise to test against: any misfit is real.
        return (
            "the quadratic model misses runs that repeat exactly (lack-of-fit sum of squares"
            f" {misfit.lack_of_fit_ss:.4g} with no run-to-run noise): {shape}"
        )
    predicted = model.fit.predicted_r_squared
    if predicted is None or predicted < MIN_PREDICTED_R_SQUARED:
        value = "undefined" if predicted is None else f"{predicted:.2f}"
        return (
            f"the quadratic model predicts new runs poorly (predicted R² {value}, below"
            f" {MIN_PREDICTED_R_SQUARED}): {shape}"
        )
    return None


def _curved(p_value: float | None, difference: float) -> bool:
    """Curvature is significant, or, with no noise to test against, present at all."""
    return p_value < SIGNIFICANCE if p_value is not None else abs(difference) > 0


def _mean_interval(model: Analysis, runs: int) -> tuple[float, float]:
    """95 % prediction interval for the mean of `runs` new runs at the model's optimum."""
    best = model.optimum
    df = max(model.residual_df, 1)
    t = float(scipy.stats.t.ppf(0.975, df))
    se_fit = 0.0
    if best.ci_low is not None and best.ci_high is not None:
        se_fit = (best.ci_high - best.ci_low) / (2.0 * t)
    sigma = model.rmse or 0.0
    half = t * math.sqrt(se_fit**2 + sigma**2 / runs)
    return best.predicted - half, best.predicted + half


def _same(space: FactorSpace, a: object, b: Config) -> bool:
    checked = space.check_config(a, in_region=False)  # type: ignore[arg-type]
    return all(checked[n] == b[n] for n in space.names)
