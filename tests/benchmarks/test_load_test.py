"""The load test's machinery at a tiny size, and how it judges the goals."""

import io

from rich.console import Console

from benchmarks.load_test import (
    BASELINE,
    GET_LIST,
    GET_ONE,
    GET_TRIALS,
    POST,
    Outcome,
    Run,
    print_report,
    run_backend,
)


def test_a_tiny_load_on_sqlite_gets_no_error_and_prints_every_table():
    # 3 experiments of 20 trials, 5 clients for 2 s, one uvicorn worker.
    run = run_backend(
        "sqlite",
        experiments=3,
        runs=20,
        clients=5,
        seconds=2,
        rate=50,
        saturation_seconds=1,
        workers=1,
        warmup_seconds=0,
    )
    paced = run.paced
    assert paced.requests >= 20 and not paced.errors, paced.error_kinds
    assert run.saturated is not None and not run.saturated.errors
    assert len(paced.latencies[GET_ONE]) > paced.requests / 2
    # Completed campaigns: every trial finished, one in fifty failed.
    assert run.finished_trials == 3 * 20
    out = io.StringIO()
    print_report([run], Console(file=out, width=200))
    text = out.getvalue()
    for endpoint in (GET_ONE, GET_TRIALS, GET_LIST, POST, BASELINE):
        assert endpoint in text
    for goal in ("no errors", "≥ 200 requests/s", "p95 GET /experiments/{id} ≤ 50 ms"):
        assert goal in text
    assert "0 of" in text and "Capacity" in text


def _run(rate_seconds: float, get_s: float, post_s: float, errors: int = 0) -> Run:
    outcome = Outcome(seconds=rate_seconds)
    outcome.latencies[GET_ONE] = [get_s] * 900
    outcome.latencies[POST] = [post_s] * 100
    if errors:
        outcome.errors[GET_ONE] = errors
    return Run(
        backend="sqlite",
        workers=2,
        clients=50,
        rate=250,
        experiments=100,
        runs=200,
        finished_trials=0,
        seed_seconds=0,
        paced=outcome,
        saturated=None,
    )


def test_every_goal_must_hold_for_the_run_to_meet_them():
    assert _run(4.0, 0.020, 0.200).met  # 250 requests/s
    assert not _run(6.0, 0.020, 0.200).met  # 167 requests/s
    assert not _run(4.0, 0.060, 0.200).met
    assert not _run(4.0, 0.020, 0.400).met
    assert not _run(4.0, 0.020, 0.200, errors=1).met
