"""The residual diagnostics of a fitted model."""

from __future__ import annotations

import numpy as np
import scipy.stats
from matplotlib.figure import Figure

from experiments.analysis.results import Analysis
from experiments.plots.figure import ACTIVE, DEFAULT_SIZE, model_title, new_figure


def residuals(analysis: Analysis, *, response: str, size: tuple[int, int] = DEFAULT_SIZE) -> Figure:
    """Residuals against fitted values, a normal probability plot and residuals in run order;
    the runs that stand out (outlier, leverage or influence) are labelled as the analysis names
    them (the service: by run number, as the run table shows them)."""
    runs = analysis.diagnostics.runs
    fitted = np.array([r.fitted for r in runs])
    residual = np.array([r.residual for r in runs])
    standing_out = {s.label for s in analysis.diagnostics.standouts}
    figure = new_figure(size)
    left, middle, right = figure.subplots(1, 3)
    left.scatter(fitted, residual)
    for i, run in enumerate(runs):
        if run.label in standing_out:
            left.annotate(run.label, (fitted[i], residual[i]), xytext=(4, 2),
                          textcoords="offset points", fontsize=7, color=ACTIVE)  # fmt: skip
            right.annotate(run.label, (i + 1, residual[i]), xytext=(4, 2),
                           textcoords="offset points", fontsize=7, color=ACTIVE)  # fmt: skip
    left.axhline(0.0, color="grey", ls="--")
    left.set_xlabel(f"fitted {response}")
    left.set_ylabel("residual")
    left.set_title("residuals vs fitted")
    (theoretical, ordered), (slope, intercept, _) = scipy.stats.probplot(residual)
    middle.scatter(theoretical, ordered)
    middle.plot(theoretical, slope * np.asarray(theoretical) + intercept, color="red")
    middle.set_xlabel("normal quantile")
    middle.set_ylabel("ordered residual")
    middle.set_title("normal probability")
    right.plot(range(1, len(residual) + 1), residual, marker="o")
    right.axhline(0.0, color="grey", ls="--")
    right.set_xlabel("fitted runs, in run order")
    right.set_ylabel("residual")
    right.set_title("residuals in run order")
    figure.suptitle(f"Residuals of {response}{model_title(analysis.model_label)}", fontsize=10)
    return figure
