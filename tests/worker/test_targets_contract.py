"""Every kind of target honours the contract the service relies on.

Running a trial is part of the contract: the simulated target runs here; the lab and external
targets run real trials in tests/integration/test_lab.py, which checks the same responses.
"""

from __future__ import annotations

import math

import pytest

from app.targets import KIND_FACTORS, KIND_RESPONSES, RUNNABLE_KINDS, TargetSpec, load_targets
from worker.targets import TARGET_CLASSES, build_target
from worker.targets.base import TargetError


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
