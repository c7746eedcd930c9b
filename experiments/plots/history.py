"""The trials' results in the order they finished, and the best so far."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from experiments.errors import DomainError
from experiments.plots.figure import DEFAULT_SIZE, new_figure


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
