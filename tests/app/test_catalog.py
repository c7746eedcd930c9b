"""The experiments catalogue: every file is a ready-to-submit experiment whose header tells the
truth about it, accepted by the real API as it is, and shipped with the package."""

from __future__ import annotations

import importlib.resources
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "experiments" / "catalog"
CATALOGUE_TABLE = ROOT / "docs" / "reference.md"  # the catalogue table of the user guide
FILES = sorted(CATALOG.glob("*.yaml"))
# Each header says what question the file answers, on which target, how many runs, how long.
HEADER_FIELDS = ("Question", "Target", "Design", "Runs", "Time")


def header_of(path: Path) -> dict[str, str]:
    """The leading comment block as {field: text}; continuation lines join their field."""
    fields: dict[str, str] = {}
    current = None
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        text = line.removeprefix("#").strip()
        match = re.fullmatch(r"([A-Z][A-Za-z ]*): (.*)", text)
        if match:
            current = match.group(1)
            fields[current] = match.group(2)
        elif current is not None:
            fields[current] += " " + text
    return fields


def spec_of(path: Path) -> dict[str, Any]:
    spec = yaml.safe_load(path.read_text())
    assert isinstance(spec, dict), f"{path.name} is not a mapping"
    return spec


def test_the_catalogue_holds_the_documented_experiments():
    names = {path.name for path in FILES}
    assert {
        "quickstart.yaml",
        "nodes_vs_connections.yaml",
        "screening.yaml",
        "slave_threads.yaml",
        "read_write_mix.yaml",
        "rw_ratio_masters.yaml",
        "single_vs_multi_primary.yaml",
        "tpcc_nodes.yaml",
        "confirm_against_current.yaml",
        "robust_workloads.yaml",
    } <= names


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_each_file_starts_with_a_header_that_matches_it(path: Path):
    text = path.read_text()
    assert text.startswith("# "), f"{path.name} must start with a comment header"
    header = header_of(path)
    missing = [field for field in HEADER_FIELDS if field not in header]
    assert not missing, f"{path.name}: header lacks {missing}"
    spec = spec_of(path)
    assert header["Target"].split()[0].rstrip(",:") == spec["target"]
    assert re.fullmatch(r"\d+", header["Runs"]), f"{path.name}: 'Runs:' must be a number"
    # The reference's catalogue table lists every file with its target and run count.
    reference = CATALOGUE_TABLE.read_text()
    row = next((line for line in reference.splitlines() if f"`{path.name}`" in line), None)
    assert row is not None and row.startswith("|"), f"{CATALOGUE_TABLE.name}: no row for {path}"
    cells = [cell.strip().strip("`") for cell in row.strip("|").split("|")]
    assert spec["target"] in cells and header["Runs"] in cells, row


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
async def test_each_file_previews_with_the_runs_its_header_states(api, path: Path):
    spec = spec_of(path)
    runs = int(header_of(path)["Runs"])
    body = {key: spec[key] for key in ("factors", "design", "constraints") if key in spec}
    response = await api.post("/designs/preview", json=body | {"target": spec["target"]})
    assert response.status_code == 200, response.text
    design = response.json()
    assert design["kind"] == spec["design"]["kind"]
    assert design["runs"] == len(design["points"]) == runs
    assert design["removed_by_constraints"] == 0


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
async def test_each_file_is_accepted_as_an_experiment(api, path: Path):
    spec = spec_of(path)
    runs = int(header_of(path)["Runs"])
    response = await api.post("/experiments", json=spec)
    assert response.status_code == 201, response.text
    experiment = response.json()
    assert experiment["name"] == spec["name"] and experiment["target"] == spec["target"]
    assert experiment["objective"]["response"] == spec["objective"]["response"]
    design = [trial for trial in experiment["trials"] if trial["source"] == "design"]
    assert len(design) == runs
    assert {trial["status"] for trial in experiment["trials"]} == {"pending"}
    names = [factor["name"] for factor in spec["factors"]]
    assert all(set(trial["config"]) == set(names) for trial in design)
    # A file that names today's configuration measures it first, before the design.
    first = min(experiment["trials"], key=lambda trial: trial["run_order"])
    assert (first["source"] == "baseline") == ("baseline" in spec)


def test_the_catalogue_is_shipped_as_package_data():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    package_data = pyproject["tool"]["setuptools"]["package-data"]
    assert package_data["experiments.catalog"] == ["*.yaml"]
    packages = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    assert "experiments*" in packages
    assert (CATALOG / "__init__.py").is_file(), "experiments.catalog must be a package"
    shipped = importlib.resources.files("experiments.catalog")
    assert sorted(p.name for p in shipped.iterdir() if p.name.endswith(".yaml")) == [
        path.name for path in FILES
    ]
