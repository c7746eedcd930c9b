"""The sentences a DBA reads: why each configuration is suggested, and why one is deployed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from experiments.factors import Config, FactorSpace
from experiments.numbers import describe_config, format_value
from experiments.suggest.fidelity import Fidelity

if TYPE_CHECKING:
    from experiments.suggest.bayes.incumbent import Incumbent
    from experiments.suggest.bayes.limits import Guard


def improvement(
    space: FactorSpace,
    config: Config,
    outcome: tuple[float, float, float, float],
    sign: float,
    position: int,
) -> str:
    """One sentence for a DBA: how much better it may be, and whether that is a bet on the
    prediction or on the model's uncertainty."""
    mean, sd, ei, best = outcome
    where = describe_config(config, space.units)
    gain = "improvement" if sign > 0 else "reduction"
    sense = "best" if sign > 0 else "best (lowest)"
    predicts = f"the model predicts {format_value(mean)} ± {format_value(sd)} here"
    if sign * (mean - best) > 0:
        why = f"{predicts}, better than the best so far"
    else:
        why = f"{predicts} and is uncertain enough about this region that it may beat the best"
    batch = (
        ""
        if position == 0
        else " It was chosen assuming the earlier suggestions of this batch perform as predicted."
    )
    return (
        f"Expected {gain} of {format_value(ei)} over the {sense} configuration so far (the model"
        f" puts its mean at {format_value(best)}) by running {where}: {why}.{batch}"
    )


def limits(guards: Sequence[Guard], point: np.ndarray) -> str:
    """What each limited response is predicted to be at `point`, and the chance it meets its
    limit ("" without limits)."""
    if not guards:
        return ""
    parts = []
    for guard in guards:
        chance = float(guard.probability(point)[0])
        parts.append(
            f"{guard.limit.response} predicted {format_value(float(guard.predicted(point)[0]))}"
            f" ({chance:.0%} chance that {guard.limit.text})"
        )
    return " Limits: " + "; ".join(parts) + "."


def exploration(where: str, share: float, predicted: float | None, sd: float | None) -> str:
    """Why a pick is the next point of a space-filling sequence."""
    return (
        f"Exploration: the model puts {share:.0%} of the runs' variance in the noise, too little"
        " signal for expected improvement to tell one region from another (it peaks on the"
        " faces of the region, farthest from the runs), so this run is the next unrun point of"
        " a space-filling sequence,"
        f" {where}; the model predicts {format_value(predicted)}"
        f" ± {format_value(sd)} there."
    )


def promotion(space: FactorSpace, fidelity: Fidelity, deploy: Incumbent, sign: float) -> str:
    """Why the recommendation is measured at the full length."""
    name, length = fidelity.factor.name, format_value(fidelity.target)
    return (
        f"Measure {describe_config(deploy.config, space.units)} at the full length: it"
        f" is what the user would be told to deploy ({format_value(sign * deploy.mean)} ±"
        f" {format_value(deploy.sd)} at {name} {length}), but only shorter runs have"
        " measured it; the run confirms it and shows the model how far short runs lie from"
        " full ones."
    )


def challenge(space: FactorSpace, top: Incumbent, deploy: Incumbent, sign: float) -> str:
    """Why the configuration of best mean is measured again."""
    units = space.units
    return (
        f"Measure {describe_config(top.config, units)} again: the model puts its mean highest"
        f" ({format_value(sign * top.mean)} ± {format_value(top.sd)} after {top.runs}"
        f" run(s)), but {describe_config(deploy.config, units)}"
        f" ({format_value(sign * deploy.mean)} ± {format_value(deploy.sd)} after"
        f" {deploy.runs} run(s)) stays the recommendation while the leader is that"
        " uncertain. One more run settles which of the two the user should deploy."
    )


def final_run(
    where: str, what: str, per: str, gains: tuple[float, float], mean: float, sd: float
) -> str:
    """Why, near the end of a budget, a contender is measured (the knowledge gradient)."""
    gain, pick_gain = gains
    return (
        f"Measure {where} {what}: the budget is nearly spent,"
        " and what counts now is that the configuration recommended at the end is truly the"
        " best. Of the runs that could come next, this one is expected to raise the true"
        f" value of that recommendation most{per} ({format_value(gain)}, against"
        f" {format_value(pick_gain)} for the run of highest expected improvement): what it"
        " measures tells the model most about which of the configurations run is truly best"
        f" (its mean there is {format_value(mean)} ± {format_value(sd)})."
    )


def replicate(
    space: FactorSpace,
    best: Incumbent,
    runner_up: tuple[Config, float, float],
    chance: float,
    gains: tuple[float, float],
) -> str:
    """Why the incumbent is replicated; `gains` are the sign and the best expected gain."""
    sign, best_gain = gains
    config, mean, sd = runner_up
    best_mean, best_sd = format_value(sign * best.mean), format_value(best.sd)
    incumbent = describe_config(best.config, space.units)
    runner = f"{describe_config(config, space.units)}, {format_value(sign * mean)}"
    return (
        f"Replicate the best configuration so far ({incumbent}): the model puts its mean at"
        f" {best_mean} ± {best_sd} after {best.runs} run(s), and the runner-up ({runner}"
        f" ± {format_value(sd)}) has a {chance:.0%} chance of being truly better. That"
        f" uncertainty is larger than the {format_value(best_gain)} any new configuration"
        " is expected to gain, so measuring the incumbent again is worth more."
    )


def deploy(space: FactorSpace, best: Incumbent, sign: float) -> str:
    """Why `best` is the configuration to deploy."""
    where = describe_config(best.config, space.units)
    meets = ", predicted to meet every limit," if best.meets_limits else ""
    return (
        f"Deploy {where}: of the configurations run, the Gaussian process is surest it is"
        f" best{meets} (mean {format_value(sign * best.mean)} ± {format_value(best.sd)};"
        f" {best.runs} run(s) measured {format_value(sign * best.observed)} on average)."
        " The model weighs every run nearby and counts its own uncertainty against a"
        " configuration, so one lucky measurement does not make it the answer."
    )


def fidelity_note(fidelity: Fidelity | None, at_full_length: bool) -> str:
    """At which length the recommendation was measured ("" without a fidelity)."""
    if fidelity is None:
        return ""
    length = f"{fidelity.factor.name} {format_value(fidelity.target)}"
    if at_full_length:
        return (
            f" The runs counted are those at {length}, the full measurement; the model"
            " learns from the shorter ones too."
        )
    return (
        f" No run has measured it at {length}, the full measurement, yet: the runs"
        " counted are shorter, the model judges it at the full length from every"
        " run, and it is measured there next."
    )
