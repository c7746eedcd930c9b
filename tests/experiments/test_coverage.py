"""What an analysis rests on (issue 54, item 7): a design cut short says how many of its runs
are done, which factors no finished run varied, and which terms of its model are not yet
estimable, before anything else."""

from __future__ import annotations

import itertools

from experiments.analysis import fit
from experiments.analysis.coverage import coverage
from tests.experiments.test_explain import ONE_NODE_COUNT, ONE_NODE_TPS, UNVARIED


def test_four_of_eighteen_runs_at_one_node_count_are_said_to_be_incomplete():
    runs, values = ONE_NODE_COUNT[:4], ONE_NODE_TPS[:4]
    analysis = fit(UNVARIED, runs, values, response="tps")
    found = coverage(
        UNVARIED, runs, planned=18, model="quadratic", residual_df=analysis.residual_df
    )
    assert (found.runs, found.planned, found.complete) == (4, 18, False)
    assert found.not_varied == {"nodes": 1}
    # Nothing of nodes, and no square (two settings of clients and of threads): 4 runs
    # estimate the intercept, clients, threads and their interaction, and nothing else.
    assert found.not_estimable == [
        "nodes",
        "nodes:clients",
        "nodes:threads",
        "nodes^2",
        "clients^2",
        "threads^2",
    ]
    assert found.sentences == [
        "The design is incomplete: 4 of its 18 planned runs have results, so this analysis is"
        " provisional.",
        "The runs so far cannot estimate nodes, nodes:clients, nodes:threads, nodes^2,"
        " clients^2, threads^2 of the quadratic model the design was planned for; the model"
        " fitted leaves them out, and says nothing about them.",
    ]
    reviewed = analysis.reviewed(found, None)
    assert reviewed.explanation.sentences[:2] == found.sentences
    assert reviewed.coverage == found and reviewed.deploy is None


def test_a_complete_design_that_supports_its_model_says_nothing():
    configs = [
        {"nodes": n, "clients": c, "threads": t}
        for n, c, t in itertools.product((1, 5, 9), (1, 5, 9), (4, 16, 64))
    ]
    found = coverage(UNVARIED, configs, planned=27, model="quadratic", residual_df=17)
    assert found.complete and found.sentences == []
    assert found.not_varied == {} and found.not_estimable == []


def test_without_a_design_nothing_was_planned_and_only_the_model_is_checked():
    found = coverage(UNVARIED, ONE_NODE_COUNT, planned=None, model="linear", residual_df=2)
    assert found.complete and found.planned is None
    assert found.sentences == [
        "The runs so far cannot estimate nodes of the linear model the analysis started from;"
        " the model fitted leaves it out, and says nothing about it."
    ]
