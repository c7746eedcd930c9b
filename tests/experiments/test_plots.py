"""The review plots draw the engine's results: what each figure shows is read back from its
artists and compared with the analysis and the slices it was drawn from."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats

from experiments import plots
from experiments.analysis import Analysis, fit
from experiments.analysis.model import fit_model
from experiments.analysis.slices import Slice, response_slice
from experiments.errors import DomainError
from experiments.factors import FactorSpace

SPACE = FactorSpace.from_dicts(
    [
        {"name": "clients", "kind": "integer", "low": 1, "high": 8, "unit": "machines"},
        {"name": "threads", "kind": "integer", "low": 2, "high": 32, "scale": "log2"},
        {"name": "workload", "kind": "categorical", "levels": ["read_write", "read_only"]},
    ]
)
CONFIGS = [
    {"clients": c, "threads": t, "workload": w}
    for c, t, w in itertools.product((1, 4, 8), (2, 8, 32), ("read_write", "read_only"))
]


def tps(config: dict[str, object], i: int) -> float:
    c, t = float(config["clients"]), math.log2(float(config["threads"]))  # type: ignore[arg-type]
    shift = 150 if config["workload"] == "read_only" else 0
    return 500 + 40 * c - 3 * c**2 + 90 * t - 12 * t**2 + shift + ((i * 37) % 7 - 3)


VALUES = [tps(config, i) for i, config in enumerate(CONFIGS)]


@pytest.fixture(scope="module")
def analysis() -> Analysis:
    return fit(SPACE, CONFIGS, VALUES, model="quadratic")


def slice_of(analysis: Analysis, x: str, y: str | None, points: int = 12) -> Slice:
    fitted = fit_model(SPACE, CONFIGS, VALUES, "quadratic")
    return response_slice(fitted, x=x, y=y, held=analysis.optimum.config, points=points)


def test_contour_marks_the_optimum_where_the_analysis_found_it(analysis: Analysis) -> None:
    grid = slice_of(analysis, "clients", "threads")
    figure = plots.contour(grid, SPACE, response="tps", optimum=analysis.optimum)
    ax = figure.axes[0]
    star = next(c for c in ax.collections if c.get_label().startswith("optimum"))
    config = analysis.optimum.config
    assert star.get_offsets().tolist() == [[config["clients"], config["threads"]]]
    assert f"{analysis.optimum.predicted:.4g}" in star.get_label()
    runs = next(c for c in ax.collections if c.get_label() == "runs (projected)")
    assert len(runs.get_offsets()) == len(CONFIGS)
    assert ax.get_yscale() == "log" and ax.get_xlabel() == "clients (machines)"
    assert "workload = " in ax.get_title()


def test_a_categorical_axis_is_drawn_at_the_level_index_with_the_levels_as_ticks(
    analysis: Analysis,
) -> None:
    lines = slice_of(analysis, "workload", "clients")
    figure = plots.contour(lines, SPACE, response="tps", optimum=analysis.optimum)
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["read_write", "read_only"]
    star = next(c for c in ax.collections if c.get_label().startswith("optimum"))
    level = ["read_write", "read_only"].index(analysis.optimum.config["workload"])
    assert star.get_offsets()[0][0] == level


def test_interaction_draws_one_line_per_level_of_y_through_the_predictions(
    analysis: Analysis,
) -> None:
    lines = slice_of(analysis, "clients", "workload")
    ax = plots.interaction(lines, SPACE, response="tps").axes[0]
    drawn = [line for line in ax.get_lines() if line.get_label().startswith("workload = ")]
    assert len(drawn) == 2
    for line, predicted in zip(drawn, lines.predicted, strict=True):
        np.testing.assert_allclose(line.get_ydata(), predicted)
        np.testing.assert_allclose(line.get_xdata(), lines.x_values)


def test_main_effects_has_a_panel_per_factor_with_the_optimum_marked(analysis: Analysis) -> None:
    slices = [slice_of(analysis, name, None) for name in SPACE.names]
    figure = plots.main_effects(slices, SPACE, response="tps", optimum=analysis.optimum)
    visible = [ax for ax in figure.axes if ax.get_visible()]
    assert len(visible) == 3
    for ax, slice_ in zip(visible, slices, strict=True):
        curve, _ = ax.get_lines()
        np.testing.assert_allclose(curve.get_ydata(), slice_.predicted[0])
        assert slice_.x in ax.get_xlabel()
    assert visible[0].get_lines()[1].get_xdata()[0] == analysis.optimum.config["clients"]


def test_surface_draws_a_log2_factor_at_its_logarithm(analysis: Analysis) -> None:
    grid = slice_of(analysis, "clients", "threads")
    ax = plots.surface(grid, SPACE, response="tps", optimum=analysis.optimum).axes[0]
    star = next(c for c in ax.collections if c.get_label().startswith("optimum"))
    xs, ys, _ = star._offsets3d
    assert ys[0] == pytest.approx(math.log2(analysis.optimum.config["threads"]))
    assert xs[0] == analysis.optimum.config["clients"]


def test_pareto_bars_are_the_absolute_t_values_against_the_critical_t(analysis: Analysis) -> None:
    ax = plots.pareto(analysis, response="tps").axes[0]
    expected = {t.name: abs(t.t) for t in analysis.terms if t.name != "Intercept" and t.t}
    bars = {
        label.get_text(): patch.get_width()
        for label, patch in zip(ax.get_yticklabels(), ax.patches, strict=True)
    }
    assert bars == pytest.approx(expected)
    critical = scipy.stats.t.ppf(0.975, analysis.residual_df)
    assert ax.get_lines()[0].get_xdata()[0] == pytest.approx(critical)
    widths = [patch.get_width() for patch in ax.patches]
    assert widths == sorted(widths)


def test_residuals_plot_the_diagnostics_of_every_run(analysis: Analysis) -> None:
    left = plots.residuals(analysis, response="tps").axes[0]
    drawn = left.collections[0].get_offsets()
    np.testing.assert_allclose(drawn[:, 0], [r.fitted for r in analysis.diagnostics.runs])
    np.testing.assert_allclose(drawn[:, 1], [r.residual for r in analysis.diagnostics.runs])


def test_half_normal_needs_lenth_and_labels_the_active_effects() -> None:
    space = FactorSpace.from_dicts(
        [{"name": n, "kind": "continuous", "low": -1, "high": 1} for n in ("a", "b", "c", "d")]
    )
    corners = [dict(zip("abcd", p, strict=True)) for p in itertools.product((-1, 1), repeat=4)]
    values = [10 + 6 * p["a"] + 3 * p["b"] + 0.1 * ((i * 7) % 5 - 2) for i, p in enumerate(corners)]
    unreplicated = fit(space, corners, values, model="interaction")
    assert unreplicated.lenth is not None
    ax = plots.half_normal(unreplicated, response="y").axes[0]
    assert {text.get_text() for text in ax.texts} == set(unreplicated.lenth.active)
    with pytest.raises(DomainError, match="unreplicated two-level"):
        plots.half_normal(fit(SPACE, CONFIGS, VALUES, model="quadratic"), response="tps")


def test_progress_steps_through_the_best_so_far() -> None:
    values, sources = [5.0, 3.0, 8.0, 7.0], ["design", "design", "suggestion", "suggestion"]
    ax = plots.progress(values, sources, response="tps", goal="maximize").axes[0]
    best = next(line for line in ax.get_lines() if line.get_label() == "best so far")
    assert list(best.get_ydata()) == [5.0, 5.0, 8.0, 8.0]
    assert plots.best_so_far(values, "minimize") == [5.0, 3.0, 3.0, 3.0]
    with pytest.raises(DomainError, match="no succeeded trial"):
        plots.progress([], [], response="tps", goal="maximize")


def test_a_figure_renders_to_a_png_of_its_pixel_size(analysis: Analysis) -> None:
    png = plots.to_png(plots.pareto(analysis, response="tps", size=(640, 480)))
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == 640 and int.from_bytes(png[20:24], "big") == 480
