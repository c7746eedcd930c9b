"""The contract between the planner and each design family.

A family turns a factor space and a request into coded runs (and facts about them); the
planner (`experiments.designs.plan`) does everything the families share: centre points,
replicates, decoding with rounding, constraints, collapsed points, run order and the quality
report.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from experiments.errors import DomainError
from experiments.factors import FactorSpace

if TYPE_CHECKING:
    from experiments.constraints import Constraint
    from experiments.designs.limits import HardRange
    from experiments.designs.request import DesignRequest


@dataclass(frozen=True)
class FamilyRuns:
    """The runs a family planned, in its standard order.

    `coded` has one row per run and one column per factor of the space, in factor order, in
    coded units: numeric factors in -1..+1 (CCD axial points beyond), categorical factors as
    `Factor.encode(level)` (for two levels, -1 and +1). `point_types` names each run
    ("factorial", "axial", "centre", "edge", "space_filling", "optimal"); `blocks` is the 1-based
    block of each run (all 1 when the design is not blocked). `report` holds the family's facts
    for the quality report, JSON-friendly (e.g. generators, defining relation, resolution,
    aliases, alpha). Centre points are never a family's: the planner adds them to every block.
    """

    coded: np.ndarray
    point_types: tuple[str, ...]
    blocks: tuple[int, ...]
    report: dict[str, Any] = field(default_factory=dict)


def require_numeric_factors(
    space: FactorSpace, design: str, minimum: int, maximum: int, beyond: str
) -> None:
    """Refuse categorical factors and factor counts outside minimum..maximum (response surfaces).

    `beyond` completes the sentence for too many factors: why, or what to do instead.
    """
    for factor in space.factors:
        if not factor.is_numeric:
            raise DomainError(
                "design.kind", f"{design} needs numeric factors; '{factor.name}' is categorical"
            )
    k = len(space)
    if k < minimum:
        raise DomainError(
            "design.kind", f"{design} needs at least {minimum} numeric factors; {k} given"
        )
    if k > maximum:
        raise DomainError(
            "design.kind", f"{design} takes at most {maximum} factors; {k} given ({beyond})"
        )


class DesignFamily(ABC):
    """A design family: turns a factor space and a request into coded runs in standard order.

    Each family is a subclass in its own module (`experiments/designs/<kind>.py`) and is listed
    in the planner's `FAMILIES` registry under its `kind`.
    """

    kind: ClassVar[str]

    @abstractmethod
    def check(self, space: FactorSpace, request: DesignRequest) -> None:
        """Raise DomainError("design.<option>", rule) for a request this family cannot plan."""

    @abstractmethod
    def size(self, space: FactorSpace, request: DesignRequest) -> int:
        """Runs `build` returns, computed cheaply (the planner refuses oversized requests)."""

    def fit_ranges(
        self, space: FactorSpace, request: DesignRequest, ranges: Sequence[HardRange]
    ) -> tuple[DesignRequest, str | None]:
        """The request to build so that no run leaves a hard range, and a note when the planner
        chose it; DomainError naming the option when the request asks for runs beyond one.

        Families whose runs stay inside low..high (coded -1..+1) keep the request as it is.
        """
        return request, None

    @abstractmethod
    def build(
        self, space: FactorSpace, request: DesignRequest, constraints: Sequence[Constraint]
    ) -> FamilyRuns:
        """Plan the runs in standard order.

        Most families ignore `constraints` (the planner drops infeasible runs afterwards and says
        how many); a family that searches a candidate set (D-optimal) never generates them.
        """
