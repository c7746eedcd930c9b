"""The main job: start the API and a worker, run an experiment end to end, print the optimum."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from app.processes import Service, running_service

CATALOG = Path(__file__).resolve().parents[1] / "experiments" / "catalog"
QUICKSTART = CATALOG / "quickstart.yaml"
FINAL_EXPERIMENT_STATUSES = {"completed", "cancelled"}


class DemoError(RuntimeError):
    """The demo could not finish; the message says where and why."""


def run_demo(
    spec_path: Path = QUICKSTART,
    *,
    timeout: float = 900.0,
    model: str = "quadratic",
    target: str | None = None,
) -> None:
    """Start the API and one worker, submit `spec_path`, follow it, print the optimum, stop all.

    `target` replaces the file's target (e.g. `simulated` for an instant run). When the worker
    ran trials on the lab cluster, the cluster is stopped at the end.
    """
    # Ctrl-C and SIGTERM both end the demo through the `finally` that stops the children, even
    # when the demo was started with SIGINT ignored (as a background job of a script).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    console = Console()
    spec = yaml.safe_load(spec_path.read_text())
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
                experiment = client.create_experiment(spec)
                console.print(
                    f"Experiment {experiment['id']} '{experiment['name']}' on target "
                    f"'{experiment['target']}': {len(experiment['trials'])} planned trials"
                )
                client.start(experiment["id"])
                final = _follow(service, experiment["id"], console, timeout)
                analysis = client.analysis(experiment["id"], model=model)
            _print_results(console, final, analysis)
        finally:
            if spec.get("target") == "lab":
                _stop_lab(console)


def _stop_lab(console: Console) -> None:
    """Make sure no lab node outlives the demo, even if the worker was killed."""
    done = subprocess.run(
        [sys.executable, "-m", "worker.lab", "down"], capture_output=True, text=True, check=False
    )
    console.print("lab cluster stopped" if done.returncode == 0 else done.stderr.strip())


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _follow(
    service: Service, experiment_id: int, console: Console, timeout: float
) -> dict[str, Any]:
    columns = (
        TextColumn("[bold]trials"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
    )
    deadline = time.monotonic() + timeout
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("trials", total=None, detail="")
        while True:
            service.check_alive()
            experiment = service.client.experiment(experiment_id)
            p = experiment["progress"]
            best = experiment["best"]
            objective = experiment["objective"]["response"]
            detail = f"running {p['running']}  failed {p['failed']}"
            if best is not None:
                detail += f"  best {objective} {best['value']:.1f}"
            done = p["succeeded"] + p["failed"] + p["cancelled"]
            progress.update(task, total=p["total"], completed=done, detail=detail)
            if experiment["status"] in FINAL_EXPERIMENT_STATUSES:
                return experiment
            if time.monotonic() > deadline:
                raise DemoError(f"experiment {experiment_id} did not finish in {timeout:.0f} s")
            time.sleep(0.3)


def _print_results(console: Console, experiment: dict[str, Any], analysis: dict[str, Any]) -> None:
    response = analysis["response"]
    optimum = analysis["optimum"]
    units = {f["name"]: f.get("unit") or "" for f in experiment["factors"]}
    table = Table(title=f"Predicted optimum ({experiment['objective']['goal']} {response})")
    table.add_column("factor")
    table.add_column("value", justify="right")
    table.add_column("unit")
    for name, value in optimum["config"].items():
        table.add_row(name, _fmt(value), units.get(name, ""))
    console.print(table)
    console.print(
        f"predicted {response} {optimum['predicted']:.1f}  "
        f"95% CI [{_num(optimum['ci_low'])}, {_num(optimum['ci_high'])}]  "
        f"95% PI [{_num(optimum['pi_low'])}, {_num(optimum['pi_high'])}]"
    )
    if optimum.get("on_edge"):
        console.print(
            f"on the edge of the region: {', '.join(optimum['on_edge'])} "
            "(consider widening the range)"
        )
    best = experiment["best"]
    if best is not None:
        settings = ", ".join(f"{name}={_fmt(value)}" for name, value in best["config"].items())
        console.print(
            f"best observed: trial {best['trial_id']}, {response} {best['value']:.1f} at {settings}"
        )
    ranked = Table(title=f"Factors ranked by effect on {response} ({analysis['model']} model)")
    ranked.add_column("factor")
    ranked.add_column("effect low->high", justify="right")
    ranked.add_column("p", justify="right")
    for item in analysis["ranked_factors"]:
        p_value = "n/a" if item["p_value"] is None else f"{item['p_value']:.3g}"
        ranked.add_row(item["factor"], f"{item['effect']:+.1f}", p_value)
    console.print(ranked)
    console.print(
        f"R² {_num(analysis['r_squared'], '.3f')}  "
        f"adj. R² {_num(analysis['adj_r_squared'], '.3f')}  "
        f"RMSE {_num(analysis['rmse'])}  from {analysis['trials_used']} trials "
        f"({analysis['trials_failed']} failed, left out)"
    )


def _num(value: float | None, spec: str = ".1f") -> str:
    return "n/a" if value is None else format(value, spec)


def _fmt(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
