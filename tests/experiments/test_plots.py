"""The review plots draw the engine's results: what each figure shows is read back from its
artists and compared with the analysis and the slices it was drawn from."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats
from matplotlib.colors import to_rgba

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


# --- honest plots: extrapolation, smooth integer surfaces, labels and legends ----------------
SPARSE_SPACE = FactorSpace.from_dicts(
    [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "connections", "kind": "integer", "low": 8, "high": 160},
    ]
)
# Like the published study: many connections were only ever run on many nodes.
SPARSE_CONFIGS = [
    {"nodes": n, "connections": c}
    for n, c in [(1, 8), (3, 8), (9, 8), (3, 40), (9, 40), (9, 160), (6, 100), (5, 24), (7, 80)]
]
SPARSE_TPS = [596.3, 700.0, 429.2, 1100.0, 1196.0, 1300.0, 1250.0, 900.0, 1220.0]


def sparse_slice(continuous: bool) -> tuple[Slice, Analysis]:
    analysis = fit(SPARSE_SPACE, SPARSE_CONFIGS, SPARSE_TPS, model="quadratic", response="tps")
    fitted = fit_model(SPARSE_SPACE, SPARSE_CONFIGS, SPARSE_TPS, "quadratic")
    grid = response_slice(
        fitted,
        x="nodes",
        y="connections",
        held=analysis.optimum.config,
        points=20,
        continuous=continuous,
    )
    return grid, analysis


def test_the_region_without_runs_is_marked_as_extrapolation_in_the_slice_and_the_plot() -> None:
    grid, analysis = sparse_slice(continuous=True)
    inside = np.array(grid.inside)
    # One node with 160 connections was never run: far outside the runs' hull.
    corner = (grid.y_values.index(160), grid.x_values.index(1))
    assert not inside[corner] and inside.any()
    assert inside[grid.y_values.index(8), grid.x_values.index(9)]
    figure = plots.contour(grid, SPARSE_SPACE, response="tps", optimum=analysis.optimum)
    ax = figure.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "no runs here: extrapolation" in labels
    assert any(getattr(c, "hatches", None) == ["xx"] for c in ax.collections)


def test_an_integer_factor_is_drawn_smooth_with_its_whole_numbers_dotted() -> None:
    grid, analysis = sparse_slice(continuous=True)
    assert grid.continuous and any(not float(v).is_integer() for v in grid.x_values)
    assert grid.x_values[0] == 1 and grid.x_values[-1] == 9
    figure = plots.contour(grid, SPARSE_SPACE, response="tps", optimum=analysis.optimum)
    labels = [c.get_label() for c in figure.axes[0].collections]
    # 9 x 153 whole-number settings are too many to dot: the smooth surface alone is drawn.
    assert "settings that can be run" not in labels
    small = FactorSpace.from_dicts(
        [
            {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
            {"name": "clients", "kind": "integer", "low": 1, "high": 8},
        ]
    )
    configs = [{"nodes": n, "clients": c} for n in (1, 5, 9) for c in (1, 4, 8)]
    values = [100 + 10 * c["nodes"] - c["nodes"] ** 2 + 5 * c["clients"] for c in configs]
    fitted = fit_model(small, configs, values, "quadratic")
    held = {"nodes": 5, "clients": 4}
    smooth = response_slice(fitted, x="nodes", y="clients", held=held, points=20, continuous=True)
    figure = plots.contour(smooth, small, response="tps")
    dots = next(
        c for c in figure.axes[0].collections if c.get_label() == "settings that can be run"
    )
    assert sorted(map(tuple, dots.get_offsets().tolist())) == sorted(
        (float(n), float(c)) for n in range(1, 10) for c in range(1, 9)
    )


def test_the_optimum_star_lies_inside_the_padded_axes() -> None:
    grid, analysis = sparse_slice(continuous=True)
    figure = plots.contour(
        grid, SPARSE_SPACE, response="tps", optimum=analysis.optimum, model=analysis.model_label
    )
    ax = figure.axes[0]
    star = next(c for c in ax.collections if c.get_label().startswith("optimum"))
    (x, y) = star.get_offsets()[0]
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    assert x0 < x < x1 and y0 < y < y1
    assert " ".join(ax.get_title().split()).endswith(f"model: {analysis.model_label}")


def test_the_surface_shows_the_optimum_on_a_stem_and_greys_the_extrapolation() -> None:
    grid, analysis = sparse_slice(continuous=True)
    figure = plots.surface(grid, SPARSE_SPACE, response="tps", optimum=analysis.optimum)
    ax = figure.axes[0]
    star = next(c for c in ax.collections if c.get_label().startswith("optimum"))
    assert star.get_zorder() > ax.collections[0].get_zorder()
    stem = next(line for line in ax.lines if line.get_color() == "red")
    assert stem.get_data_3d()[2][-1] == pytest.approx(analysis.optimum.predicted)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "no runs here: extrapolation" in labels


def test_half_normal_labels_the_largest_effects_even_when_none_is_active() -> None:
    space = FactorSpace.from_dicts([{"name": n, "low": -1, "high": 1} for n in "ABCD"])
    configs = [
        dict(zip("ABCD", signs, strict=True)) for signs in itertools.product((-1, 1), repeat=4)
    ]
    # Seeded normal noise (sd 2) without any effect: Lenth finds none active.
    noise = [0.7, 1.6, 0.7, -2.6, 1.8, 0.9, -1.1, 1.2, 0.7, 0.6, 0.1, 1.1, -1.5, -0.3, -1.0, 1.2]
    analysis = fit(space, configs, [100 + e for e in noise], model="interaction")
    assert analysis.lenth is not None and analysis.lenth.active == []
    figure = plots.half_normal(analysis, response="tps")
    labelled = {t.get_text() for t in figure.axes[0].texts}
    largest = sorted(analysis.lenth.half_normal, key=lambda p: -p.abs_effect)[:3]
    assert {p.name for p in largest} <= labelled


def test_the_pareto_chart_explains_its_colours(analysis: Analysis) -> None:
    figure = plots.pareto(analysis, response="tps")
    legend = figure.axes[0].get_legend()
    colours = {
        text.get_text(): handle.get_facecolor()
        for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True)
        if hasattr(handle, "get_facecolor")
    }
    active = next(c for label, c in colours.items() if label.startswith("beyond the line"))
    assert active == to_rgba(plots.ACTIVE)
    assert colours["within it: not significant"] == to_rgba(plots.QUIET)
    assert "model: " in figure.axes[0].get_title()


def test_residual_standouts_are_labelled_with_their_trial() -> None:
    values = list(VALUES)
    values[5] += 400  # one run far off the surface
    labels = [f"trial {100 + i}" for i in range(len(values))]
    analysis = fit(SPACE, CONFIGS, values, model="quadratic", labels=labels)
    standouts = {s.label for s in analysis.diagnostics.standouts}
    assert "trial 105" in standouts
    figure = plots.residuals(analysis, response="tps")
    written = {t.get_text() for ax in figure.axes for t in ax.texts}
    assert standouts <= written
