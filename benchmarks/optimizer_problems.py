"""The test problems of `benchmarks/optimizer.py`, each with its exact optimum over a mixed space.

- `simulated`: the simulated Galera cluster (worker.targets.simulated), tps maximized over
  nodes, clients, threads per client, slave threads (integers) and runtime (continuous), with
  3 % noise on every observation. The optimum is the best point of the integer lattice at 60 s:
  throughput does not depend on the runtime up to the stall at 120 s and is lower after it.
- `hartmann6`: the Hartmann 6-D function (Surjanovic & Bingham, Virtual Library of Simulation
  Experiments), -H maximized, x1..x3 on 9 levels (level / 8) and x4..x6 continuous, noise-free.
  The optimum: for each of the 729 level combinations the best of multi-start L-BFGS-B over the
  continuous dimensions (combinations that provably cannot beat the best so far are skipped).
- `branin`: the Branin function minimized, x1 an integer -5..10 and x2 continuous 0..15,
  noise-free. For a whole x1 it is a quadratic in x2, so its minimum is the clipped vertex.

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

from experiments.factors import Config, FactorSpace, Value
from worker.targets.simulated import (
    REFERENCE_WRITE_SHARE,
    SimulatedTarget,
    expected_responses,
    response_surface,
)

PROBLEM_NAMES: tuple[str, ...] = ("simulated", "hartmann6", "branin")
SIMULATED_NOISE = 0.03


@dataclass(frozen=True)
class Problem:
    """A factor space, a noise-free truth, a (noisy) observation and the exact optimum."""

    name: str
    space: FactorSpace
    goal: str
    truth: Callable[[Mapping[str, Value]], float]
    observe: Callable[[Mapping[str, Value], int, int], float]  # (config, seed, run_index)
    optimum: float
    optimum_config: Config
    noise: float = 0.0
    constraint: str | None = None  # a second response that must stay at or below the limit
    constraint_limit: float | None = None

    def within(self, value: float, percent: float) -> bool:
        """Whether a true value lies within `percent` % of the optimum, in the goal's sense."""
        margin = percent / 100.0 * abs(self.optimum)
        if self.goal == "maximize":
            return value >= self.optimum - margin
        return value <= self.optimum + margin

    def percent_of_optimum(self, value: float) -> float:
        """100 * value / optimum when maximizing, 100 * optimum / value when minimizing."""
        if self.goal == "maximize":
            return 100.0 * value / self.optimum
        return 100.0 * self.optimum / value


@functools.cache
def problem(name: str) -> Problem:
    """The problem called `name` (one of PROBLEM_NAMES)."""
    builders = {"simulated": simulated, "hartmann6": hartmann6, "branin": branin}
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


def simulated_truth(config: Mapping[str, Value]) -> float:
    """Noise-free tps of one configuration."""
    return expected_responses(config)["tps"]


def simulated_observe(config: Mapping[str, Value], seed: int, run_index: int) -> float:
    """tps of one simulated trial with 3 % noise, seeded by (seed, run_index)."""
    target = SimulatedTarget("simulated", {"seed": seed, "noise": SIMULATED_NOISE})
    return target.run(config, run_key=run_index).responses["tps"]


def simulated() -> Problem:
    """The simulated cluster, maximized."""
    lattice = simulated_lattice()
    # 60 s is the shortest runtime; any runtime up to 120 s gives the same tps (see the test).
    values = simulated_tps(lattice, 60.0)
    best = int(np.argmax(values))
    config: Config = {
        name: int(v) for name, v in zip(SIMULATED_SPACE.names[:4], lattice[best], strict=True)
    }
    config["runtime_s"] = 60.0
    return Problem(
        "simulated",
        SIMULATED_SPACE,
        "maximize",
        simulated_truth,
        simulated_observe,
        float(values[best]),
        config,
        SIMULATED_NOISE,
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


def hartmann6_observe(config: Mapping[str, Value], seed: int, run_index: int) -> float:
    """Noise-free: the observation is the truth."""
    return hartmann6_truth(config)


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


def hartmann6() -> Problem:
    """Hartmann 6-D on 9 levels x 3 continuous, -H maximized, noise-free."""
    value, config = hartmann6_mixed_optimum()
    return Problem(
        "hartmann6",
        HARTMANN_SPACE,
        "maximize",
        hartmann6_truth,
        hartmann6_observe,
        value,
        config,
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


def branin_observe(config: Mapping[str, Value], seed: int, run_index: int) -> float:
    """Noise-free: the observation is the truth."""
    return branin_truth(config)


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
    )
