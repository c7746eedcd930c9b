"""The peers' adapters (benchmarks/optimizer_peers.py) in a few hand-run ask/tell rounds each:
configurations inside the space with the factors' Python types, a failed trial that the method
survives, and a recommendation that meets the constraint and is the best tried (or nearly).

Each peer's library is optional (the `peers` extra); a peer that is not installed is skipped,
with the reason naming the library and how to install it."""

from __future__ import annotations

import math

import pytest

from benchmarks.optimizer_history import History
from benchmarks.optimizer_peers import PEERS, Peer, missing_peers
from benchmarks.optimizer_problems import Problem
from experiments.factors import Config, FactorSpace
from experiments.suggest import Limit

MISSING = missing_peers(load=False)  # a look-up only: importing Ax and torch takes seconds
FACTORS = [
    {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
    {"name": "threads", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
    {"name": "share", "kind": "continuous", "low": 0, "high": 1},
]
CATEGORY = {"name": "engine", "kind": "categorical", "levels": ["innodb", "myrocks", "aria"]}
# On the constrained response, `nodes`, from either side: the unconstrained optimum (7) breaks both.
CEILING, FLOOR = Limit("nodes", max=5.0), Limit("nodes", min=8.0)
# Small settings, so that each test stays well under 20 s on the 2-core machine.
SETTINGS = {
    "gp": {"startup_trials": 3},
    "smac": {"initial_configs": 3},
    "hebo": {"initial": 3},
    "ax": {"initial": 3},
}
ROUNDS = {"gp": 10, "smac": 10, "hebo": 6, "ax": 6}  # HEBO and Ax take seconds per ask


def peer_params() -> list[object]:
    return [
        pytest.param(
            name,
            marks=[
                pytest.mark.peers,
                pytest.mark.skipif(name in MISSING, reason=f"{name}: {MISSING.get(name)}"),
            ],
        )
        for name in PEERS
    ]


def truth(config: Config) -> float:
    """A noise-free quadratic in coded terms, best at 7 nodes, 16 threads, share 0.3, innodb."""
    penalty = 0.0 if config.get("engine", "innodb") == "innodb" else 2.0
    return -(
        (config["nodes"] - 7) ** 2  # type: ignore[operator]
        + (math.log2(config["threads"]) - 4) ** 2  # type: ignore[arg-type]
        + 10 * (config["share"] - 0.3) ** 2  # type: ignore[operator]
        + penalty
    )


def make_problem(factors: list[dict[str, object]], limit: Limit | None) -> Problem:
    return Problem(
        "tiny",
        FactorSpace.from_dicts(factors),
        "maximize",
        truth,
        lambda config, seed, run: truth(config),
        0.0,
        {"nodes": 7, "threads": 16, "share": 0.3, "engine": "innodb"},
        limit=limit,
    )


def run(name: str, problem: Problem, rounds: int, fail: set[int]) -> tuple[Peer, History]:
    """`rounds` ask/tell rounds by hand; the trials in `fail` fail (value None)."""
    method = PEERS[name](problem, 3, **SETTINGS[name])
    history = History()
    for i in range(rounds):
        batch = method.ask(history, rounds - i)
        assert len(batch) == 1, "the method stopped asking"
        config, point_type = batch[0]
        assert point_type == name
        problem.space.check_config(config)
        for factor in problem.space.factors:
            expected = {"integer": int, "continuous": float, "categorical": str}[factor.kind]
            assert type(config[factor.name]) is expected, (factor.name, config)
        failed = i in fail
        history.configs.append(config)
        history.values.append(None if failed else truth(config))
        history.point_types.append(point_type)
        constrained = problem.limit is not None and not failed
        history.constrained.append(float(config["nodes"]) if constrained else None)  # type: ignore[arg-type]
    return method, history


@pytest.mark.parametrize("name", peer_params())
def test_peer_asks_inside_the_space_and_survives_failed_trials(name):
    problem = make_problem([*FACTORS, CATEGORY], None)
    method = PEERS[name](problem, 3, **SETTINGS[name])
    assert method.stop_reason is None
    assert method.recommend(History()) is None
    method, history = run(name, problem, 1, fail={0})
    assert method.recommend(history) is None, "nothing succeeded yet: nothing to recommend"

    method, history = run(name, problem, ROUNDS[name], fail={0, 4})

    assert method.stop_reason is None
    recommended = method.recommend(history)
    assert recommended is not None
    problem.space.check_config(recommended)


@pytest.mark.parametrize("limit", [CEILING, FLOOR], ids=["ceiling", "floor"])
@pytest.mark.parametrize("name", peer_params())
def test_peer_recommends_the_best_feasible_trial(name, limit):
    problem = make_problem(FACTORS, limit)
    method, history = run(name, problem, ROUNDS[name], fail={1})

    recommended = method.recommend(history)
    feasible = [
        truth(c)
        for c, v, load in zip(history.configs, history.values, history.constrained, strict=True)
        if v is not None and problem.meets_limit(load)
    ]
    assert feasible, "no feasible trial: the test problem is too hard for its rounds"
    assert recommended is not None
    assert problem.meets_limit(float(recommended["nodes"]))  # type: ignore[arg-type]
    # Every peer recommends a configuration it tried. Ax ranks by its model, fitted when it last
    # asked, so it may not know the last trial yet: the best or second best feasible one.
    assert recommended in history.configs
    assert truth(recommended) >= sorted(feasible)[-2 if len(feasible) > 1 else -1]
