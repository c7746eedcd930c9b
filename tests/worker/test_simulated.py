"""The simulated Galera cluster: calibration against the published study, the study's facts
(data/README.md), seeded noise, input checks and the Target contract."""

from __future__ import annotations

import csv
import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from experiments.galera.kinds import SIMULATED_FACTORS
from experiments.galera.responses import GALERA_RESPONSES
from worker.targets.base import InfeasibleError, TargetError
from worker.targets.simulated import (
    SIMULATED_DEFAULTS,
    SimulatedTarget,
    expected_responses,
    true_optimum,
)
from worker.targets.simulated_model import REFERENCE_WRITE_SHARE, response_surface

DATA = Path(__file__).resolve().parents[2] / "data"
# The study's later runs (empty cells) kept the settings it had settled on.
LATER_RUNS = {"wsrep_slave_threads": 4, "runtime_s": 120}


def tps(**config: float) -> float:
    return expected_responses(config)["tps"]


def study_rows() -> list[dict[str, str]]:
    with (DATA / "galera_nodes_connections_mariadb11.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_reproduces_the_published_tps_with_noise_off():
    rows = study_rows()
    assert len(rows) == 27
    errors = []
    for row in rows:
        config = {
            "nodes": int(row["galera_nodes"]),
            "clients": int(row["client_nodes"]),
            "threads_per_client": int(row["threads_per_client"]),
            "wsrep_slave_threads": int(
                row["wsrep_slave_threads"] or LATER_RUNS["wsrep_slave_threads"]
            ),
            "runtime_s": float(row["runtime_s"] or LATER_RUNS["runtime_s"]),
        }
        assert int(row["total_connections"]) == config["clients"] * config["threads_per_client"]
        errors.append(abs(tps(**config) / float(row["tps"]) - 1.0))
    assert np.median(errors) <= 0.05
    assert max(errors) <= 0.20


def test_tps_falls_with_nodes_at_eight_connections():
    series = [tps(nodes=n, clients=1, threads_per_client=8, runtime_s=180) for n in range(1, 10)]
    assert all(later < earlier for earlier, later in itertools.pairwise(series))
    assert 0.20 <= 1.0 - series[-1] / series[0] <= 0.40  # published: 596 -> 429, -28 %


def test_tps_peaks_between_40_and_80_connections_at_nine_nodes():
    # The study's 9-node series: 8 to 40 connections by clients, then 80 and 160 by threads.
    series = {
        clients * threads: tps(nodes=9, clients=clients, threads_per_client=threads, runtime_s=120)
        for clients, threads in [(1, 8), (2, 8), (3, 8), (4, 8), (5, 8), (5, 16), (5, 32)]
    }
    best = max(series, key=series.__getitem__)
    assert 40 <= best <= 80
    assert series[best] > series[8]
    assert series[best] > series[160]
    assert series[40] > series[8]
    assert series[80] > series[160]


@pytest.mark.parametrize(("clients", "threads"), [(5, 8), (6, 8), (5, 16)])
def test_three_or_four_nodes_beat_one_and_nine_at_40_to_80_connections(clients, threads):
    by_nodes = {
        n: tps(nodes=n, clients=clients, threads_per_client=threads, runtime_s=120)
        for n in (1, 3, 4, 9)
    }
    assert min(by_nodes[3], by_nodes[4]) > max(by_nodes[1], by_nodes[9])


@pytest.mark.parametrize(("runtime_s", "slave_threads"), [(180, 1), (120, 1), (120, 4)])
def test_true_optimum_is_interior_in_nodes_and_connections(runtime_s, slave_threads):
    config, best = true_optimum(
        range(1, 10), range(1, 9), [4, 8, 16, 32], [slave_threads], runtime_s, REFERENCE_WRITE_SHARE
    )
    assert 1 < config["nodes"] < 9
    assert 24 <= config["clients"] * config["threads_per_client"] <= 128
    assert best == pytest.approx(tps(**config))


def test_true_optimum_agrees_with_brute_force():
    nodes, clients, threads, slaves = range(1, 6), range(1, 5), [4, 16], [1, 4]
    lattice = [
        {
            "nodes": n,
            "clients": c,
            "threads_per_client": t,
            "wsrep_slave_threads": s,
            "runtime_s": 150.0,
            "write_share": 0.3,
        }
        for n, c, t, s in itertools.product(nodes, clients, threads, slaves)
    ]
    for response, maximize in [("tps", True), ("latency_p95_ms", False), ("abort_rate", True)]:
        values = [expected_responses(config)[response] for config in lattice]
        index = int(np.argmax(values) if maximize else np.argmin(values))
        config, value = true_optimum(
            nodes, clients, threads, slaves, 150.0, 0.3, response, maximize=maximize
        )
        assert config == lattice[index]
        assert value == pytest.approx(values[index], rel=1e-12)


def test_wsrep_slave_threads_cost_a_little():
    by_threads = [
        tps(nodes=9, clients=5, threads_per_client=8, wsrep_slave_threads=s, runtime_s=120)
        for s in (1, 4, 8)
    ]
    assert by_threads[0] > by_threads[1] > by_threads[2]  # published: 1196, 1132, 1106
    assert 1.0 - by_threads[2] / by_threads[0] < 0.10


@pytest.mark.parametrize(("nodes", "clients", "threads"), [(9, 3, 8), (3, 6, 8), (1, 1, 8)])
def test_shorter_runs_measure_higher_tps(nodes, clients, threads):
    config = {"nodes": nodes, "clients": clients, "threads_per_client": threads}
    assert tps(**config, runtime_s=120) > tps(**config, runtime_s=180)


def test_abort_rate_grows_with_writing_nodes_and_write_share():
    # The read/write-ratio study: 5 users on each of 1-4 writing nodes.
    def abort_rate(nodes: int, write_share: float) -> float:
        config = {"nodes": nodes, "clients": nodes, "threads_per_client": 5}
        return expected_responses({**config, "runtime_s": 800, "write_share": write_share})[
            "abort_rate"
        ]

    by_nodes = [abort_rate(n, 1.0) for n in range(1, 5)]
    assert by_nodes[0] == 0.0
    assert all(later > earlier for earlier, later in itertools.pairwise(by_nodes))
    by_share = [abort_rate(4, w) for w in (0.0, 0.1, 0.3, 0.5, 0.7, 1.0)]
    assert by_share[0] == 0.0
    assert all(later > earlier for earlier, later in itertools.pairwise(by_share))
    assert 0.003 < by_share[-1] < 0.01  # published: 0.6 %


def test_read_only_load_scales_almost_linearly_with_nodes():
    def per_node(nodes: int, write_share: float) -> float:
        config = {"nodes": nodes, "clients": nodes, "write_share": write_share}
        return tps(**config) / nodes

    assert all(per_node(n, 0.0) >= 0.9 * per_node(1, 0.0) for n in range(2, 9))
    # Writes are certified and applied everywhere: mixed load scales well below linearly.
    assert per_node(8, REFERENCE_WRITE_SHARE) < 0.5 * per_node(1, REFERENCE_WRITE_SHARE)


def test_flow_control_grows_with_load_nodes_and_write_share():
    def paused(**config: float) -> float:
        return expected_responses({"runtime_s": 120, **config})["flow_control_paused"]

    by_load = [paused(nodes=3, clients=c) for c in (1, 2, 3, 4, 5, 6)]
    assert all(later >= earlier for earlier, later in itertools.pairwise(by_load))
    assert by_load[-1] > by_load[1]
    by_nodes = [paused(nodes=n, clients=n, threads_per_client=16) for n in (1, 2, 3, 4)]
    assert by_nodes[0] == 0.0
    assert all(later > earlier for earlier, later in itertools.pairwise(by_nodes))
    by_share = [paused(nodes=4, clients=4, write_share=w) for w in (0.2, 0.5, 1.0)]
    assert all(later > earlier for earlier, later in itertools.pairwise(by_share))


def test_responses_are_finite_non_negative_and_consistent():
    rng = np.random.default_rng(7)
    size = 2000
    corners = np.array(
        list(itertools.product([1, 16], [1, 16], [1, 256], [1, 64], [10, 3600], [0.0, 1.0]))
    ).T
    sample = [
        rng.integers(1, 17, size),
        rng.integers(1, 17, size),
        rng.integers(1, 257, size),
        rng.integers(1, 65, size),
        rng.uniform(10, 3600, size),
        rng.uniform(0, 1, size),
    ]
    inputs = [
        np.concatenate([corner, drawn]) for corner, drawn in zip(corners, sample, strict=True)
    ]
    surface = response_surface(*inputs)
    assert set(surface) == set(GALERA_RESPONSES)
    for name, values in surface.items():
        assert np.all(np.isfinite(values)), name
        assert np.all(values >= 0.0), name
    connections = inputs[1] * inputs[2]
    np.testing.assert_allclose(surface["qps"], 20 * surface["tps"])
    np.testing.assert_allclose(surface["latency_avg_ms"], 1000 * connections / surface["tps"])
    assert np.all(surface["latency_p95_ms"] >= surface["latency_avg_ms"])
    assert np.all(surface["abort_rate"] < 1.0)
    assert np.all(surface["flow_control_paused"] <= 1.0)


def test_same_run_key_gives_the_same_trial_and_other_keys_differ():
    target = SimulatedTarget("sim", {"seed": 3, "noise": 0.03})
    config = {"nodes": 4, "clients": 4, "threads_per_client": 8, "write_share": 0.5}
    first = target.run(config, run_key=11)
    assert SimulatedTarget("sim", {"seed": 3, "noise": 0.03}).run(config, run_key=11) == first
    assert target.run(config, run_key=12).responses["tps"] != first.responses["tps"]
    other_seed = SimulatedTarget("sim", {"seed": 4, "noise": 0.03}).run(config, run_key=11)
    assert other_seed.responses["tps"] != first.responses["tps"]


def test_noise_averages_to_the_expected_responses():
    config = {"nodes": 3, "clients": 6, "threads_per_client": 8, "write_share": 0.6}
    expected = expected_responses(config)
    target = SimulatedTarget("sim", {"seed": 0, "noise": 0.03})
    runs = [target.run(config, run_key=key).responses for key in range(400)]
    throughput = np.array([run["tps"] for run in runs])
    assert throughput.mean() == pytest.approx(expected["tps"], rel=0.01)
    assert 0.024 < throughput.std() / throughput.mean() < 0.036
    for name in ("qps", "latency_avg_ms", "errors_per_s", "cert_failures", "bf_aborts"):
        assert np.mean([run[name] for run in runs]) == pytest.approx(expected[name], rel=0.03)


def test_noise_off_returns_the_expected_responses():
    config = {"nodes": 5, "clients": 7, "write_share": 0.9}
    result = SimulatedTarget("sim", {"noise": 0}).run(config, run_key=1)
    assert result.responses == expected_responses(config)


def test_trial_result_honours_the_contract():
    target = SimulatedTarget("sim", {"seed": 0, "noise": 0.03})
    assert target.kind == "simulated"
    result = target.run({"nodes": 3, "clients": 5, "wsrep_slave_threads": 4}, run_key=42)
    assert tuple(result.responses) == GALERA_RESPONSES
    assert all(isinstance(value, float) for value in result.responses.values())
    for text in ("seed 0", "run_key 42", "nodes: 3", "clients: 5", "wsrep_slave_threads: 4"):
        assert text in result.raw_output
    assert f"({result.responses['tps']:.2f} per sec.)" in result.raw_output
    assert tuple(SIMULATED_DEFAULTS) == SIMULATED_FACTORS
    defaults = target.run({}, run_key=1)
    assert set(defaults.responses) == set(GALERA_RESPONSES)


def test_defaults_follow_the_oltp_read_write_mix():
    assert SIMULATED_DEFAULTS["write_share"] == pytest.approx(4 / 18)
    assert expected_responses({}) == expected_responses(SIMULATED_DEFAULTS)


def test_unknown_factor_is_refused_by_name():
    with pytest.raises(TargetError, match="'node_count'"):
        SimulatedTarget("sim", {}).run({"node_count": 3}, run_key=1)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("nodes", 0),
        ("nodes", 17),
        ("nodes", 2.5),
        ("nodes", "3"),
        ("nodes", True),
        ("clients", 0),
        ("clients", 17),
        ("threads_per_client", 257),
        ("wsrep_slave_threads", 0),
        ("wsrep_slave_threads", 65),
        ("runtime_s", 9.9),
        ("runtime_s", 3601),
        ("runtime_s", math.nan),
        ("write_share", -0.01),
        ("write_share", 1.01),
    ],
)
def test_out_of_range_factor_is_refused_by_name(name, value):
    with pytest.raises(TargetError, match=f"'{name}'"):
        expected_responses({name: value})
    with pytest.raises(TargetError, match=f"'{name}'"):
        SimulatedTarget("sim", {}).run({name: value}, run_key=1)


def test_integral_floats_and_numpy_numbers_are_accepted():
    as_floats = expected_responses({"nodes": 3.0, "clients": np.int64(5), "runtime_s": 120})
    assert as_floats == expected_responses({"nodes": 3, "clients": 5, "runtime_s": 120.0})


@pytest.mark.parametrize(
    "settings",
    [
        {"seed": -1},
        {"seed": 1.5},
        {"noise": -0.1},
        {"noise": 2},
        {"noize": 0.1},
        {"max_connections": 0},
        {"max_connections": 6.5},
    ],
)
def test_bad_settings_are_refused(settings):
    with pytest.raises(TargetError):
        SimulatedTarget("sim", settings)


def test_a_node_over_max_connections_fails_the_trial_as_infeasible():
    target = SimulatedTarget("sim", {"max_connections": 64})
    # Clients 0, 2 and 4 of five land on the first of two nodes: 3 x 16 = 48 connections.
    target.run({"nodes": 2, "clients": 5, "threads_per_client": 16}, run_key=1)
    with pytest.raises(InfeasibleError, match=r"Too many connections .* 72 connections"):
        target.run({"nodes": 2, "clients": 5, "threads_per_client": 24}, run_key=2)
    with pytest.raises(InfeasibleError, match=r"Too many connections .* 96 connections"):
        target.run({"nodes": 1, "clients": 3, "threads_per_client": 32}, run_key=3)


def test_true_optimum_refuses_bad_levels_and_responses():
    with pytest.raises(TargetError, match="'nodes'"):
        true_optimum([0, 1], [1], [8], [1], 120, REFERENCE_WRITE_SHARE)
    with pytest.raises(TargetError, match="'clients'"):
        true_optimum([1], [], [8], [1], 120, REFERENCE_WRITE_SHARE)
    with pytest.raises(TargetError, match="'throughput'"):
        true_optimum([1], [1], [8], [1], 120, REFERENCE_WRITE_SHARE, "throughput")
