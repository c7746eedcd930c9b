"""Fit the constants of the simulated Galera cluster to the published measurements.

Run `python benchmarks/calibrate_simulated.py [--data DIR]`; it prints the fitted constants (to
copy into `Calibration` in worker/targets/simulated_model.py) and how well the model reproduces each
row. Three fits, in order:

1. galera_rw_ratio_mysql51.csv: how cost, apply work and certification conflicts depend on the
   write share (the only study that varies it).
2. the three rows of galera_nodes_connections_mariadb11.csv where only wsrep_slave_threads varies.
3. the 27 rows of galera_nodes_connections_mariadb11.csv: least squares in log TPS.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from worker.targets.simulated_model import (
    CALIBRATION,
    REFERENCE_WRITE_SHARE,
    Calibration,
    response_surface,
)

DEFAULT_DATA = Path(__file__).resolve().parents[1] / "data"
RW_STATEMENTS = 5  # the rw study's transactions held 2 to 8 statements
RW_USERS_PER_NODE = 5
# Rows with empty cells are the study's later runs, done after it settled on these values.
LATER_RUNS = {"wsrep_slave_threads": 4.0, "runtime_s": 120.0}
FITTED = (
    "wait_ms",
    "commit_ms_per_peer",
    "serial_ms",
    "serial_ms_per_peer",
    "coherency",
    "stall_share",
)
# wait_ms covers the 20 client round trips of a transaction: at least 0.1 ms each.
LOWER = {"wait_ms": 2.0}
UPPER = {"stall_share": 1.0}


def read_rows(path: Path) -> list[dict[str, str]]:
    """The CSV's rows as dictionaries."""
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def fit_write_share(rows: list[dict[str, str]]) -> dict[str, float]:
    """write_cost, writeset_cost, apply_cost and conflict from the read/write-ratio study.

    Its single-core nodes were CPU bound: n masters sustain n / (D_e + (n - 1) D_a), where a
    transaction costs D_e on its own node and D_a to apply on each other node.
    """
    galera = [row for row in rows if row["setup"] == "galera"]
    w = np.array([float(row["write_pct"]) / 100.0 for row in galera])
    n = np.array([float(row["master_nodes"]) for row in galera])
    tps = np.array([float(row["trx_per_s"]) for row in galera])
    aborted = np.array([float(row["aborted"]) for row in galera])
    runtime_s = 800.0  # every run of that study

    def throughput(p: np.ndarray) -> np.ndarray:
        read_cost, write_cost, writeset_cost, apply_cost = p
        replicated = 1.0 - (1.0 - w) ** RW_STATEMENTS
        own = read_cost * (
            RW_STATEMENTS * ((1.0 - w) + write_cost * w) + writeset_cost * replicated
        )
        other = read_cost * apply_cost * RW_STATEMENTS * w
        return n / (own + (n - 1.0) * other)

    cost = least_squares(
        lambda p: np.log(throughput(p) / tps), [0.3, 1.0, 2.0, 0.5], bounds=(0.0, np.inf)
    )
    # Conflicts need a writer on another node: p = 1 - exp(-k w^2 M), M = remote concurrent users.
    writers = n > 1
    remote = RW_USERS_PER_NODE * (n - 1.0)
    observed = aborted / (tps * runtime_s + aborted)
    conflict = least_squares(
        lambda k: (-np.expm1(-k[0] * w**2 * remote) - observed)[writers], [1e-4], bounds=(0, 1)
    )
    return {
        "write_cost": float(cost.x[1]),
        "writeset_cost": float(cost.x[2]),
        "apply_cost": float(cost.x[3]),
        "conflict": float(conflict.x[0]),
    }


def study_arrays(rows: list[dict[str, str]]) -> dict[str, np.ndarray]:
    """Model inputs and measured TPS of the nodes/connections study."""

    def column(name: str, fallback: float = math.nan) -> np.ndarray:
        return np.array([float(row[name]) if row[name] else fallback for row in rows])

    return {
        "nodes": column("galera_nodes"),
        "clients": column("client_nodes"),
        "threads_per_client": column("threads_per_client"),
        "wsrep_slave_threads": column("wsrep_slave_threads", LATER_RUNS["wsrep_slave_threads"]),
        "runtime_s": column("runtime_s", LATER_RUNS["runtime_s"]),
        "tps": column("tps"),
    }


def fit_slave_threads(rows: list[dict[str, str]]) -> float:
    """Cost per doubling of applier threads: tps(1) / tps(s) = 1 + cost * log2(s)."""
    data = study_arrays(rows)
    same = (
        (data["nodes"] == 9)
        & (data["clients"] == 5)
        & (data["threads_per_client"] == 8)
        & (data["runtime_s"] == 120)
    )
    threads, tps = data["wsrep_slave_threads"][same], data["tps"][same]
    baseline = tps[threads == 1][0]
    slope = np.log2(threads)
    return float(np.sum(slope * (baseline / tps - 1.0)) / np.sum(slope**2))


def fit_study(rows: list[dict[str, str]], base: Calibration, starts: int = 20) -> Calibration:
    """The FITTED constants by least squares in log TPS, best of several starting points."""
    data = study_arrays(rows)
    inputs = [data[name] for name in ("nodes", "clients", "threads_per_client")]
    inputs += [data["wsrep_slave_threads"], data["runtime_s"], REFERENCE_WRITE_SHARE]

    def calibration(x: np.ndarray) -> Calibration:
        return dataclasses.replace(base, **dict(zip(FITTED, map(float, x), strict=True)))

    def residuals(x: np.ndarray) -> np.ndarray:
        return np.log(response_surface(*inputs, calibration(x))["tps"] / data["tps"])

    lower = np.array([LOWER.get(name, 0.0) for name in FITTED])
    upper = np.array([UPPER.get(name, np.inf) for name in FITTED])
    start = np.array([getattr(base, name) for name in FITTED])
    rng = np.random.default_rng(0)
    # The first guess is the current calibration, the others scatter around it.
    guesses = [start] + [
        start * np.exp(rng.normal(0.0, 1.0, start.size)) for _ in range(starts - 1)
    ]
    fits = [
        least_squares(residuals, np.clip(guess, lower, upper), bounds=(lower, upper), x_scale="jac")
        for guess in guesses
    ]
    best = min(fits, key=lambda fit: fit.cost)
    return calibration(best.x)


def report(rows: list[dict[str, str]], calibration: Calibration) -> None:
    """Print the constants and the model against every row of the study."""
    data = study_arrays(rows)
    model = response_surface(
        data["nodes"],
        data["clients"],
        data["threads_per_client"],
        data["wsrep_slave_threads"],
        data["runtime_s"],
        REFERENCE_WRITE_SHARE,
        calibration,
    )["tps"]
    error = 100.0 * (model / data["tps"] - 1.0)
    for field in dataclasses.fields(calibration):
        print(f"    {field.name}: float = {getattr(calibration, field.name):.4g}")
    print(
        f"\n{'test':>5} {'nodes':>5} {'clients':>7} {'thr':>4} {'slave':>5} {'time':>5}"
        f" {'tps':>8} {'model':>8} {'error %':>8}"
    )
    for i, row in enumerate(rows):
        print(
            f"{row['test']:>5} {data['nodes'][i]:5.0f} {data['clients'][i]:7.0f}"
            f" {data['threads_per_client'][i]:4.0f} {data['wsrep_slave_threads'][i]:5.0f}"
            f" {data['runtime_s'][i]:5.0f} {data['tps'][i]:8.1f} {model[i]:8.1f} {error[i]:8.1f}"
        )
    absolute = np.abs(error)
    rms = np.sqrt(np.mean(np.log(model / data["tps"]) ** 2))
    print(
        f"\nmedian absolute error {np.median(absolute):.2f} %, worst row {absolute.max():.2f} %,"
        f" rms log error {rms:.4f}"
    )


def main() -> None:
    """Fit everything and print the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of the CSVs")
    args = parser.parse_args()
    study = read_rows(args.data / "galera_nodes_connections_mariadb11.csv")
    base = dataclasses.replace(
        CALIBRATION,
        **fit_write_share(read_rows(args.data / "galera_rw_ratio_mysql51.csv")),
        slave_thread_cost=fit_slave_threads(study),
    )
    report(study, fit_study(study, base))


if __name__ == "__main__":
    main()
