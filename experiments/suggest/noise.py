"""Suggestions in a space with noise factors: control configurations run at every noise level.

A strategy plans in the whole space (its models learn the noise factors as any other factor,
the combined array of `experiments.robust`), but a noise factor is never chosen: `crossed_plan`
turns each pick into its control configuration run at every noise scenario
(`experiments.robust.noise_scenarios`), so that every control configuration suggested can be
judged by the robust aim. The rules, in the plan's order:

- a pick that measures a configuration again (measured before, or an earlier pick of the same
  plan: a replicate, a confirmation, a centre point) is measured again at every scenario;
- a new pick is completed at the scenarios its control configuration has not been measured or
  planned at (picks that differ only in their noise levels, a factorial's corners, become one
  control configuration);
- a scenario that breaks a factor constraint is left out.

The pick's own scenario keeps its prediction and expected improvement; the others are predicted
by the fitted models (`Strategy.suggest`). A strategy that picks one by one picks at most `count`
configurations, so at most `count` control configurations are suggested, each at every scenario
(up to `count` times the scenarios' number of runs); design steps come whole.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from experiments.factors import Config, Value
from experiments.numbers import describe_config
from experiments.robust import control_space, noise_factors, noise_scenarios
from experiments.suggest.initial import initial_runs
from experiments.suggest.problem import Problem
from experiments.suggest.values import Plan, Runs, Suggestion

__all__ = [
    "MeasuredControl",
    "control_of",
    "crossed_plan",
    "measured_controls",
    "scenario_count",
    "start_size",
]


@dataclass(frozen=True)
class MeasuredControl:
    """A control configuration run: the measured mean at each noise scenario it was run at (by
    the scenario's index in `noise_scenarios`) and its number of runs there."""

    config: Config
    means: dict[int, float]
    runs: int


def control_of(problem: Problem, config: Mapping[str, object]) -> Config:
    """The control factors' values of `config` (checked outside the region: a run is a fact)."""
    checked = problem.space.check_config(config, in_region=False)
    return {name: checked[name] for name in control_space(problem.space).names}


def scenario_count(problem: Problem) -> int:
    """How many runs measure one control configuration at every noise level (1 without noise
    factors)."""
    return len(noise_scenarios(problem.space))


def start_size(problem: Problem, runs: Sequence[Mapping[str, object]]) -> int:
    """How many configurations the space-filling start of Bayesian optimization still needs
    (at least one), the `runs` made counted: two per factor chosen (`initial_runs`), so with
    noise factors two per control factor, counted in control configurations (each is run at
    every noise level)."""
    if not problem.noisy:
        return max(initial_runs(problem.space) - len(runs), 1)
    controls = {tuple(control_of(problem, c).values()) for c in runs}
    return max(initial_runs(control_space(problem.space)) - len(controls), 1)


def crossed_plan(problem: Problem, plan: Plan, measured: Sequence[Mapping[str, object]]) -> Plan:
    """`plan` with each pick run at every noise scenario (module doc); `measured` are the
    configurations run so far. The plan itself without noise factors or suggestions."""
    if not problem.noisy or not plan.suggestions:
        return plan
    space, scenarios = problem.space, noise_scenarios(problem.space)
    done = {space.key(space.check_config(c, in_region=False)) for c in measured}
    picked: set[tuple[Value, ...]] = set()
    planned: set[tuple[Value, ...]] = set()
    found: list[Suggestion] = []
    for pick in plan.suggestions:
        own = space.key(space.check_config(pick.config, in_region=False))
        again = own in done or own in picked
        picked.add(own)
        control = control_of(problem, pick.config)
        for scenario in scenarios:
            config = space.check_config({**control, **scenario}, in_region=False)
            key = space.key(config)
            if not again and (key in done or key in planned):
                continue
            if not all(c.satisfied(config) for c in problem.constraints):
                continue
            planned.add(key)
            found.append(_at(pick, config, key == own, scenario, len(scenarios)))
    names = ", ".join(f.name for f in noise_factors(space))
    explanation = (
        f"{plan.explanation} Each control configuration is run at every one of the"
        f" {len(scenarios)} noise levels ({names}), so that it can be judged across them."
    )
    return dataclasses.replace(plan, explanation=explanation, suggestions=found)


def _at(pick: Suggestion, config: Config, own: bool, scenario: Config, count: int) -> Suggestion:
    """The pick at one scenario: itself at its own, else unpredicted (the models predict it)."""
    note = (
        f" Its control configuration is run at each of the {count} noise levels; this run at"
        f" {describe_config(scenario)}."
    )
    if own:
        return dataclasses.replace(pick, config=config, reason=pick.reason + note)
    return dataclasses.replace(
        pick,
        config=config,
        reason=pick.reason + note,
        predicted=None,
        uncertainty=None,
        expected_improvement=None,
        predicted_by=None,
    )


def measured_controls(
    problem: Problem,
    runs: Runs,
    *,
    full_only: Callable[[Config], Config] | None = None,
    at: Callable[[Config], Config] | None = None,
) -> list[MeasuredControl]:
    """The runs grouped by control configuration, in the order first run, each with the noise
    scenarios it was measured at; `full_only` keeps only the runs it leaves unchanged (a
    fidelity's full length), `at` moves each run before it is grouped. A control configuration
    no run measured at a scenario (only between a numeric noise factor's ends) is left out."""
    space, scenarios = problem.space, noise_scenarios(problem.space)
    names = [f.name for f in noise_factors(space)]
    index = {tuple(s[n] for n in names): i for i, s in enumerate(scenarios)}
    found: dict[tuple[Value, ...], tuple[Config, dict[int, list[float]]]] = {}
    for config, value in zip(runs.configs, runs.values, strict=True):
        checked = space.check_config(config, in_region=False)
        if full_only is not None and full_only(checked) != checked:
            continue
        checked = checked if at is None else at(checked)
        control = control_of(problem, checked)
        entry = found.setdefault(tuple(control.values()), (control, {}))
        scenario = index.get(tuple(checked[n] for n in names))
        # A run between a numeric noise factor's ends informs the models, not a scenario.
        if scenario is not None:
            entry[1].setdefault(scenario, []).append(float(value))
    return [
        MeasuredControl(
            control, {i: float(np.mean(v)) for i, v in sorted(m.items())}, sum(map(len, m.values()))
        )
        for control, m in found.values()
        if m
    ]
