"""Every notebook runs top to bottom against a live server (real API and worker processes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

from client.http import Client
from tests.integration.test_end_to_end import run_to_completion

pytestmark = pytest.mark.integration

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
REVIEWED = {
    "name": "notebook review: nodes, threads and write share",
    "target": "simulated",
    "factors": [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 5, "unit": "nodes"},
        {
            "name": "threads_per_client",
            "kind": "integer",
            "low": 2,
            "high": 32,
            "scale": "log2",
            "unit": "threads",
        },
        {"name": "write_share", "kind": "continuous", "low": 0.1, "high": 0.5, "unit": "fraction"},
    ],
    "design": {"kind": "ccd", "ccd_type": "face_centred", "centre_points": 3, "seed": 4},
    "objective": {
        "response": "tps",
        "goal": "maximize",
        "constraints": [{"response": "latency_p95_ms", "max": 25}],
    },
}


def execute(name: str, parameters: dict[str, Any]) -> nbformat.NotebookNode:
    """Run a notebook as papermill would: parameters injected after the `parameters` cell."""
    book = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    tagged = [
        i for i, cell in enumerate(book.cells) if "parameters" in cell.metadata.get("tags", [])
    ]
    assert tagged, f"{name} has no cell tagged 'parameters'"
    injected = new_code_cell("\n".join(f"{key} = {value!r}" for key, value in parameters.items()))
    injected.metadata["tags"] = ["injected-parameters"]
    book.cells.insert(tagged[0] + 1, injected)
    NotebookClient(
        book,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    ).execute()
    return book


def images(book: nbformat.NotebookNode) -> int:
    return sum(
        "image/png" in output.get("data", {})
        for cell in book.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )


def opens_with_what_it_shows(name: str) -> None:
    book = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    first = book.cells[0]
    assert first.cell_type == "markdown" and "What this notebook shows" in first.source
    assert "parameters" in first.source
    assert all(not cell.get("outputs") for cell in book.cells if cell.cell_type == "code")


@pytest.mark.parametrize("database_url", ["mariadb"], indirect=True)
def test_review_experiment_notebook(service: Client):
    opens_with_what_it_shows("review_experiment")
    created, _ = run_to_completion(service, REVIEWED)
    book = execute(
        "review_experiment",
        {"API_URL": service.base_url, "API_KEY": service.api_key, "EXPERIMENT_ID": created["id"]},
    )
    # Pareto, main effects, interaction, contour, surface, residuals, and the server's PNG.
    assert images(book) >= 7
    text = "\n".join(
        str(output.get("text", "")) + str(output.get("data", {}).get("text/plain", ""))
        for cell in book.cells
        if cell.cell_type == "code"
        for output in cell.outputs
    )
    assert "optimum:" in text and "95% PI" in text


@pytest.mark.parametrize("database_url", ["mariadb"], indirect=True)
def test_published_study_notebook(service: Client):
    opens_with_what_it_shows("published_galera_study")
    book = execute(
        "published_galera_study", {"API_URL": service.base_url, "API_KEY": service.api_key}
    )
    assert images(book) >= 2
    outputs = "\n".join(
        str(output.get("text", "")) for cell in book.cells for output in cell.get("outputs", [])
    )
    assert "27 published runs recorded" in outputs
    assert "a face-centred CCD needs" in outputs


@pytest.mark.parametrize("database_url", ["mariadb"], indirect=True)
def test_sequential_optimization_notebook(service: Client):
    opens_with_what_it_shows("sequential_optimization")
    book = execute(
        "sequential_optimization",
        {"API_URL": service.base_url, "API_KEY": service.api_key, "BUDGET": 12, "TIMEOUT_S": 300},
    )
    assert images(book) >= 2
    outputs = "\n".join(
        str(output.get("text", "")) for cell in book.cells for output in cell.get("outputs", [])
    )
    assert "auto: 12 trials" in outputs and "bayes: 12 trials" in outputs


@pytest.mark.parametrize("database_url", ["mariadb"], indirect=True)
def test_published_studies_notebook(service: Client):
    opens_with_what_it_shows("published_studies")
    book = execute("published_studies", {"API_URL": service.base_url, "API_KEY": service.api_key})
    # DBT2 against the lab, the abort surface, aborts against writers, the lab's contour.
    assert images(book) >= 4
    outputs = "\n".join(
        str(output.get("text", "")) for cell in book.cells for output in cell.get("outputs", [])
    )
    for recorded in (
        "DBT2 on 1-4 Galera nodes (published): experiment",
        "4 runs recorded",
        "24 runs recorded",
        "27 runs recorded",
        "tpcc on 1-3 lab nodes (measured here)",
        "rw_mix: write share x load nodes on 3 lab nodes (measured here)",
        "single against multi primary on 3 lab nodes (measured here)",
    ):
        assert recorded in outputs
    # With rollbacks limited to 10 %, the fourth node's NOTPM is out of reach.
    assert "best NOTPM with rollbacks at most 10 %: {'nodes': 3}" in outputs
    # Little's law fitted on one data centre predicts Galera's WAN throughput (224 measured).
    assert "Galera across the WAN: predicted 223 tps, measured 224" in outputs
    assert "needs at least 5 successful runs" in outputs
    assert "lab, two sites 100 ms apart: commit 10" in outputs
