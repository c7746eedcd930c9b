"""The API's JSON rebuilds the engine's results exactly: what a notebook draws from is what the
server drew from."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import pytest

from client import results
from experiments import plots
from experiments.analysis import fit
from tests.experiments.test_plots import CONFIGS, SPACE, VALUES, slice_of


def over_the_wire(data: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(data))  # type: ignore[no-any-return]


def test_an_analysis_comes_back_equal_with_the_fields_the_api_adds() -> None:
    analysis = fit(SPACE, CONFIGS, VALUES, model="quadratic")
    sent = over_the_wire({"response": "tps", "trials_used": 18, **analysis.as_dict()})
    rebuilt = results.analysis(sent)
    assert rebuilt == analysis
    assert isinstance(rebuilt.optimum.config["clients"], int)
    assert isinstance(rebuilt.optimum.config["workload"], str)


def test_a_surface_comes_back_as_the_slice_it_was_cut_from() -> None:
    analysis = fit(SPACE, CONFIGS, VALUES, model="quadratic")
    grid = slice_of(analysis, "threads", "workload")
    sent = over_the_wire(
        {"response": "tps", "model": "quadratic", "optimum": asdict(analysis.optimum)}
        | grid.as_dict()
    )
    assert results.surface(sent) == grid
    assert results.optimum(sent["optimum"]) == analysis.optimum
    figure = plots.interaction(results.surface(sent), SPACE, response="tps")
    assert len(figure.axes[0].get_lines()) == 2


def test_the_factor_space_of_an_experiment() -> None:
    experiment = over_the_wire({"id": 1, "factors": SPACE.to_dicts()})
    assert results.factor_space(experiment) == SPACE


def test_json_that_is_not_a_result_is_refused() -> None:
    with pytest.raises(ValueError, match="x_values"):
        results.surface({"x": "threads", "y": None})
