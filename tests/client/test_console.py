"""What the CLI shows: the progress while trials run, the answer to deploy, the tables."""

from __future__ import annotations

from client.console import _bar, progress_detail

EXPERIMENT = {
    "progress": {"running": 1, "failed": 1, "succeeded": 5, "cancelled": 0, "total": 12},
    "best": {"value": 1490.25},
    "objective": {"response": "tps"},
    "timing": {"remaining_s": 250.0},
    "optimization": {"id": 4, "status": "running", "rounds": 2, "trials_used": 3, "budget": 10},
}


def test_the_progress_line_says_the_best_the_loop_and_the_time_left():
    assert progress_detail(EXPERIMENT) == (
        "running 1  failed 1  best tps 1490.2  loop round 2, 3/10 trials  about 4 min left"
    )
    assert "left" not in progress_detail({**EXPERIMENT, "timing": {"remaining_s": None}})
    assert progress_detail({**EXPERIMENT, "timing": {"remaining_s": 5400.0}}).endswith(
        "about 1 h 30 min left"
    )


def test_the_bar_counts_the_loop_against_its_budget_when_following_it():
    assert _bar(EXPERIMENT, loop_id=4) == (10, 3)
    assert _bar(EXPERIMENT, loop_id=None) == (12, 6)
    assert _bar(EXPERIMENT, loop_id=5) == (12, 6)


def test_show_trial_summarizes_the_reproducibility_record():
    from io import StringIO

    from rich.console import Console

    from client.listings import print_record

    kept = {
        "versions": {
            "server": "10.11.19-MariaDB",
            "galera": "26.4.20(r7d1ac8b)",
            "sysbench": "sysbench 1.0.20",
        },
        "plan": {
            "nodes": 2,
            "load_nodes": 1,
            "workload": "oltp_read_write",
            "variables": {"wsrep_slave_threads": 4},
        },
        "commands": ["sysbench oltp_read_write --mysql-password=*** run"],
        "nodes": [
            {
                "node": "node1",
                "address": "127.0.0.1:3311",
                "variables": {"wsrep_slave_threads": "4", "port": "3311"},
                "wsrep_status_before": {"wsrep_last_committed": "10", "wsrep_cluster_size": "2"},
                "wsrep_status_after": {"wsrep_last_committed": "99", "wsrep_cluster_size": "2"},
            }
        ],
    }
    out = StringIO()
    print_record(Console(file=out, width=200), kept)
    text = out.getvalue()
    assert "galera version" in text and "26.4.20(r7d1ac8b)" in text
    assert "nodes=2, load_nodes=1, workload=oltp_read_write" in text
    assert "wsrep_slave_threads=4" in text
    assert "--mysql-password=*** run" in text
    assert (
        "node1 (127.0.0.1:3311)" in text
        and "2 configured variables, 1 wsrep counters moved" in text
    )


def test_a_factor_the_model_left_out_is_said_to_be_so_not_given_an_effect_of_zero():
    from io import StringIO

    from rich.console import Console

    from client.analysis_view import _print_optimum, _print_ranked

    analysis = {
        "response": "tps",
        "model": "auto",
        "ranked_factors": [
            {
                "factor": "nodes",
                "in_model": True,
                "settings_run": 3,
                "effect": -412.5,
                "change_at_optimum": -380.0,
                "share_of_ss": 91.0,
                "p_value": 0.0004,
            },
            {
                "factor": "threads_per_client",
                "in_model": False,
                "settings_run": 3,
                "effect": 0.0,
                "change_at_optimum": 0.0,
                "share_of_ss": None,
                "p_value": None,
            },
        ],
    }
    out = StringIO()
    _print_ranked(Console(file=out, width=120), analysis)
    rows = {line.split("│")[1].strip(): line for line in out.getvalue().splitlines() if "│" in line}
    assert "-412.5" in rows["nodes"] and "< 0.001" in rows["nodes"]
    assert "not in the model" in rows["threads_per_client"]
    assert "n/a" not in rows["threads_per_client"]

    # Its setting in the predicted optimum is arbitrary, and the table says so.
    experiment = {
        "objective": {"goal": "maximize"},
        "factors": [{"name": "nodes"}, {"name": "threads_per_client"}],
    }
    optimum = {"config": {"nodes": 3, "threads_per_client": 8}, "predicted": 1500.0}
    optimum |= dict.fromkeys(("ci_low", "ci_high", "pi_low", "pi_high"), 1400.0)
    out = StringIO()
    _print_optimum(Console(file=out, width=120), experiment, analysis | {"optimum": optimum})
    rows = {line.split("│")[1].strip(): line for line in out.getvalue().splitlines() if "│" in line}
    assert "not in the model" not in rows["nodes"]
    assert "8 (not in the model: any)" in rows["threads_per_client"]


def test_the_optimum_names_each_factor_at_an_edge_with_its_end():
    from io import StringIO

    from rich.console import Console

    from client.analysis_view import _print_optimum

    experiment = {
        "objective": {"goal": "maximize"},
        "factors": [{"name": "nodes"}, {"name": "threads_per_client"}],
    }
    optimum = {"config": {"nodes": 1, "threads_per_client": 64}, "predicted": 1500.0}
    optimum |= dict.fromkeys(("ci_low", "ci_high", "pi_low", "pi_high"), 1400.0)
    optimum["on_edge"] = {"threads_per_client": "high"}
    analysis = {"response": "tps", "ranked_factors": [], "optimum": optimum}
    out = StringIO()
    _print_optimum(Console(file=out, width=120), experiment, analysis)
    assert "on the edge of the region: threads_per_client (high)" in out.getvalue()


# --- one answer to deploy, one number per effect (issue 54, item 7) ---------------------------

ANSWER = {
    "config": {"nodes": 4, "threads_per_client": 16},
    "summary": "Deploy nodes=4, threads_per_client=16: measured 3 times (run 4, run 9, run 12),"
    " tps 1052 ± 4.1 (standard error of the mean); the model predicts tps 1041 (95 % CI 1010 to"
    " 1072, PI 950 to 1132).",
    "reason": "Deploy nodes=4, threads_per_client=16: of the configurations run, the Gaussian"
    " process is surest it is best.",
    "caveats": [],
    "alternatives": [
        {
            "kind": "predicted_optimum",
            "label": "the model's predicted optimum, not yet measured",
            "config": {"nodes": 5, "threads_per_client": 16},
            "summary": "nodes=5, threads_per_client=16: the model predicts tps 1090.",
        },
        {
            "kind": "best_run",
            "label": "the best single run: one measurement, its noise included",
            "config": {"nodes": 6, "threads_per_client": 9},
            "summary": "nodes=6, threads_per_client=9: tps 1101 in run 7 (one measurement).",
        },
    ],
}


def _printed(function, *args) -> str:
    from io import StringIO

    from rich.console import Console

    out = StringIO()
    function(Console(file=out, width=200), *args)
    return out.getvalue()


def test_the_results_show_one_answer_to_deploy_first_and_the_others_as_what_they_are():
    from client.analysis_view import print_results

    analysis = {
        "response": "tps",
        "model": "auto",
        "ranked_factors": [],
        "r_squared": 0.9,
        "adj_r_squared": 0.88,
        "rmse": 20.0,
        "trials_used": 12,
        "trials_failed": 0,
        "optimum": {"config": {"nodes": 5, "threads_per_client": 16}, "predicted": 1090.0},
        "coverage": {"sentences": ["The design is incomplete: 12 of its 18 planned runs have"
                                   " results, so this analysis is provisional."]},
        "deploy": ANSWER,
    }  # fmt: skip
    experiment = {"best": {"trial_id": 40, "value": 1101.0, "config": {}}, "factors": []}
    text = _printed(print_results, experiment, analysis)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    assert lines[0].startswith("warning: The design is incomplete: 12 of its 18")
    assert lines[1] == ANSWER["summary"][: len(lines[1])]  # the answer, before anything else
    assert "not the answer, for comparison:" in text
    assert (
        "the model's predicted optimum, not yet measured: nodes=5, threads_per_client=16: the"
        " model predicts tps 1090." in text
    )
    assert "the best single run: one measurement, its noise included: nodes=6" in text
    # No second, unlabelled answer: no optimum table, no best run by trial id.
    assert "Predicted optimum" not in text and "trial 40" not in text
    assert text.index("Deploy nodes=4") < text.index("the model's predicted optimum")


def test_the_effects_table_shows_the_number_the_sentence_states_and_says_what_each_is():
    from client.analysis_view import _print_ranked

    analysis = {
        "response": "tps",
        "model": "auto",
        "ranked_factors": [
            {"factor": "threads_per_client", "in_model": True, "settings_run": 5,
             "effect": 105.5, "change_at_optimum": -90.8, "share_of_ss": 40.0, "p_value": 0.01},
            {"factor": "nodes", "in_model": False, "settings_run": 1, "effect": 0.0,
             "change_at_optimum": 0.0, "share_of_ss": None, "p_value": None},
        ],
    }  # fmt: skip
    text = _printed(_print_ranked, analysis)
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if "│" in line}
    assert "+105.5" in rows["threads_per_client"] and "-90.8" in rows["threads_per_client"]
    assert "never varied" in rows["nodes"]
    flat = " ".join(text.split())
    assert (
        "change at optimum: the same with the others at the predicted optimum, the number" in flat
    )
    assert "so the shares overlap and need not add up to 100" in flat
