"""Plots of response slices: filled contours and a 3-D surface over two factors, interaction
lines, and main-effect panels along each factor."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize, to_rgba
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from experiments.analysis.results import Optimum
from experiments.analysis.slices import Slice
from experiments.factors import FactorSpace
from experiments.numbers import format_value
from experiments.plots.figure import DEFAULT_SIZE, model_title, new_figure
from experiments.plots.slice_axes import (
    floats,
    held_text,
    mark_lattice,
    mark_optimum,
    pad_limits,
    pair,
    position,
    slice_grid,
    style_axes,
    style_axis,
)


def contour(
    slice_: Slice,
    space: FactorSpace,
    *,
    response: str,
    optimum: Optimum | None = None,
    model: str | None = None,
    size: tuple[int, int] = DEFAULT_SIZE,
) -> Figure:
    """Filled contours of the predicted response over the slice's two factors, the runs, the
    region outside the data greyed and cross-hatched (extrapolation), the region where a
    constraint is broken hatched, the whole-number settings of an integer factor dotted when
    the surface is drawn smooth between them, and the optimum marked with its interval."""
    figure = new_figure(size)
    ax = figure.add_subplot()
    x, y, z = slice_grid(slice_)
    filled = ax.contourf(x, y, z, levels=14, cmap="viridis")
    lines = ax.contour(x, y, z, levels=filled.levels, colors="white", linewidths=0.5)
    ax.clabel(lines, fontsize=7, fmt=lambda value: format_value(float(value)))
    figure.colorbar(filled, ax=ax, label=f"predicted {response}")
    inside = np.array(slice_.inside, dtype=float)
    if not inside.all():
        ax.contourf(
            x, y, inside, levels=[-0.5, 0.5], colors=["lightgrey"], alpha=0.75, hatches=["xx"]
        )
        ax.fill([], [], color="lightgrey", hatch="xx", label="no runs here: extrapolation")
    mark_lattice(ax, slice_, space)
    feasible = np.array(slice_.feasible, dtype=float)
    if not feasible.all():
        ax.contourf(x, y, feasible, levels=[-0.5, 0.5], colors="none", hatches=["//"])
        ax.contour(x, y, feasible, levels=[0.5], colors="red", linewidths=1.5)
        ax.plot([], [], color="red", label="constraint boundary (hatched: broken)")
    ax.scatter(
        [position(slice_, "x", run.x) for run in slice_.runs],
        [position(slice_, "y", run.y) for run in slice_.runs],
        marker="o",
        facecolors="none",
        edgecolors="black",
        clip_on=False,
        label="runs (projected)",
    )
    mark_optimum(ax, slice_, optimum, response)
    style_axes(ax, slice_, space)
    pad_limits(ax, slice_)
    ax.legend(loc="best", fontsize=8)
    ax.set_title(
        f"Predicted {response} over {slice_.x} and {slice_.y}\n"
        f"{held_text(slice_)}{model_title(model)}",
        fontsize=10,
    )
    return figure


def surface(
    slice_: Slice,
    space: FactorSpace,
    *,
    response: str,
    optimum: Optimum | None = None,
    model: str | None = None,
    size: tuple[int, int] = DEFAULT_SIZE,
) -> Figure:
    """The predicted response as a 3-D surface over the slice's two factors: the part outside
    the data (extrapolation) grey, the optimum a star on a stem from the floor, drawn above
    the surface so it is never hidden."""
    figure = new_figure(size)
    # Why computed_zorder off: matplotlib would otherwise sort the star behind the surface.
    ax = figure.add_subplot(projection="3d", computed_zorder=False)
    # 3-D axes have no log scale: a log2 factor is drawn at log2 of its value, ticks relabelled.
    logs = [space[name].scale == "log2" for name in pair(slice_)]
    x, y, z = slice_grid(slice_)
    x, y = (np.log2(grid) if log else grid for grid, log in zip((x, y), logs, strict=True))
    norm = Normalize(float(np.nanmin(z)), float(np.nanmax(z)))
    colours = colormaps["viridis"](norm(z))
    outside = ~np.array(slice_.inside, dtype=bool)
    colours[outside] = to_rgba("lightgrey", 0.6)
    ax.plot_surface(x, y, z, facecolors=colours, linewidth=0, shade=False, zorder=1)
    figure.colorbar(
        ScalarMappable(norm=norm, cmap="viridis"), ax=ax, shrink=0.6, label=f"predicted {response}"
    )
    if outside.any():
        ax.plot([], [], color="lightgrey", lw=6, label="no runs here: extrapolation")
    if optimum is not None:
        at = [
            position(slice_, which, optimum.held[name])
            for which, name in zip(("x", "y"), pair(slice_), strict=True)
        ]
        at = [math.log2(value) if log else value for value, log in zip(at, logs, strict=True)]
        floor = float(np.nanmin(z))
        ax.plot([at[0]] * 2, [at[1]] * 2, [floor, optimum.predicted], color="red", zorder=4)
        ax.scatter(
            *([value] for value in at),
            [optimum.predicted],
            color="red",
            edgecolors="white",
            marker="*",
            s=260,
            depthshade=False,
            zorder=5,
            label=f"optimum {format_value(optimum.predicted)}",
        )
    if optimum is not None or outside.any():
        ax.legend(loc="upper left", fontsize=8)
    style_axes(ax, slice_, space)
    for axis, log in zip((ax.xaxis, ax.yaxis), logs, strict=True):
        if log:
            axis.set_major_formatter(FuncFormatter(lambda value, _: f"{2**value:g}"))
    ax.set_zlabel(f"predicted {response}")
    ax.set_title(
        f"Response surface of {response}\n{held_text(slice_)}{model_title(model)}", fontsize=10
    )
    return figure


def interaction(
    slice_: Slice,
    space: FactorSpace,
    *,
    response: str,
    model: str | None = None,
    size: tuple[int, int] = DEFAULT_SIZE,
) -> Figure:
    """Interaction plot: the predicted response against x, one line per level of y (parallel
    lines: no interaction), with 95 % confidence bands."""
    figure = new_figure(size)
    ax = figure.add_subplot()
    positions = [position(slice_, "x", v) for v in slice_.x_values]
    for i, level in enumerate(slice_.y_values):
        line = ax.plot(
            positions, slice_.predicted[i], marker="o", markersize=3, label=f"{slice_.y} = {level}"
        )
        ax.fill_between(
            positions,
            floats(slice_.ci_low[i]),
            floats(slice_.ci_high[i]),
            color=line[0].get_color(),
            alpha=0.15,
        )
    style_axis(ax, ax.xaxis, slice_, "x", space)
    ax.set_ylabel(f"predicted {response}")
    ax.legend(fontsize=8)
    ax.set_title(
        f"Interaction of {slice_.x} and {slice_.y} on {response}\n"
        f"{held_text(slice_)}{model_title(model)}",
        fontsize=10,
    )
    return figure


def main_effects(
    slices: Sequence[Slice],
    space: FactorSpace,
    *,
    response: str,
    optimum: Optimum | None = None,
    model: str | None = None,
    size: tuple[int, int] = DEFAULT_SIZE,
) -> Figure:
    """One panel per factor: the predicted response along it, the others at the optimum, with
    the 95 % confidence band; shared response axis so the panels compare."""
    figure = new_figure(size)
    columns = min(3, len(slices))
    rows = math.ceil(len(slices) / columns)
    axes = figure.subplots(rows, columns, sharey=True, squeeze=False).ravel()
    for ax, slice_ in zip(axes, slices, strict=False):
        positions = [position(slice_, "x", v) for v in slice_.x_values]
        ax.plot(positions, slice_.predicted[0], marker="o", markersize=3)
        ax.fill_between(positions, floats(slice_.ci_low[0]), floats(slice_.ci_high[0]), alpha=0.2)
        if optimum is not None:
            ax.axvline(position(slice_, "x", optimum.held[slice_.x]), color="red", ls="--")
        style_axis(ax, ax.xaxis, slice_, "x", space)
    for ax in axes[len(slices) :]:
        ax.set_visible(False)
    for ax in axes[::columns]:
        ax.set_ylabel(f"predicted {response}")
    figure.suptitle(
        f"Main effects on {response} (others at the optimum, red: optimum){model_title(model)}",
        fontsize=10,
    )
    return figure
