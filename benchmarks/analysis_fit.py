"""How long the full analysis takes: fit, ANOVA, diagnostics and the constrained optimum.

Run `python benchmarks/analysis_fit.py`. 200 trials of a 6-factor space (nodes, clients and
threads as integers, three continuous server settings) measured on the simulated cluster's
surface with noise; the quadratic model with a limit on latency. The baseline, measured in the
same run, is the bare statsmodels OLS fit of the same model matrix. Then the same trials are
imported into a `manual` experiment of a running service (API and worker as child processes,
Redis on 127.0.0.1) and `GET /experiments/{id}/analysis` is timed over HTTP.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np
import statsmodels.api as sm
from rich.console import Console
from rich.table import Table

from client.processes import running_service
from experiments.analysis import ResponseLimit, fit
from experiments.constraints import parse_constraints
from experiments.factors import FactorSpace
from experiments.terms import ModelTerms, distinct_levels, main_columns

SPACE = FactorSpace.from_dicts(
    [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "clients", "kind": "integer", "low": 1, "high": 8},
        {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
        {"name": "x1", "low": 0, "high": 1},
        {"name": "x2", "low": 0, "high": 1},
        {"name": "x3", "low": 0, "high": 1},
    ]
)


def _data(count: int) -> tuple[list[dict], list[float], list[float]]:
    rng = np.random.default_rng(1)
    configs, tps, latency = [], [], []
    for _ in range(count):
        config = {f.name: f.decode(float(rng.uniform(-1, 1))) for f in SPACE.factors}
        coded = SPACE.encode(config)
        tps.append(float(1000 - 200 * (coded[0] - 0.2) ** 2 + 150 * coded[1] - 80 * coded[2] ** 2
                         + 30 * coded[3] + rng.normal(0, 20)))  # fmt: skip
        latency.append(float(20 + 15 * coded[1] + 10 * coded[2] + rng.normal(0, 2)))
        configs.append(config)
    return configs, tps, latency


def best_of(repeats: int, action: object) -> float:
    """Best wall time of `repeats` calls, in seconds."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    """Time both and print the table."""
    configs, tps, latency = _data(200)
    limits = [ResponseLimit(response="latency_p95_ms", values=latency, max=30)]
    constraints = parse_constraints(["clients * threads_per_client <= 256"], SPACE)
    terms = ModelTerms(SPACE, "quadratic", distinct_levels(SPACE, configs))
    x = terms.matrix(main_columns(SPACE, configs))
    baseline = best_of(5, lambda: sm.OLS(np.array(tps), x).fit())
    full = best_of(
        5,
        lambda: fit(SPACE, configs, tps, model="quadratic", constraints=constraints, limits=limits),
    )
    http = _http_p95(configs, tps, latency)
    table = Table(title="Analysis of 200 trials, 6 factors, quadratic model (best of 5)")
    for column in ("step", "ms", "ratio", "limit ms"):
        table.add_column(column, justify="left" if column == "step" else "right")
    table.add_row("baseline: statsmodels OLS fit only", f"{baseline * 1e3:.1f}", "1.0", "")
    table.add_row(
        "full analysis (ANOVA, diagnostics, canonical, constrained optimum)",
        f"{full * 1e3:.1f}",
        f"{full / baseline:.0f}",
        "300",
    )
    table.add_row("GET /experiments/{id}/analysis over HTTP, p95 of 20", f"{http * 1e3:.1f}",
                  f"{http / baseline:.0f}", "500")  # fmt: skip
    Console().print(table)


def _http_p95(configs: list[dict], tps: list[float], latency: list[float]) -> float:
    """p95 latency of the analysis endpoint on the same trials, in seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        env = os.environ | {
            "GALERA_DOE_DATABASE_URL": f"sqlite+aiosqlite:///{Path(tmp) / 'bench.sqlite3'}",
            "GALERA_DOE_BROKER_URL": "redis://127.0.0.1:6379/12",
        }
        with running_service(env, Path(tmp), loglevel="WARNING") as service:
            client = service.client
            created = client.create_experiment(
                {
                    "name": "analysis benchmark",
                    "target": "manual",
                    "factors": SPACE.to_dicts(),
                    "design": None,
                    "constraints": ["clients * threads_per_client <= 256"],
                    "objective": {
                        "response": "tps",
                        "constraints": [{"response": "latency_p95_ms", "max": 30}],
                    },
                }
            )
            client.record_observations(
                created["id"],
                [
                    {"config": c, "responses": {"tps": t, "latency_p95_ms": lat}}
                    for c, t, lat in zip(configs, tps, latency, strict=True)
                ],
            )
            times = []
            for _ in range(20):
                started = time.perf_counter()
                client.analysis(created["id"], model="quadratic")
                times.append(time.perf_counter() - started)
    return float(np.percentile(times, 95))


if __name__ == "__main__":
    main()
