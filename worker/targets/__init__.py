"""Runnable targets by kind; a worker builds each named target once and reuses it."""

from __future__ import annotations

from experiments.galera.target_spec import TargetSpec
from worker.targets.base import Target, TargetError
from worker.targets.external import ExternalTarget
from worker.targets.lab import LabTarget
from worker.targets.simulated import SimulatedTarget
from worker.targets.ssh.target import SshTarget

TARGET_CLASSES: dict[str, type[Target]] = {
    cls.kind: cls for cls in (SimulatedTarget, LabTarget, ExternalTarget, SshTarget)
}


def build_target(spec: TargetSpec) -> Target:
    """A runnable target for an operator's target definition."""
    if spec.kind not in TARGET_CLASSES:
        raise TargetError(f"target '{spec.name}' is of kind '{spec.kind}', which runs no trials")
    return TARGET_CLASSES[spec.kind](spec.name, spec.settings)
