"""One answer to "what do I deploy": a measured configuration, why, the evidence for it, and the
other configurations a DBA may see named, each labelled as what it is.

The answer is the strategy's recommendation (`experiments.suggest.recommendation`: of the
configurations run, the one a Gaussian process of every run puts best after counting its own
uncertainty), the rule the closed loop deploys by. A prediction where nothing was run is never
the answer: the regression model's predicted optimum is listed beside it as "not yet measured",
and the best single run as one measurement, its noise included. The evidence is what was
measured at the answer (runs, mean, standard error of the mean) and what the fitted regression
model predicts there (95 % confidence and prediction intervals).

With noise factors (`experiments.robust`) the answer is a configuration of the control factors:
its evidence is given at each noise level (`noise_levels`), and its `measured` and `model` are
reduced by the robust aim (`aim`), the aim of the levels' measured means and of the model's
predictions (with the intervals of that weighted sum of the levels, `aim_prediction`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from experiments.analysis.aim_prediction import aim_prediction
from experiments.analysis.model import FittedModel
from experiments.errors import DomainError
from experiments.factors import Config, FactorSpace, Value
from experiments.numbers import describe_config, finite_or_none, format_value, significant
from experiments.robust import RobustAim, aggregate, control_space, noise_factors, noise_scenarios

if TYPE_CHECKING:
    from experiments.analysis.results import Analysis
    from experiments.suggest.values import Limit, Recommendation

# Measured means and predictions to four significant digits (1052, not 1050): runs a few
# percent apart must read apart.
_DIGITS = 4

__all__ = ["Candidate", "DeployAnswer", "Measurements", "ModelView", "deploy_answer"]


@dataclass(frozen=True)
class Measurements:
    """The runs that measured one configuration: how many, which (their labels, e.g. "run 7"),
    their mean and the standard error of that mean (sample standard deviation over the square
    root of the count; None from one run)."""

    runs: int
    labels: list[str]
    mean: float
    std_error: float | None


@dataclass(frozen=True)
class ModelView:
    """What the fitted regression model (`model`, its label) predicts for `response` at a
    configuration: the mean with its 95 % confidence interval and the 95 % prediction interval
    of one new run (None where the fit leaves no residual degrees of freedom)."""

    response: str
    model: str
    predicted: float
    ci_low: float | None
    ci_high: float | None
    pi_low: float | None
    pi_high: float | None


@dataclass(frozen=True)
class Candidate:
    """Another configuration a report names, and what it is: `kind` "predicted_optimum" (the
    regression model's best prediction), "best_run" (the best single measurement) or
    "best_mean" (the best mean of a configuration measured more than once); `label` says it in
    words ("the model's predicted optimum, not yet measured")."""

    kind: str
    label: str
    config: Config
    measured: Measurements | None
    model: ModelView | None
    summary: str


@dataclass(frozen=True)
class DeployAnswer:
    """What to deploy: a configuration that was run, `source` the rule that chose it
    ("recommendation": the strategy's), `reason` why in words, `judged_by` the model that judged
    it (e.g. "gaussian process") with its mean and standard deviation there. The evidence:
    `measured` (None when no run at its full length measured it yet, which a run of the
    fidelity's full length settles next) and `model`, the regression model's prediction there
    (None without a fitted model). `measure` names what was measured ("tps", or "overall
    desirability"); `runs_used` counts the runs the answer rests on. `summary` is the answer
    and its evidence in one sentence, as every client shows it first. `caveats` say where the
    answer does not reach (a factor every run held at one setting); `alternatives` are the
    other configurations a report names, each labelled and summarized."""

    config: Config
    source: str
    summary: str
    reason: str
    measure: str
    runs_used: int
    judged_by: str | None
    judged_mean: float | None
    judged_sd: float | None
    measured: Measurements | None
    model: ModelView | None
    caveats: list[str]
    alternatives: list[Candidate]
    aim: str | None = None
    noise_levels: list[Candidate] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)


def deploy_answer(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    *,
    goal: str,
    recommendation: Recommendation,
    measure: str,
    response: str | None = None,
    labels: Sequence[str] | None = None,
    analysis: Analysis | None = None,
    model: FittedModel | None = None,
    limits: Sequence[Limit] = (),
    responses: Mapping[str, Sequence[float]] | None = None,
    robust: RobustAim | None = None,
) -> DeployAnswer:
    """The one answer to deploy, from the measured runs (`configs` and the `values` of
    `measure`, each run named by `labels`, default "run i"), the strategy's `recommendation`,
    and, when given, the fitted `analysis` of `response` (its predicted optimum) and the
    regression `model` it was fitted as (the predictions with intervals). `limits` and the
    `responses` they limit, one value per run, flag a best run that breaks one. With noise
    factors the recommendation is a control configuration, judged by the `robust` aim (None:
    the mean over the noise levels)."""
    runs = _checked_runs(space, configs, values, labels)
    aim = (robust or RobustAim()) if noise_factors(space) else None
    grouped, response = _grouped(space, runs), response or measure
    evidence = _Evidence(space, measure, response, grouped, analysis, model, aim, goal)
    sign = 1.0 if goal == "maximize" else -1.0
    config = evidence.checked(recommendation.config)
    levels = [evidence.at(config | s) for s in noise_scenarios(space)] if aim else []
    measured, seen = evidence.measured(config), evidence.view(config)
    lead, found = f"Deploy {describe_config(config, space.units)}", (measured, seen)
    summary = _summary(lead, measure, *found)
    if aim is not None:
        summary = _robust_summary(evidence, config, levels, found)
    alternatives, agreements = _alternatives(evidence, config, runs, sign, limits, responses)
    return DeployAnswer(
        config=config,
        source="recommendation",
        summary=summary,
        reason=" ".join([recommendation.reason, *agreements]),
        measure=measure,
        runs_used=len(values),
        judged_by=recommendation.predicted_by,
        judged_mean=finite_or_none(recommendation.predicted),
        judged_sd=finite_or_none(recommendation.uncertainty),
        measured=measured,
        model=seen,
        caveats=_caveats(space, runs.configs),
        alternatives=alternatives,
        aim=None if aim is None else aim.text(goal),
        noise_levels=levels,
    )


_Found = tuple[Measurements | None, ModelView | None]


@dataclass(frozen=True)
class _Runs:
    """The measured runs, checked: each run's configuration, value and label."""

    configs: list[Config]
    values: list[float]
    labels: list[str]


def _checked_runs(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    labels: Sequence[str] | None,
) -> _Runs:
    """The runs with one value and one label each (default "run i"), their configurations
    checked against `space` (outside the region too: a run measured is a fact)."""
    if not configs:
        raise DomainError("configs", "needs at least one measured run")
    if len(values) != len(configs):
        raise DomainError("values", f"needs one value per run: {len(configs)} runs, {len(values)}")
    observed = [space.check_config(c, in_region=False) for c in configs]
    names = list(labels) if labels is not None else [f"run {i + 1}" for i in range(len(values))]
    if len(names) != len(values):
        raise DomainError("labels", f"needs one label per run: {len(values)} runs, {len(names)}")
    return _Runs(observed, [float(v) for v in values], names)


@dataclass(frozen=True)
class _Evidence:
    """What a configuration is shown with: the runs that measured it (`groups`, by
    `space.key`) and, with a fitted `model` of `response`, the model's prediction there. With
    noise factors (`aim` set) a control configuration is shown reduced by the aim."""

    space: FactorSpace
    measure: str
    response: str
    groups: dict[tuple[Value, ...], Measurements]
    analysis: Analysis | None
    model: FittedModel | None
    aim: RobustAim | None = None
    goal: str = "maximize"

    def key_of(self, config: Mapping[str, Value]) -> tuple[Value, ...]:
        """What makes two answers the same: every factor, or the control factors only."""
        space = self.space if self.aim is None else control_space(self.space)
        return space.key(config)

    def checked(self, config: Mapping[str, object]) -> Config:
        """A configuration of every factor, or, with noise factors, of the control ones."""
        if self.aim is not None:
            return _control(self.space, config)
        return self.space.check_config(config, in_region=False)

    def measured(self, at: Config) -> Measurements | None:
        """The runs at `at`; at a control configuration, every run of it, their mean the aim
        of the noise levels' means (None when no run measured it)."""
        if self.aim is None or len(at) == len(self.space):
            return self.groups.get(self.space.key(at))
        levels = [self.groups.get(self.space.key(at | s)) for s in noise_scenarios(self.space)]
        measured = [m for m in levels if m is not None]
        if not measured:
            return None
        mean = aggregate(np.array([m.mean for m in measured]), self.aim, self.goal)[0]
        labels = [label for m in measured for label in m.labels]
        return Measurements(len(labels), labels, float(mean), None)

    def view(self, at: Config) -> ModelView | None:
        """The regression model's prediction at `at` (at a control configuration, by the aim),
        None without a fitted model."""
        if self.model is None or self.analysis is None:
            return None
        label = self.analysis.model_label
        if self.aim is None or len(at) == len(self.space):
            return _view(self.model, label, self.response, at)
        return _aim_view(self, self.model, label, at)

    def at(self, config: Config) -> Candidate:
        """The evidence at one noise level of the answer (`config`: control and scenario)."""
        scenario = describe_config({f.name: config[f.name] for f in noise_factors(self.space)})
        found, seen = self.measured(config), self.view(config)
        return self.candidate("noise_level", f"the answer at {scenario}", config, found, seen)

    def candidate(
        self, kind: str, label: str, at: Config, found: Measurements | None, seen: ModelView | None
    ) -> Candidate:
        """An alternative configuration with its evidence summarized (its label says whether it
        was measured)."""
        lead = describe_config(at, self.space.units)
        summary = _summary(lead, self.measure, found, seen, unmeasured="")
        return Candidate(kind, label, at, found, seen, summary)


def _control(space: FactorSpace, config: Mapping[str, object]) -> Config:
    """The control factors of `config` (a noise factor's value in it is left out)."""
    names = control_space(space).names
    kept = {n: config[n] for n in names if n in config}
    return control_space(space).check_config(kept, in_region=False)


def _aim_view(evidence: _Evidence, model: FittedModel, label: str, at: Config) -> ModelView:
    """The model's prediction at a control configuration by the aim, with the intervals of that
    weighted sum of the levels' predictions (`experiments.analysis.aim_prediction`)."""
    found = aim_prediction(model, at, evidence.aim, evidence.goal)
    bounds = (found.ci_low, found.ci_high, found.pi_low, found.pi_high)
    return ModelView(evidence.response, label, found.predicted, *bounds)


def _robust_summary(
    evidence: _Evidence, config: Config, levels: Sequence[Candidate], found: _Found
) -> str:
    """The answer and its evidence in one sentence by the aim, with the lowest and highest
    measured level: "Deploy threads=4 across workload levels, judged by ...: ...; measured
    from 600 at workload=write to 1000 at workload=read"."""
    assert evidence.aim is not None
    noise = [f.name for f in noise_factors(evidence.space)]
    lead = (
        f"Deploy {describe_config(config, evidence.space.units)} across {', '.join(noise)}"
        f" levels, judged by {evidence.aim.text(evidence.goal)}"
    )
    text = _summary(lead, evidence.measure, *found, unmeasured="not yet measured at any level")
    at = [(c.measured.mean, c.config) for c in levels if c.measured is not None]
    means = sorted((mean, describe_config({n: c[n] for n in noise})) for mean, c in at)
    if len(means) < 2:
        return text
    (low, at_low), (high, at_high) = means[0], means[-1]
    return (
        f"{text[:-1]}; measured from {significant(low, _DIGITS)} at {at_low} to"
        f" {significant(high, _DIGITS)} at {at_high}."
    )


def _alternatives(
    evidence: _Evidence,
    config: Config,
    runs: _Runs,
    sign: float,
    limits: Sequence[Limit],
    responses: Mapping[str, Sequence[float]] | None,
) -> tuple[list[Candidate], list[str]]:
    """The answer `config` set against the predicted optimum, the best single run and the best
    mean of a replicated configuration: each that differs becomes an alternative, each that
    coincides an agreement said in the answer's reason."""
    space, analysis = evidence.space, evidence.analysis
    answer = evidence.key_of(config)
    alternatives: list[Candidate] = []
    agreements: list[str] = []
    if analysis is not None:
        optimum = evidence.checked(analysis.optimum.config)
        if evidence.key_of(optimum) == answer:
            agreements.append("It is also the regression model's predicted optimum.")
        else:
            alternatives.append(_optimum_candidate(evidence, analysis, optimum))
    best = max(range(len(runs.values)), key=lambda i: sign * runs.values[i])
    best_key = evidence.key_of(runs.configs[best])
    if best_key == answer:
        agreements.append(f"It also gave the best single run ({runs.labels[best]}).")
    else:
        alternatives.append(_best_run_candidate(evidence, runs, best, limits, responses))
    replicated = [m for m in evidence.groups.items() if m[1].runs >= 2]
    if replicated:
        key, top = max(replicated, key=lambda item: sign * item[1].mean)
        where = dict(zip(space.names, key, strict=True))
        if evidence.key_of(where) not in (answer, best_key):
            label = f"the best mean of a configuration measured more than once ({top.runs} runs)"
            alternatives.append(
                evidence.candidate("best_mean", label, where, top, evidence.view(where))
            )
    return alternatives, agreements


def _optimum_candidate(evidence: _Evidence, analysis: Analysis, optimum: Config) -> Candidate:
    """The regression model's predicted optimum, labelled by whether a run measured it."""
    found = evidence.measured(optimum)
    label = (
        "the model's predicted optimum, not yet measured"
        if found is None
        else f"the model's predicted optimum, measured {_times(found.runs)}"
    )
    seen = _optimum_view(analysis, evidence.response)
    return evidence.candidate("predicted_optimum", label, optimum, found, seen)


def _best_run_candidate(
    evidence: _Evidence,
    runs: _Runs,
    best: int,
    limits: Sequence[Limit],
    responses: Mapping[str, Sequence[float]] | None,
) -> Candidate:
    """The best single run (index `best`), labelled with the limits it breaks."""
    label = "the best single run: one measurement, its noise included"
    broken = _broken(limits, responses, best)
    if broken:
        label += f"; it breaks {broken}"
    single = Measurements(1, [runs.labels[best]], runs.values[best], None)
    at = runs.configs[best]
    return evidence.candidate("best_run", label, at, single, evidence.view(at))


def _summary(
    lead: str,
    measure: str,
    found: Measurements | None,
    seen: ModelView | None,
    *,
    unmeasured: str = "not yet measured",
) -> str:
    """A configuration and its evidence in one sentence, e.g. "Deploy nodes=4, clients=8:
    measured 3 times (run 4, run 9, run 12), tps 1052 ± 4.1 (standard error of the mean); the
    model predicts tps 1041 (95 % CI 1010 to 1072, PI 950 to 1132)". `unmeasured` is said of
    a configuration no run measured (empty: its label says it already)."""
    parts = [lead]
    if found is None:
        parts += [unmeasured] if unmeasured else []
    else:
        which, mean = ", ".join(found.labels), significant(found.mean, _DIGITS)
        if found.std_error is None and found.runs > 1:  # a control configuration's aim
            parts.append(f"measured {_times(found.runs)} ({which}), {measure} {mean} by the aim")
        elif found.std_error is None:
            parts.append(f"{measure} {mean} in {which} (one measurement)")
        else:
            spread = significant(found.std_error)
            parts.append(
                f"measured {_times(found.runs)} ({which}), {measure} {mean} ± {spread}"
                " (standard error of the mean)"
            )
    if seen is not None:
        parts.append(f"the model predicts {seen.response} {_view_text(seen)}")
    return f"{lead}: {'; '.join(parts[1:])}." if parts[1:] else f"{lead}."


def _view_text(view: ModelView) -> str:
    def number(value: float) -> str:
        return significant(value, _DIGITS)

    text = number(view.predicted)
    if view.ci_low is not None and view.ci_high is not None:
        text += f" (95 % CI {number(view.ci_low)} to {number(view.ci_high)}"
        if view.pi_low is not None and view.pi_high is not None:
            text += f", PI {number(view.pi_low)} to {number(view.pi_high)}"
        text += ")"
    return text


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _grouped(space: FactorSpace, runs: _Runs) -> dict[tuple[Value, ...], Measurements]:
    """The runs of each configuration measured, by `space.key`."""
    indices_of: dict[tuple[Value, ...], list[int]] = {}
    for i, config in enumerate(runs.configs):
        indices_of.setdefault(space.key(config), []).append(i)
    found = {}
    for key, indices in indices_of.items():
        y = np.array([runs.values[i] for i in indices])
        error = float(np.std(y, ddof=1) / math.sqrt(len(y))) if len(y) >= 2 else None
        found[key] = Measurements(len(y), [runs.labels[i] for i in indices], float(y.mean()), error)
    return found


def _view(model: FittedModel, label: str, response: str, config: Config) -> ModelView:
    """The regression model's prediction at `config`."""
    with np.errstate(divide="ignore", invalid="ignore"):
        found = model.predict([config])
    bounds = (found.ci_low, found.ci_high, found.pi_low, found.pi_high)
    return ModelView(response, label, float(found.mean[0]), *(finite_or_none(b[0]) for b in bounds))


def _optimum_view(analysis: Analysis, response: str) -> ModelView:
    best = analysis.optimum
    bounds = (best.ci_low, best.ci_high, best.pi_low, best.pi_high)
    return ModelView(response, analysis.model_label, best.predicted, *bounds)


def _broken(
    limits: Sequence[Limit], responses: Mapping[str, Sequence[float]] | None, run: int
) -> str:
    """The limits run `run` broke as measured, e.g. "latency_p95_ms <= 50 (measured 61.2)"."""
    broken = []
    for limit in limits:
        value = float((responses or {})[limit.response][run])
        for bound, text, sense in ((limit.max, "<=", 1.0), (limit.min, ">=", -1.0)):
            if bound is not None and sense * (value - bound) > 0:
                broken.append(
                    f"{limit.response} {text} {format_value(bound)} (measured {significant(value)})"
                )
    return ", ".join(broken)


def _caveats(space: FactorSpace, observed: Sequence[Config]) -> list[str]:
    """Where the answer does not reach: each factor every run held at one setting."""
    caveats = []
    for factor in space.factors:
        settings = {c[factor.name] for c in observed}
        if len(settings) == 1 and not (factor.levels is not None and len(factor.levels) == 1):
            (value,) = settings
            caveats.append(
                f"Every run had {factor.name} = {format_value(value)}: this answer holds there"
                f" only; no other setting of {factor.name} was tried."
            )
    return caveats
