"""Pictures of an experiment: slices of its fitted response surface, and review plots as PNG."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args

from matplotlib.figure import Figure
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import rows
from app.db.models import Trial
from app.services import access, analysis_inputs
from app.services.analysis_inputs import FitInputs
from app.statuses import TrialStatus
from experiments import analysis, plots
from experiments.analysis import Analysis, Optimum
from experiments.analysis.model import FittedModel, fit_model
from experiments.analysis.slices import Slice, held_settings, response_slice
from experiments.errors import DomainError
from experiments.factors import Value
from experiments.galera.target_spec import TargetSpec

PlotKind = Literal[
    "contour", "surface", "interaction", "main_effects", "pareto", "half_normal", "residuals",
    "progress",
]  # fmt: skip
PLOT_KINDS: tuple[str, ...] = get_args(PlotKind)
GRID_POINTS = {"contour": 40, "surface": 25, "interaction": 30, "main_effects": 30}
INTERACTION_LINES = 3


@dataclass(frozen=True)
class SliceReport:
    """A slice of the fitted surface of one response, with the model's optimum."""

    response: str
    model: str
    model_label: str
    optimum: Optimum
    slice: Slice


@dataclass(frozen=True)
class _Fit:
    inputs: FitInputs
    analysis: Analysis
    fitted: FittedModel

    def slice(
        self,
        x: str,
        y: str | None,
        points: int,
        y_points: int | None = None,
        *,
        continuous: bool = False,
        held: Mapping[str, Value] | None = None,
    ) -> Slice:
        arguments = self.inputs.arguments
        return response_slice(
            self.fitted,
            x=x,
            y=y,
            held={**self.analysis.optimum.held, **(held or {})},
            points=points,
            y_points=y_points,
            constraints=arguments["constraints"],
            limits=arguments["limits"],
            continuous=continuous,
        )


async def surface_slice(
    session: AsyncSession,
    *,
    experiment_id: int,
    response: str | None,
    model: str,
    x: str | None,
    y: str | None,
    points: int,
    y_points: int | None,
    targets: Mapping[str, TargetSpec],
    held: Sequence[str] = (),
    continuous: bool = False,
) -> SliceReport:
    """The predicted response over `x` (and `y` at `y_points` settings), the other factors at
    the optimum, or at the `name:value` settings of `held`; without `x`, over the most
    important factor. With `continuous`, integer factors between their whole numbers too."""
    fit = await _fit(session, experiment_id, response, model, targets)
    settings = held_settings(fit.inputs.space, held)
    across = x or _ranked(fit)[0]
    return SliceReport(
        response=fit.inputs.response,
        model=model,
        model_label=fit.analysis.model_label,
        optimum=fit.analysis.optimum,
        slice=await asyncio.to_thread(
            lambda: fit.slice(across, y, points, y_points, continuous=continuous, held=settings)
        ),
    )


async def png(
    session: AsyncSession,
    *,
    experiment_id: int,
    kind: str,
    response: str | None,
    model: str,
    x: str | None,
    y: str | None,
    size: tuple[int, int],
    targets: Mapping[str, TargetSpec],
) -> bytes:
    """One review plot rendered as PNG (`kind` in PLOT_KINDS)."""
    if kind not in PLOT_KINDS:
        raise DomainError("kind", f"must be one of {', '.join(PLOT_KINDS)}")
    draw: Callable[[], Figure]
    if kind == "progress":
        experiment = await access.experiment_of(session, experiment_id)
        objective = experiment.parsed_objective
        name, goal = response or objective.response, objective.goal
        finished = _finished(await rows.list_trials(session, experiment_id), name)
        values = [trial.responses[name] for trial in finished]
        sources = [trial.source for trial in finished]

        def draw() -> Figure:
            return plots.progress(values, sources, response=name, goal=goal, size=size)

    else:
        fit = await _fit(session, experiment_id, response, model, targets)

        def draw() -> Figure:
            return _draw(fit, kind, x, y, size)

    return await asyncio.to_thread(lambda: plots.to_png(draw()))


async def _fit(
    session: AsyncSession,
    experiment_id: int,
    response: str | None,
    model: str,
    targets: Mapping[str, TargetSpec],
) -> _Fit:
    inputs = await analysis_inputs.fit_inputs(
        session, experiment_id=experiment_id, response=response, targets=targets
    )
    arguments = inputs.arguments

    def both() -> tuple[analysis.Analysis, FittedModel]:
        # The analysis gives the optimum the slices hold the other factors at; the model,
        # fitted once here, predicts every slice of the plot.
        return (
            analysis.fit(inputs.space, model=model, **arguments),
            fit_model(
                inputs.space, arguments["configs"], arguments["values"], model, arguments["blocks"]
            ),
        )

    analysed, fitted = await asyncio.to_thread(both)
    return _Fit(inputs=inputs, analysis=analysed, fitted=fitted)


def _draw(fit: _Fit, kind: str, x: str | None, y: str | None, size: tuple[int, int]) -> Figure:
    space, response, optimum = fit.inputs.space, fit.inputs.response, fit.analysis.optimum
    model = fit.analysis.model_label
    if kind == "pareto":
        return plots.pareto(fit.analysis, response=response, size=size)
    if kind == "half_normal":
        return plots.half_normal(fit.analysis, response=response, size=size)
    if kind == "residuals":
        return plots.residuals(fit.analysis, response=response, size=size)
    if kind == "main_effects":
        slices = [fit.slice(name, None, GRID_POINTS[kind]) for name in _ranked(fit)]
        return plots.main_effects(
            slices, space, response=response, optimum=optimum, model=model, size=size
        )
    x, y = _pair(fit, x, y)
    if kind == "interaction":
        lines = fit.slice(x, y, GRID_POINTS[kind], INTERACTION_LINES)
        return plots.interaction(lines, space, response=response, model=model, size=size)
    grid = fit.slice(x, y, GRID_POINTS[kind], continuous=True)
    draw = plots.contour if kind == "contour" else plots.surface
    return draw(grid, space, response=response, optimum=optimum, model=model, size=size)


def _ranked(fit: _Fit) -> list[str]:
    """Factor names, most important first."""
    return [effect.factor for effect in fit.analysis.ranked_factors]


def _pair(fit: _Fit, x: str | None, y: str | None) -> tuple[str, str]:
    """`x` and `y`, the missing ones filled with the most important other factors."""
    others = [name for name in _ranked(fit) if name not in (x, y)]
    if x is None:
        x = others.pop(0) if others else None
    if y is None:
        y = others.pop(0) if others else None
    if x is None or y is None:
        raise DomainError("y", "this plot needs two factors; the experiment has one")
    return x, y


def _finished(trials: Sequence[Trial], response: str) -> list[Trial]:
    """The succeeded trials that measured `response`, in the order they finished."""
    measured = [
        t for t in trials if t.status == TrialStatus.SUCCEEDED and response in (t.responses or {})
    ]
    return sorted(measured, key=lambda t: (t.finished_at or datetime.min, t.id))
