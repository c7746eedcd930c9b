"""The test problems of `benchmarks/optimizer.py`, each with its exact optimum over a mixed space.

The simulated Galera cluster (worker.targets.simulated), tps maximized over nodes, clients,
threads per client, slave threads (integers) and runtime (continuous); the optimum is the best
point of the integer lattice at 60 s (throughput does not depend on the runtime up to the stall at
120 s and is lower after it). Its variants are the noise a real cluster shows:
- `simulated`: 3 % noise on every observation (log-normal, relative);
- `simulated_8pct`: 8 % noise, the spread between runs of a real cluster on a bad day;
- `simulated_hetero`: noise that grows with the load, 2 % at one connection to 10 % at the
  most (512), as the spread of real runs grows with concurrency;
- `simulated_failures`: 3 % noise, and a trial fails (no measurement) when it opens more than
  `MAX_CONNECTIONS` connections, as it would through a proxy limited to that many: more than half
  of the space fails, the optimum (63 connections) does not;
- `simulated_workloads`: a categorical factor, the workload (oltp_read_write, a write-heavy mix
  with half the statements writing, oltp_write_only), row writes per second maximized (18 x
  write share x tps) with the p95 latency limited to `LATENCY_LIMIT_MS` (a constraint on a
  second response), 3 % noise; its optimum is the best of the lattice meeting the limit.
- `simulated_latency`: the p95 latency minimized with the throughput held to at least
  `TPS_FLOOR` (half of the space falls short of it), 3 % noise. The latency spans 10 ms to 40 s
  over the space, growing by factors as connections queue; its optimum is the lowest latency of
  the lattice at 60 s that meets the floor.
- `hartmann6`: the Hartmann 6-D function (Surjanovic & Bingham, Virtual Library of Simulation
  Experiments), -H maximized, x1..x3 on 9 levels (level / 8) and x4..x6 continuous, noise-free.
  The optimum: for each of the 729 level combinations the best of multi-start L-BFGS-B over the
  continuous dimensions (combinations that provably cannot beat the best so far are skipped).
  `hartmann6_noisy`: the same with Gaussian noise of 5 % of the optimum's size.
- `branin`: the Branin function minimized, x1 an integer -5..10 and x2 continuous 0..15,
  noise-free. For a whole x1 it is a quadratic in x2, so its minimum is the clipped vertex.

A configuration is judged by `Problem.score`: its noise-free value when its trial would succeed
and its noise-free constrained response meets the limit, else None (deploying it fails).
`problem(name)` builds one (cached per process: the optima take a few seconds).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from experiments import suggest
from experiments.factors import Config, FactorSpace, Value
from experiments.goals import default_scale
from experiments.suggest import Limit
from worker.targets.simulated import SimulatedTarget, expected_responses
from worker.targets.simulated_model import (
    REFERENCE_WRITE_SHARE,
    STATEMENTS_PER_TRX,
    response_surface,
)

PROBLEM_NAMES: tuple[str, ...] = (
    "simulated",
    "simulated_8pct",
    "simulated_hetero",
    "simulated_failures",
    "simulated_workloads",
    "simulated_latency",
    "hartmann6",
    "hartmann6_noisy",
    "branin",
)
SIMULATED_NOISE = 0.03
MAX_CONNECTIONS = 96
LATENCY_LIMIT_MS = 40.0
TPS_FLOOR = 1000.0
HARTMANN_NOISE = 0.05


@dataclass(frozen=True)
class Observation:
    """What one trial measured: the objective (None when the trial failed) and the problem's
    constrained second response (None when it has none, or the trial failed)."""

    value: float | None
    constrained: float | None = None


def _always(config: Mapping[str, Value]) -> bool:
    return True


@dataclass(frozen=True)
class Problem:
    """A factor space, a noise-free truth, a (noisy) observation and the exact optimum.

    `limit` bounds a second response, the problem's constrained one, and `feasible` says
    whether a configuration's trial succeeds and its noise-free constrained response meets it.
    """

    name: str
    space: FactorSpace
    goal: str
    truth: Callable[[Mapping[str, Value]], float]
    observe: Callable[[Mapping[str, Value], int, int], Observation]  # (config, seed, run_index)
    optimum: float
    optimum_config: Config
    noise: float = 0.0
    limit: Limit | None = None
    feasible: Callable[[Mapping[str, Value]], bool] = _always
    noise_text: str = ""
    # The scale the service searches the response on: the default the API gives its response.
    scale: str = "linear"

    def strategy_problem(self, seed: int) -> suggest.Problem:
        """The problem as the service's strategies see it, seeded by `seed`."""
        limits = () if self.limit is None else (self.limit,)
        return suggest.Problem(
            self.space, goal=self.goal, scale=self.scale, limits=limits, seed=seed
        )

    def meets_limit(self, measured: float | None) -> bool:
        """Whether a measured value of the constrained response meets the limit (always, when
        the problem has none; never, when a limit has no measurement to judge)."""
        if self.limit is None:
            return True
        return measured is not None and self.excess(measured) <= 0

    def excess(self, measured: float) -> float:
        """How far a measured value of the constrained response lies beyond the limit, in its
        units (0 or less: within it)."""
        assert self.limit is not None, "a problem without a limit"
        low, high = self.limit.min, self.limit.max
        return max(
            -math.inf if low is None else low - measured,
            -math.inf if high is None else measured - high,
        )

    def score(self, config: Mapping[str, Value]) -> float | None:
        """The noise-free value of deploying `config`, or None when it fails or breaks the
        limit."""
        return self.truth(config) if self.feasible(config) else None

    def within(self, value: float | None, percent: float) -> bool:
        """Whether a true value lies within `percent` % of the optimum, in the goal's sense."""
        if value is None:
            return False
        margin = percent / 100.0 * abs(self.optimum)
        if self.goal == "maximize":
            return value >= self.optimum - margin
        return value <= self.optimum + margin

    def percent_of_optimum(self, value: float | None) -> float:
        """100 * value / optimum when maximizing, 100 * optimum / value when minimizing; 0 for a
        configuration that fails or breaks the limit."""
        if value is None:
            return 0.0
        if self.goal == "maximize":
            return 100.0 * value / self.optimum
        return 100.0 * self.optimum / value


@functools.cache
def problem(name: str) -> Problem:
    """The problem called `name` (one of PROBLEM_NAMES)."""
    builders: dict[str, Callable[[], Problem]] = {
        "simulated": lambda: simulated("simulated", _relative(SIMULATED_NOISE)),
        "simulated_8pct": lambda: simulated("simulated_8pct", _relative(0.08)),
        "simulated_hetero": lambda: simulated("simulated_hetero", _by_load),
        "simulated_failures": lambda: simulated(
            "simulated_failures",
            _relative(SIMULATED_NOISE),
            feasible=_connections_allowed,
            failing=f"more than {MAX_CONNECTIONS} connections fail",
        ),
        "simulated_workloads": simulated_workloads,
        "simulated_latency": simulated_latency,
        "hartmann6": lambda: hartmann6("hartmann6", 0.0),
        "hartmann6_noisy": lambda: hartmann6("hartmann6_noisy", HARTMANN_NOISE),
        "branin": branin,
    }
    if name not in builders:
        raise ValueError(f"unknown problem {name!r}; choose from {', '.join(PROBLEM_NAMES)}")
    return builders[name]()


# --- simulated Galera cluster -------------------------------------------------------------------

SIMULATED_SPACE = FactorSpace.from_dicts(
    [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "clients", "kind": "integer", "low": 1, "high": 8},
        {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
        {"name": "wsrep_slave_threads", "kind": "integer", "low": 1, "high": 16, "scale": "log2"},
        {"name": "runtime_s", "kind": "continuous", "low": 60, "high": 180},
    ]
)


def simulated_lattice() -> np.ndarray:
    """Every integer combination of the simulated space (nodes, clients, threads, slaves)."""
    ranges = [
        range(int(f.bounds[0]), int(f.bounds[1]) + 1)
        for f in SIMULATED_SPACE.factors
        if f.kind == "integer"
    ]
    return np.array(list(itertools.product(*ranges)), dtype=float)


def simulated_tps(lattice: np.ndarray, runtime_s: float) -> np.ndarray:
    """Noise-free tps of every lattice row at one runtime."""
    return response_surface(*lattice.T, runtime_s, REFERENCE_WRITE_SHARE)["tps"]


@functools.cache
def _lattice_responses() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The whole lattice and every response of it at 60 s, solved once per process."""
    lattice = simulated_lattice()
    return lattice, response_surface(*lattice.T, 60.0, REFERENCE_WRITE_SHARE)


def simulated_lattice_tps() -> tuple[np.ndarray, np.ndarray]:
    """The whole lattice and its tps at 60 s, solved once per process for every variant."""
    lattice, responses = _lattice_responses()
    return lattice, responses["tps"]


def _lattice_config(row: np.ndarray) -> Config:
    """The configuration of one lattice row, at 60 s."""
    config: Config = {name: int(v) for name, v in zip(SIMULATED_SPACE.names[:4], row, strict=True)}
    config["runtime_s"] = 60.0
    return config


def simulated_truth(config: Mapping[str, Value]) -> float:
    """Noise-free tps of one configuration."""
    return expected_responses(config)["tps"]


NoiseOf = Callable[[Mapping[str, Value]], float]


def _relative(noise: float) -> NoiseOf:
    return lambda config: noise


def _connections(config: Mapping[str, Value]) -> int:
    return int(config["clients"]) * int(config["threads_per_client"])  # type: ignore[call-overload]


def _by_load(config: Mapping[str, Value]) -> float:
    """2 % at one connection, rising linearly to 10 % at the space's most (8 x 64)."""
    return 0.02 + 0.08 * (_connections(config) - 1) / (8 * 64 - 1)


def _simulated_run(config: Mapping[str, Value], noise: float, seed: int, run_index: int) -> dict:
    target = SimulatedTarget("simulated", {"seed": seed, "noise": noise})
    return target.run(config, run_key=run_index).responses


def simulated(
    name: str,
    noise: NoiseOf,
    *,
    feasible: Callable[[Mapping[str, Value]], bool] = _always,
    failing: str = "",
) -> Problem:
    """The simulated cluster, maximized, with relative noise `noise(config)` on every run; a
    trial of a configuration that is not `feasible` fails (`failing` says which), and the
    optimum is the best feasible lattice point."""
    # 60 s is the shortest runtime; any runtime up to 120 s gives the same tps (see the test).
    lattice, values = simulated_lattice_tps()
    names = SIMULATED_SPACE.names[:4]
    if feasible is not _always:
        allowed = np.array([feasible(dict(zip(names, row, strict=True))) for row in lattice])
        values = np.where(allowed, values, -np.inf)
    best = int(np.argmax(values))
    config = _lattice_config(lattice[best])

    def observe(config: Mapping[str, Value], seed: int, run_index: int) -> Observation:
        if not feasible(config):
            return Observation(None)
        return Observation(_simulated_run(config, noise(config), seed, run_index)["tps"])

    low, high = (
        noise({"clients": 1, "threads_per_client": 1}),
        noise({"clients": 8, "threads_per_client": 64}),
    )
    text = f"{low:.0%} noise" if low == high else f"{low:.0%}-{high:.0%} noise by load"
    return Problem(
        name,
        SIMULATED_SPACE,
        "maximize",
        simulated_truth,
        observe,
        float(values[best]),
        config,
        noise=high,
        feasible=feasible,
        noise_text=f"{text}; {failing}" if failing else text,
    )


def _connections_allowed(config: Mapping[str, Value]) -> bool:
    return _connections(config) <= MAX_CONNECTIONS


WORKLOAD_WRITE_SHARES: dict[str, float] = {
    "oltp_read_write": REFERENCE_WRITE_SHARE,
    "write_heavy": 0.5,
    "oltp_write_only": 1.0,
}
WORKLOADS_SPACE = FactorSpace.from_dicts(
    [
        {"name": "workload", "kind": "categorical", "levels": list(WORKLOAD_WRITE_SHARES)},
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "clients", "kind": "integer", "low": 1, "high": 8},
        {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
    ]
)


def _workload_config(config: Mapping[str, Value]) -> dict[str, Value]:
    share = WORKLOAD_WRITE_SHARES[str(config["workload"])]
    return {name: config[name] for name in WORKLOADS_SPACE.names[1:]} | {
        "write_share": share,
        "wsrep_slave_threads": 1,
        "runtime_s": 60.0,
    }


def _row_writes(responses: Mapping[str, float], share: float) -> float:
    return STATEMENTS_PER_TRX * share * responses["tps"]


def workloads_truth(config: Mapping[str, Value]) -> float:
    """Noise-free row writes per second of one configuration."""
    resolved = _workload_config(config)
    return _row_writes(expected_responses(resolved), float(resolved["write_share"]))  # type: ignore[arg-type]


def _latency_met(config: Mapping[str, Value]) -> bool:
    return expected_responses(_workload_config(config))["latency_p95_ms"] <= LATENCY_LIMIT_MS


def simulated_workloads() -> Problem:
    """Row writes per second over the workload and the cluster's shape, with the p95 latency
    limited; the optimum is the best lattice point meeting the limit."""
    ranges = [range(1, 10), range(1, 9), range(4, 65)]
    lattice = np.array(list(itertools.product(*ranges)), dtype=float)
    best_value, best_config = -math.inf, {}
    for workload, share in WORKLOAD_WRITE_SHARES.items():
        surface = response_surface(*lattice.T, np.ones(len(lattice)), 60.0, share)
        writes = STATEMENTS_PER_TRX * share * surface["tps"]
        writes = np.where(surface["latency_p95_ms"] <= LATENCY_LIMIT_MS, writes, -np.inf)
        i = int(np.argmax(writes))
        if writes[i] > best_value:
            best_value = float(writes[i])
            best_config = {"workload": workload} | {
                name: int(v) for name, v in zip(WORKLOADS_SPACE.names[1:], lattice[i], strict=True)
            }

    def observe(config: Mapping[str, Value], seed: int, run_index: int) -> Observation:
        resolved = _workload_config(config)
        measured = _simulated_run(resolved, SIMULATED_NOISE, seed, run_index)
        share = float(resolved["write_share"])  # type: ignore[arg-type]
        return Observation(_row_writes(measured, share), measured["latency_p95_ms"])

    return Problem(
        "simulated_workloads",
        WORKLOADS_SPACE,
        "maximize",
        workloads_truth,
        observe,
        workloads_truth(best_config),
        best_config,
        noise=SIMULATED_NOISE,
        limit=Limit("latency_p95_ms", max=LATENCY_LIMIT_MS),
        feasible=_latency_met,
        noise_text=f"3 % noise; row writes/s with latency_p95_ms <= {LATENCY_LIMIT_MS:g}",
    )


def _tps_met(config: Mapping[str, Value]) -> bool:
    return simulated_truth(config) >= TPS_FLOOR


def simulated_latency() -> Problem:
    """The p95 latency of the simulated cluster minimized, its throughput at least
    `TPS_FLOOR`; the optimum is the lowest latency of the lattice meeting the floor."""
    lattice, responses = _lattice_responses()
    latency = responses["latency_p95_ms"]
    best = int(np.argmin(np.where(responses["tps"] >= TPS_FLOOR, latency, np.inf)))
    config = _lattice_config(lattice[best])

    def observe(config: Mapping[str, Value], seed: int, run_index: int) -> Observation:
        measured = _simulated_run(config, SIMULATED_NOISE, seed, run_index)
        return Observation(measured["latency_p95_ms"], measured["tps"])

    return Problem(
        "simulated_latency",
        SIMULATED_SPACE,
        "minimize",
        lambda config: expected_responses(config)["latency_p95_ms"],
        observe,
        float(latency[best]),
        config,
        noise=SIMULATED_NOISE,
        limit=Limit("tps", min=TPS_FLOOR),
        feasible=_tps_met,
        noise_text=f"3 % noise; latency_p95_ms minimized with tps >= {TPS_FLOOR:g}",
        scale=default_scale("latency_p95_ms"),
    )


# --- Hartmann 6-D -------------------------------------------------------------------------------

HARTMANN_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
HARTMANN_A = np.array(
    [
        [10.0, 3.0, 17.0, 3.5, 1.7, 8.0],
        [0.05, 10.0, 17.0, 0.1, 8.0, 14.0],
        [3.0, 3.5, 1.7, 10.0, 17.0, 8.0],
        [17.0, 8.0, 0.05, 10.0, 0.1, 14.0],
    ]
)
HARTMANN_P = 1e-4 * np.array(
    [
        [1312, 1696, 5569, 124, 8283, 5886],
        [2329, 4135, 8307, 3736, 1004, 9991],
        [2348, 1451, 3522, 2883, 3047, 6650],
        [4047, 8828, 8732, 5743, 1091, 381],
    ]
)
HARTMANN_LEVELS = 9
HARTMANN_SPACE = FactorSpace.from_dicts(
    [{"name": f"x{i}", "kind": "integer", "low": 0, "high": HARTMANN_LEVELS - 1} for i in (1, 2, 3)]
    + [{"name": f"x{i}", "kind": "continuous", "low": 0, "high": 1} for i in (4, 5, 6)]
)


def hartmann6_function(x: np.ndarray) -> np.ndarray:
    """The continuous Hartmann 6-D function H on [0, 1]^6 (last axis: the 6 coordinates)."""
    d = np.asarray(x, dtype=float)[..., None, :] - HARTMANN_P
    return -np.sum(HARTMANN_ALPHA * np.exp(-np.sum(HARTMANN_A * d**2, axis=-1)), axis=-1)


def hartmann6_truth(config: Mapping[str, Value]) -> float:
    """-H at the configuration (levels of x1..x3 mapped to level / 8)."""
    x = np.array([float(config[f"x{i}"]) for i in range(1, 7)])  # type: ignore[arg-type]
    x[:3] /= HARTMANN_LEVELS - 1
    return -float(hartmann6_function(x))


def _hartmann_and_gradient(z: np.ndarray, fixed: np.ndarray) -> tuple[float, np.ndarray]:
    """H and its gradient in the continuous coordinates z, with x1..x3 held at `fixed`."""
    d = np.concatenate([fixed, z]) - HARTMANN_P
    terms = HARTMANN_ALPHA * np.exp(-np.sum(HARTMANN_A * d**2, axis=1))
    gradient = np.sum(terms[:, None] * 2.0 * HARTMANN_A * d, axis=0)[3:]
    return -float(np.sum(terms)), gradient


def hartmann6_mixed_optimum(starts: int = 3, grid: int = 6) -> tuple[float, Config]:
    """The largest -H over the mixed space: for each level combination, L-BFGS-B from the
    `starts` best points of a `grid`^3 lattice of the continuous dimensions.

    A combination is skipped when it cannot beat the best so far: with the continuous
    dimensions' factors of each term at their largest, 1, -H is at most
    sum_i alpha_i exp(-sum_{j <= 3} A_ij (x_j - P_ij)^2). Most of the 729 are skipped.
    """
    axis = np.linspace(0.0, 1.0, grid)
    continuous = np.array(list(itertools.product(axis, repeat=3)))
    levels = np.array(list(itertools.product(range(HARTMANN_LEVELS), repeat=3)))
    fixed = levels / (HARTMANN_LEVELS - 1)
    d = fixed[:, None, :] - HARTMANN_P[:, :3]
    bounds = np.sum(HARTMANN_ALPHA * np.exp(-np.sum(HARTMANN_A[:, :3] * d**2, axis=-1)), axis=-1)
    best_value, best_config = -math.inf, {}
    for i in np.argsort(-bounds):
        if bounds[i] <= best_value:
            break  # sorted: no later combination can do better either
        points = np.hstack([np.tile(fixed[i], (len(continuous), 1)), continuous])
        for start in np.argsort(hartmann6_function(points))[:starts]:
            found = minimize(
                _hartmann_and_gradient,
                continuous[start],
                args=(fixed[i],),
                jac=True,
                method="L-BFGS-B",
                bounds=[(0.0, 1.0)] * 3,
            )
            if -found.fun > best_value:
                best_value = -float(found.fun)
                best_config = {f"x{j + 1}": int(v) for j, v in enumerate(levels[i])}
                best_config |= {f"x{j + 4}": float(v) for j, v in enumerate(found.x)}
    # Report the value of the reported configuration itself, so the two always agree.
    return hartmann6_truth(best_config), best_config


def hartmann6(name: str, noise: float) -> Problem:
    """Hartmann 6-D on 9 levels x 3 continuous, -H maximized, with Gaussian noise of `noise`
    times the optimum's size."""
    value, config = hartmann6_mixed_optimum()
    sd = noise * abs(value)

    def observe(config: Mapping[str, Value], seed: int, run_index: int) -> Observation:
        truth = hartmann6_truth(config)
        if sd == 0:
            return Observation(truth)
        rng = np.random.default_rng([seed, run_index])
        return Observation(truth + float(rng.normal(0.0, sd)))

    return Problem(
        name,
        HARTMANN_SPACE,
        "maximize",
        hartmann6_truth,
        observe,
        value,
        config,
        noise=noise,
        noise_text=f"Gaussian noise of {noise:.0%} of the optimum" if noise else "noise-free",
    )


# --- Branin -------------------------------------------------------------------------------------

BRANIN_A = 1.0
BRANIN_B = 5.1 / (4.0 * math.pi**2)
BRANIN_C = 5.0 / math.pi
BRANIN_R = 6.0
BRANIN_S = 10.0
BRANIN_T = 1.0 / (8.0 * math.pi)
BRANIN_SPACE = FactorSpace.from_dicts(
    [
        {"name": "x1", "kind": "integer", "low": -5, "high": 10},
        {"name": "x2", "kind": "continuous", "low": 0, "high": 15},
    ]
)


def branin_function(x1: np.ndarray | float, x2: np.ndarray | float) -> np.ndarray:
    """The Branin function (arrays broadcast together)."""
    x1, x2 = np.asarray(x1, dtype=float), np.asarray(x2, dtype=float)
    inner = x2 - BRANIN_B * x1**2 + BRANIN_C * x1 - BRANIN_R
    return BRANIN_A * inner**2 + BRANIN_S * (1.0 - BRANIN_T) * np.cos(x1) + BRANIN_S


def branin_truth(config: Mapping[str, Value]) -> float:
    """Branin at the configuration."""
    return float(branin_function(float(config["x1"]), float(config["x2"])))  # type: ignore[arg-type]


def branin_observe(config: Mapping[str, Value], seed: int, run_index: int) -> Observation:
    """Noise-free: the observation is the truth."""
    return Observation(branin_truth(config))


def branin_mixed_optimum() -> tuple[float, Config]:
    """The smallest Branin value with x1 whole: per x1 the vertex in x2, clipped to 0..15."""
    low, high = BRANIN_SPACE["x2"].bounds
    best_value, best_config = math.inf, {}
    for x1 in range(-5, 11):
        x2 = min(max(BRANIN_B * x1**2 - BRANIN_C * x1 + BRANIN_R, low), high)
        value = float(branin_function(x1, x2))
        if value < best_value:
            best_value, best_config = value, {"x1": x1, "x2": x2}
    return best_value, best_config


def branin() -> Problem:
    """Branin with x1 whole, minimized, noise-free."""
    value, config = branin_mixed_optimum()
    return Problem(
        "branin",
        BRANIN_SPACE,
        "minimize",
        branin_truth,
        branin_observe,
        value,
        config,
        noise_text="noise-free",
    )
