"""Every kind of target honours the contract the service relies on.

Running a trial is part of the contract: the simulated target runs here; the lab and external
targets run real trials in tests/integration/test_lab.py, which checks the same responses.
"""

from __future__ import annotations

import logging
import math
import re
import sys
import threading
import time
from pathlib import Path

import pytest

from app.services.trial_runs import ClaimedTrial
from app.target_specs import load_targets
from experiments.galera.kinds import KIND_FACTORS, KIND_RESPONSES, RUNNABLE_KINDS
from experiments.galera.target_spec import TargetSpec
from worker import tasks
from worker.targets import TARGET_CLASSES, build_target, processes
from worker.targets.base import (
    InfrastructureError,
    Target,
    TargetError,
    TrialCancelledError,
    TrialResult,
    Value,
)
from worker.targets.processes import run_processes


def test_every_runnable_kind_has_a_target_class():
    assert set(TARGET_CLASSES) == set(RUNNABLE_KINDS)


@pytest.mark.parametrize("kind", sorted(RUNNABLE_KINDS))
def test_a_target_accepts_the_factors_its_kind_declares(kind: str):
    assert TARGET_CLASSES[kind].accepted_factors == KIND_FACTORS[kind]


def test_a_simulated_trial_reports_every_response_of_its_kind():
    target = build_target(load_targets(None)["simulated"])
    result = target.run({}, run_key=1)
    assert tuple(sorted(result.responses)) == tuple(sorted(KIND_RESPONSES["simulated"] or ()))
    assert all(math.isfinite(v) for v in result.responses.values())
    assert result.raw_output
    with pytest.raises(TargetError, match="no_such_factor"):
        target.run({"no_such_factor": 1}, run_key=1)


def test_a_simulated_trial_is_the_same_from_a_fresh_cluster():
    # The simulated cluster keeps no state between trials: every trial starts fresh.
    target = build_target(load_targets(None)["simulated"])
    config = {"nodes": 3, "threads_per_client": 16}
    fresh = target.run(config, run_key=3, fresh=True)
    assert fresh.responses == target.run(config, run_key=3).responses


def test_the_worker_asks_for_a_fresh_cluster_when_the_trial_restarts_first(
    monkeypatch: pytest.MonkeyPatch,
):
    asked: list[bool] = []

    class Recording(Target):
        kind = "recording"
        accepted_factors = ()

        def run(
            self,
            config: dict[str, Value],
            *,
            run_key: int,
            cancel: threading.Event | None = None,
            fresh: bool = False,
        ) -> TrialResult:
            asked.append(fresh)
            return TrialResult(responses={"tps": 1.0}, raw_output="")

    monkeypatch.setitem(tasks._targets, "recording", Recording("recording", {}))
    for restart in (True, False):
        claimed = ClaimedTrial(
            trial_id=1,
            experiment_id=1,
            target="recording",
            config={},
            attempt=1,
            worker="w",
            restart_first=restart,
        )
        assert tasks._run_on_target(claimed, threading.Event()).responses == {"tps": 1.0}
    assert asked == [True, False]


def test_a_manual_target_is_not_runnable():
    with pytest.raises(TargetError, match="runs no trials"):
        build_target(load_targets(None)["manual"])


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({}, "settings.nodes"),
        ({"nodes": [{"host": "127.0.0.1", "start": "systemctl start x"}]}, "argument list"),
        ({"nodes": [{"host": "127.0.0.1"}], "password_env": "GALERA_DOE_UNSET_VAR"}, "not set"),
    ],
)
def test_a_malformed_external_target_is_refused_with_a_reason(settings: dict, words: str):
    with pytest.raises(TargetError, match=words):
        build_target(TargetSpec(name="ext", kind="external", settings=settings))


# Cancellation is part of the contract: a run stops within seconds when its `cancel` event is
# set, stops what it started, and raises TrialCancelledError.


def _runnable(kind: str, tmp_path: Path) -> Target:
    key = tmp_path / "id_ssh"
    key.write_text("")  # the ssh target checks the file exists; a cancelled trial never uses it
    ssh_node = {"host": "db1", "address": "127.0.0.1", "port": 9, "ssh_key": str(key)}
    settings: dict = {
        "simulated": {"seconds_per_trial": 30},
        "lab": {"base_dir": str(tmp_path / "lab")},
        "external": {"nodes": [{"host": "127.0.0.1", "port": 9}]},
        "ssh": {"nodes": [ssh_node], "known_hosts": str(tmp_path / "known_hosts")},
    }[kind]
    return build_target(TargetSpec(name=f"{kind}-contract", kind=kind, settings=settings))


@pytest.mark.parametrize("kind", sorted(RUNNABLE_KINDS))
def test_a_cancelled_trial_starts_nothing(kind: str, tmp_path: Path):
    cancel = threading.Event()
    cancel.set()
    began = time.monotonic()
    with pytest.raises(TrialCancelledError):
        _runnable(kind, tmp_path).run({"runtime_s": 10}, run_key=1, cancel=cancel)
    assert time.monotonic() - began < 1


def test_a_simulated_trial_stops_when_cancelled_while_it_runs():
    target = build_target(
        TargetSpec(name="slow", kind="simulated", settings={"seconds_per_trial": 30})
    )
    cancel = threading.Event()
    began = time.monotonic()  # before the timer starts, or a slow start makes it look early
    threading.Timer(0.3, cancel.set).start()
    with pytest.raises(TrialCancelledError):
        target.run({}, run_key=1, cancel=cancel)
    assert 0.3 <= time.monotonic() - began < 2


def _gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


def test_cluster_processes_are_stopped_by_pid_when_the_trial_is_cancelled(caplog):
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    began = time.monotonic()
    with caplog.at_level(logging.INFO), pytest.raises(TrialCancelledError):
        run_processes([["sleep", "30"], ["sleep", "30"]], timeout=60, cancel=cancel)
    assert time.monotonic() - began < 3
    pids = [int(p) for p in re.findall(r"started sysbench \(pid (\d+)\)", caplog.text)]
    assert len(pids) == 2 and all(_gone(pid) for pid in pids)


def test_cluster_processes_that_ignore_sigterm_are_killed(monkeypatch, caplog):
    monkeypatch.setattr(processes, "STOP_GRACE_S", 0.5)
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    ignore = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(30)"
    stubborn = [sys.executable, "-c", ignore]
    with caplog.at_level(logging.INFO), pytest.raises(TrialCancelledError):
        run_processes([stubborn], timeout=60, cancel=cancel)
    (pid,) = [int(p) for p in re.findall(r"started sysbench \(pid (\d+)\)", caplog.text)]
    assert _gone(pid)


def test_cluster_processes_report_exit_codes_and_output_or_time_out():
    results = run_processes(
        [["sh", "-c", "echo one; exit 3"], ["sh", "-c", "echo two"]],
        timeout=10,
        cancel=threading.Event(),
    )
    assert results == [(3, "one\n"), (0, "two\n")]
    with pytest.raises(InfrastructureError, match=r"did not finish within 0\.5 s"):
        run_processes([["sleep", "30"]], timeout=0.5)
