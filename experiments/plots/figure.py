"""What every review plot shares: a pyplot-free figure of a size in pixels that Jupyter shows
as PNG, the PNG rendering, axis labels with units, the model named in a title, and the colours
of active and quiet effects."""

from __future__ import annotations

import io
import textwrap

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from experiments.factors import Factor

DEFAULT_SIZE = (800, 600)
DPI = 100
ACTIVE, QUIET = "tab:red", "tab:blue"
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


def model_title(label: str | None) -> str:
    """A title's last lines naming the model, wrapped to fit the figure."""
    if not label:
        return ""
    lines = textwrap.wrap(f"model: {label}", TITLE_WIDTH)
    if len(lines) > TITLE_MODEL_LINES:
        lines = [*lines[: TITLE_MODEL_LINES - 1], lines[TITLE_MODEL_LINES - 1][:-1] + "…"]
    return "\n" + "\n".join(lines)
