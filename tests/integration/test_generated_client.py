"""A client generated from the running API's /openapi.json by openapi-python-client drives the
whole path through its typed models: create an experiment on the simulated target, start it
without a body, wait while the worker process runs its trials, read the analysis and a plot.

The client is generated into the test's temporary directory and imported from there; no
generated code is kept. If the document is wrong, the generator drops the operation or model
(it warns and goes on), the typed parse fails, or a call sends what the API refuses.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
import yaml

from client.http import Client

pytestmark = pytest.mark.integration

PACKAGE = "galera_doe_generated"
GENERATOR = Path(sys.executable).with_name("openapi-python-client")
# No formatting of the generated code (it is only imported); openapi-python-client reads
# binary answers as bytes only under application/octet-stream, so the PNG is mapped to it.
GENERATOR_CONFIG = {
    "post_hooks": [],
    "content_type_overrides": {"image/png": "application/octet-stream"},
}


@pytest.fixture(scope="module")
def generated(service: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The generated package, imported from a temporary directory, forgotten after."""
    root = tmp_path_factory.mktemp("generated")
    document = root / "openapi.json"
    document.write_bytes(httpx.get(f"{service.base_url}/openapi.json").raise_for_status().content)
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump(GENERATOR_CONFIG))
    run = subprocess.run(
        [
            str(GENERATOR), "generate", "--path", str(document), "--meta", "none",
            "--output-path", str(root / PACKAGE), "--config", str(config),
        ],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    # Every operation and model made it into the client: the generator warns and leaves out
    # what it cannot read in the document.
    assert "Warning" not in run.stdout + run.stderr, run.stdout + run.stderr
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(root))
        for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
            del sys.modules[name]


def typed(model: type, operation: ModuleType, *args: object, **kwargs: object) -> Any:
    """The operation's answer parsed by the generated client as `model`."""
    response = operation.sync_detailed(*args, **kwargs)
    assert isinstance(response.parsed, model), (response.status_code, response.content[:2000])
    return response.parsed


def test_a_generated_client_creates_starts_waits_for_and_analyses_an_experiment(
    service: Client, generated: ModuleType
):
    api = importlib.import_module(f"{PACKAGE}.api.experiments")
    plots = importlib.import_module(f"{PACKAGE}.api.plots")
    models = importlib.import_module(f"{PACKAGE}.models")
    for name in ("create_experiment", "start_experiment", "get_experiment", "get_analysis"):
        importlib.import_module(f"{api.__name__}.{name}")
    importlib.import_module(f"{plots.__name__}.get_plot")
    client = generated.AuthenticatedClient(base_url=service.base_url, token=service.api_key)

    spec = models.ExperimentIn(
        name="generated client",
        target="simulated",
        factors=[
            models.FactorIn(name="nodes", kind=models.FactorInKind.INTEGER, low=1, high=5),
            models.FactorIn(
                name="threads_per_client",
                kind=models.FactorInKind.INTEGER,
                low=4,
                high=64,
                scale=models.FactorInScale.LOG2,
            ),
        ],
        design=models.DesignIn(kind="full_factorial", levels=2, seed=3),
        objective=models.ObjectiveIn(response="tps"),
    )
    with client:
        created = typed(
            models.ExperimentWithTrialsOut, api.create_experiment, client=client, body=spec
        )
        assert [type(f) for f in created.factors] == [models.FactorOut, models.FactorOut]
        assert created.factors[1].scale == models.FactorOutScale.LOG2
        assert isinstance(created.objective, models.ObjectiveOut)
        assert isinstance(created.design, models.DesignSpecOut) and created.design.levels == 2
        runs = len(created.trials)
        assert runs == 4

        # No body: StartIn's defaults.
        typed(models.ExperimentOut, api.start_experiment, created.id, client=client)

        deadline = time.monotonic() + 120
        experiment = typed(models.ExperimentOut, api.get_experiment, created.id, client=client)
        while experiment.status != "completed" and time.monotonic() < deadline:
            time.sleep(0.5)
            experiment = typed(models.ExperimentOut, api.get_experiment, created.id, client=client)
        assert experiment.status == "completed", experiment
        assert experiment.best is not None and experiment.best.value > 0

        analysis = typed(models.AnalysisOut, api.get_analysis, created.id, client=client)
        assert analysis.response == "tps" and analysis.trials_used == runs
        assert isinstance(analysis.optimum, models.Optimum)
        assert set(analysis.optimum.config.to_dict()) == {"nodes", "threads_per_client"}

        kind = models.GetPlotKind.MAIN_EFFECTS
        plot = typed(generated.types.File, plots.get_plot, created.id, kind, client=client)
        assert plot.payload.read().startswith(b"\x89PNG")
