"""A batch of q points by the kriging believer: after each pick its predicted mean is added as
if observed and the search's model is conditioned on it with the same hyperparameters, which
shrinks the uncertainty around it and pushes the next pick elsewhere. A batch may be led by a
run of a configuration measured before, or by a space-filling pick (`rules`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor

from experiments.factors import Config, Value
from experiments.numbers import describe_config
from experiments.suggest.bayes import reasons, rules
from experiments.suggest.bayes.candidates import Pool
from experiments.suggest.bayes.incumbent import MODEL_NAME
from experiments.suggest.bayes.limits import Guard
from experiments.suggest.bayes.models import Models
from experiments.suggest.bayes.robust_search import RobustSearch
from experiments.suggest.fidelity import Fidelity
from experiments.suggest.gaussian_process import (
    expected_improvement,
    indistinguishable,
    mean_and_sd,
    refit,
)
from experiments.suggest.values import Suggestion

# Expected improvement is searched from this many of the best configurations run, besides the
# quasi-random starts: it often peaks beside them.
LEADERS = 3


@dataclass
class _Believer:
    """The search's model as the kriging believer grows it through a batch, the best mean it
    believes so far, and what the batch may no longer pick."""

    model: GaussianProcessRegressor
    xs: np.ndarray
    ws: np.ndarray
    best: float
    excluded: set[tuple[Value, ...]]

    def believe(self, point: np.ndarray, value: np.ndarray | float) -> None:
        """Condition the model on `value` at `point`, keeping its hyperparameters."""
        self.xs, self.ws = np.vstack([self.xs, point]), np.append(self.ws, value)
        self.model = refit(self.model, self.xs, self.ws)


def batch(
    models: Models,
    pool: Pool,
    sign: float,
    count: int,
    point_types: Sequence[str],
    final: bool,
    robust: RobustSearch | None = None,
) -> list[Suggestion]:
    """Up to `count` picks by the kriging believer, led by a replicate of an uncertain
    incumbent when one is due, or, in the `final` share of the budget, by the replicate of the
    knowledge gradient when it beats the first pick's. With noise factors (`robust`) the picks
    are control configurations of highest expected improvement of the robust aim."""
    space, encoder, guards, fidelity = models.space, models.encoder, models.guards, models.fidelity
    leaders = models.incumbent.ranked[:LEADERS]
    make = scorer if robust is None else robust.scorer
    # What a user reads, and what the replicate rule weighs, is the judge's expected improvement.
    judged_best = models.incumbent.mean if robust is None else _best(models, models.model, robust)
    judged_gain = make(models.model, judged_best, guards, fidelity)
    best = _best(models, models.searcher(), robust)
    believer = _Believer(models.searcher(), models.x_fit, models.w_fit, best, set(models.excluded))
    first = pool.best(make(believer.model, best, guards, fidelity), believer.excluded, leaders)
    point = first[0] if first is not None else None
    gain = float(judged_gain(encoder.features([point]))[0]) if point is not None else 0.0
    lead = rules.leading_run(models, sign, point, point_types, gain, final)
    suggestions: list[Suggestion] = []
    if lead is not None:
        suggestions.append(lead)
        believer.excluded.add(space.key(lead.config))
        at = encoder.of_configs([lead.config])
        believer.believe(at, mean_and_sd(believer.model, at)[0])
    explore = lead is None and point is not None and rules.explores(models, believer.model, point)
    while len(suggestions) < count:
        unrun = pool.unrun(models.measured | believer.excluded) if explore else None
        explore = False
        if unrun is None:
            # Not a repeat of `first`: that search appended the values it moved through to
            # the lattice, and this one starts from the finer lattice.
            found = pool.best(
                make(believer.model, believer.best, guards, fidelity), believer.excluded, leaders
            )
            if found is None:
                break
        values = unrun if unrun is not None else found[0]
        made = _pick(models, believer, values, (judged_gain, robust), sign, len(suggestions))
        suggestions.append(made if unrun is None else _exploration(models, made))
    return suggestions


def _best(models: Models, model: GaussianProcessRegressor, robust: RobustSearch | None) -> float:
    """The incumbent's mean by `model` (with noise factors, the best aim of the control
    configurations the models learned from)."""
    if robust is not None:
        return robust.best(model, models.learned)
    at_incumbent = models.encoder.of_configs([models.incumbent.config])
    return float(mean_and_sd(model, at_incumbent)[0][0])


def _pick(
    models: Models,
    believer: _Believer,
    values: list[Value],
    judged: tuple[Callable[[np.ndarray], np.ndarray], RobustSearch | None],
    sign: float,
    position: int,
) -> Suggestion:
    """The suggestion of `values`, believed as predicted for the rest of the batch."""
    space, fidelity = models.space, models.fidelity
    (judged_gain, robust) = judged
    config = space.check_config(dict(zip(space.names, values, strict=True)))
    point = models.encoder.features([values])
    ei = float(judged_gain(point)[0])
    made = _suggestion(models, config, point, ei, sign, position)
    if robust is not None:
        return _robust_pick(models, believer, (config, point), made, robust)
    believer.excluded.add(space.key(config))
    # Kriging believer: pretend the pick came out as predicted, keep the hyperparameters.
    believed, _ = mean_and_sd(believer.model, point)
    if fidelity is not None:
        believed_full, _ = mean_and_sd(believer.model, fidelity.targeted(point))
        believer.best = max(believer.best, float(believed_full[0]))
    else:
        believer.best = max(believer.best, float(believed[0]))
    believer.believe(point, believed[0])
    return made


def _robust_pick(
    models: Models,
    believer: _Believer,
    pick: tuple[Config, np.ndarray],
    made: Suggestion,
    robust: RobustSearch,
) -> Suggestion:
    """A control configuration picked: believed at every noise level, as the plan runs it, and
    said in the aim's terms."""
    config, point = pick
    fidelity = models.fidelity
    believer.excluded |= {models.space.key(c) for c in robust.at_every_level(config)}
    at = point if fidelity is None else fidelity.targeted(point)
    believer.best = max(believer.best, float(robust.reduced(believer.model, at)[0][0]))
    rows = robust.crossed(point)
    believer.believe(rows, mean_and_sd(believer.model, rows)[0])
    judged_best = _best(models, models.model, robust)
    reason = robust.reason(models.model, at, made.expected_improvement or 0.0, judged_best)
    return replace(made, reason=reason + reasons.limits(models.guards, at))


def _exploration(models: Models, made: Suggestion) -> Suggestion:
    """`made` as a space-filling pick, with why the model could not steer it."""
    where = describe_config(made.config, models.space.units)
    share = rules.noise_share(models.searcher())
    reason = reasons.exploration(where, share, made.predicted, made.uncertainty)
    return replace(made, point_type="exploration", reason=reason)


def _suggestion(
    models: Models, config: Config, point: np.ndarray, ei: float, sign: float, position: int
) -> Suggestion:
    mean, sd = mean_and_sd(models.model, point)  # real data only: the fake runs are no information
    predicted = sign * float(mean[0])
    outcome = (predicted, float(sd[0]), ei, sign * models.incumbent.mean)
    fidelity = models.fidelity
    at_target = point if fidelity is None else fidelity.targeted(point)
    return Suggestion(
        config=config,
        strategy="bayes",
        point_type="bayes",
        reason=reasons.improvement(models.space, config, outcome, sign, position)
        + ("" if fidelity is None else fidelity.sentence(models.searcher(), point))
        + reasons.limits(models.guards, at_target),
        predicted=predicted,
        uncertainty=float(sd[0]),
        expected_improvement=float(ei),
        predicted_by=MODEL_NAME,
    )


def scorer(
    model: GaussianProcessRegressor,
    best: float,
    guards: Sequence[Guard],
    fidelity: Fidelity | None,
) -> Callable[[np.ndarray], np.ndarray]:
    """EI over `best`, times the probability of meeting every limit; a point whose predicted
    means break a limit keeps a tiny share, so it wins only when no candidate meets them. With
    a fidelity, EI and the limits are of the configuration at the target length, weighed by
    what a run at the candidate's length is worth per second (`Fidelity.weight`)."""

    def score(x: np.ndarray) -> np.ndarray:
        at = x if fidelity is None else fidelity.targeted(x)
        ei = expected_improvement(model, at, best)
        for guard in guards:
            ei = ei * guard.weight(at)
        if fidelity is not None:
            # A short run the model cannot tell from one made is a replicate in all but name.
            ei = ei * fidelity.weight(model, x) * ~indistinguishable(model, x)
        return ei

    return score
