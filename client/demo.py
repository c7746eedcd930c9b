"""The main job: start the API and a worker, run an experiment end to end, print the optimum;
an experiment that names today's configuration (a baseline) is then confirmed against it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console

from client import confirmation_view
from client.analysis_view import print_results
from client.console import follow, load_spec
from client.http import Client
from client.processes import Service, running_service

CATALOG = Path(__file__).resolve().parents[1] / "experiments" / "catalog"
QUICKSTART = CATALOG / "quickstart.yaml"


def run_demo(
    spec_path: Path = QUICKSTART,
    *,
    timeout: float = 900.0,
    model: str | None = None,
    target: str | None = None,
) -> None:
    """Start the API and one worker, submit `spec_path`, follow it, print the optimum, stop all.
    When the experiment names a baseline, the configuration to deploy is confirmed against it
    on the target before the service stops, and the sentence to paste is printed.

    `target` replaces the file's target (e.g. `simulated` for an instant run). When the worker
    ran trials on the lab cluster, the cluster is stopped at the end. Raises SpecFileError for
    an unreadable file, WaitTimeoutError after `timeout` seconds, ServiceError when the API or
    the worker exits, ApiError when the API refuses the experiment.
    """
    # Ctrl-C and SIGTERM both end the demo through the `finally` that stops the children, even
    # when the demo was started with SIGINT ignored (as a background job of a script).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    console = Console()
    spec = load_spec(spec_path)
    if target is not None:
        spec["target"] = target
    with tempfile.TemporaryDirectory(prefix="galera-doe-demo-") as logs:
        try:
            # The worker stops the lab cluster as it exits; that takes a few seconds per node.
            with running_service(
                os.environ, Path(logs), loglevel="WARNING", stop_timeout=90
            ) as service:
                client = service.client
                console.print(
                    f"API {client.base_url}/docs (pid {service.api.pid}), "
                    f"worker (pid {service.worker.pid})"
                )
                # The demo's key is revoked when it ends, so showing it here is safe; with it
                # the dashboard follows the run while it lasts.
                console.print(
                    f"Dashboard {client.base_url}/ui (API key {service.api_key}, "
                    "valid while the demo runs)",
                    soft_wrap=True,
                )
                experiment = client.create_experiment(spec)
                console.print(
                    f"Experiment {experiment['id']} '{experiment['name']}' on target "
                    f"'{experiment['target']}': {len(experiment['trials'])} planned trials"
                )
                client.start(experiment["id"])
                final = follow(
                    client,
                    experiment["id"],
                    console,
                    timeout=timeout,
                    check_alive=service.check_alive,
                )
                analysis = client.analysis(experiment["id"], model=model)
                print_results(console, final, analysis)
                if experiment.get("baseline") is not None:
                    _confirm(client, experiment["id"], console, service, timeout=timeout)
        finally:
            if spec.get("target") == "lab":
                _stop_lab(console)


def _confirm(
    client: Client, experiment_id: int, console: Console, service: Service, *, timeout: float
) -> None:
    """Confirm the configuration to deploy against the baseline and print the result."""
    started = client.confirm(experiment_id)
    confirmation_view.print_plan(console, started)
    ended = confirmation_view.follow(
        client,
        experiment_id,
        started["id"],
        console,
        timeout=timeout,
        check_alive=service.check_alive,
    )
    confirmation_view.print_result(console, ended)


def _stop_lab(console: Console) -> None:
    """Make sure no lab node outlives the demo, even if the worker was killed."""
    done = subprocess.run(
        [sys.executable, "-m", "worker.lab", "down"], capture_output=True, text=True, check=False
    )
    console.print("lab cluster stopped" if done.returncode == 0 else done.stderr.strip())


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt
