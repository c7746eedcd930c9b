"""The analysis's robust optimum against the simulated target's exact one.

An experiment over nodes and clients (the control factors) with the write share as the noise
factor (a workload the cluster must serve, not a setting to choose) is planned, measured on the
simulated target with its seeded noise and fitted; the exact robust optimum comes from the
target's noise-free response surface, brute force over the control lattice, aggregated over
the noise levels as the analysis aggregates its predictions (experiments.robust.aggregate).
"""

import itertools

import numpy as np
import pytest

from experiments.analysis import fit
from experiments.designs import plan
from experiments.designs.request import DesignRequest
from experiments.factors import FactorSpace
from experiments.robust import RobustAim, aggregate
from worker.targets.simulated import SimulatedTarget, expected_responses

NODES = [1, 3, 5]
CLIENTS = [1, 3, 5]
WRITE_SHARES = [0.1, 0.5]
LATTICE = list(itertools.product(NODES, CLIENTS))
SPACE = FactorSpace.from_dicts(
    [
        {"name": "nodes", "kind": "integer", "levels": NODES},
        {"name": "clients", "kind": "integer", "levels": CLIENTS},
        {"name": "write_share", "kind": "continuous", "levels": WRITE_SHARES, "noise": True},
    ]
)


def true_robust(aim: RobustAim) -> np.ndarray:
    """The noise-free tps of every control configuration, reduced over the write shares."""
    table = [
        [
            expected_responses({"nodes": n, "clients": c, "write_share": w})["tps"]
            for w in WRITE_SHARES
        ]
        for n, c in LATTICE
    ]
    return aggregate(np.array(table), aim, "maximize")


def measured_analysis(seed: int, aim: RobustAim):
    design = plan(SPACE, DesignRequest(kind="full_factorial", levels=3, replicates=2, seed=1))
    configs = [point.config for point in design.points]
    target = SimulatedTarget("sim", {"seed": seed, "noise": 0.03})
    tps = [target.run(c, run_key=i).responses["tps"] for i, c in enumerate(configs)]
    return fit(SPACE, configs, tps, model="quadratic", robust=aim)


@pytest.mark.parametrize("aim", [RobustAim("mean"), RobustAim("worst")], ids=["mean", "worst"])
@pytest.mark.parametrize("seed", range(5))
def test_the_robust_optimum_is_the_exact_one_or_a_tie_within_the_models_ci(seed, aim):
    truth = true_robust(aim)
    best = measured_analysis(seed, aim).optimum
    assert set(best.config) == {"nodes", "clients"}
    found = LATTICE.index((best.config["nodes"], best.config["clients"]))
    exact = int(np.argmax(truth))
    if found != exact:
        # The model cannot tell them apart: both true values lie in its 95 % CI.
        assert best.ci_low <= truth[exact] <= best.ci_high
        assert best.ci_low <= truth[found] <= best.ci_high
    assert best.robust.aim_value == pytest.approx(truth[found], rel=0.05)


def test_the_worst_write_share_moves_the_optimum_to_one_node():
    # Without replication one node pays nothing for a high write share: the exact optimum of
    # the mean is 3 nodes with 5 clients, of the worst write share 1 node with 3 clients, and
    # the analysis finds both.
    exact = {
        name: LATTICE[int(np.argmax(true_robust(RobustAim(name))))] for name in ("mean", "worst")
    }
    assert exact == {"mean": (3, 5), "worst": (1, 3)}
    for name, (nodes, clients) in exact.items():
        best = measured_analysis(0, RobustAim(name)).optimum
        assert best.config == {"nodes": nodes, "clients": clients}
        # The worst write share is the higher one at the robust optimum.
        if name == "worst":
            assert best.robust.held == {"write_share": 0.5}
