"""The contract every target honours: run one trial configuration, return its responses."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "InfeasibleError",
    "InfrastructureError",
    "Target",
    "TargetError",
    "TrialCancelledError",
    "TrialResult",
]

Value = float | int | str


@dataclass(frozen=True)
class TrialResult:
    """What one trial measured: response name -> value, the raw tool output kept with it, and
    the record of what it ran on (versions, variables, status counters, commands)."""

    responses: dict[str, float]
    raw_output: str
    record: dict[str, Any] | None = None


class TargetError(RuntimeError):
    """A trial could not be run on the target (the trial fails with this message)."""


class InfrastructureError(TargetError):
    """The cluster was not healthy throughout the trial: the trial is retried."""


class InfeasibleError(TargetError):
    """The configuration cannot work on this target (e.g. too many connections): never retried."""


class TrialCancelledError(TargetError):
    """The run was stopped because its trial was cancelled: what it started is stopped too."""


def check_cancelled(cancel: threading.Event | None) -> None:
    """Raise TrialCancelledError when `cancel` is set (targets call it between phases)."""
    if cancel is not None and cancel.is_set():
        raise TrialCancelledError("the trial was cancelled")


class Target(ABC):
    """A named place to run trials; knows nothing of Celery or the database."""

    kind: ClassVar[str]
    accepted_factors: ClassVar[tuple[str, ...]]

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        self.name = name
        self.settings = dict(settings)

    @abstractmethod
    def run(
        self,
        config: Mapping[str, Value],
        *,
        run_key: int,
        cancel: threading.Event | None = None,
        fresh: bool = False,
    ) -> TrialResult:
        """Run one configuration. `run_key` identifies the trial (seeds simulated noise).

        `cancel` is set from another thread when the trial is cancelled: the run stops what it
        started (processes, by pid), within a few seconds, and raises TrialCancelledError; the
        target stays usable for the next trial. `fresh` asks for a fresh cluster state: every
        node restarted before the run, so a replicate does not inherit what earlier trials
        left behind (a target that keeps no state between trials has it always).
        """

    def read_current(self, config: Mapping[str, Value], names: Sequence[str]) -> dict[str, str]:
        """The text of each setting in `names` as the nodes run it now (`baseline: current`),
        read before anything of the trial is applied; `config` holds the trial's given values
        (its cluster's shape among them). TargetError when the target cannot read a setting."""
        raise TargetError(f"target '{self.name}' ({self.kind}) cannot read its nodes' settings")

    def recover(self) -> None:  # noqa: B027 - a stateless target has nothing to reset
        """Bring the target back to a known state after a failed trial."""

    def close(self) -> None:  # noqa: B027 - most targets hold nothing to release
        """Release what the target holds (processes, connections)."""
