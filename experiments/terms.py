"""Model terms on coded factors, shared by the analysis (fitting) and the planner (design quality).

Main-effect columns are one per numeric factor (its coded value) and one per non-reference level
of a categorical factor (a treatment dummy, the first level the reference). The interaction and
quadratic models add products of main-effect columns of different factors; the quadratic model
adds squares of numeric factors seen at three or more levels.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from experiments.factors import Factor, FactorSpace, Value

MODEL_ORDERS: tuple[str, ...] = ("linear", "interaction", "quadratic", "auto")
# The factor index of block columns: blocks are not factors, but a term of their own.
BLOCK = -1
# The one default of every analysis, plot and command: it fits what the runs support.
DEFAULT_MODEL = "auto"


class ModelTerms:
    """The columns of the model matrix, built from the main-effect columns.

    Main-effect columns are one per numeric factor (coded) and one per non-reference level of a
    categorical factor (dummy); the interaction and quadratic models add the product of every two
    main-effect columns of different factors, and the quadratic model the square of every numeric
    factor with at least three distinct observed levels (with two, a square is the intercept).

    With two or more `blocks` (the distinct block labels of the runs, first the reference),
    one treatment dummy per further block follows the intercept ("block[2]"), a fixed effect
    in every model whose factor set is {BLOCK}. Predictions away from the runs (no block
    given) are for the average block: each dummy at 1 / number of blocks.
    """

    def __init__(
        self,
        space: FactorSpace,
        model: str,
        distinct: Sequence[int],
        blocks: Sequence[Hashable] = (),
    ) -> None:
        self.blocks = list(blocks) if len(blocks) >= 2 else []
        # The settings of each factor among the points (in an analysis, the runs): at 1 the
        # factor never varied and nothing of it is estimable, which the effects report.
        self.distinct = list(distinct)
        mains: list[tuple[str, int]] = []
        for i, factor in enumerate(space.factors):
            if factor.is_numeric:
                names = [factor.name]
            else:
                names = [f"{factor.name}[{level}]" for level in (factor.levels or ())[1:]]
            mains += [(name, i) for name in names[: columns_of(factor)]]
        self.pairs = [
            (a, b)
            for a, b in itertools.combinations(range(len(mains)), 2)
            if model in ("interaction", "quadratic") and mains[a][1] != mains[b][1]
        ]
        self.squares = [
            j
            for j, (_, i) in enumerate(mains)
            if model == "quadratic" and space.factors[i].is_numeric and distinct[i] >= 3
        ]
        self.names = [
            "Intercept",
            *(f"block[{block}]" for block in self.blocks[1:]),
            *(name for name, _ in mains),
            *(f"{mains[a][0]}:{mains[b][0]}" for a, b in self.pairs),
            *(f"{mains[j][0]}^2" for j in self.squares),
        ]
        self.factors = [
            set(),
            *({BLOCK} for _ in self.blocks[1:]),
            *({factor} for _, factor in mains),
            *({mains[a][1], mains[b][1]} for a, b in self.pairs),
            *({mains[j][1]} for j in self.squares),
        ]

        self._kept: list[int] | None = None

    def restricted(self, kept: Sequence[int]) -> ModelTerms:
        """The same terms, keeping only the columns `kept` (indices into `names`)."""
        subset = copy.copy(self)
        subset._kept = [self._kept[i] for i in kept] if self._kept is not None else list(kept)
        subset.names = [self.names[i] for i in kept]
        subset.factors = [self.factors[i] for i in kept]
        return subset

    def matrix(self, mains: np.ndarray, blocks: Sequence[Hashable] | None = None) -> np.ndarray:
        """Model matrix from main-effect columns (one row per point) and the block of each row
        (None: the average block)."""
        if blocks is None:
            dummies = np.full((len(mains), len(self.blocks[1:])), 1.0 / max(len(self.blocks), 1))
        else:
            dummies = np.array(
                [[float(b == level) for level in self.blocks[1:]] for b in blocks]
            ).reshape(len(mains), len(self.blocks[1:]))
        full = np.column_stack(
            [
                np.ones(len(mains)),
                dummies,
                mains,
                *(mains[:, a] * mains[:, b] for a, b in self.pairs),
                *(mains[:, j] ** 2 for j in self.squares),
            ]
        )
        return full if self._kept is None else full[:, self._kept]

    @property
    def modelled_factors(self) -> set[int]:
        """The indices of the factors some term contains (a factor whose every term model
        selection dropped is not among them)."""
        return {i for factors in self.factors for i in factors if i != BLOCK}

    @property
    def factor_term_columns(self) -> list[int]:
        """Indices of the columns that are not block dummies (intercept included)."""
        return [j for j, factors in enumerate(self.factors) if BLOCK not in factors]


def columns_of(factor: Factor) -> int:
    """Number of main-effect columns of a factor: none when it is fixed at a single level."""
    if factor.levels is not None and len(factor.levels) == 1:
        return 0
    return 1 if factor.is_numeric else len(factor.levels or ()) - 1


def factor_columns(factor: Factor, values: Sequence[Value]) -> np.ndarray:
    """Main-effect columns of one factor for the given natural values."""
    if not columns_of(factor):
        return np.zeros((len(values), 0))
    if factor.is_numeric:
        rows = [[factor.encode(v)] for v in values]
    else:
        rows = [[float(v == level) for level in (factor.levels or ())[1:]] for v in values]
    return np.array(rows, dtype=float).reshape(-1, columns_of(factor))


def main_columns(space: FactorSpace, configs: Sequence[Mapping[str, Value]]) -> np.ndarray:
    """Main-effect columns of every factor for natural configurations (one row per config)."""
    return np.hstack([factor_columns(f, [c[f.name] for c in configs]) for f in space.factors])


def distinct_levels(space: FactorSpace, configs: Sequence[Mapping[str, Value]]) -> list[int]:
    """How many distinct values each factor takes in `configs`, in factor order."""
    return [len({c[f.name] for c in configs}) for f in space.factors]
