"""One answer to "what do I deploy" over REST (issue 54, items 7 and 8), on a manual target
(both database backends): the analysis and the closed loop's status give the same answer under
one field, `deploy`; runs are named by their run numbers; an analysis of a design cut short
says so."""

from __future__ import annotations

from tests.app.test_suggestions_api import manual_spec, observe, observed_factorial

CCD = {
    "name": "cut short",
    "target": "manual",
    "factors": [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9, "hard_to_change": True},
        {"name": "clients", "kind": "integer", "low": 1, "high": 9},
        {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
    ],
    "design": {"kind": "ccd", "ccd_type": "face_centred", "seed": 7},
    "objective": {"response": "tps"},
}


async def test_the_analysis_names_one_measured_configuration_to_deploy(api):
    experiment_id = await observed_factorial(api)
    trials = (await api.get(f"/experiments/{experiment_id}/trials")).json()
    analysis = (await api.get(f"/experiments/{experiment_id}/analysis")).json()
    answer = analysis["deploy"]
    assert answer["source"] == "recommendation" and answer["judged_by"] == "gaussian process"
    assert answer["config"] in [t["config"] for t in trials]  # a measured configuration
    assert answer["runs_used"] == len(trials)
    runs = {f"run {t['run_order']}" for t in trials if t["config"] == answer["config"]}
    assert set(answer["measured"]["labels"]) == runs
    assert answer["model"]["response"] == "tps" and answer["summary"].startswith("Deploy ")
    assert {a["kind"] for a in answer["alternatives"]} <= {
        "predicted_optimum",
        "best_run",
        "best_mean",
    }
    # Residuals and every run the answer cites are named by run number, as the run table is.
    labels = [run["label"] for run in analysis["diagnostics"]["runs"]]
    assert labels == [f"run {t['run_order']}" for t in trials]
    # No design: nothing planned; a 2^2 factorial with centre runs cannot tell the two squares
    # apart, which the analysis's quadratic start shows.
    covered = analysis["coverage"]
    assert covered["planned"] is None and covered["complete"]
    assert covered["not_estimable"] == ["threads_per_client^2"]


async def test_the_loop_and_the_analysis_give_the_same_answer(api):
    experiment_id = await observed_factorial(api)
    started = await api.post(
        f"/experiments/{experiment_id}/optimize", json={"strategy": "bayes", "budget": 2}
    )
    assert started.status_code == 202, started.text
    for _ in range(5):
        detail = (await api.get(f"/experiments/{experiment_id}")).json()
        if detail["optimization"]["status"] != "running":
            break
        pending = [
            t
            for t in (await api.get(f"/experiments/{experiment_id}/trials")).json()
            if t["status"] == "pending"
        ]
        await observe(api, experiment_id, [t["config"] for t in pending])
    loop = detail["optimization"]
    assert loop["status"] == "stopped" and loop["deploy"] is not None
    analysis = (await api.get(f"/experiments/{experiment_id}/analysis")).json()
    assert analysis["deploy"] == loop["deploy"]
    assert loop["deploy"]["config"] == loop["recommendation"]["config"]
    assert loop["deploy"]["runs_used"] == detail["progress"]["succeeded"]


async def test_an_analysis_of_a_design_cut_short_says_what_it_cannot_tell(api):
    experiment = (await api.post("/experiments", json=CCD)).json()
    experiment_id = experiment["id"]
    first = [t for t in experiment["trials"] if t["config"]["nodes"] == 1][:4]
    assert len(first) == 4 and len(experiment["trials"]) == 18
    observations = [
        {"config": t["config"], "responses": {"tps": 300.0 + 50 * i}} for i, t in enumerate(first)
    ]
    recorded = await api.post(f"/experiments/{experiment_id}/observations", json=observations)
    assert recorded.status_code == 201, recorded.text
    analysis = (await api.get(f"/experiments/{experiment_id}/analysis")).json()
    covered = analysis["coverage"]
    assert (covered["runs"], covered["planned"], covered["complete"]) == (4, 18, False)
    assert covered["not_varied"] == {"nodes": 1} and covered["model"] == "quadratic"
    assert "nodes" in covered["not_estimable"]
    sentences = analysis["explanation"]["sentences"]
    assert sentences[0] == (
        "The design is incomplete: 4 of its 18 planned runs have results, so this analysis is"
        " provisional."
    )
    assert any(s.startswith("Every run so far had nodes = 1") for s in sentences)
    assert not analysis["explanation"]["confident"]
    assert analysis["deploy"]["caveats"] == [
        "Every run had nodes = 1: this answer holds there only; no other setting of nodes was"
        " tried."
    ]


async def test_a_loop_on_an_empty_experiment_has_no_answer_until_a_run_is_measured(api):
    experiment = (await api.post("/experiments", json=manual_spec())).json()
    started = await api.post(
        f"/experiments/{experiment['id']}/optimize", json={"strategy": "bayes", "budget": 3}
    )
    assert started.status_code == 202, started.text
    assert started.json()["deploy"] is None and started.json()["recommendation"] is None
