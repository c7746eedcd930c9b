"""Two-level fractional factorials 2^(k-p): minimum-aberration generators, verified and explained.

Factors are named by letters A, B, C, ... (I is skipped: it names the identity in a defining
relation). The first k-p factors are the base factors of a full 2^(k-p) factorial in standard
(Yates) order, the first factor changing fastest; every added factor is the product of the base
factors in its generator word. The resolution, word length pattern and aliases are computed from
the defining relation of the design actually built, never taken on trust from the table.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from experiments.designs.base import DesignFamily, FamilyRuns
from experiments.errors import DomainError
from experiments.factors import FactorSpace

if TYPE_CHECKING:
    from experiments.constraints import Constraint
    from experiments.designs.request import DesignRequest

LETTERS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"
MAX_FACTORS = 15
MAX_RUNS = 128
DEFAULT_RESOLUTION = 4
ROMAN = {3: "III", 4: "IV", 5: "V", 6: "VI", 7: "VII", 8: "VIII"}
# Aliases are reported up to three-factor interactions, as Design-Expert and FrF2 print them.
_ALIAS_ORDER = 3

# (factors, runs) -> generator word of each added factor, over the base factors A, B, C, ...
# Every entry is a minimum-aberration design. Sources:
#   M    Montgomery, Design and Analysis of Experiments, Table 8.14 "Selected 2^(k-p) fractional
#        factorial designs" (after Box, Hunter & Hunter 1978); the textbook's own generators.
#   CSW  Chen, Sun & Wu (1993), "A catalogue of two-level and three-level fractional factorial
#        designs with small runs", Int. Stat. Review 61, design k-p.1 (first, minimum aberration);
#        its Yates column numbers are written as words here (7 = ABC, 11 = ABD, ...).
#   Xu   Xu (2009), "Algorithmic construction of efficient fractional factorial designs with
#        large run sizes", Technometrics 51, 128-run table, design k-p.1 (column numbers as above).
#   Sat  The saturated 16-run design (every interaction of A..D is a factor) and its projections
#        on 13 and 14 factors, each unique up to relabelling (CSW 1993, section 2).
CATALOGUE: dict[tuple[int, int], tuple[str, ...]] = {
    (3, 4): ("AB",),  # M
    (4, 8): ("ABC",),  # M
    (5, 8): ("AB", "AC"),  # M
    (5, 16): ("ABCD",),  # M
    (6, 8): ("AB", "AC", "BC"),  # M
    (6, 16): ("ABC", "BCD"),  # M
    (6, 32): ("ABCDE",),  # M
    (7, 8): ("AB", "AC", "BC", "ABC"),  # M
    (7, 16): ("ABC", "BCD", "ACD"),  # M
    (7, 32): ("ABCD", "ABDE"),  # M
    (7, 64): ("ABCDEF",),  # M
    (8, 16): ("BCD", "ACD", "ABC", "ABD"),  # M
    (8, 32): ("ABC", "ABD", "BCDE"),  # M
    (8, 64): ("ABCD", "ABEF"),  # M
    (8, 128): ("ABCDEFG",),  # Xu 8-1.1
    (9, 16): ("ABC", "BCD", "ACD", "ABD", "ABCD"),  # M
    (9, 32): ("BCDE", "ACDE", "ABDE", "ABCE"),  # M
    (9, 64): ("ABCD", "ACEF", "CDEF"),  # M
    (9, 128): ("ACDFG", "BCEFG"),  # M
    (10, 16): ("ABC", "BCD", "ACD", "ABD", "ABCD", "AB"),  # M
    (10, 32): ("ABCD", "ABCE", "ABDE", "ACDE", "BCDE"),  # M
    (10, 64): ("BCDF", "ACDF", "ABDE", "ABCE"),  # M
    (10, 128): ("ABCG", "BCDE", "ACDF"),  # M
    (11, 16): ("ABC", "BCD", "ACD", "ABD", "ABCD", "AB", "AC"),  # M
    (11, 32): ("ABC", "BCD", "CDE", "ACD", "ADE", "BDE"),  # M
    (11, 64): ("CDE", "ABCD", "ABF", "BDEF", "ADEF"),  # M
    (11, 128): ("ABCG", "BCDE", "ACDF", "ABCDEFG"),  # M
    (12, 16): ("AB", "AC", "BC", "AD", "BD", "ACD", "BCD", "ABCD"),  # CSW 12-8.1
    (12, 32): ("ABC", "ABD", "ACD", "BCD", "ABE", "ACE", "ADE"),  # CSW 12-7.1
    (12, 64): ("ABC", "ABD", "ACDE", "ACDF", "ABEF", "BCDEF"),  # CSW 12-6.1
    (12, 128): ("ABCDE", "ABCFG", "ABDF", "ACEG", "ADEFG"),  # Xu 12-5.1
    (13, 16): ("AB", "AC", "BC", "ABC", "AD", "BD", "ABD", "CD", "ACD"),  # Sat
    (13, 32): ("ABC", "ABD", "ACD", "BCD", "ABE", "ACE", "BCE", "ADE"),  # CSW 13-8.1
    (13, 64): ("ABC", "ABD", "ACE", "ADE", "BCF", "BDEF", "CDEF"),  # CSW 13-7.1
    (13, 128): ("ABCDE", "ABCFG", "ABDF", "ACEG", "CDF", "BCEG"),  # Xu 13-6.1
    (14, 16): ("AB", "AC", "BC", "ABC", "AD", "BD", "ABD", "CD", "ACD", "BCD"),  # Sat
    (14, 32): ("ABC", "ABD", "ACD", "BCD", "ABE", "ACE", "BCE", "ADE", "BDE"),  # CSW 14-9.1
    (14, 64): ("ABC", "ABD", "ABE", "BCDE", "ACF", "ADF", "AEF", "CDEF"),  # CSW 14-8.1
    (14, 128): ("ABCDE", "ABCFG", "ABDF", "ACEG", "BCDF", "ACDEF", "BEFG"),  # Xu 14-7.1
    (15, 16): ("AB", "AC", "BC", "ABC", "AD", "BD", "ABD", "CD", "ACD", "BCD", "ABCD"),  # Sat
    (15, 32): ("ABC", "ABD", "ACD", "BCD", "ABE", "ACE", "BCE", "ADE", "BDE", "CDE"),  # CSW 15-10.1
    (15, 64): ("ABC", "ABD", "ABE", "BCDE", "ACF", "ADF", "AEF", "CDEF", "ABCDEF"),  # CSW 15-9.1
    (15, 128): ("ABCDE", "ABCFG", "ABDF", "ACEG", "BCDF", "ACDEF", "BEFG", "ABG"),  # Xu 15-8.1
}


@dataclass(frozen=True)
class Fraction:
    """A regular two-level design: k factors in 2^base runs, added factors from generator words.

    Effects and words are bit masks over the k factors (bit i is factor i); a generator is a mask
    over the base factors. `words` is the defining relation without I: every product of
    generator words, 2^p - 1 of them (none for a full factorial).
    """

    factors: int
    base: int
    generators: tuple[int, ...]
    words: tuple[int, ...]

    @property
    def runs(self) -> int:
        """Number of runs, 2^base."""
        return 1 << self.base

    @property
    def resolution(self) -> int | None:
        """Length of the shortest word of the defining relation; None for a full factorial."""
        return min(map(_order, self.words)) if self.words else None

    def word_length_pattern(self) -> list[int]:
        """[A3, A4, ..., Ak]: how many words of each length the defining relation has."""
        if not self.words:
            return []
        counts = np.bincount([_order(w) for w in self.words], minlength=self.factors + 1)
        return [int(c) for c in counts[3:]]

    def coded(self) -> np.ndarray:
        """The runs in standard order, coded -1/+1, one column per factor."""
        index = np.arange(self.runs)[:, None]
        base = np.where((index >> np.arange(self.base)) & 1, 1.0, -1.0)
        added = [np.prod(base[:, _members(g)], axis=1) for g in self.generators]
        return np.column_stack([base, *added]) if added else base

    def effect_columns(self) -> np.ndarray:
        """For every effect (mask over the k factors), the base-factor mask of its column."""
        factor_columns = [1 << i for i in range(self.base)] + list(self.generators)
        columns = np.zeros(1 << self.factors, dtype=np.int64)
        for i, column in enumerate(factor_columns):
            columns[1 << i : 1 << (i + 1)] = columns[: 1 << i] ^ column
        return columns


def two_level_fraction(k: int, resolution: int) -> tuple[np.ndarray, list[str]]:
    """Coded +-1 runs in standard order and generator strings of the smallest design of k factors
    with at least the given resolution (the full factorial, with no generators, when no fraction
    reaches it). Raises DomainError("design.resolution", ...) when none fits in MAX_RUNS runs."""
    fraction = _choose(k, None, resolution)
    return fraction.coded(), _generator_strings(fraction)


def check_two_level(space: FactorSpace, design: str) -> None:
    """Raise DomainError("factors.<i>.levels", ...) unless every factor has exactly two levels.

    Low/high factors count as two-level (coded -1 and +1); factors with explicit levels (all
    categorical ones) need exactly two.
    """
    for i, factor in enumerate(space.factors):
        count = 2 if factor.levels is None else len(factor.levels)
        if count != 2:
            noun = "level" if count == 1 else "levels"
            raise DomainError(
                f"factors.{i}.levels",
                f"a {design} design needs two-level factors; '{factor.name}' has {count} {noun}",
            )


def _plan(space: FactorSpace, request: DesignRequest) -> tuple[Fraction, int]:
    """The fraction asked for and q, for its 2^q blocks."""
    check_two_level(space, "fractional factorial")
    fraction = _choose(len(space), request.runs, request.resolution or DEFAULT_RESOLUTION)
    return fraction, _blocking(fraction, request.blocks)


def _choose(k: int, runs: int | None, resolution: int) -> Fraction:
    """The design of k factors in `runs` runs, or else the smallest reaching `resolution`."""
    if k > MAX_FACTORS:
        raise DomainError(
            "design.kind",
            f"fractional factorials are catalogued for at most {MAX_FACTORS} factors; "
            f"screen {k} factors with a plackett_burman design",
        )
    return _by_resolution(k, resolution) if runs is None else _by_runs(k, runs)


def _by_resolution(k: int, resolution: int) -> Fraction:
    """The smallest catalogued design of k factors reaching `resolution`."""
    designs = [_fraction(k, runs) for runs in _run_sizes(k)]
    for fraction in designs:
        if fraction.resolution is None or fraction.resolution >= resolution:
            return fraction
    best = designs[-1]
    raise DomainError(
        "design.resolution",
        f"a resolution {ROMAN.get(resolution, resolution)} design of {k} factors needs more "
        f"than {MAX_RUNS} runs, the most supported; {best.runs} runs reach resolution "
        f"{ROMAN.get(best.resolution or 0, best.resolution)}",
    )


def _by_runs(k: int, runs: int) -> Fraction:
    """The minimum-aberration design of k factors in `runs` runs."""
    if runs & (runs - 1):
        raise DomainError(
            "design.runs",
            f"a two-level fractional factorial has a power-of-two number of runs; got {runs}",
        )
    if runs <= k:
        smallest = 1 << k.bit_length()
        raise DomainError(
            "design.runs",
            f"{k} factors need at least {smallest} runs (a power of two above the number of "
            f"factors); got {runs}",
        )
    if runs > min(1 << k, MAX_RUNS):
        largest = min(1 << k, MAX_RUNS)
        why = "the full factorial" if largest == 1 << k else "the most supported"
        raise DomainError(
            "design.runs", f"at most {largest} runs for {k} factors ({why}); got {runs}"
        )
    return _fraction(k, runs)


def _run_sizes(k: int) -> list[int]:
    """Catalogued run counts of k factors, ascending: fractions, then the full factorial."""
    sizes = sorted(runs for factors, runs in CATALOGUE if factors == k)
    return [*sizes, 1 << k] if 1 << k <= MAX_RUNS else sizes


@functools.lru_cache(maxsize=256)
def _fraction(k: int, runs: int) -> Fraction:
    """The catalogued design (or the full factorial when runs = 2^k) with its defining relation."""
    base = runs.bit_length() - 1
    generators = tuple(_mask(word) for word in CATALOGUE.get((k, runs), ()))
    words: list[int] = []
    for j, generator in enumerate(generators):
        word = generator | 1 << (base + j)
        words += [word, *(word ^ w for w in words)]
    return Fraction(factors=k, base=base, generators=generators, words=tuple(words))


def _aliases(fraction: Fraction) -> dict[str, list[str]]:
    """Aliases up to three-factor interactions of every main effect and two-factor interaction."""
    if not fraction.words:
        return {}
    k = fraction.factors
    effects = [1 << i for i in range(k)]
    effects += [1 << i | 1 << j for i, j in itertools.combinations(range(k), 2)]
    partners = np.array(effects)[:, None] ^ np.array(fraction.words)[None, :]
    short = _popcount(partners) <= _ALIAS_ORDER
    return {
        _name(effect): _sorted_names(partners[row][short[row]].tolist())
        for row, effect in enumerate(effects)
    }


def _blocking(fraction: Fraction, blocks: int) -> int:
    """q for 2^q blocks; raise unless blocks is a power of two that keeps main effects clear."""
    if blocks & (blocks - 1):
        raise DomainError(
            "design.blocks",
            f"a two-level factorial splits into a power-of-two number of blocks; got {blocks}",
        )
    q = blocks.bit_length() - 1
    if _block_space(fraction, q) is None:
        most = max(b for b in range(q) if _block_space(fraction, b) is not None)
        raise DomainError(
            "design.blocks",
            f"{blocks} blocks of {fraction.runs >> q} runs would confound a main effect with "
            f"blocks; this {fraction.runs}-run design takes at most {1 << most} blocks",
        )
    return q


@functools.lru_cache(maxsize=256)
def _block_space(fraction: Fraction, q: int) -> tuple[int, ...] | None:
    """The base-factor columns of the best group of 2^q blocks (without 0), or None.

    A block group is a q-dimensional subspace of the columns; every effect whose column lies in
    it is confounded with blocks. No main effect may be; among the rest the group confounding
    the fewest two-factor interactions wins, then the fewest three-factor ones, and so on (the
    blocking word length pattern of Sun, Wu & Chen 1997). Every subspace is tried: at most 11811
    of them (128 runs in 8 or 16 blocks).
    """
    k = fraction.factors
    counts = np.zeros((fraction.runs, k + 1), dtype=np.int64)
    np.add.at(counts, (fraction.effect_columns(), _popcount(np.arange(1 << k))), 1)
    bases = _subspaces(fraction.base, q)
    groups = np.zeros((len(bases), 1), dtype=np.int64)
    for j in range(q):
        groups = np.hstack([groups, groups ^ bases[:, j : j + 1]])
    groups = groups[:, 1:]
    confounded = counts[groups].sum(axis=1)
    feasible = np.flatnonzero(confounded[:, 1] == 0)
    if not feasible.size:
        return None
    # lexsort's last key is the primary one: fewest 2FIs, then 3FIs, ...; ties to the first.
    keys = [feasible, *(confounded[feasible, order] for order in range(k, 1, -1))]
    return tuple(groups[feasible[np.lexsort(keys)[0]]].tolist())


@functools.lru_cache(maxsize=64)
def _subspaces(n: int, d: int) -> np.ndarray:
    """Every d-dimensional subspace of GF(2)^n once, as the rows of its reduced echelon basis.

    Row i has its leading bit at pivot i, no other pivot bit, and any bits below its pivot.
    """
    if d == 0:
        return np.zeros((1, 0), dtype=np.int64)
    bases = []
    for pivots in itertools.combinations(range(n), d):
        free = [[b for b in range(pivot) if b not in pivots] for pivot in pivots]
        # One integer counts through every choice of the free bits of all rows at once.
        choice = np.arange(1 << sum(map(len, free)), dtype=np.int64)
        rows, offset = [], 0
        for pivot, bits in zip(pivots, free, strict=True):
            row = np.full_like(choice, 1 << pivot)
            for b in bits:
                row |= ((choice >> offset) & 1) << b
                offset += 1
            rows.append(row)
        bases.append(np.column_stack(rows))
    return np.vstack(bases)


def _block_generators(fraction: Fraction, columns: np.ndarray, q: int) -> list[int]:
    """The highest-order effects spanning the block group: the generators a textbook would give."""
    group = _block_space(fraction, q) or ()
    lowest = [_lowest_effect(columns, c) for c in group]
    chosen: list[int] = []
    spanned = [0]
    pairs = sorted(zip(lowest, group, strict=True), key=lambda p: (-_order(p[0]), _members(p[0])))
    for effect, column in pairs:
        if column not in spanned:
            chosen.append(effect)
            spanned += [column ^ s for s in spanned]
    return chosen


def _confounded(fraction: Fraction, columns: np.ndarray, q: int) -> list[str]:
    """Every effect confounded with blocks, up to three-factor interactions (or, for a block
    contrast free of those, its shortest effects)."""
    effects: list[int] = []
    for column in _block_space(fraction, q) or ():
        coset = np.flatnonzero(columns == column)
        orders = _popcount(coset)
        effects += coset[orders <= max(_ALIAS_ORDER, int(orders.min()))].tolist()
    return _sorted_names(effects)


def _lowest_effect(columns: np.ndarray, column: int) -> int:
    return min(np.flatnonzero(columns == column).tolist(), key=_key)


def _generator_strings(fraction: Fraction) -> list[str]:
    return [f"{LETTERS[fraction.base + j]} = {_name(g)}" for j, g in enumerate(fraction.generators)]


def _sorted_names(effects: Sequence[int]) -> list[str]:
    return [_name(e) for e in sorted(effects, key=_key)]


def _key(effect: int) -> tuple[int, list[int]]:
    """Sort key: lower order first, then alphabetical (A before B, AB before AC)."""
    return _order(effect), _members(effect)


def _name(effect: int) -> str:
    return "".join(LETTERS[i] for i in _members(effect))


def _mask(word: str) -> int:
    return sum(1 << LETTERS.index(letter) for letter in word)


def _members(effect: int) -> list[int]:
    return [i for i in range(effect.bit_length()) if effect >> i & 1]


def _order(effect: int) -> int:
    return effect.bit_count()


def _popcount(values: np.ndarray) -> np.ndarray:
    """Set bits of each value (np.bitwise_count needs numpy 2); values below 2^MAX_FACTORS."""
    return _BIT_COUNTS[values]


_BIT_COUNTS = np.array([i.bit_count() for i in range(1 << MAX_FACTORS)], dtype=np.int64)


class FractionalFactorial(DesignFamily):
    """The `fractional_factorial` family (module doc)."""

    kind = "fractional_factorial"

    def check(self, space: FactorSpace, request: DesignRequest) -> None:
        """Raise DomainError for a fraction that cannot be planned: factors, size or blocks."""
        _plan(space, request)

    def size(self, space: FactorSpace, request: DesignRequest) -> int:
        """Runs of the chosen fraction."""
        return _plan(space, request)[0].runs

    def build(
        self, space: FactorSpace, request: DesignRequest, constraints: Sequence[Constraint]
    ) -> FamilyRuns:
        """The fraction in standard order with its blocks, defining relation and aliases."""
        fraction, q = _plan(space, request)
        coded = fraction.coded()
        report: dict[str, Any] = {
            "letters": {LETTERS[i]: name for i, name in enumerate(space.names)},
            "generators": _generator_strings(fraction),
            "defining_relation": [f"I = {name}" for name in _sorted_names(fraction.words)],
            "resolution": fraction.resolution,
            "word_length_pattern": fraction.word_length_pattern(),
            "aliases": _aliases(fraction),
            "block_generators": [],
            "confounded_with_blocks": [],
        }
        run_blocks = np.ones(fraction.runs, dtype=int)
        if q:
            columns = fraction.effect_columns()
            generators = _block_generators(fraction, columns, q)
            report["block_generators"] = _sorted_names(generators)
            report["confounded_with_blocks"] = _confounded(fraction, columns, q)
            for bit, effect in enumerate(generators):
                run_blocks += (np.prod(coded[:, _members(effect)], axis=1) > 0).astype(int) << bit
        return FamilyRuns(
            coded=coded,
            point_types=("factorial",) * fraction.runs,
            blocks=tuple(int(b) for b in run_blocks),
            report=report,
        )
