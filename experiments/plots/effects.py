"""Which effects stand out: the Pareto chart of standardized effects and the half-normal plot
of an unreplicated two-level design's effects."""

from __future__ import annotations

import scipy.stats
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from experiments.analysis.results import Analysis
from experiments.errors import DomainError
from experiments.plots.figure import ACTIVE, DEFAULT_SIZE, QUIET, model_title, new_figure

SIGNIFICANCE = 0.05
# The half-normal plot names this many of the largest effects even when none is active.
LABELLED_EFFECTS = 3


def pareto(analysis: Analysis, *, response: str, size: tuple[int, int] = DEFAULT_SIZE) -> Figure:
    """Pareto chart of the standardized effects |t| of the model terms, largest first, with the
    two-sided 5 % critical t; without residual degrees of freedom, Lenth's effects and margin of
    error instead."""
    figure = new_figure(size)
    ax = figure.add_subplot()
    standardized = [
        (t.name, abs(t.t)) for t in analysis.terms if t.name != "Intercept" and t.t is not None
    ]
    if standardized:
        bars = sorted(standardized, key=lambda item: item[1])
        limit = float(scipy.stats.t.ppf(1 - SIGNIFICANCE / 2, analysis.residual_df))
        label, quantity = (
            f"t critical {limit:.3g} (two-sided {SIGNIFICANCE:g})",
            "standardized effect |t|",
        )
    elif analysis.lenth is not None:
        lenth = analysis.lenth
        bars = sorted(((p.name, p.abs_effect) for p in lenth.half_normal), key=lambda i: i[1])
        limit = lenth.margin_of_error
        label, quantity = f"Lenth margin of error {limit:.4g}", "|effect|"
    else:
        raise DomainError(
            "kind", "the model has no standardized effects: no residual degrees of freedom"
        )
    names, values = zip(*bars, strict=True)
    colours = [ACTIVE if v > limit else QUIET for v in values]
    ax.barh(names, values, color=colours)
    line = ax.axvline(limit, color="black", ls="--", label=label)
    ax.set_xlabel(quantity)
    ax.legend(
        handles=[
            line,
            Patch(color=ACTIVE, label=f"beyond the line: significant at {SIGNIFICANCE:g}"),
            Patch(color=QUIET, label="within it: not significant"),
        ],
        loc="lower right",
        fontsize=8,
    )
    ax.set_title(
        f"Pareto chart of effects on {response}{model_title(analysis.model_label)}", fontsize=10
    )
    return figure


def half_normal(
    analysis: Analysis, *, response: str, size: tuple[int, int] = DEFAULT_SIZE
) -> Figure:
    """Half-normal plot of the effects of an unreplicated two-level design (Daniel): the active
    effects by Lenth's margin of error labelled, and the largest ones even when none is."""
    lenth = analysis.lenth
    if lenth is None:
        raise DomainError(
            "kind",
            "the half-normal plot applies to unreplicated two-level designs without centre points",
        )
    figure = new_figure(size)
    ax = figure.add_subplot()
    points = lenth.half_normal
    active = set(lenth.active)
    ax.scatter(
        [p.abs_effect for p in points],
        [p.quantile for p in points],
        c=[ACTIVE if p.name in active else QUIET for p in points],
    )
    largest = {p.name for p in sorted(points, key=lambda p: -p.abs_effect)[:LABELLED_EFFECTS]}
    for p in points:
        if p.name in active or p.name in largest:
            ax.annotate(
                p.name,
                (p.abs_effect, p.quantile),
                xytext=(4, 2),
                textcoords="offset points",
                fontsize=8,
            )
    top = max(p.quantile for p in points)
    ax.plot(
        [0, top * lenth.pse],
        [0, top],
        color="grey",
        ls=":",
        label=f"PSE line (PSE {lenth.pse:.4g})",
    )
    ax.axvline(lenth.margin_of_error, color="black", ls="--", label="Lenth margin of error")
    ax.scatter([], [], color=ACTIVE, label="active (beyond the margin)")
    ax.scatter([], [], color=QUIET, label="not active")
    ax.set_xlabel("|effect|")
    ax.set_ylabel("half-normal quantile")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(f"Half-normal plot of effects on {response}")
    return figure
