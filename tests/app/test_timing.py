"""Elapsed time and the estimate of the time to finish shown in GET /experiments/{id}."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.db.models import Trial
from app.services.progress import timing_of
from app.statuses import TrialStatus

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def trial(status: str, start: float | None = None, end: float | None = None) -> Trial:
    return Trial(
        status=status,
        started_at=None if start is None else T0 + timedelta(seconds=start),
        finished_at=None if end is None else T0 + timedelta(seconds=end),
    )


def test_remaining_time_is_mean_duration_times_what_is_left_less_running_work():
    trials = [
        trial(TrialStatus.SUCCEEDED, 0, 10),
        trial(TrialStatus.FAILED, 10, 30),
        trial(TrialStatus.RUNNING, 30),
        trial(TrialStatus.QUEUED),
        trial(TrialStatus.PENDING),
        trial(TrialStatus.CANCELLED),
    ]
    timing = timing_of(trials, now=T0 + timedelta(seconds=36))
    assert timing.elapsed_s == 36
    assert timing.mean_trial_s == 15
    # Two waiting trials of 15 s, and 9 s left of the running one.
    assert timing.remaining_s == pytest.approx(2 * 15 + 9)
    assert timing.estimated_finish_at == T0 + timedelta(seconds=36 + 39)


def test_a_running_trial_past_the_mean_adds_nothing_and_no_estimate_before_a_finish():
    late = timing_of(
        [trial(TrialStatus.SUCCEEDED, 0, 10), trial(TrialStatus.RUNNING, 10)],
        now=T0 + timedelta(seconds=60),
    )
    assert late.remaining_s == 0
    first = timing_of([trial(TrialStatus.RUNNING, 0), trial(TrialStatus.QUEUED)], now=T0)
    assert first.elapsed_s == 0 and first.remaining_s is None and first.mean_trial_s is None
    planned = timing_of([trial(TrialStatus.PENDING)], now=T0)
    assert planned.elapsed_s is None and planned.estimated_finish_at is None


def test_the_clock_stops_when_nothing_is_left_to_run():
    done = [trial(TrialStatus.SUCCEEDED, 0, 10), trial(TrialStatus.FAILED, 10, 25)]
    later = timing_of(done, now=T0 + timedelta(hours=5))
    assert later.elapsed_s == 25 and later.remaining_s == 0
    assert later.estimated_finish_at == T0 + timedelta(seconds=25)
    assert timing_of(done, now=T0 + timedelta(hours=9)) == later
