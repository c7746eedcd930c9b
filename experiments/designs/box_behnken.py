"""Box-Behnken designs: two-level factorials on groups of factors, the other factors at centre.

Each design combines an incomplete block design (which factors vary together) with a two-level
factorial on each group (Box & Behnken 1960). For 3 to 5 factors the groups are all pairs, which
is what pyDOE2's `bbdesign` builds. From 6 factors on pyDOE2 keeps using all pairs (60 runs for
6 factors, 84 for 7) where the published designs vary 3, 4 or 5 factors at a time (48 and 56
runs), so those are built here from the published generating groups (as tabulated by
Design-Expert, whose 8-factor design is not in the 1960 paper).

Blocks: the published orthogonal blockings (Box & Behnken 1960; Minitab offers the same), where
the block effects are orthogonal to the whole quadratic model: grouping the generators (4
factors in 3 blocks, 5 in 2, 9 in 5) and, when each group runs a full 2^m with m >= 3, splitting
each group's factorial by its highest-order interaction (2 blocks; 10 for 9 factors).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from experiments.designs import _pydoe
from experiments.designs.base import DesignFamily, FamilyRuns, require_numeric_factors
from experiments.errors import DomainError
from experiments.factors import FactorSpace

if TYPE_CHECKING:
    from experiments.constraints import Constraint
    from experiments.designs.request import DesignRequest

MIN_FACTORS = 3
# Published generating groups (1-based factor numbers) for the designs pyDOE2 does not build.
# fmt: off
GROUPS: dict[int, tuple[tuple[int, ...], ...]] = {
    6: ((1, 2, 4), (2, 3, 5), (3, 4, 6), (1, 4, 5), (2, 5, 6), (1, 3, 6)),
    7: ((4, 5, 6), (1, 6, 7), (2, 5, 7), (1, 2, 4), (3, 4, 7), (1, 3, 5), (2, 3, 6)),
    8: (
        (1, 2, 3, 4), (5, 6, 7, 8), (1, 2, 7, 8), (3, 4, 5, 6), (1, 3, 6, 8), (2, 4, 5, 7),
        (1, 4, 6, 7), (2, 3, 5, 8), (1, 2, 5, 6), (3, 4, 7, 8), (1, 3, 5, 7), (2, 4, 6, 8),
        (1, 4, 5, 8), (2, 3, 6, 7),
    ),
    9: (
        (1, 4, 7), (2, 5, 8), (3, 6, 9), (1, 2, 3), (4, 5, 6), (7, 8, 9), (1, 5, 9), (3, 4, 8),
        (2, 6, 7), (1, 6, 8), (2, 4, 9), (3, 5, 7), (1, 4, 7), (2, 5, 8), (3, 6, 9),
    ),
    10: (
        (2, 6, 7, 10), (1, 2, 5, 10), (2, 3, 7, 8), (2, 4, 6, 9), (1, 8, 9, 10), (3, 4, 5, 10),
        (1, 4, 7, 8), (3, 5, 7, 9), (1, 3, 6, 9), (4, 5, 6, 8),
    ),
    11: (
        (3, 7, 8, 9, 11), (1, 4, 8, 9, 10), (2, 5, 9, 10, 11), (1, 3, 6, 10, 11),
        (1, 2, 4, 7, 11), (1, 2, 3, 5, 8), (2, 3, 4, 6, 9), (3, 4, 5, 7, 10), (4, 5, 6, 8, 11),
        (1, 5, 6, 7, 9), (2, 6, 7, 8, 10),
    ),
    12: (
        (1, 2, 5, 7), (2, 3, 6, 8), (3, 4, 7, 9), (4, 5, 8, 10), (5, 6, 9, 11), (6, 7, 10, 12),
        (1, 7, 8, 11), (2, 8, 9, 12), (1, 3, 9, 10), (2, 4, 10, 11), (3, 5, 11, 12),
        (1, 4, 6, 12),
    ),
}
# fmt: on
# Designs whose groups run the half fraction with the last factor = product of the others.
HALF_FRACTIONS = frozenset({8, 11})
MAX_FACTORS = max(GROUPS)
# Orthogonal blocks made of whole generator groups (0-based generator indices; for 3 to 5
# factors, the pairs in itertools.combinations order).
BLOCK_GROUPS: dict[int, tuple[tuple[int, ...], ...]] = {
    4: ((0, 5), (1, 4), (2, 3)),  # 12 34 | 13 24 | 14 23
    5: ((0, 3, 4, 7, 9), (1, 2, 5, 6, 8)),  # the cycles 1-2-3-4-5 and 1-3-5-2-4
    9: ((0, 1, 2), (3, 4, 5), (6, 7, 8), (9, 10, 11), (12, 13, 14)),  # parallel classes
}
PYDOE_SOURCE = "pyDOE2 bbdesign"
PUBLISHED_SOURCE = "Box & Behnken 1960 table"
DESIGN_EXPERT_SOURCE = "Design-Expert table"  # the 8-factor design, not in the 1960 paper


def block_counts(k: int) -> tuple[int, ...]:
    """The numbers of orthogonal blocks a k-factor design can be run in."""
    groups = len(BLOCK_GROUPS.get(k, ()))
    counts = {1, groups} - {0}
    if _splits(k):
        counts |= {2 * c for c in counts}
    return tuple(sorted(counts))


def _published(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Coded runs of a tabulated design and the generator index of each run."""
    groups = GROUPS[k]
    pattern = _pydoe.ff2n(_base_width(k))
    if k in HALF_FRACTIONS:
        pattern = np.column_stack([pattern, pattern.prod(axis=1)])
    coded = np.zeros((len(groups) * len(pattern), k))
    for g, group in enumerate(groups):
        coded[g * len(pattern) : (g + 1) * len(pattern), [f - 1 for f in group]] = pattern
    return coded, np.repeat(np.arange(len(groups)), len(pattern))


def _base_width(k: int) -> int:
    """Factors of each group's factorial that vary freely (all but one in a half fraction)."""
    return len(GROUPS[k][0]) - (k in HALF_FRACTIONS)


def _splits(k: int) -> bool:
    """Whether each generator's factorial can be halved by its highest-order interaction.

    Needs a full 2^m with m >= 3: each half is then still orthogonal for the main effects (with
    m = 2, the half fraction would confound the two main effects).
    """
    return k in GROUPS and k not in HALF_FRACTIONS and len(GROUPS[k][0]) >= 3


def _blocks(k: int, count: int, coded: np.ndarray, generator: np.ndarray) -> tuple[int, ...]:
    """1-based block of each run for one of `block_counts(k)`."""
    block = np.zeros(len(coded), dtype=int)
    groups = BLOCK_GROUPS.get(k, ())
    if count in (len(groups), 2 * len(groups)):
        of_generator = {g: b for b, members in enumerate(groups) for g in members}
        block = np.array([of_generator[g] for g in generator])
    if count != 1 and count != len(groups):
        # The product of the varied factors is the highest-order interaction of each group.
        varied = np.where(coded == 0, 1.0, coded).prod(axis=1)
        block = 2 * block + (varied > 0)
    return tuple(int(b) + 1 for b in block)


class BoxBehnken(DesignFamily):
    """The `box_behnken` family (module doc)."""

    kind = "box_behnken"

    def check(self, space: FactorSpace, request: DesignRequest) -> None:
        """Raise DomainError for a factor space or options no Box-Behnken design fits."""
        require_numeric_factors(
            space,
            "a Box-Behnken design",
            MIN_FACTORS,
            MAX_FACTORS,
            f"Box-Behnken designs are published for {MIN_FACTORS} to {MAX_FACTORS} factors",
        )
        k = len(space)
        allowed = block_counts(k)
        if request.blocks not in allowed:
            counts = " or ".join(str(b) for b in allowed)
            raise DomainError(
                "design.blocks",
                f"a {k}-factor Box-Behnken design runs in {counts} orthogonal blocks;"
                f" {request.blocks} asked",
            )

    def size(self, space: FactorSpace, request: DesignRequest) -> int:
        """Runs without centre points (the planner adds those)."""
        self.check(space, request)
        k = len(space)
        if k not in GROUPS:
            return 2 * k * (k - 1)  # a 2^2 factorial on each of the k(k-1)/2 pairs
        return len(GROUPS[k]) * 2 ** _base_width(k)

    def build(
        self, space: FactorSpace, request: DesignRequest, constraints: Sequence[Constraint]
    ) -> FamilyRuns:
        """The edge runs, generator by generator, each group's factorial in standard order."""
        self.check(space, request)
        k = len(space)
        if k in GROUPS:
            coded, generator = _published(k)
            source = DESIGN_EXPERT_SOURCE if k == 8 else PUBLISHED_SOURCE
        else:
            coded = _pydoe.bbdesign(k)
            pairs = list(itertools.combinations(range(k), 2))
            generator = np.array([pairs.index(tuple(np.flatnonzero(row))) for row in coded])
            source = PYDOE_SOURCE
        return FamilyRuns(
            coded=coded,
            point_types=("edge",) * len(coded),
            blocks=_blocks(k, request.blocks, coded, generator),
            report={"runs": len(coded), "source": source},
        )
