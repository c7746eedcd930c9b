"""Bayesian optimization: a Gaussian process on coded factors and expected improvement.

The model is scikit-learn's GaussianProcessRegressor on the coded factors (numeric factors coded
-1..+1 by `Factor.encode`, after log2 where the factor says so; categorical factors one-hot),
with kernel ``Constant * Matern(nu=2.5, one length scale per column) + White`` (the white term is
the run-to-run noise) and a normalized response. The next configuration maximizes expected
improvement (EI) over the best result so far, for a minimized response on the negated values.

Candidates are the whole lattice of `candidate_values` (every integer of an integer factor) when
it has at most `MAX_LATTICE` points and includes every integer, so integer optima are found
exactly; otherwise a seeded scrambled Sobol set snapped to the factors' levels. Either way the
ten best points are then refined by local moves (+-1 on an integer factor, the next explicit
level, another category, a shrinking coded step on a continuous factor).

Repeats: EI uses the standard deviation of the mean response (the noise term left out), so an
observed configuration earns credit only for what the model still does not know there. Exact
repeats of observed configurations are excluded, unless the fitted noise variance exceeds the
signal variance (noise dominates, so replicating is a fair way to learn). Points already in the
batch are always excluded.

A batch of q points is chosen by the kriging believer: after each pick its predicted mean is
added as if observed and the model is refitted with the same hyperparameters, which shrinks the
uncertainty around it and pushes the next pick elsewhere.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
from scipy.stats import norm, qmc
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

from experiments.analysis.optimize import candidate_values
from experiments.constraints import Constraint, satisfied_rows
from experiments.errors import DomainError
from experiments.factors import Config, Factor, FactorSpace, Value
from experiments.goals import check_goal
from experiments.suggest.base import Suggestion

__all__ = ["MAX_LATTICE", "bayes"]

# The lattice is scored whole up to this many points, else quasi-random candidates are used.
MAX_LATTICE = 20_000
# Points whose neighbourhoods are searched after the first pass, and rounds of that search.
_REFINE_TOP = 10
_REFINE_ROUNDS = 40
# First coded step of a continuous factor in the local search, and the step it stops below.
_STEP = 0.1
_MIN_STEP = 0.005
_RESTARTS = 2
_MIN_OBSERVATIONS = 2


def bayes(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    values: Sequence[float],
    *,
    goal: str = "maximize",
    count: int = 1,
    constraints: Sequence[Constraint] = (),
    seed: int = 0,
    candidates: int = 4096,
) -> list[Suggestion]:
    """Up to `count` configurations of highest expected improvement, chosen as one batch.

    `configs` and `values` are the runs so far (one response value per run). Every suggestion
    is a valid configuration of `space` meeting every constraint. Fewer than `count` come back
    only when fewer unrun configurations remain. Raises DomainError on bad input, or when no
    configuration meets the constraints or every allowed one has been run.
    """
    observed, y = _checked_runs(space, configs, values)
    check_goal(goal)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise DomainError("count", "must be a whole number of at least 1")
    if isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 16:
        raise DomainError("candidates", "must be a whole number of at least 16")
    sign = 1.0 if goal == "maximize" else -1.0
    encoder = _Encoder(space)
    x = encoder.features([[c[n] for n in space.names] for c in observed])
    target = sign * y  # maximized throughout; reported back in the response's own sense
    model = _fit(x, target, seed)
    # Why: a model that blames most of the variation on noise learns more from a replicate.
    repeats_allowed = _noise_variance(model) > _signal_variance(model)
    excluded = set() if repeats_allowed else {_key(space, c) for c in observed}
    pool = _Pool(space, encoder, constraints, observed, seed, candidates)

    suggestions: list[Suggestion] = []
    current, xs, ts = model, x, target
    for position in range(count):
        best = float(ts.max())
        pick = pool.best(current, best, excluded)
        if pick is None:
            break
        row, ei = pick
        config = {n: v for n, v in zip(space.names, row, strict=True)}
        config = space.check_config(config)  # every suggestion is a valid configuration
        point = encoder.features([row])
        mean, sd = _predict(model, point)  # real data only: the fake runs are no information
        suggestions.append(
            Suggestion(
                config=config,
                strategy="bayes",
                point_type="bayes",
                reason=_reason(
                    space,
                    config,
                    (sign * float(mean[0]), float(sd[0]), ei, sign * float(target.max())),
                    sign,
                    position,
                ),
                predicted=sign * float(mean[0]),
                uncertainty=float(sd[0]),
                expected_improvement=float(ei),
            )
        )
        excluded.add(_key(space, config))
        # Kriging believer: pretend the pick came out as predicted, keep the hyperparameters.
        believed, _ = _predict(current, point)
        xs, ts = np.vstack([xs, point]), np.append(ts, believed[0])
        current = _refit(current, xs, ts)
    if not suggestions:
        raise DomainError(
            "configs",
            "every configuration allowed by the factors and constraints has been run already",
        )
    return suggestions


class _Encoder:
    """Natural rows (one value per factor) -> GP features: coded numerics, one-hot categories."""

    def __init__(self, space: FactorSpace) -> None:
        self.factors = space.factors
        self._cache: list[dict[Value, float]] = [{} for _ in space.factors]

    def features(self, rows: Sequence[Sequence[Value]]) -> np.ndarray:
        columns: list[np.ndarray] = []
        for i, factor in enumerate(self.factors):
            values = [row[i] for row in rows]
            if factor.kind == "categorical":
                levels = list(factor.levels or ())
                onehot = np.zeros((len(rows), len(levels)))
                onehot[np.arange(len(rows)), [levels.index(v) for v in values]] = 1.0
                columns.append(onehot)
                continue
            cache = self._cache[i]
            for v in values:
                if v not in cache:
                    cache[v] = factor.encode(v)
            columns.append(np.array([cache[v] for v in values], dtype=float)[:, None])
        return np.hstack(columns)


class _Pool:
    """Candidate points and the search for the one of highest expected improvement."""

    def __init__(
        self,
        space: FactorSpace,
        encoder: _Encoder,
        constraints: Sequence[Constraint],
        observed: Sequence[Config],
        seed: int,
        size: int,
    ) -> None:
        self.space = space
        self.encoder = encoder
        self.constraints = list(constraints)
        lattice = candidate_values(space, observed)
        exact = all(
            len(values) == int(f.bounds[1]) - int(f.bounds[0]) + 1
            for f, values in zip(space.factors, lattice, strict=True)
            if f.kind == "integer" and f.levels is None
        )
        if exact and math.prod(len(v) for v in lattice) <= MAX_LATTICE:
            rows = [list(r) for r in itertools.product(*lattice)]
            self.search = "lattice"
        else:
            rows = _sobol(space, size, seed)
            self.search = "sobol"
        rows = self._allowed(_unique(rows))
        if not rows:
            raise DomainError(
                "constraints", "no configuration of the region meets every constraint"
            )
        self.rows = rows
        self.x = encoder.features(rows)

    def _allowed(self, rows: list[list[Value]]) -> list[list[Value]]:
        if not self.constraints or not rows:
            return rows
        mask = satisfied_rows(self.constraints, self.space, np.array(rows, dtype=object))
        return [r for r, ok in zip(rows, mask, strict=True) if ok]

    def best(
        self, model: GaussianProcessRegressor, best: float, excluded: set[tuple[Value, ...]]
    ) -> tuple[list[Value], float] | None:
        """The candidate of highest EI after local refinement, or None when none is left."""
        keep = [i for i, r in enumerate(self.rows) if tuple(r) not in excluded]
        if not keep:
            return None
        rows = [self.rows[i] for i in keep]
        ei = _expected_improvement(model, self.x[keep], best)
        order = np.argsort(-ei, kind="stable")[:_REFINE_TOP]
        top = {tuple(rows[i]): float(ei[i]) for i in order}
        seen = set(top) | excluded
        step = _STEP
        for _ in range(_REFINE_ROUNDS):
            moves = self._allowed(
                [
                    m
                    for r in top
                    for m in _neighbours(self.space, list(r), step)
                    if tuple(m) not in seen
                ]
            )
            moves = _unique(moves)
            seen.update(tuple(m) for m in moves)
            before = max(top.values())
            if moves:
                scores = _expected_improvement(model, self.encoder.features(moves), best)
                top.update({tuple(m): float(s) for m, s in zip(moves, scores, strict=True)})
                top = dict(sorted(top.items(), key=lambda kv: -kv[1])[:_REFINE_TOP])
            if max(top.values()) <= before:
                if step <= _MIN_STEP or not _has_continuous(self.space):
                    break
                step /= 2.0  # no better neighbour: look closer on continuous factors
        row, score = max(top.items(), key=lambda kv: kv[1])
        return list(row), score


def _has_continuous(space: FactorSpace) -> bool:
    return any(f.kind == "continuous" and f.levels is None for f in space.factors)


def _neighbours(space: FactorSpace, row: list[Value], step: float) -> list[list[Value]]:
    """Rows one move away on one factor, all inside the region."""
    out: list[list[Value]] = []
    for i, factor in enumerate(space.factors):
        for value in _moves(factor, row[i], step):
            moved = list(row)
            moved[i] = value
            out.append(moved)
    return out


def _moves(factor: Factor, value: Value, step: float) -> list[Value]:
    if factor.kind == "categorical":
        return [v for v in factor.levels or () if v != value]
    if factor.levels is not None:
        levels = sorted(factor.check_value(v) for v in factor.levels)
        i = levels.index(value)
        return [levels[j] for j in (i - 1, i + 1) if 0 <= j < len(levels)]
    low, high = factor.bounds
    if factor.kind == "integer":
        return [v for v in (int(value) - 1, int(value) + 1) if low <= v <= high]
    coded = factor.encode(value)
    return [_continuous(factor, c) for c in (coded - step, coded + step) if -1.0 <= c <= 1.0]


def _continuous(factor: Factor, coded: float) -> float:
    # Why the clip: 2 ** log2(x) can land a rounding error outside the range near its ends.
    low, high = factor.bounds
    return float(min(max(float(factor.decode(coded)), low), high))


def _sobol(space: FactorSpace, size: int, seed: int) -> list[list[Value]]:
    """Scrambled Sobol points snapped to integers, explicit levels and categories."""
    sampler = qmc.Sobol(d=len(space), scramble=True, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a count not a power of two is fine here
        unit = sampler.random(size)
    rows: list[list[Value]] = []
    for u in unit:
        row: list[Value] = []
        for factor, p in zip(space.factors, u, strict=True):
            row.append(_snap(factor, float(p)))
        rows.append(row)
    return rows


def _snap(factor: Factor, p: float) -> Value:
    """A point of [0, 1) -> a valid value of the factor."""
    if factor.kind == "categorical":
        levels = factor.levels or ()
        return levels[min(int(p * len(levels)), len(levels) - 1)]
    coded = 2.0 * p - 1.0
    if factor.levels is not None:
        levels = [factor.check_value(v) for v in factor.levels]
        return min(levels, key=lambda v: abs(factor.encode(v) - coded))
    if factor.kind == "integer":
        return factor.decode(coded)
    return _continuous(factor, coded)


def _unique(rows: list[list[Value]]) -> list[list[Value]]:
    return [list(r) for r in dict.fromkeys(tuple(r) for r in rows)]


def _key(space: FactorSpace, config: Mapping[str, Value]) -> tuple[Value, ...]:
    return tuple(config[n] for n in space.names)


def _kernel(width: int) -> object:
    return ConstantKernel(1.0, (1e-3, 1e3)) * Matern(
        length_scale=np.ones(width), length_scale_bounds=(1e-2, 1e2), nu=2.5
    ) + WhiteKernel(1e-2, (1e-8, 1e1))


def _fit(x: np.ndarray, y: np.ndarray, seed: int) -> GaussianProcessRegressor:
    model = GaussianProcessRegressor(
        kernel=_kernel(x.shape[1]),
        normalize_y=True,
        n_restarts_optimizer=_RESTARTS,
        random_state=seed,
    )
    with warnings.catch_warnings():
        # Hyperparameters at a bound (e.g. no noise on a smooth toy response) are expected.
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x, y)
    return model


def _refit(
    model: GaussianProcessRegressor, x: np.ndarray, y: np.ndarray
) -> GaussianProcessRegressor:
    """Condition on more points with the fitted hyperparameters (no re-optimization)."""
    refit = GaussianProcessRegressor(kernel=model.kernel_, normalize_y=True, optimizer=None)
    return refit.fit(x, y)


def _noise_variance(model: GaussianProcessRegressor) -> float:
    return float(model.kernel_.k2.noise_level)


def _signal_variance(model: GaussianProcessRegressor) -> float:
    return float(model.kernel_.k1.k1.constant_value)


def _predict(model: GaussianProcessRegressor, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of the mean response (run-to-run noise left out)."""
    mean, sd = model.predict(x, return_std=True)
    # Why the private attribute: the white-noise level is fitted on the normalized response.
    scale = float(np.atleast_1d(model._y_train_std)[0])
    noise = _noise_variance(model) * scale**2
    return np.asarray(mean, dtype=float), np.sqrt(np.maximum(np.square(sd) - noise, 0.0))


def _expected_improvement(
    model: GaussianProcessRegressor, x: np.ndarray, best: float
) -> np.ndarray:
    mean, sd = _predict(model, x)
    gain = mean - best
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, gain / sd, 0.0)
    ei = np.where(sd > 0, gain * norm.cdf(z) + sd * norm.pdf(z), np.maximum(gain, 0.0))
    return np.maximum(ei, 0.0)


def _checked_runs(
    space: FactorSpace, configs: Sequence[Mapping[str, object]], values: Sequence[float]
) -> tuple[list[Config], np.ndarray]:
    if len(configs) != len(values):
        raise DomainError("values", "one response value per configuration")
    if len(configs) < _MIN_OBSERVATIONS:
        raise DomainError("configs", f"at least {_MIN_OBSERVATIONS} runs are needed to model")
    observed = []
    for i, config in enumerate(configs):
        try:
            observed.append(space.check_config(config, in_region=False))
        except DomainError as error:
            raise DomainError(f"configs.{i}.{error.field}", error.rule) from None
    numbers = []
    for i, value in enumerate(values):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not math.isfinite(number):
            raise DomainError(f"values.{i}", "must be a finite number")
        numbers.append(number)
    y = np.array(numbers)
    if np.ptp(y) == 0:
        raise DomainError("values", "every run gave the same result: nothing to model")
    return observed, y


def _reason(
    space: FactorSpace,
    config: Config,
    outcome: tuple[float, float, float, float],
    sign: float,
    position: int,
) -> str:
    """One sentence for a DBA: how much better it may be, and whether that is a bet on the
    prediction or on the model's uncertainty."""
    mean, sd, ei, best = outcome
    where = ", ".join(
        f"{f.name}={_fmt(config[f.name])}{(' ' + f.unit) if f.unit else ''}" for f in space.factors
    )
    gain = "improvement" if sign > 0 else "reduction"
    sense = "best" if sign > 0 else "best (lowest)"
    if sign * (mean - best) > 0:
        why = f"the model predicts {_fmt(mean)} ± {_fmt(sd)} here, better than the best so far"
    else:
        why = (
            f"the model predicts {_fmt(mean)} ± {_fmt(sd)} here and is uncertain enough about "
            "this region that it may beat the best"
        )
    batch = (
        ""
        if position == 0
        else " It was chosen assuming the earlier suggestions of this batch perform as predicted."
    )
    return (
        f"Expected {gain} of {_fmt(ei)} over the {sense} result so far ({_fmt(best)}) "
        f"by running {where}: {why}.{batch}"
    )


def _fmt(value: Value) -> str:
    if isinstance(value, str):
        return value
    number = float(value)
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return f"{number:.4g}"
