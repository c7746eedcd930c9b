"""What the planner does for every family: whole plots, collapsed points, constraints, quality."""

from __future__ import annotations

import itertools

import pytest

from experiments.constraints import parse_constraints
from experiments.designs import DesignRequest, design_size, plan
from experiments.errors import DomainError
from experiments.factors import FactorSpace

GALERA = FactorSpace.from_dicts(
    [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9, "hard_to_change": True},
        {"name": "clients", "kind": "integer", "low": 1, "high": 8},
        {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
    ]
)


def changes(values: list) -> int:
    return sum(a != b for a, b in itertools.pairwise(values))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hard_to_change_factors_change_as_rarely_as_the_design_allows(seed: int):
    design = plan(GALERA, DesignRequest(levels=3, replicates=2, centre_points=2, seed=seed))
    nodes = [p.config["nodes"] for p in design.points]
    # Three node counts: the cluster is resized exactly twice, whatever the seed.
    assert changes(nodes) == 2
    plots = [p.whole_plot for p in design.points]
    assert changes(plots) == 2 and set(plots) == {1, 2, 3}
    for plot in {1, 2, 3}:
        assert len({p.config["nodes"] for p in design.points if p.whole_plot == plot}) == 1
    assert any("3 whole plots of nodes (2 changes)" in note for note in design.notes)


def test_whole_plot_order_and_runs_within_are_randomized_with_the_seed():
    orders = {
        tuple(p.std_order for p in plan(GALERA, DesignRequest(levels=3, seed=s)).points)
        for s in range(6)
    }
    assert len(orders) > 1
    again = plan(GALERA, DesignRequest(levels=3, seed=4)).points
    assert [p.std_order for p in again] == [
        p.std_order for p in plan(GALERA, DesignRequest(levels=3, seed=4)).points
    ]


def test_without_hard_to_change_factors_there_are_no_whole_plots():
    space = FactorSpace.from_dicts([{"name": "a", "low": 0, "high": 1}])
    assert {p.whole_plot for p in plan(space, DesignRequest()).points} == {None}


def test_points_that_collapse_after_rounding_are_reported():
    space = FactorSpace.from_dicts(
        [
            {"name": "nodes", "kind": "integer", "low": 1, "high": 2},
            {"name": "x", "low": 0, "high": 1},
        ]
    )
    design = plan(space, DesignRequest(levels=3, randomize=False))
    # Coded -1, 0, +1 of nodes 1..2 decode to 1, 2 (1.5 rounds half up) and 2.
    collapsed = [p for p in design.points if p.duplicate_of is not None]
    assert len(collapsed) == 3
    by_std = {p.std_order: p for p in design.points}
    for point in collapsed:
        assert point.config == by_std[point.duplicate_of].config
        assert point.coded != by_std[point.duplicate_of].coded
    assert any("collapsed" in note for note in design.notes)


def test_replicates_and_centre_points_are_not_reported_as_collapsed():
    design = plan(GALERA, DesignRequest(replicates=3, centre_points=4))
    assert all(p.duplicate_of is None for p in design.points)


def test_constraints_remove_infeasible_runs_and_say_how_many():
    constraints = parse_constraints(["clients * threads_per_client <= 256"], GALERA)
    request = DesignRequest(levels=3, centre_points=1)
    unconstrained = plan(GALERA, request)
    design = plan(GALERA, request, constraints)
    broken = [
        p
        for p in unconstrained.points
        if p.config["clients"] * p.config["threads_per_client"] > 256
    ]
    assert broken and design.removed_by_constraints == len(broken)
    assert len(design.points) == len(unconstrained.points) - len(broken)
    assert all(p.config["clients"] * p.config["threads_per_client"] <= 256 for p in design.points)
    assert sorted(p.run_order for p in design.points) == list(range(1, len(design.points) + 1))
    assert any(f"{len(broken)} planned runs broke a constraint" in n for n in design.notes)


def test_a_constraint_no_run_satisfies_is_refused():
    constraints = parse_constraints(["nodes >= 20"], GALERA)
    with pytest.raises(DomainError) as error:
        plan(GALERA, DesignRequest(), constraints)
    assert error.value.field == "constraints"


def test_every_design_comes_with_its_quality_report():
    design = plan(GALERA, DesignRequest(levels=2))
    assert design.model == "interaction"
    assert design.quality.runs == len(design.points) == 8
    assert design.quality.d_efficiency == pytest.approx(100.0)
    assert design.quality.max_vif == pytest.approx(1.0)
    as_dict = design.as_dict()
    assert as_dict["runs"] == 8 and as_dict["quality"]["model"] == "interaction"


def test_design_size_counts_centre_points_per_block_and_replicates():
    request = DesignRequest(levels=3, replicates=2, centre_points=3)
    assert design_size(GALERA, request) == 27 * 2 + 3 == len(plan(GALERA, request).points)
