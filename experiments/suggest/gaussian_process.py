"""The Gaussian process surrogate of Bayesian optimization, on coded factors.

scikit-learn's GaussianProcessRegressor with kernel ``Constant * Matern(nu=2.5, one length scale
per column) + White`` (the white term is the run-to-run noise) on a normalized response; its
hyperparameters maximize the marginal likelihood times a log-normal prior on the length scales
(median two coded units, a factor's whole range) and, for the objective's model, a gamma prior
on the signal variance (mode 1, the normalized response's variance). Features are the coded
numeric factors (-1..+1 by `Factor.encode`, after log2 where the factor says so), one-hot
categories and the load (`_Load`): when the space has both `CONNECTIONS` factors, the log2 of
the connections the benchmark opens (client machines times threads per client) and, when it
also has a factor of `LOADED_NODES`, the log2 of the connections per node that takes them and
of those on the busiest one (client i connects to node i mod n, so 6 clients on 4 nodes put
two on two of them), each coded -1..+1 over its range. A cluster's throughput follows these
more than the split between machines: contention grows with the connections of the whole
cluster and coherency with those of one node (the Universal Scalability Law counts both), and
the busiest node paces the others (flow control holds the cluster to its slowest member); so
the optimum is a curved ridge across the factors, which a kernel of one length scale per
factor learns only point by point.
Predictions are of the *mean* response: the fitted noise is taken out of the standard deviation.
A model may take as its prior mean the lowest response run instead of the runs' mean
(`pessimistic`; De Ath, Fieldsend & Everson 2020, "What do you mean? The role of the mean function
in Bayesian optimisation"): far from every run it then expects the worst seen, not the average.

Fitting costs the cube of the runs and scoring candidates their square, so beyond
`MAX_TRAINING_ROWS` runs the model learns from a subset (`training_rows`): the best third, where
the optimum is decided, and a maximin spread of the rest, which keeps the picture of the whole
region.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.special
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Kernel, Matern, WhiteKernel

from experiments.factors import FactorSpace, Value

__all__ = [
    "Encoder",
    "expected_improvement",
    "fit",
    "indistinguishable",
    "mean_and_sd",
    "noise_variance",
    "posterior_covariance",
    "refit",
    "run_correlation",
    "signal_variance",
    "training_rows",
]

# Restarts of the hyperparameters' search from random points, for fewer runs than the cap: a
# few runs can leave the likelihood several modes. At the cap one start gave the same next pick
# in 19 suggestions of 21 after 300 and 800 random runs of four problems, the same
# recommendation in all, and halved the fit.
_RESTARTS = 2
# Measured on the simulated cluster's 5 factors (2 cores, one BLAS thread): a suggestion took
# 40 s at 800 runs with every run in the model, 3-4 s with this cap, and under 2 s with one start
# and the learned runs' values on the search's lattice (`suggest.bayes`). A cap of 100 halved
# the 3-4 s and cost nothing measurable in races of 160 runs, but none measured beyond them.
MAX_TRAINING_ROWS = 250
# Length scales in coded units: shorter than a tenth of a coded unit means wiggles finer than
# the spacing of most integer lattices; the prior's mean and sd are of log(length scale): a
# median of 2 (a factor's whole range), as Optuna's GP prior has. Measured on the simulated
# cluster (12 seeds): median trials until a configuration within 2 % is tried 32 -> 18.5 with
# the median at 1 coded unit before; Hartmann-6 and Branin unchanged (39.5 -> 41, 19.5 -> 20).
_MIN_LENGTH_SCALE = 0.1
_LENGTH_SCALE_PRIOR = (math.log(2.0), 1.0)
# A gamma prior (shape, rate) on the signal variance of the normalized response, as Optuna's GP
# has (mode 1). Without it the likelihood has a second mode that puts the signal at its lower
# bound and calls every difference noise, and the search then repeated one configuration for
# the rest of the race (the simulated cluster at 8 % noise, seed 2: 12 of its last 20 trials).
# The models of limited responses (p95 latency) go without this prior: with it, the workload
# problem under a latency limit took 41 trials to 2 % (20 seeds), without it 30, as before it.
# No prior on the noise: Optuna's (mean 0.04 of the response's variance) hides noise that
# truly dominates, which the replicate rule and the recommendation's uncertainty depend on.
_SIGNAL_PRIOR = (2.0, 1.0)
# The service's names of the factors whose product is the connections a benchmark opens, and of
# the nodes that take them: the nodes clients connect to when that is a factor, else all nodes.
# Measured on the simulated cluster (3 % noise, 20 seeds, bayes), median trials until the
# recommendation stays within 2 % (within 2 % after 40 trials): 39 (13/20 seeds) without
# either feature, 30.5 (18/20) with the connections, 24 (18/20) with both; at 8 % noise 61 with
# the connections and 52.5 with both (within 5 % after 40 trials 13/20 and 17/20). With the
# busiest node's connections besides (auto, 20 seeds): 24 -> 20 at 3 % (within 2 % after 40
# trials 17/20 -> 19/20 seeds), 52.5 -> 45 at 8 % (within 5 % 17/20 both).
CONNECTIONS = ("clients", "threads_per_client")
LOADED_NODES = ("load_nodes", "nodes")


class Encoder:
    """Natural rows (one value per factor) -> GP features: coded numerics, one-hot categories."""

    def __init__(self, space: FactorSpace) -> None:
        self.factors = space.factors
        self._cache: list[dict[Value, float]] = [{} for _ in space.factors]
        self._blocks: dict[int, np.ndarray] = {}
        self._load = _Load.of(space)

    def features(self, rows: Sequence[Sequence[Value]]) -> np.ndarray:
        """The feature rows of natural rows."""
        blocks = [self.block(i, [row[i] for row in rows]) for i in range(len(self.factors))]
        if self._load is not None:
            columns = [np.array([row[i] for row in rows], float) for i in self._load.factors]
            blocks.append(self._load.features(columns))
        return np.hstack(blocks)

    def of_configs(self, configs: Sequence[Mapping[str, Value]]) -> np.ndarray:
        """The feature rows of configurations (a value per factor name)."""
        return self.features([[c[f.name] for f in self.factors] for c in configs])

    def gathered(self, values: Sequence[Sequence[Value]], index: np.ndarray) -> np.ndarray:
        """The feature rows of lattice points: row r takes `values[f][index[r, f]]` for factor f.
        The features of every value are encoded once and kept while `values` only grows."""
        for f, levels in enumerate(values):
            if len(self._blocks.get(f, ())) != len(levels):
                self._blocks[f] = self.block(f, levels)
        blocks = [self._blocks[f][index[:, f]] for f in range(len(values))]
        if self._load is not None:
            columns = [np.array(values[i], float)[index[:, i]] for i in self._load.factors]
            blocks.append(self._load.features(columns))
        return np.hstack(blocks)

    def column_of(self, i: int) -> int:
        """The first feature column of factor `i` (a category takes one column per level)."""
        return sum(len(f.levels or ()) if not f.is_numeric else 1 for f in self.factors[:i])

    def block(self, i: int, values: Sequence[Value]) -> np.ndarray:
        """The feature columns of factor `i` for these values."""
        factor = self.factors[i]
        if factor.kind == "categorical":
            levels = list(factor.levels or ())
            onehot = np.zeros((len(values), len(levels)))
            onehot[np.arange(len(values)), [levels.index(v) for v in values]] = 1.0
            return onehot
        cache = self._cache[i]
        for v in values:
            if v not in cache:
                cache[v] = factor.encode(v)
        return np.array([cache[v] for v in values], dtype=float)[:, None]


@dataclass(frozen=True)
class _Load:
    """The load features (module docstring): the indices of the factors they are computed from
    (clients, threads per client and, when the space has one, the loaded nodes) and the log2
    range each feature is coded over."""

    factors: tuple[int, ...]
    ranges: tuple[tuple[float, float], ...]

    @classmethod
    def of(cls, space: FactorSpace) -> _Load | None:
        """The load features of `space`, or None when it lacks the connections' factors."""
        usable = [
            i
            for i, f in enumerate(space.factors)
            if f.is_numeric and f.bounds[0] > 0 and f.bounds[1] > f.bounds[0]
        ]
        named = {space.factors[i].name: i for i in usable}
        if not all(n in named for n in CONNECTIONS):
            return None
        factors = tuple(named[n] for n in CONNECTIONS)
        (c_low, c_high), (t_low, t_high) = (space.factors[i].bounds for i in factors)
        ranges = [(math.log2(c_low * t_low), math.log2(c_high * t_high))]
        nodes = next((named[n] for n in LOADED_NODES if n in named), None)
        if nodes is not None:
            n_low, n_high = space.factors[nodes].bounds
            ranges.append((ranges[0][0] - math.log2(n_high), ranges[0][1] - math.log2(n_low)))
            ranges.append(
                (
                    math.log2(math.ceil(c_low / n_high) * t_low),
                    math.log2(math.ceil(c_high / n_low) * t_high),
                )
            )
            factors += (nodes,)
        return cls(factors, tuple(ranges))

    def features(self, columns: Sequence[np.ndarray]) -> np.ndarray:
        """The coded features of rows given as one array of natural values per factor of
        `factors`: log2 connections, then log2 connections per loaded node and on the busiest
        one."""
        connections = np.log2(columns[0] * columns[1])
        logs = [connections]
        if len(columns) > 2:
            clients, threads, nodes = columns
            busiest = np.ceil(clients / nodes) * threads
            logs += [connections - np.log2(nodes), np.log2(busiest)]
        coded = [
            2.0 * (v - low) / (high - low) - 1.0
            for v, (low, high) in zip(logs, self.ranges, strict=True)
        ]
        return np.column_stack(coded)


def _kernel(width: int) -> Kernel:
    return ConstantKernel(1.0, (1e-3, 1e3)) * Matern(
        length_scale=np.ones(width), length_scale_bounds=(_MIN_LENGTH_SCALE, 1e2), nu=2.5
    ) + WhiteKernel(1e-2, (1e-8, 1e1))


def training_rows(x: np.ndarray, y: np.ndarray, limit: int = MAX_TRAINING_ROWS) -> np.ndarray:
    """Indices of the rows the model learns from: all of them up to `limit`, else the best
    (largest `y`) third and, of the rest, a greedy maximin spread in feature space."""
    n = len(y)
    if n <= limit:
        return np.arange(n)
    order = np.argsort(-y, kind="stable")
    best = order[: limit // 3]
    rest = order[limit // 3 :]
    distance = np.min(np.sum((x[rest][:, None, :] - x[best][None, :, :]) ** 2, axis=2), axis=1)
    picked = []
    for _ in range(limit - len(best)):
        far = int(np.argmax(distance))
        picked.append(rest[far])
        distance = np.minimum(distance, np.sum((x[rest] - x[rest[far]]) ** 2, axis=1))
        distance[far] = -1.0
    return np.sort(np.concatenate([best, np.array(picked, dtype=int)]))


class _LowestMean(GaussianProcessRegressor):
    """A Gaussian process whose prior mean is the lowest response run, its scale the responses'
    standard deviation (as `normalize_y` scales them)."""

    def fit(self, X: np.ndarray, y: np.ndarray) -> _LowestMean:
        y = np.asarray(y, dtype=float)
        low, spread = float(np.min(y)), float(np.std(y)) or 1.0
        super().fit(X, (y - low) / spread)
        # predict() and the posterior helpers below map back with these, as after normalize_y.
        self._y_train_mean = np.array([low])
        self._y_train_std = np.array([spread])
        return self


def fit(
    x: np.ndarray,
    y: np.ndarray,
    seed: int,
    *,
    signal_prior: bool = True,
    pessimistic: bool = False,
) -> GaussianProcessRegressor:
    """The Gaussian process fitted to features `x` and responses `y` (maximum a posteriori);
    without `signal_prior`, the length scales' prior alone (the models of limited responses);
    `pessimistic`: its prior mean the lowest of `y` (module doc), else their mean."""
    kernel = _kernel(x.shape[1])
    regressor = _LowestMean if pessimistic else GaussianProcessRegressor
    model = regressor(
        kernel=kernel,
        normalize_y=not pessimistic,
        n_restarts_optimizer=_RESTARTS if len(y) < MAX_TRAINING_ROWS else 0,
        random_state=seed,
        optimizer=_with_priors(
            _slice_of(kernel, "length_scale"),
            _slice_of(kernel, "constant_value") if signal_prior else slice(0),
        ),
    )
    with warnings.catch_warnings():
        # Hyperparameters at a bound (e.g. no noise on a smooth toy response) are expected.
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x, y)
    return model


def _slice_of(kernel: Kernel, name: str) -> slice:
    """Where the hyperparameter whose name ends with `name` lies in the kernel's theta."""
    start = 0
    for parameter in kernel.hyperparameters:
        if parameter.fixed:
            continue
        if parameter.name.endswith(name):
            return slice(start, start + parameter.n_elements)
        start += parameter.n_elements
    raise ValueError(f"the kernel has no hyperparameter {name}")


Optimizer = Callable[
    [Callable[..., tuple[float, np.ndarray]], np.ndarray, np.ndarray], tuple[np.ndarray, float]
]


def _with_priors(lengths: slice, signal: slice) -> Optimizer:
    """L-BFGS-B on the log marginal likelihood plus the priors (maximum a posteriori): a
    log-normal one on every length scale and a gamma one on the signal variance. With few
    runs, maximum likelihood often picks length scales that make the model all wiggles or all
    flat, or a signal so small that every difference is noise; the priors keep the length
    scales near a factor's range and the signal near the response's variance. Measured:
    median trials to 2 % on Hartmann-6 85 -> 46 with the length-scale prior (against none)."""
    mean, sd = _LENGTH_SCALE_PRIOR
    shape, rate = _SIGNAL_PRIOR

    def optimize(
        objective: Callable[..., tuple[float, np.ndarray]], theta: np.ndarray, bounds: np.ndarray
    ) -> tuple[np.ndarray, float]:
        def penalized(t: np.ndarray) -> tuple[float, np.ndarray]:
            value, gradient = objective(t, eval_gradient=True)
            offset = t[lengths] - mean
            gradient = np.array(gradient, dtype=float)
            gradient[lengths] += offset / sd**2
            penalty = float(np.sum(offset**2)) / (2.0 * sd**2)
            # theta holds the log of the variance; the gamma density's negative log at exp(t).
            variance = np.exp(t[signal])
            penalty += float(np.sum(rate * variance - (shape - 1.0) * t[signal]))
            gradient[signal] += rate * variance - (shape - 1.0)
            return float(value) + penalty, gradient

        found = scipy.optimize.minimize(
            penalized, theta, method="L-BFGS-B", jac=True, bounds=bounds
        )
        return found.x, float(found.fun)

    return optimize


def refit(
    model: GaussianProcessRegressor, x: np.ndarray, y: np.ndarray
) -> GaussianProcessRegressor:
    """Condition on more points with the fitted hyperparameters and prior mean (no
    re-optimization)."""
    refit = type(model)(kernel=model.kernel_, normalize_y=model.normalize_y, optimizer=None)
    return refit.fit(x, y)


def noise_variance(model: GaussianProcessRegressor) -> float:
    """The fitted run-to-run noise variance, on the normalized response."""
    return float(model.kernel_.k2.noise_level)


def signal_variance(model: GaussianProcessRegressor) -> float:
    """The fitted signal variance, on the normalized response."""
    return float(model.kernel_.k1.k1.constant_value)


def _solved(model: GaussianProcessRegressor, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The signal kernel between the rows of `x` and the training rows, and the triangular
    solve of it against the training covariance's Cholesky factor (what the posterior's mean,
    variance and covariances are made of)."""
    cross = model.kernel_.k1(x, model.X_train_)
    return cross, scipy.linalg.solve_triangular(model.L_, cross.T, lower=True, check_finite=False)


def _variance(signal: float, v: np.ndarray) -> np.ndarray:
    """The posterior variance of the (normalized) mean at the rows whose `_solved` solve is `v`."""
    return np.maximum(signal - np.einsum("ij,ij->j", v, v), 0.0)


def _posterior(
    model: GaussianProcessRegressor, x: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and standard deviation of the mean response at each row of `x`, and the row's
    largest correlation with a training row, from one evaluation of the kernel (what
    `GaussianProcessRegressor.predict` computes, the noise term left out of the deviation)."""
    signal = signal_variance(model)
    # Why the private attributes: predict() would evaluate the kernel a second time, and the
    # correlations are what the near-repeat rule needs; the white term is zero off the
    # training rows, so the cross-covariance is the signal kernel's.
    cross, v = _solved(model, x)
    variance = _variance(signal, v)
    return _mean(model, cross), np.sqrt(variance) * _scale(model), cross.max(axis=1) / signal


def _scale(model: GaussianProcessRegressor) -> float:
    """The response's standard deviation, by which the model normalized it."""
    return float(np.atleast_1d(model._y_train_std)[0])


def _mean(model: GaussianProcessRegressor, cross: np.ndarray) -> np.ndarray:
    """The posterior mean response, in its units, from the signal kernel to the training rows."""
    offset = float(np.atleast_1d(model._y_train_mean)[0])
    return (cross @ np.ravel(model.alpha_)) * _scale(model) + offset


def posterior_covariance(
    model: GaussianProcessRegressor, x: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float]:
    """The posterior mean and covariance of the mean response at the rows of `x`, and the
    run-to-run noise variance (a run's covariance adds it on the diagonal), in the response's
    units."""
    cross, v = _solved(model, x)
    squared = _scale(model) ** 2
    covariance = (model.kernel_.k1(x) - v.T @ v) * squared
    return _mean(model, cross), covariance, noise_variance(model) * squared


def run_correlation(model: GaussianProcessRegressor, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The posterior correlation between a run at each row of `a` (its noise included) and the
    mean response at the same row of `b`: how much measuring the one teaches of the other,
    given what the runs so far have taught already."""
    signal, noise = signal_variance(model), noise_variance(model)
    solved = [_solved(model, rows)[1] for rows in (a, b)]
    # The kernel is stationary, so k(a_i, b_i) = k(a_i - b_i, 0): the prior covariance of each
    # pair from the fitted kernel itself, without the n x n matrix of every pair.
    difference = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    prior = model.kernel_.k1(difference, np.zeros((1, difference.shape[1])))[:, 0]
    covariance = prior - np.einsum("ij,ij->j", *solved)
    var_a, var_b = _variance(signal, solved[0]) + noise, _variance(signal, solved[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        correlation = covariance / np.sqrt(var_a * var_b)
    return np.clip(np.nan_to_num(correlation), 0.0, 1.0)


def mean_and_sd(model: GaussianProcessRegressor, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of the mean response (run-to-run noise left out)."""
    mean, sd, _ = _posterior(model, x)
    return mean, sd


def indistinguishable(model: GaussianProcessRegressor, x: np.ndarray) -> np.ndarray:
    """Which rows of `x` the model cannot tell from a row it was trained on: the variance of
    the difference of their means, 2 x signal x (1 - correlation), is below the run-to-run
    noise, so a run there would be a replicate in all but name. None while the noise exceeds
    the signal: then repeating is a fair way to learn."""
    return _near(model, _posterior(model, x)[2])


def _near(model: GaussianProcessRegressor, correlation: np.ndarray) -> np.ndarray:
    signal, noise = signal_variance(model), noise_variance(model)
    return (noise <= signal) & (2.0 * signal * (1.0 - correlation) < noise)


def expected_improvement(model: GaussianProcessRegressor, x: np.ndarray, best: float) -> np.ndarray:
    """Expected improvement over `best` of the mean response at each row of `x` (maximized);
    none at an `indistinguishable` row."""
    mean, sd, correlation = _posterior(model, x)
    gain = mean - best
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, gain / sd, 0.0)
    # The normal distribution's cdf and density as scipy.stats computes them, without its
    # argument checks, which took a tenth of a suggestion after 60 runs.
    density = np.exp(-(z**2) / 2.0) / math.sqrt(2.0 * math.pi)
    ei = np.where(sd > 0, gain * scipy.special.ndtr(z) + sd * density, np.maximum(gain, 0.0))
    ei = np.where(_near(model, correlation), 0.0, ei)
    return np.maximum(ei, 0.0)
