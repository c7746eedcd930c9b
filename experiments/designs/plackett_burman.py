"""Plackett-Burman screening designs: N runs (a multiple of 4) for up to N - 1 two-level factors.

The designs are those of Plackett & Burman (1946), "The design of optimum multifactorial
experiments", Biometrika 33: a cyclic generating vector gives the first column, each further
column is the previous one shifted down by one run, and a last run has every factor low; N = 28
is built from three 9 x 9 blocks; N = 40 doubles N = 20. pyDOE2's pbdesign is not used: it
builds only 2^a, 12 * 2^a and 20 * 2^a runs (it fails an assertion for 24-27 factors, which need
28) and cannot give more runs than the fewest.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from experiments.designs.base import DesignFamily, FamilyRuns
from experiments.designs.fractional_factorial import check_two_level
from experiments.errors import DomainError
from experiments.factors import FactorSpace

if TYPE_CHECKING:
    from experiments.constraints import Constraint
    from experiments.designs.request import DesignRequest

MAX_RUNS = 48

# Generating vectors of Plackett & Burman (1946). Those of 8, 12, 20, 24, 44 and 48 runs are the
# quadratic residues modulo N - 1 (Paley); 4 runs is the same construction modulo 3, the 2^(3-1)
# fraction.
_CYCLIC: dict[int, str] = {
    4: "++-",
    8: "+++-+--",
    12: "++-+++---+-",
    16: "++++-+-++--+---",
    20: "++--++++-+-+----++-",
    24: "+++++-+-++--++--+-+----",
    32: "----+-+-+++-++---+++++--++-+--+",
    36: "-+-+++---+++++-+++--+----+-+-++--+-",
    44: "++--+-+--+++-+++++---+-+++-----+---++-+-++-",
    48: "+++++-++++--+-+-+++--+--++-++---+-+-++----+----",
}
# N = 28: the three 9 x 9 blocks A | B | C of the first nine runs; runs 10-18 are C | A | B and
# runs 19-27 B | C | A.
_BLOCKS_28 = (
    "+-++++---|-+---+--+|++-+-++-+",
    "++-+++---|--++--+--|-++++-++-",
    "-+++++---|+---+--+-|+-+-++-++",
    "---+-++++|--+-+---+|+-+++-+-+",
    "---++-+++|+----++--|++--++++-",
    "----+++++|-+-+---+-|-+++-+-++",
    "+++---+-+|--+--+-+-|+-++-+++-",
    "+++---++-|+--+----+|++-++--++",
    "+++----++|-+--+-+--|-++-+++-+",
)


def design(runs: int) -> np.ndarray:
    """The runs x (runs - 1) matrix of +-1 of the N-run design, N in `sizes()`."""
    if runs in _CYCLIC:
        vector = _signs(_CYCLIC[runs])
        rows = np.arange(runs - 1)
        shifted = vector[(rows[:, None] - rows[None, :]) % (runs - 1)]
    elif runs == 28:
        blocks = [[_signs(row.split("|")[b]) for row in _BLOCKS_28] for b in range(3)]
        shifted = np.vstack([np.hstack([blocks[(b - r) % 3] for b in range(3)]) for r in range(3)])
    else:
        # Sylvester doubling of the half-size Hadamard matrix [1 | D], first column dropped.
        half = np.hstack([np.ones((runs // 2, 1)), design(runs // 2)])
        return np.block([[half, half], [half, -half]])[:, 1:]
    return np.vstack([shifted, -np.ones(runs - 1)])


def sizes() -> list[int]:
    """The run counts available, ascending."""
    return sorted({*_CYCLIC, 28, 40})


def _runs(space: FactorSpace, request: DesignRequest) -> int:
    check_two_level(space, "Plackett-Burman")
    k = len(space)
    if request.blocks != 1:
        raise DomainError(
            "design.blocks",
            "a Plackett-Burman design is run in one block; use a fractional_factorial design "
            "to run in blocks",
        )
    runs = request.runs if request.runs is not None else 4 * (k // 4 + 1)
    if runs % 4:
        raise DomainError(
            "design.runs", f"a Plackett-Burman design has a multiple of 4 runs; got {runs}"
        )
    if runs <= k:
        raise DomainError(
            "design.runs",
            f"{k} factors need at least {4 * (k // 4 + 1)} runs (more runs than factors); "
            f"got {runs}",
        )
    if runs > MAX_RUNS:
        raise DomainError(
            "design.runs", f"Plackett-Burman designs go up to {MAX_RUNS} runs; got {runs}"
        )
    return runs


def _main_2fi_correlation(coded: np.ndarray) -> float:
    """Largest |correlation| between a main effect and a 2FI of two other factors."""
    k = coded.shape[1]
    largest = 0.0
    for a, b in itertools.combinations(range(k), 2):
        others = [i for i in range(k) if i not in (a, b)]
        if others:
            products = coded[:, others].T @ (coded[:, a] * coded[:, b]) / len(coded)
            largest = max(largest, float(np.abs(products).max()))
    return round(largest, 4)


def _note(correlation: float) -> str:
    if correlation == 0:
        return "no main effect is aliased with a two-factor interaction of other factors"
    if correlation < 1:
        return (
            "main effects are partially aliased with two-factor interactions (correlation up "
            f"to {correlation:.2g}; resolution III): a screening design for main effects only"
        )
    return (
        "main effects are fully aliased with two-factor interactions (resolution III): "
        "a screening design for main effects only"
    )


def _signs(text: str) -> np.ndarray:
    return np.array([1.0 if c == "+" else -1.0 for c in text])


class PlackettBurman(DesignFamily):
    """The `plackett_burman` family (module doc)."""

    kind = "plackett_burman"

    def check(self, space: FactorSpace, request: DesignRequest) -> None:
        """Raise DomainError unless the factors are two-level and the run count and blocks fit."""
        _runs(space, request)

    def size(self, space: FactorSpace, request: DesignRequest) -> int:
        """Runs: `request.runs`, or the smallest multiple of 4 above the number of factors."""
        return _runs(space, request)

    def build(
        self, space: FactorSpace, request: DesignRequest, constraints: Sequence[Constraint]
    ) -> FamilyRuns:
        """The first k columns of the N-run design, with how strongly main effects alias 2FIs."""
        runs = _runs(space, request)
        coded = design(runs)[:, : len(space)]
        correlation = _main_2fi_correlation(coded)
        return FamilyRuns(
            coded=coded,
            point_types=("factorial",) * runs,
            blocks=(1,) * runs,
            report={
                "runs": runs,
                "columns_unused": runs - 1 - len(space),
                "max_main_2fi_correlation": correlation,
                "note": _note(correlation),
            },
        )
