"""The `simulated` target: an analytic model of a Galera cluster running sysbench oltp_read_write.

It answers a trial at once, with seeded noise, from a physical model calibrated on the published
measurements in data/ (see data/README.md; the model, its constants and its limits are
`worker.targets.simulated_model`). Its noise-free surface is `expected_responses`
and its exact optimum over an integer lattice is `true_optimum`: the ground truth of optimizer
benchmarks; the model's `response_surface` evaluates whole arrays of configurations.

Inputs (`SIMULATED_FACTORS`, defaults `SIMULATED_DEFAULTS`): n = nodes (1-16), c = clients
(1-16), t = threads_per_client (1-256), s = wsrep_slave_threads (1-64), T = runtime_s (10-3600),
w = write_share (0-1, default 4/18 as in oltp_read_write). Settings: `seed` (0), `noise` (0.03,
relative standard deviation of the run's throughput) and `seconds_per_trial` (0: answer at once;
a pace for demos and for the fault tests, which kill a worker in the middle of a trial).

Noise: one log-normal factor per run (mean 1, relative sd `noise`) scales throughput and the
appliers' load; error counts are Poisson. Both are seeded by (seed, run_key); noise 0 returns
`expected_responses` exactly.
"""

from __future__ import annotations

import itertools
import math
import numbers
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from experiments.galera.kinds import SIMULATED_FACTORS, SIMULATED_RANGES
from experiments.galera.responses import GALERA_RESPONSES
from worker.targets import simulated_model
from worker.targets.base import (
    InfeasibleError,
    Target,
    TargetError,
    TrialResult,
    Value,
    check_cancelled,
)
from worker.targets.simulated_model import QUERIES_PER_TRX, REFERENCE_WRITE_SHARE, response_surface

SIMULATED_DEFAULTS: dict[str, float | int] = {
    "nodes": 3,
    "clients": 1,
    "threads_per_client": 8,
    "wsrep_slave_threads": 1,
    "runtime_s": 180.0,
    "write_share": REFERENCE_WRITE_SHARE,
}
# The model's domain, as the API checks it at submission.
_INTEGER_RANGES: dict[str, tuple[int, int]] = {
    name: (int(rule.low), int(rule.high)) for name, rule in SIMULATED_RANGES.items() if rule.whole
}
_REAL_RANGES: dict[str, tuple[float, float]] = {
    name: (rule.low, rule.high) for name, rule in SIMULATED_RANGES.items() if not rule.whole
}
_SETTINGS = ("seed", "noise", "seconds_per_trial", "max_connections")
# The settings its nodes hold, which a baseline can read (`read_current`); the rest of a trial
# (the load, the cluster's shape) is the client's to give.
READABLE_SETTINGS = ("wsrep_slave_threads",)


def _check(name: str, value: object) -> float | int:
    """The factor's value as a number, or TargetError naming the factor and its rule."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise TargetError(f"factor '{name}' must be a finite number, got {value!r}")
    if name in _INTEGER_RANGES:
        low, high = _INTEGER_RANGES[name]
        if value != int(value) or not low <= value <= high:
            raise TargetError(
                f"factor '{name}' must be an integer from {low} to {high}, got {value!r}"
            )
        return int(value)
    low_real, high_real = _REAL_RANGES[name]
    if not low_real <= value <= high_real:
        raise TargetError(
            f"factor '{name}' must be from {low_real:g} to {high_real:g}, got {value!r}"
        )
    return float(value)


def _resolve(config: Mapping[str, Value]) -> dict[str, float | int]:
    """The full configuration: defaults for missing factors, every value checked."""
    for name in config:
        if name not in SIMULATED_DEFAULTS:
            raise TargetError(
                f"the simulated target has no factor '{name}'; "
                f"it accepts {', '.join(SIMULATED_FACTORS)}"
            )
    merged = {**SIMULATED_DEFAULTS, **config}
    return {name: _check(name, merged[name]) for name in SIMULATED_FACTORS}


def expected_responses(config: Mapping[str, Value]) -> dict[str, float]:
    """The noise-free mean of every response for `config` (the true response surface)."""
    surface = response_surface(*_resolve(config).values())
    return {name: float(surface[name]) for name in GALERA_RESPONSES}


def true_optimum(
    nodes: Iterable[int],
    clients: Iterable[int],
    threads_per_client: Iterable[int],
    wsrep_slave_threads: Iterable[int],
    runtime_s: float,
    write_share: float,
    response: str = "tps",
    *,
    maximize: bool = True,
) -> tuple[dict[str, float | int], float]:
    """The lattice point with the highest noise-free `response` (lowest if not `maximize`).

    Every combination of the levels is evaluated; ties go to the first in lattice order (nodes,
    clients, threads per client, slave threads). Returns the configuration and its value.
    """
    if response not in GALERA_RESPONSES:
        raise TargetError(
            f"unknown response '{response}'; the simulated target reports "
            f"{', '.join(GALERA_RESPONSES)}"
        )
    axes = {
        "nodes": nodes,
        "clients": clients,
        "threads_per_client": threads_per_client,
        "wsrep_slave_threads": wsrep_slave_threads,
    }
    levels = {name: [_check(name, value) for value in values] for name, values in axes.items()}
    for name, values in levels.items():
        if not values:
            raise TargetError(f"factor '{name}' has no levels to search")
    lattice = np.array(list(itertools.product(*levels.values())), dtype=np.float64)
    values = response_surface(
        *lattice.T, _check("runtime_s", runtime_s), _check("write_share", write_share)
    )[response]
    best = int(np.argmax(values) if maximize else np.argmin(values))
    config: dict[str, float | int] = {
        name: int(value) for name, value in zip(levels, lattice[best], strict=True)
    }
    config["runtime_s"] = float(runtime_s)
    config["write_share"] = float(write_share)
    return config, float(values[best])


class SimulatedTarget(Target):
    """Trials answered by the analytic model, with seeded multiplicative noise on throughput."""

    kind: ClassVar[str] = "simulated"
    accepted_factors: ClassVar[tuple[str, ...]] = SIMULATED_FACTORS

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        super().__init__(name, settings)
        for key in self.settings:
            if key not in _SETTINGS:
                raise TargetError(
                    f"target '{name}': unknown setting '{key}'; it accepts {', '.join(_SETTINGS)}"
                )
        seed = self.settings.get("seed", 0)
        noise = self.settings.get("noise", 0.03)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise TargetError(f"target '{name}': seed must be a non-negative integer, got {seed!r}")
        if isinstance(noise, bool) or not isinstance(noise, numbers.Real) or not 0 <= noise <= 1:
            raise TargetError(f"target '{name}': noise must be from 0 to 1, got {noise!r}")
        pace = self.settings.get("seconds_per_trial", 0)
        if isinstance(pace, bool) or not isinstance(pace, numbers.Real) or not 0 <= pace <= 3600:
            raise TargetError(
                f"target '{name}': seconds_per_trial must be from 0 to 3600, got {pace!r}"
            )
        most = self.settings.get("max_connections")
        if most is not None and (isinstance(most, bool) or not isinstance(most, int) or most < 1):
            raise TargetError(
                f"target '{name}': max_connections must be a whole number from 1, got {most!r}"
            )
        self.seed = seed
        self.noise = float(noise)
        self.seconds_per_trial = float(pace)
        self.max_connections = most

    def run(
        self,
        config: Mapping[str, Value],
        *,
        run_key: int,
        cancel: threading.Event | None = None,
        fresh: bool = False,
    ) -> TrialResult:
        """Evaluate the model for `config` with the noise of trial `run_key`, taking
        `seconds_per_trial` as a real benchmark would take its runtime (cut short by `cancel`).
        Every trial starts fresh here (no state carries between them), so `fresh` changes
        nothing."""
        resolved = _resolve(config)
        # Waiting on the event, not sleeping: a cancelled trial stops at once, as sysbench would.
        (cancel if cancel is not None else threading.Event()).wait(self.seconds_per_trial)
        check_cancelled(cancel)
        self._check_connections(resolved)
        solution = simulated_model.solve(*resolved.values())
        if self.noise == 0.0:
            surface = simulated_model.responses(solution)
        else:
            # SeedSequence wants non-negative entropy; masking keeps any int key usable.
            rng = np.random.default_rng([self.seed, run_key & 0xFFFF_FFFF_FFFF_FFFF])
            # Log-normal with mean 1 and relative standard deviation `noise`.
            sigma = math.sqrt(math.log1p(self.noise**2))
            scale = math.exp(rng.normal(-0.5 * sigma**2, sigma))
            surface = simulated_model.responses(solution, scale=scale, rng=rng)
        responses = {name: float(surface[name]) for name in GALERA_RESPONSES}
        return TrialResult(
            responses=responses, raw_output=self._report(resolved, responses, run_key)
        )

    def read_current(self, config: Mapping[str, Value], names: Sequence[str]) -> dict[str, str]:
        """What the simulated nodes run when no trial sets it: the model's default of each
        readable setting (`READABLE_SETTINGS`), as a node would report it (text)."""
        unreadable = [name for name in names if name not in READABLE_SETTINGS]
        if unreadable:
            raise TargetError(
                f"the simulated cluster cannot read {', '.join(unreadable)} from its nodes;"
                f" it reads {', '.join(READABLE_SETTINGS)}"
            )
        return {name: str(SIMULATED_DEFAULTS[name]) for name in names}

    def _check_connections(self, config: Mapping[str, float | int]) -> None:
        """Refuse a trial whose busiest node would get more connections than the setting
        `max_connections` allows, as a real node answers 'Too many connections' (1040)."""
        if self.max_connections is None:
            return
        nodes, clients = int(config["nodes"]), int(config["clients"])
        busiest = len(range(0, clients, nodes)) * int(config["threads_per_client"])
        if busiest > self.max_connections:
            raise InfeasibleError(
                f"Too many connections (1040): {busiest} connections on one node, "
                f"max_connections is {self.max_connections}"
            )

    def _report(
        self, config: Mapping[str, float | int], responses: Mapping[str, float], run_key: int
    ) -> str:
        """A sysbench-like summary of the simulated run."""
        runtime = float(config["runtime_s"])
        nodes, clients = int(config["nodes"]), int(config["clients"])
        per_node = [len(range(node, clients, nodes)) for node in range(nodes)]
        transactions = responses["tps"] * runtime
        errors = responses["errors_per_s"] * runtime
        return "\n".join(
            [
                f"galera-doe simulated cluster '{self.name}' (analytic model; seed {self.seed}, "
                f"run_key {run_key}, noise {self.noise:.1%})",
                f"nodes: {config['nodes']}  clients: {config['clients']} "
                f"(clients per node: {' '.join(map(str, per_node))})  "
                f"threads per client: {config['threads_per_client']}",
                f"wsrep_slave_threads: {config['wsrep_slave_threads']}  runtime: {runtime:g} s  "
                f"write share: {float(config['write_share']):.4f}",
                "SQL statistics:",
                f"    transactions:     {transactions:12.0f}  ({responses['tps']:.2f} per sec.)",
                f"    queries:          {transactions * QUERIES_PER_TRX:12.0f}  "
                f"({responses['qps']:.2f} per sec.)",
                f"    ignored errors:   {errors:12.0f}  ({responses['errors_per_s']:.2f} per sec.)",
                f"    reconnects:       {responses['reconnects_per_s'] * runtime:12.0f}  "
                f"({responses['reconnects_per_s']:.2f} per sec.)",
                "Latency (ms):",
                f"    avg:              {responses['latency_avg_ms']:12.2f}",
                f"    95th percentile:  {responses['latency_p95_ms']:12.2f}",
                "Galera (summed or averaged over nodes):",
                f"    wsrep_local_cert_failures:   {responses['cert_failures']:.0f}",
                f"    wsrep_local_bf_aborts:       {responses['bf_aborts']:.0f}",
                f"    wsrep_flow_control_paused:   {responses['flow_control_paused']:.4f}",
                f"    wsrep_local_recv_queue_avg:  {responses['recv_queue_avg']:.3f}",
                f"    abort rate:                  {responses['abort_rate']:.4%}",
            ]
        )
