"""Observations in whole plots (issue 54, item 10): a hard-to-change factor that varies inside a
declared whole plot is a 422 naming the field and the rule, and runs only partly labelled with
their whole plot are analysed by OLS with a note that says so."""

from __future__ import annotations

from typing import Any

from tests.app.test_api import MANUAL, create, with_changes

SPLIT = with_changes(
    MANUAL,
    factors=[
        {"name": "galera_nodes", "kind": "integer", "low": 1, "high": 9, "hard_to_change": True},
        {"name": "total_connections", "kind": "integer", "low": 8, "high": 160},
    ],
)


def run(nodes: int, connections: int, tps: float, plot: int | None) -> dict[str, Any]:
    observation: dict[str, Any] = {
        "config": {"galera_nodes": nodes, "total_connections": connections},
        "responses": {"tps": tps},
    }
    if plot is not None:
        observation["whole_plot"] = plot
    return observation


async def test_a_hard_to_change_factor_varying_inside_a_whole_plot_is_refused(api):
    created = await create(api, SPLIT)
    url = f"/experiments/{created['id']}/observations"
    first = [run(3, 8, 1000.0, 1), run(3, 160, 1500.0, 1), run(5, 8, 1100.0, 2)]
    assert (await api.post(url, json=first)).status_code == 201

    # Within one request: observation 1 puts 7 nodes in whole plot 4, which has 5.
    inside = [run(5, 40, 1200.0, 4), run(7, 40, 1300.0, 4)]
    response = await api.post(url, json=inside)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"][0]
    assert detail["loc"][1:] == ["observations", 1, "whole_plot"]
    assert detail["msg"] == (
        "whole plot 4 holds galera_nodes=5 (observation 0), this run galera_nodes=7: a"
        " hard-to-change factor keeps one setting within a whole plot; give the run another"
        " whole plot or none"
    )
    # Against a stored trial: whole plot 1 was run with 3 nodes.
    response = await api.post(url, json=[run(4, 80, 1250.0, 1)])
    assert response.status_code == 422, response.text
    detail = response.json()["detail"][0]
    assert detail["loc"][1:] == ["observations", 0, "whole_plot"]
    trial = min(t["id"] for t in (await api.get(f"/experiments/{created['id']}/trials")).json())
    assert (
        f"whole plot 1 holds galera_nodes=3 (trial {trial}), this run galera_nodes=4"
        in (detail["msg"])
    )
    # Nothing of a refused request is stored; the easy-to-change factor may vary freely.
    assert len((await api.get(f"/experiments/{created['id']}/trials")).json()) == 3
    assert (
        await api.post(url, json=[run(3, 80, 1250.0, 1), run(4, 80, 1250.0, None)])
    ).status_code == 201


async def test_partly_labelled_whole_plots_are_analysed_by_ols_with_a_note(api):
    created = await create(api, SPLIT)
    url = f"/experiments/{created['id']}/observations"
    labelled = [(1, 8, 1), (1, 160, 1), (5, 8, 2), (5, 160, 2), (9, 8, 3), (9, 160, 3)]
    unlabelled = [(1, 80, None), (5, 80, None), (9, 80, None), (5, 40, None)]
    runs = [
        run(nodes, connections, 1000.0 + 50 * nodes + 2 * connections + 7 * (i % 3), plot)
        for i, (nodes, connections, plot) in enumerate([*labelled, *unlabelled])
    ]
    assert (await api.post(url, json=runs)).status_code == 201
    analysis = (await api.get(f"/experiments/{created['id']}/analysis")).json()
    note = (
        "6 of 10 runs carry whole_plot: analysed by OLS; label all runs to get the split-plot"
        " analysis"
    )
    assert analysis["split_plot"]["method"] == "OLS"
    assert analysis["split_plot"]["notes"] == [note]
    assert note in analysis["method"]
