"""How much of the planned experiment an analysis rests on: the runs done against those planned,
the factors no finished run varied, and the terms of the planned model the runs cannot estimate
yet. An analysis of a design cut short says so before anything else."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from experiments.analysis.selection import separable_terms
from experiments.factors import Factor, FactorSpace, Value
from experiments.terms import ModelTerms, main_columns

__all__ = ["Coverage", "coverage"]

# A square needs three settings of its factor; more add nothing to which terms are estimable.
_LEVELS_FOR_A_SQUARE = 3


@dataclass(frozen=True)
class Coverage:
    """What the analysis rests on and what it cannot say yet.

    `runs` is the number of runs fitted and `planned` the runs the experiment planned (None
    when it planned none: imported observations). `model` is the model order the runs are
    checked against (the design's, else the one the analysis started from); `not_estimable`
    are its terms the runs cannot separate (a factor that never varied, too few runs, aliased
    columns), `not_varied` the factors every run held at one setting, with that setting.
    `residual_df` is the fitted model's: at 0 it fits the runs exactly and measures no noise.
    `sentences` say it in words, the explanation's first ones (none when the design is
    complete and everything is estimable).
    """

    runs: int
    planned: int | None
    complete: bool
    model: str
    not_varied: dict[str, Value]
    not_estimable: list[str]
    residual_df: int
    sentences: list[str]

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)


def coverage(
    space: FactorSpace,
    configs: Sequence[Mapping[str, object]],
    *,
    planned: int | None,
    model: str,
    residual_df: int,
) -> Coverage:
    """Check the runs (`configs`) against the `planned` count and the `model` order planned."""
    observed = [space.check_config(c, in_region=False) for c in configs]
    not_varied = {
        f.name: observed[0][f.name]
        for f in space.factors
        if len({c[f.name] for c in observed}) == 1 and _levels(f) >= 2
    }
    terms = ModelTerms(space, model, [_levels(f) for f in space.factors])
    x = terms.matrix(main_columns(space, observed))
    _, not_estimable = separable_terms(x, terms.names, terms.factors)
    complete = planned is None or len(observed) >= planned
    sentences = []
    if not complete:
        sentences.append(
            f"The design is incomplete: {len(observed)} of its {planned} planned runs have"
            " results, so this analysis is provisional."
        )
    if not_estimable:
        plan = "the design was planned for" if planned is not None else "the analysis started from"
        them = "it" if len(not_estimable) == 1 else "them"
        sentences.append(
            f"The runs so far cannot estimate {', '.join(not_estimable)} of the {model} model"
            f" {plan}; the model fitted leaves {them} out, and says nothing about {them}."
        )
    return Coverage(
        runs=len(observed),
        planned=planned,
        complete=complete,
        model=model,
        not_varied=not_varied,
        not_estimable=not_estimable,
        residual_df=residual_df,
        sentences=sentences,
    )


def _levels(factor: Factor) -> int:
    """The settings a factor can take, up to the three a square needs."""
    if factor.levels is not None:
        return min(len(factor.levels), _LEVELS_FOR_A_SQUARE)
    if factor.kind == "integer":
        low, high = factor.bounds
        return min(int(high - low) + 1, _LEVELS_FOR_A_SQUARE)
    return _LEVELS_FOR_A_SQUARE
