"""Review plots drawn with matplotlib from the engine's results (an `Analysis`, its `Optimum`,
response `Slice`s, the factor space), the way statsmodels' plots take a results object; the
server's PNG endpoints and the notebooks (which rebuild the results from the API's JSON with
`client.results`) draw the same pictures.

Figures are built without pyplot (no global state, safe in a server's threads); Jupyter shows a
returned figure inline as PNG, `to_png` renders one with the Agg canvas.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Sequence

import numpy as np
import scipy.stats
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize, to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from experiments.analysis.results import Analysis, Optimum
from experiments.analysis.slices import Slice
from experiments.errors import DomainError
from experiments.factors import Factor, FactorSpace, Value
from experiments.numbers import format_value

DEFAULT_SIZE = (800, 600)
DPI = 100
SIGNIFICANCE = 0.05
ACTIVE, QUIET = "tab:red", "tab:blue"
# The half-normal plot names this many of the largest effects even when none is active.
LABELLED_EFFECTS = 3
# Integer lattices up to this many points are dotted on a smooth contour plot.
MAX_LATTICE_DOTS = 400
# Titles wrap the model's terms at this many characters, over at most this many lines.
TITLE_WIDTH = 80
TITLE_MODEL_LINES = 3


def to_png(figure: Figure) -> bytes:
    """The figure as PNG bytes, at exactly its pixel size."""
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    return buffer.getvalue()


class PlotFigure(Figure):
    """A figure that shows itself as PNG in Jupyter, with or without pyplot."""

    def _repr_png_(self) -> bytes:
        return to_png(self)


def new_figure(size: tuple[int, int] = DEFAULT_SIZE) -> Figure:
    """An empty figure of `size` pixels (width, height) with a layout that keeps labels in."""
    width, height = size
    return PlotFigure(figsize=(width / DPI, height / DPI), dpi=DPI, layout="constrained")


def axis_label(factor: Factor) -> str:
    """A factor's name with its unit, e.g. 'threads_per_client (threads)'."""
    return f"{factor.name} ({factor.unit})" if factor.unit else factor.name


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
    x, y, z = _grid(slice_)
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
    _mark_lattice(ax, slice_, space)
    feasible = np.array(slice_.feasible, dtype=float)
    if not feasible.all():
        ax.contourf(x, y, feasible, levels=[-0.5, 0.5], colors="none", hatches=["//"])
        ax.contour(x, y, feasible, levels=[0.5], colors="red", linewidths=1.5)
        ax.plot([], [], color="red", label="constraint boundary (hatched: broken)")
    ax.scatter(
        [_position(slice_, "x", run.x) for run in slice_.runs],
        [_position(slice_, "y", run.y) for run in slice_.runs],
        marker="o",
        facecolors="none",
        edgecolors="black",
        clip_on=False,
        label="runs (projected)",
    )
    _mark_optimum(ax, slice_, optimum, response)
    _axes(ax, slice_, space)
    _pad(ax, slice_)
    ax.legend(loc="best", fontsize=8)
    ax.set_title(
        f"Predicted {response} over {slice_.x} and {slice_.y}\n{_held(slice_)}{_model(model)}",
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
    logs = [space[name].scale == "log2" for name in _pair(slice_)]
    x, y, z = _grid(slice_)
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
            _position(slice_, which, optimum.config[name])
            for which, name in zip(("x", "y"), _pair(slice_), strict=True)
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
    _axes(ax, slice_, space)
    for axis, log in zip((ax.xaxis, ax.yaxis), logs, strict=True):
        if log:
            axis.set_major_formatter(FuncFormatter(lambda value, _: f"{2**value:g}"))
    ax.set_zlabel(f"predicted {response}")
    ax.set_title(f"Response surface of {response}\n{_held(slice_)}{_model(model)}", fontsize=10)
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
    positions = [_position(slice_, "x", v) for v in slice_.x_values]
    for i, level in enumerate(slice_.y_values):
        line = ax.plot(
            positions, slice_.predicted[i], marker="o", markersize=3, label=f"{slice_.y} = {level}"
        )
        ax.fill_between(
            positions,
            _floats(slice_.ci_low[i]),
            _floats(slice_.ci_high[i]),
            color=line[0].get_color(),
            alpha=0.15,
        )
    _style_axis(ax, ax.xaxis, slice_, "x", space)
    ax.set_ylabel(f"predicted {response}")
    ax.legend(fontsize=8)
    ax.set_title(
        f"Interaction of {slice_.x} and {slice_.y} on {response}\n{_held(slice_)}{_model(model)}",
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
        positions = [_position(slice_, "x", v) for v in slice_.x_values]
        ax.plot(positions, slice_.predicted[0], marker="o", markersize=3)
        ax.fill_between(positions, _floats(slice_.ci_low[0]), _floats(slice_.ci_high[0]), alpha=0.2)
        if optimum is not None:
            ax.axvline(_position(slice_, "x", optimum.config[slice_.x]), color="red", ls="--")
        _style_axis(ax, ax.xaxis, slice_, "x", space)
    for ax in axes[len(slices) :]:
        ax.set_visible(False)
    for ax in axes[::columns]:
        ax.set_ylabel(f"predicted {response}")
    figure.suptitle(
        f"Main effects on {response} (others at the optimum, red: optimum){_model(model)}",
        fontsize=10,
    )
    return figure


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
        f"Pareto chart of effects on {response}{_model(analysis.model_label)}", fontsize=10
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
    figure.suptitle(f"Residuals of {response}{_model(analysis.model_label)}", fontsize=10)
    return figure


def progress(
    values: Sequence[float],
    sources: Sequence[str],
    *,
    response: str,
    goal: str,
    size: tuple[int, int] = DEFAULT_SIZE,
) -> Figure:
    """The measured values in the order their trials finished, coloured by where each trial
    came from (`sources`, e.g. design or suggestion), and the best so far."""
    if not values:
        raise DomainError("response", f"no succeeded trial has measured {response} yet")
    measured = np.asarray(values, dtype=float)
    order = np.arange(1, len(measured) + 1)
    figure = new_figure(size)
    ax = figure.add_subplot()
    for source in sorted(set(sources)):
        picked = [i for i, s in enumerate(sources) if s == source]
        ax.scatter(order[picked], measured[picked], label=f"{source} trials", alpha=0.7)
    ax.step(order, best_so_far(measured, goal), where="post", color="black", label="best so far")
    ax.set_xlabel("trials finished")
    ax.set_ylabel(response)
    ax.legend(fontsize=8)
    ax.set_title(f"Best {response} so far ({goal}), {len(measured)} trials")
    return figure


def best_so_far(values: Sequence[float] | np.ndarray, goal: str) -> list[float]:
    """The running best of a sequence of results."""
    array = np.asarray(values, dtype=float)
    running = np.maximum.accumulate(array) if goal == "maximize" else np.minimum.accumulate(array)
    return running.tolist()


def _floats(values: Sequence[float | None]) -> list[float]:
    return [math.nan if v is None else float(v) for v in values]


def _pair(slice_: Slice) -> tuple[str, str]:
    if slice_.y is None:
        raise DomainError("y", "this plot needs a slice over two factors")
    return slice_.x, slice_.y


def _values(slice_: Slice, axis: str) -> list[Value]:
    return slice_.x_values if axis == "x" else slice_.y_values


def _numeric(slice_: Slice, axis: str) -> bool:
    return all(isinstance(v, int | float) for v in _values(slice_, axis))


def _position(slice_: Slice, axis: str, value: Value | None) -> float:
    """Where a value sits on an axis: itself if numeric, its level's index if categorical."""
    if _numeric(slice_, axis):
        return float(value)  # type: ignore[arg-type]
    return float(_values(slice_, axis).index(value))  # type: ignore[arg-type]


def _grid(slice_: Slice) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = [_position(slice_, "x", v) for v in slice_.x_values]
    y = [_position(slice_, "y", v) for v in slice_.y_values]
    gx, gy = np.meshgrid(x, y)
    return gx, gy, np.array(slice_.predicted, dtype=float)


def _axes(ax: Axes, slice_: Slice, space: FactorSpace) -> None:
    _style_axis(ax, ax.xaxis, slice_, "x", space)
    _style_axis(ax, ax.yaxis, slice_, "y", space)


def _style_axis(ax: Axes, axis: Axis, slice_: Slice, which: str, space: FactorSpace) -> None:
    """Label with the unit; categorical levels as ticks; whole numbers on an integer factor;
    a log2 factor on a log2 axis with plain numbers (3-D axes cannot be log-scaled)."""
    factor = space[slice_.x if which == "x" else _pair(slice_)[1]]
    axis.set_label_text(axis_label(factor))
    values = _values(slice_, which)
    if not _numeric(slice_, which):
        axis.set_ticks(range(len(values)), [str(v) for v in values])
        return
    if factor.scale == "log2" and ax.name != "3d":
        set_scale = ax.set_xscale if which == "x" else ax.set_yscale
        set_scale("log", base=2)
        axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    elif factor.kind == "integer":
        axis.set_major_locator(MaxNLocator(integer=True))


def _model(label: str | None) -> str:
    """A title's last lines naming the model, wrapped to fit the figure."""
    if not label:
        return ""
    lines = textwrap.wrap(f"model: {label}", TITLE_WIDTH)
    if len(lines) > TITLE_MODEL_LINES:
        lines = [*lines[: TITLE_MODEL_LINES - 1], lines[TITLE_MODEL_LINES - 1][:-1] + "…"]
    return "\n" + "\n".join(lines)


def _mark_lattice(ax: Axes, slice_: Slice, space: FactorSpace) -> None:
    """Dot the whole-number settings of the integer factors of a smooth slice, where runs can
    actually be made (the surface between them is the model's, not a setting)."""
    if not slice_.continuous:
        return
    axes = []
    for which, name in zip(("x", "y"), _pair(slice_), strict=True):
        factor = space[name]
        values = [_position(slice_, which, v) for v in _values(slice_, which)]
        if factor.kind == "integer":
            low, high = factor.bounds
            values = list(range(int(low), int(high) + 1))
        axes.append(values)
    if not any(space[n].kind == "integer" for n in _pair(slice_)):
        return
    if len(axes[0]) * len(axes[1]) > MAX_LATTICE_DOTS:
        return
    gx, gy = np.meshgrid(*axes)
    ax.scatter(gx.ravel(), gy.ravel(), s=3, color="white", alpha=0.6, linewidths=0,
               label="settings that can be run")  # fmt: skip


def _pad(ax: Axes, slice_: Slice) -> None:
    """A margin around the data so a marker on the edge (the optimum) is drawn whole."""
    for which, get, set_ in (("x", ax.get_xlim, ax.set_xlim), ("y", ax.get_ylim, ax.set_ylim)):
        if not _numeric(slice_, which):
            continue
        low, high = get()
        scale = ax.get_xscale() if which == "x" else ax.get_yscale()
        if scale == "log":
            ratio = (high / low) ** 0.03
            set_(low / ratio, high * ratio)
        else:
            pad = 0.03 * (high - low)
            set_(low - pad, high + pad)


def _held(slice_: Slice) -> str:
    held = ", ".join(f"{name} = {format_value(value)}" for name, value in slice_.held.items())
    return f"others held at {held}" if held else "no other factors"


def _mark_optimum(ax: Axes, slice_: Slice, optimum: Optimum | None, response: str) -> None:
    if optimum is None:
        return
    x, y = _pair(slice_)
    interval = ""
    if optimum.pi_low is not None and optimum.pi_high is not None:
        interval = f", 95% PI [{format_value(optimum.pi_low)}, {format_value(optimum.pi_high)}]"
    ax.scatter(
        [_position(slice_, "x", optimum.config[x])],
        [_position(slice_, "y", optimum.config[y])],
        marker="*",
        s=300,
        color="red",
        edgecolors="white",
        zorder=5,
        clip_on=False,
        label=f"optimum: {response} {format_value(optimum.predicted)}{interval}",
    )
