"""The progress line and bar the CLI shows while trials run."""

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
