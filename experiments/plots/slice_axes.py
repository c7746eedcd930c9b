"""Drawing a response `Slice` on axes: where a setting sits on an axis (categorical levels by
index), the axes styled by their factors (units, levels, whole numbers, log2), the integer
lattice dotted, a margin for markers on the edge, the held settings and the optimum marked."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.ticker import FuncFormatter, MaxNLocator

from experiments.analysis.results import Optimum
from experiments.analysis.slices import Slice
from experiments.errors import DomainError
from experiments.factors import FactorSpace, Value
from experiments.numbers import format_value
from experiments.plots.figure import axis_label

# Integer lattices up to this many points are dotted on a smooth contour plot.
MAX_LATTICE_DOTS = 400


def floats(values: Sequence[float | None]) -> list[float]:
    """Values to draw, None (undefined) as NaN: a gap in the line."""
    return [math.nan if v is None else float(v) for v in values]


def pair(slice_: Slice) -> tuple[str, str]:
    """The slice's two factors; a DomainError for a slice over one."""
    if slice_.y is None:
        raise DomainError("y", "this plot needs a slice over two factors")
    return slice_.x, slice_.y


def _values(slice_: Slice, axis: str) -> list[Value]:
    return slice_.x_values if axis == "x" else slice_.y_values


def _numeric(slice_: Slice, axis: str) -> bool:
    return all(isinstance(v, int | float) for v in _values(slice_, axis))


def position(slice_: Slice, axis: str, value: Value | None) -> float:
    """Where a value sits on an axis: itself if numeric, its level's index if categorical."""
    if _numeric(slice_, axis):
        return float(value)  # type: ignore[arg-type]
    return float(_values(slice_, axis).index(value))  # type: ignore[arg-type]


def slice_grid(slice_: Slice) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The slice as meshgrids of axis positions and the predicted values."""
    x = [position(slice_, "x", v) for v in slice_.x_values]
    y = [position(slice_, "y", v) for v in slice_.y_values]
    gx, gy = np.meshgrid(x, y)
    return gx, gy, np.array(slice_.predicted, dtype=float)


def style_axes(ax: Axes, slice_: Slice, space: FactorSpace) -> None:
    """Style both axes of a two-factor slice (`style_axis`)."""
    style_axis(ax, ax.xaxis, slice_, "x", space)
    style_axis(ax, ax.yaxis, slice_, "y", space)


def style_axis(ax: Axes, axis: Axis, slice_: Slice, which: str, space: FactorSpace) -> None:
    """Label with the unit; categorical levels as ticks; whole numbers on an integer factor;
    a log2 factor on a log2 axis with plain numbers (3-D axes cannot be log-scaled)."""
    factor = space[slice_.x if which == "x" else pair(slice_)[1]]
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


def mark_lattice(ax: Axes, slice_: Slice, space: FactorSpace) -> None:
    """Dot the whole-number settings of the integer factors of a smooth slice, where runs can
    actually be made (the surface between them is the model's, not a setting)."""
    if not slice_.continuous:
        return
    axes = []
    for which, name in zip(("x", "y"), pair(slice_), strict=True):
        factor = space[name]
        values = [position(slice_, which, v) for v in _values(slice_, which)]
        if factor.kind == "integer":
            low, high = factor.bounds
            values = list(range(int(low), int(high) + 1))
        axes.append(values)
    if not any(space[n].kind == "integer" for n in pair(slice_)):
        return
    if len(axes[0]) * len(axes[1]) > MAX_LATTICE_DOTS:
        return
    gx, gy = np.meshgrid(*axes)
    ax.scatter(gx.ravel(), gy.ravel(), s=3, color="white", alpha=0.6, linewidths=0,
               label="settings that can be run")  # fmt: skip


def pad_limits(ax: Axes, slice_: Slice) -> None:
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


def held_text(slice_: Slice) -> str:
    """The settings the other factors are held at, for a title."""
    held = ", ".join(f"{name} = {format_value(value)}" for name, value in slice_.held.items())
    return f"others held at {held}" if held else "no other factors"


def mark_optimum(ax: Axes, slice_: Slice, optimum: Optimum | None, response: str) -> None:
    """A star at the optimum, labelled with its prediction and 95 % prediction interval."""
    if optimum is None:
        return
    x, y = pair(slice_)
    interval = ""
    if optimum.pi_low is not None and optimum.pi_high is not None:
        interval = f", 95% PI [{format_value(optimum.pi_low)}, {format_value(optimum.pi_high)}]"
    ax.scatter(
        [position(slice_, "x", optimum.held[x])],
        [position(slice_, "y", optimum.held[y])],
        marker="*",
        s=300,
        color="red",
        edgecolors="white",
        zorder=5,
        clip_on=False,
        label=f"optimum: {response} {format_value(optimum.predicted)}{interval}",
    )
