"""Every runnable kind of target honours the contract the service relies on."""

from __future__ import annotations

import math

import pytest

from app.targets import KIND_FACTORS, KIND_RESPONSES, RUNNABLE_KINDS, load_targets
from worker.targets import TARGET_CLASSES, build_target
from worker.targets.base import TargetError


def test_every_runnable_kind_has_a_target_class():
    assert set(TARGET_CLASSES) == set(RUNNABLE_KINDS)


@pytest.mark.parametrize("kind", sorted(RUNNABLE_KINDS))
def test_a_trial_reports_every_response_of_its_kind(kind: str):
    spec = next(s for s in load_targets(None).values() if s.kind == kind)
    target = build_target(spec)
    result = target.run({}, run_key=1)
    assert tuple(sorted(result.responses)) == tuple(sorted(KIND_RESPONSES[kind] or ()))
    assert all(math.isfinite(v) for v in result.responses.values())
    assert result.raw_output


@pytest.mark.parametrize("kind", sorted(RUNNABLE_KINDS))
def test_a_target_accepts_the_factors_its_kind_declares(kind: str):
    spec = next(s for s in load_targets(None).values() if s.kind == kind)
    target = build_target(spec)
    declared = KIND_FACTORS[kind] or ()
    assert target.accepted_factors == declared
    with pytest.raises(TargetError, match="no_such_factor"):
        target.run({"no_such_factor": 1}, run_key=1)


def test_a_manual_target_is_not_runnable():
    with pytest.raises(TargetError, match="runs no trials"):
        build_target(load_targets(None)["manual"])
