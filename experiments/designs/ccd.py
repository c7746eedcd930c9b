"""Central composite designs: a two-level factorial portion plus two axial points per factor.

The factorial portion is the full 2^k up to 4 factors, the resolution V+ half fraction (last
factor = product of the others) for 5 to 8 factors as in Box & Hunter (1957), and the 128-run
minimum-aberration fractions of the standard 2^(k-p) table (Montgomery, DAE, table 8.14) for 9
(resolution VI) and 10 (resolution V) factors. Axial points sit at +-alpha on each axis, alpha
rotatable (F^(1/4)), orthogonal, or a number; the inscribed type shrinks the whole design into
the ranges, the face-centred one puts the axial points on the faces (alpha 1).

Axial points beyond a hard range (`experiments.designs.limits`: an integer factor's low..high,
the target's range) cannot run. When the request leaves the type open the planner then takes
the face-centred design, and says so in the notes: it keeps the factorial points on the ends of
the ranges and every point on whole numbers, where an inscribed design shrinks the factorial
portion inward (nodes 1..9 would run at 2 and 8) and rounding moves it off its distances. An
explicit circumscribed type, or a numeric alpha, that would leave a hard range is refused.

Blocks: 2 puts the factorial portion in block 1 and the axial portion in block 2; 3 also splits
the factorial portion in two by confounding its highest-order interaction that leaves main
effects and two-factor interactions clear. With the orthogonal alpha, a blocked design takes the
alpha that blocks it orthogonally (Box & Hunter 1957). Centre points are the planner's: it adds
`request.centre_point_count` to every block, which is the count both orthogonal alphas assume.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from experiments.designs import _pydoe
from experiments.designs.base import DesignFamily, FamilyRuns, require_numeric_factors
from experiments.designs.limits import HardRange, breaches, natural
from experiments.errors import DomainError
from experiments.factors import FactorSpace

if TYPE_CHECKING:
    from experiments.constraints import Constraint
    from experiments.designs.request import DesignRequest

# Factor letters of the 2^(k-p) tables; I is skipped because it names the identity.
LETTERS = "ABCDEFGHJK"
MIN_FACTORS = 2
MAX_FACTORS = len(LETTERS)
BLOCK_COUNTS = (1, 2, 3)
# How the refusals and notes name each way of choosing alpha (`alpha`'s kinds).
ALPHA_WORDS = {
    "rotatable": "the rotatable alpha",
    "orthogonal": "the orthogonal alpha",
    "orthogonal_blocks": "the orthogonally blocking alpha",
    "numeric": "alpha",
}
# Generators of the fractional factorial portion, in letters of the base factors; absent = full.
FRACTIONS: dict[int, tuple[str, ...]] = {
    5: ("ABCD",),
    6: ("ABCDE",),
    7: ("ABCDEF",),
    8: ("ABCDEFG",),
    9: ("ACDFG", "BCEFG"),
    10: ("ABCG", "BCDE", "ACDF"),
}


def factorial_runs(k: int) -> int:
    """Runs of the factorial portion for k factors."""
    return 2 ** (k - len(FRACTIONS.get(k, ())))


def alpha(k: int, request: DesignRequest) -> tuple[float, str]:
    """The axial distance (in units of the factorial half-range) and how it was chosen.

    The kind is "face_centred", "numeric", "rotatable" (F^(1/4)), "orthogonal" (unblocked: the
    quadratic effects are estimated independently, alpha = [(sqrt(F + 2k + n0) - sqrt(F))^2
    F / 4]^(1/4)) or "orthogonal_blocks" (blocked: alpha = sqrt(F (2k + n_a) / (2 (F + n_f))),
    n_a and n_f the centre points of the axial and factorial blocks).
    """
    if request.ccd_type == "face_centred":
        return 1.0, "face_centred"
    if _is_number(request.alpha):
        return float(request.alpha), "numeric"
    f = factorial_runs(k)
    if request.alpha == "rotatable":
        return f**0.25, "rotatable"
    centres = request.centre_point_count
    if request.blocks == 1:
        q = (math.sqrt(f + 2 * k + centres) - math.sqrt(f)) ** 2
        return (q * f / 4) ** 0.25, "orthogonal"
    factorial_centres = centres * (request.blocks - 1)
    return math.sqrt(f * (2 * k + centres) / (2 * (f + factorial_centres))), "orthogonal_blocks"


def fraction_text(k: int) -> str:
    """The factorial portion as a DBA reads it: "full" or its generators, e.g. "E = ABCD"."""
    fraction = FRACTIONS.get(k, ())
    base = k - len(fraction)
    named = (f"{LETTERS[base + j]} = {generator}" for j, generator in enumerate(fraction))
    return ", ".join(named) or "full"


def _factorial(k: int) -> np.ndarray:
    """The factorial portion in standard order: base factors fastest first, generated after."""
    fraction = FRACTIONS.get(k, ())
    base = _pydoe.ff2n(k - len(fraction))
    generated = [base[:, [LETTERS.index(c) for c in word]].prod(axis=1) for word in fraction]
    return np.column_stack([base, *generated])


def _defining_group(k: int) -> list[int]:
    """Every word of the factorial portion's defining relation as a bit mask (bit i = factor i).

    The identity (0) is included; a full factorial's group is just the identity.
    """
    fraction = FRACTIONS.get(k, ())
    base = k - len(fraction)
    group = [0]
    for j, generator in enumerate(fraction):
        word = sum(1 << LETTERS.index(c) for c in generator) | 1 << (base + j)
        group += [w ^ word for w in group]
    return group


@functools.cache
def _split_word(k: int) -> tuple[tuple[int, ...], ...] | None:
    """The alias set of the interaction that splits the factorial portion into two blocks.

    The interaction confounded with blocks must not be aliased with the mean, a main effect or a
    two-factor interaction; among those, the one whose shortest alias is longest wins (ties: the
    longest word, then letter order). Each alias is a tuple of factor indices, shortest first.
    None when no interaction qualifies.
    """
    group = _defining_group(k)
    best: tuple[tuple[int, ...], ...] | None = None
    for length in range(k, 2, -1):
        for word in itertools.combinations(range(k), length):
            mask = sum(1 << i for i in word)
            aliases = sorted(
                (tuple(i for i in range(k) if (mask ^ d) >> i & 1) for d in group),
                key=lambda alias: (len(alias), alias),
            )
            if len(aliases[0]) > (len(best[0]) if best else 2):
                best = tuple(aliases)
    return best


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class CentralComposite(DesignFamily):
    """The `ccd` family (module doc)."""

    kind = "ccd"

    def check(self, space: FactorSpace, request: DesignRequest) -> None:
        """Raise DomainError for a factor space or options no central composite design fits."""
        require_numeric_factors(
            space,
            "a central composite design",
            MIN_FACTORS,
            MAX_FACTORS,
            "screen the factors first with a fractional factorial or Plackett-Burman design",
        )
        k = len(space)
        if request.blocks not in BLOCK_COUNTS:
            raise DomainError(
                "design.blocks",
                "a central composite design runs in 1 block, 2 (factorial | axial) or 3 (two"
                f" factorial halves | axial); {request.blocks} asked",
            )
        if request.blocks == 3 and _split_word(k) is None:
            raise DomainError(
                "design.blocks",
                f"the factorial portion of a {k}-factor central composite design cannot be split"
                " in two blocks without confounding a main effect or two-factor interaction; use 1"
                " or 2 blocks",
            )
        if request.ccd_type == "face_centred" and _is_number(request.alpha) and request.alpha != 1:
            raise DomainError(
                "design.alpha",
                "a face-centred design has its axial points on the faces, alpha 1; leave alpha"
                " unset or give 1",
            )

    def fit_ranges(
        self, space: FactorSpace, request: DesignRequest, ranges: Sequence[HardRange]
    ) -> tuple[DesignRequest, str | None]:
        """Face-centred when a circumscribed design left open would put axial points beyond a
        hard range (with the note saying why); DomainError when the request asked for them."""
        self.check(space, request)
        distance, kind = alpha(len(space), request)
        if request.ccd_shape != "circumscribed" or distance <= 1.0:
            return request, None
        axial = [{f.name: natural(f, sign * distance)} for f in space.factors for sign in (-1, 1)]
        beyond = "; ".join(breaches(ranges, axial))
        if not beyond:
            return request, None
        asked = f"{ALPHA_WORDS[kind]} {distance:.3g}"
        if request.ccd_type is None and not _is_number(request.alpha):
            note = (
                "face-centred central composite design (alpha = 1), chosen because the"
                f" circumscribed design's axial points, at {asked}, would plan {beyond}."
                " Face-centred rather than inscribed: it keeps the factorial points on the ends"
                " of the ranges, where an inscribed design shrinks them inward (and rounds"
                " integer factors off its distances); give ccd_type to choose another"
            )
            return dataclasses.replace(request, ccd_type="face_centred"), note
        option = "design.ccd_type" if request.ccd_type is not None else "design.alpha"
        raise DomainError(
            option,
            f"a circumscribed design puts its axial points at {asked}, which plans {beyond}:"
            " no planned run may leave a hard range; give ccd_type face_centred or inscribed"
            + ("" if request.ccd_type is not None else ", or a smaller alpha"),
        )

    def size(self, space: FactorSpace, request: DesignRequest) -> int:
        """Factorial plus axial runs (centre points are added by the planner)."""
        self.check(space, request)
        k = len(space)
        return factorial_runs(k) + 2 * k

    def build(
        self, space: FactorSpace, request: DesignRequest, constraints: Sequence[Constraint]
    ) -> FamilyRuns:
        """The factorial runs in standard order, then the axial runs (-alpha, +alpha per factor)."""
        self.check(space, request)
        k = len(space)
        cube = _factorial(k)
        distance, kind = alpha(k, request)
        axial = np.zeros((2 * k, k))
        for i in range(k):
            axial[2 * i, i], axial[2 * i + 1, i] = -distance, distance
        coded = np.vstack([cube, axial])
        if request.ccd_shape == "inscribed":
            # The circumscribed design shrunk until its farthest points sit on the range ends.
            coded /= max(distance, 1.0)
        aliases = _split_word(k) if request.blocks == 3 else None
        if aliases is None:
            cube_blocks = np.ones(len(cube), dtype=int)
        else:
            # Montgomery's convention: the runs where the confounded interaction is -1 come first.
            cube_blocks = np.where(cube[:, list(aliases[0])].prod(axis=1) < 0, 1, 2)
        axial_block = 1 if request.blocks == 1 else request.blocks
        return FamilyRuns(
            coded=coded,
            point_types=("factorial",) * len(cube) + ("axial",) * (2 * k),
            blocks=(*(int(b) for b in cube_blocks), *(axial_block,) * (2 * k)),
            report={
                "alpha": distance,
                "alpha_kind": kind,
                "ccd_type": request.ccd_shape,
                "factorial_runs": len(cube),
                "axial_runs": 2 * k,
                "factorial_fraction": fraction_text(k),
                "outside_range": bool(np.abs(coded).max() > 1.0 + 1e-9),
                "blocks_confounded_with": None
                if aliases is None
                else " = ".join("".join(LETTERS[i] for i in word) for word in aliases),
                "factor_letters": dict(zip(LETTERS, space.names, strict=False)),
            },
        )
