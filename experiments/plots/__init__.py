"""Review plots drawn with matplotlib from the engine's results (an `Analysis`, its `Optimum`,
response `Slice`s, the factor space), the way statsmodels' plots take a results object; the
server's PNG endpoints and the notebooks (which rebuild the results from the API's JSON with
`client.results`) draw the same pictures.

Figures are built without pyplot (no global state, safe in a server's threads); Jupyter shows a
returned figure inline as PNG, `to_png` renders one with the Agg canvas. One module per kind of
plot: `slices` (contour, surface, interaction, main effects, drawn with `slice_axes`),
`effects` (Pareto, half-normal), `diagnostics` (residuals), `history` (progress); `figure`
holds what they share.
"""

from experiments.plots.diagnostics import residuals
from experiments.plots.effects import LABELLED_EFFECTS, SIGNIFICANCE, half_normal, pareto
from experiments.plots.figure import (
    ACTIVE,
    DEFAULT_SIZE,
    DPI,
    QUIET,
    TITLE_MODEL_LINES,
    TITLE_WIDTH,
    PlotFigure,
    axis_label,
    new_figure,
    to_png,
)
from experiments.plots.history import best_so_far, progress
from experiments.plots.slice_axes import MAX_LATTICE_DOTS
from experiments.plots.slices import contour, interaction, main_effects, surface

__all__ = [
    "ACTIVE",
    "DEFAULT_SIZE",
    "DPI",
    "LABELLED_EFFECTS",
    "MAX_LATTICE_DOTS",
    "QUIET",
    "SIGNIFICANCE",
    "TITLE_MODEL_LINES",
    "TITLE_WIDTH",
    "PlotFigure",
    "axis_label",
    "best_so_far",
    "contour",
    "half_normal",
    "interaction",
    "main_effects",
    "new_figure",
    "pareto",
    "progress",
    "residuals",
    "surface",
    "to_png",
]
