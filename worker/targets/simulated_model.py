"""The analytic model of a Galera cluster running sysbench oltp_read_write behind the
`simulated` target (`worker.targets.simulated`): `response_surface` evaluates whole arrays of
configurations, noise-free; `solve` and `responses` are its two steps (the target adds noise
between them). Inputs: n = nodes, c = clients, t = threads_per_client, s = wsrep_slave_threads,
T = runtime_s, w = write_share.

The model (ms and transactions per second; N = c t connections; 2 vCPUs per node):

1. Placement. Client i talks to node i mod n: c mod n nodes hold (c // n + 1) t connections, the
   others (c // n) t, which is none when c < n. N_j is node j's share.
2. Work. A transaction has 18 statements; a share f = 1 - (1 - w)^18 of transactions writes and
   replicates.
   CPU on its own node: D_e = cpu_ms u(w) / u(4/18), u(w) = 18 ((1 - w) + write_cost w) +
   writeset_cost f, in read-statement units. Applying it on each other node (row events):
   D_a = cpu_ms apply_cost 18 w / u(4/18).
3. One connection alone takes S = wait_ms + D_e + f commit_ms_per_peer (n - 1): client round
   trips, CPU, replication to the peers. Certification and commit ordering are serialized across
   the cluster for C = f (serial_ms + serial_ms_per_peer (n - 1)).
4. Universal Scalability Law. A connection on node j offers
       x_j = (1000 / S) / (1 + sigma (N - 1)) / (1 + kappa N_j (N_j - 1)),   sigma = C / S:
   contention over all N connections of the cluster, growing with nodes through C and S, and
   coherency (kappa = `coherency`) among the threads of one 2-vCPU node. A cluster-wide coherency
   term kappa' N (N - 1) fitted to zero, so coherency is per node.
5. Node CPU. Node j offers O_j = N_j x_j, but its CPUs also apply the other nodes' writesets,
   A_j = X (1 - N_j / N) D_a, leaving capacity K_j = (2000 - A_j) / D_e. It serves
   X_j = O_j / (1 + (O_j / K_j)^knee)^(1 / knee), a smooth min(O_j, K_j); knee = 4 matches exact
   mean value analysis of a 2-vCPU node behind a delay within 5 %.
6. Flow control. The appliers (min(s, 2) CPUs, shared with local work of utilization U_j) are
   loaded rho_j = A_j / (1000 min(s, 2) (1 - U_j)); the receive queue is M/M/1/K with
   K = gcs.fc_limit = 16, and the cluster runs while no queue is full:
   R = prod_j (1 - P_full(rho_j)).
7. The cluster's attempt rate solves X = R(X) sum_j X_j(X) (bisection: the right side falls as
   X rises).
8. Certification conflicts need a concurrent writer on another node. With M = N (1 - sum_j
   (N_j / N)^2) such connections, an attempt fails with p = 1 - exp(-conflict w^2 M) and is
   retried: tps = X (1 - p), p / (1 - p) errors per commit. An error is a cert failure with
   probability (C + f commit_ms_per_peer (n - 1)) / latency (the conflicting writeset came while
   this one replicated or certified), a BF abort otherwise (it came while this one executed).
9. Applier threads cost tps a factor 1 + slave_thread_cost log2(s) (scheduling and commit-order
   waits on 2 vCPUs; at the study's loads they never helped). Their benefit is in step 6.
10. Runtime. After stall_after_s = 120 s the cluster stalls and runs at stall_share of its rate,
    so a run measures tps times (min(T, 120) + stall_share max(T - 120, 0)) / T. The study does
    not say why; a node stuck in InnoDB sync flushing or out of VM burst credit would do it, and
    flow control would hold the whole cluster with it.
11. Responses: qps = 20 tps (BEGIN and COMMIT count); latency_avg_ms = 1000 N / tps (Little's
    law); latency_p95_ms = S + ln(20) (latency_avg_ms - S), the queueing part taken as
    exponential; errors_per_s, cert_failures and bf_aborts (counts over the run, all nodes);
    flow_control_paused: 1 - R before the stall, 1 - stall_share during it; recv_queue_avg: the
    M/M/1/K mean over nodes, one node at the limit during the stall; abort_rate = errors /
    (transactions + errors); reconnects_per_s = 0 (the model loses no connections).

Constants (`Calibration`), from benchmarks/calibrate_simulated.py:
- least squares in log TPS over the 27 rows of galera_nodes_connections_mariadb11.csv:
  wait_ms 4.387, commit_ms_per_peer 0.2833, serial_ms 0.4645, serial_ms_per_peer 0.02745,
  coherency 1.874e-4, stall_share 0.113. Median absolute error 1.5 %, worst 16.7 % (test 18).
  The rows with empty wsrep_slave_threads and runtime_s (tests 26-33, the later runs) are taken
  at 4 threads and 120 s as the study had settled on them; reading them as 1 thread gives a
  median of 3.2 %, as 180 s a median of 3.4 % and a worst row of 22 %.
- galera_rw_ratio_mysql51.csv (CPU-bound single-core nodes: n masters sustain
  n / (D_e + (n - 1) D_a); 5-statement transactions): write_cost 0.9158, writeset_cost 2.609,
  apply_cost 1.055 (a row applied costs about one read statement) and conflict 4.165e-4
  (abort rate 0.6 % at 100 % writes on 4 nodes with 5 users each).
- slave_thread_cost 0.02745 from tests 22, 23 and 23b (1196, 1132, 1106 TPS at 1, 4, 8 threads).
- Assumed: cpu_ms 1.5 (a node saturates near 1333 TPS). The study never loaded one node beyond
  8 connections, so it barely constrains this (median error 1.3, 1.5, 2.3 % at 1, 1.5, 2 ms);
  1.5 ms is the most CPU-bound value that keeps the study's best configurations (3-4 nodes)
  optimal: at 2 ms the optimum moves to 6 nodes. knee 4 (step 5). stall_after_s 120: two
  runtimes identify one ratio, so the start is chosen: later starts cannot reach the measured
  drop, earlier ones fit worse (60 s: worst row 32 %).

Limits worth knowing:
- Test 18 (180 s, 604 TPS) completed fewer transactions in 180 s than tests 19 and 20 (same
  settings, 120 s, 925 and 920 TPS) did in 120 s, which no model with positive throughput can
  match; that row alone makes the stall deep. Without it the fit gives stall_share 0.68 and a
  worst row of 5.6 %. Beyond the study's 180 s the stall is extrapolation: long runs measure a
  small fraction of short ones.
- The write share dependence and the conflict rate come from MySQL 5.1 with early Galera, as
  relative effects; conflicts assume clients share tables, as in that study (the nodes/connections
  study gave each client a schema of its own, where cross-node conflicts would be rare).
- There is no plain server (nodes >= 1): the one-node Galera cost, 5-20 % in the read/write and
  DBT2 studies, lies inside cpu_ms, writeset_cost and serial_ms.
- Far beyond the optimum (hundreds of threads per node) the USL coherency makes throughput
  collapse and Little's law gives latencies longer than the run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]

STATEMENTS_PER_TRX = 18  # oltp_read_write: 10 point selects, 4 range selects, 4 writes
QUERIES_PER_TRX = STATEMENTS_PER_TRX + 2  # sysbench also counts BEGIN and COMMIT
REFERENCE_WRITE_SHARE = 4 / STATEMENTS_PER_TRX
VCPUS_PER_NODE = 2
FC_LIMIT = 16  # gcs.fc_limit default: writesets a node may queue before it pauses the cluster
P95_OF_EXPONENTIAL = math.log(20.0)  # 95th percentile of an exponential, in units of its mean


@dataclass(frozen=True)
class Calibration:
    """The model's constants; the defaults are the calibrated values (see the module docstring)."""

    # Fitted on galera_nodes_connections_mariadb11.csv (benchmarks/calibrate_simulated.py).
    wait_ms: float = 4.387
    commit_ms_per_peer: float = 0.2833
    serial_ms: float = 0.4645
    serial_ms_per_peer: float = 0.02745
    coherency: float = 1.874e-4
    stall_share: float = 0.113
    # Fitted on galera_rw_ratio_mysql51.csv (same script).
    write_cost: float = 0.9158
    writeset_cost: float = 2.609
    apply_cost: float = 1.055
    conflict: float = 4.165e-4
    # From the three rows of the nodes/connections study where only wsrep_slave_threads varies.
    slave_thread_cost: float = 0.02745
    # Assumptions the study cannot identify (module docstring says why these values).
    cpu_ms: float = 1.5
    knee: float = 4.0
    stall_after_s: float = 120.0


CALIBRATION = Calibration()


class _Solution(NamedTuple):
    """Noise-free state of a batch of configurations (arrays broadcast together)."""

    fast_tps: FloatArray  # committed transactions/s before the stall
    connections: FloatArray
    nodes: FloatArray
    service_ms: FloatArray  # one transaction with no queueing anywhere
    window_ms: FloatArray  # replication + certification: when a conflict is a cert failure
    retries: FloatArray  # failed certification attempts per committed transaction
    apply_rho: FloatArray  # applier utilization per node class (last axis: the 2 classes)
    class_nodes: FloatArray
    runtime_s: FloatArray
    fast_s: FloatArray  # seconds of the run before the stall


def _replicated_share(write_share: FloatArray | float) -> FloatArray:
    """Share of transactions with at least one write, i.e. that produce a writeset."""
    return 1.0 - (1.0 - np.asarray(write_share)) ** STATEMENTS_PER_TRX


def _cost_units(write_share: FloatArray | float, k: Calibration) -> FloatArray:
    """CPU cost of executing one transaction, in units of one read statement."""
    w = np.asarray(write_share)
    statements = STATEMENTS_PER_TRX * ((1.0 - w) + k.write_cost * w)
    return statements + k.writeset_cost * _replicated_share(w)


def _queue(rho: FloatArray) -> tuple[FloatArray, FloatArray]:
    """M/M/1/K receive queue with K = FC_LIMIT: probability it is full, and its mean length."""
    # The geometric-sum form stays finite at rho = 1; beyond 1e6 the queue is full anyway.
    powers = np.minimum(rho, 1e6)[..., None] ** np.arange(FC_LIMIT + 1)
    total = powers.sum(axis=-1)
    return powers[..., -1] / total, (powers * np.arange(FC_LIMIT + 1)).sum(axis=-1) / total


@dataclass(frozen=True)
class _Layout:
    """Where the connections are: client i talks to node i mod n, so r nodes serve q + 1
    clients and the other n - r serve q (two classes of nodes, last axis)."""

    connections: FloatArray
    class_nodes: FloatArray
    class_conn: FloatArray

    @classmethod
    def of(cls, n: FloatArray, c: FloatArray, t: FloatArray) -> _Layout:
        q = np.floor(c / n)
        r = c - q * n
        return cls(
            connections=c * t,
            class_nodes=np.stack([r, n - r], axis=-1),
            class_conn=np.stack([(q + 1.0) * t, q * t], axis=-1),
        )

    @property
    def remote_share(self) -> FloatArray:
        """The share of the cluster's connections on other nodes than each class's node."""
        return 1.0 - self.class_conn / self.connections[..., None]


@dataclass(frozen=True)
class _Costs:
    """Milliseconds per transaction: executing it, applying it on a peer, certifying and
    committing it (with the serialized part of that), and its whole service time."""

    exec_ms: FloatArray
    apply_ms: FloatArray
    commit_ms: FloatArray
    serial_ms: FloatArray
    service_ms: FloatArray

    @classmethod
    def of(cls, peers: FloatArray, w: FloatArray, k: Calibration) -> _Costs:
        replicated = _replicated_share(w)
        reference_units = _cost_units(REFERENCE_WRITE_SHARE, k)
        exec_ms = k.cpu_ms * _cost_units(w, k) / reference_units
        commit_ms = replicated * k.commit_ms_per_peer * peers
        return cls(
            exec_ms=exec_ms,
            apply_ms=k.cpu_ms * k.apply_cost * STATEMENTS_PER_TRX * w / reference_units,
            commit_ms=commit_ms,
            serial_ms=replicated * (k.serial_ms + k.serial_ms_per_peer * peers),
            service_ms=k.wait_ms + exec_ms + commit_ms,
        )


def solve(
    nodes: ArrayLike,
    clients: ArrayLike,
    threads_per_client: ArrayLike,
    wsrep_slave_threads: ArrayLike,
    runtime_s: ArrayLike,
    write_share: ArrayLike,
    k: Calibration = CALIBRATION,
) -> _Solution:
    """Solve the model for arrays of (validated) configurations."""
    arrays = (nodes, clients, threads_per_client, wsrep_slave_threads, runtime_s, write_share)
    n, c, t, s, runtime, w = np.broadcast_arrays(
        *(np.asarray(value, dtype=np.float64) for value in arrays)
    )
    layout, costs = _Layout.of(n, c, t), _Costs.of(n - 1.0, w, k)
    attempts = _attempts(layout, costs, s, k)
    # attempts(X) falls as X rises (more apply load, more flow control): bisect X = attempts(X).
    low = np.zeros_like(layout.connections)
    high = attempts(low)[0]
    for _ in range(60):
        mid = 0.5 * (low + high)
        above = attempts(mid)[0] > mid
        low = np.where(above, mid, low)
        high = np.where(above, high, mid)
    rate = 0.5 * (low + high)
    conn_share = layout.class_conn / layout.connections[..., None]
    remote_writers = layout.connections * (1.0 - (layout.class_nodes * conn_share**2).sum(-1))
    # Each attempt conflicts with probability p = 1 - exp(-x) and is retried until it commits:
    # p / (1 - p) = exp(x) - 1 failed attempts per committed transaction.
    retries = np.expm1(k.conflict * w**2 * remote_writers)
    return _Solution(
        fast_tps=rate / (1.0 + retries) / (1.0 + k.slave_thread_cost * np.log2(s)),
        connections=layout.connections,
        nodes=n,
        service_ms=costs.service_ms,
        window_ms=costs.commit_ms + costs.serial_ms,
        retries=retries,
        apply_rho=attempts(rate)[1],
        class_nodes=layout.class_nodes,
        runtime_s=runtime,
        fast_s=np.minimum(runtime, k.stall_after_s),
    )


def _attempts(
    layout: _Layout, costs: _Costs, slave_threads: FloatArray, k: Calibration
) -> Callable[[FloatArray], tuple[FloatArray, FloatArray]]:
    """The attempt rate the cluster sustains if it runs a given total, and the appliers' load."""
    connections, class_conn = layout.connections, layout.class_conn
    # Universal Scalability Law: contention among all N connections of the cluster (they share
    # the serialized certification and commit path), coherency among the node's own threads.
    service_ms, serial_ms = costs.service_ms, costs.serial_ms
    per_connection = (1000.0 / service_ms) / (1.0 + serial_ms / service_ms * (connections - 1.0))
    node_coherency = 1.0 + k.coherency * class_conn * np.maximum(class_conn - 1.0, 0.0)
    offered = per_connection[..., None] * class_conn / node_coherency
    cpu_ms_per_s = 1000.0 * VCPUS_PER_NODE
    applier_ms_per_s = 1000.0 * np.minimum(slave_threads, VCPUS_PER_NODE)
    exec_ms = costs.exec_ms[..., None]

    def attempts(total: FloatArray) -> tuple[FloatArray, FloatArray]:
        apply_load = total[..., None] * layout.remote_share * costs.apply_ms[..., None]
        capacity = np.maximum(cpu_ms_per_s - apply_load, 1e-9) / exec_ms
        served = offered / (1.0 + (offered / capacity) ** k.knee) ** (1.0 / k.knee)
        # Appliers share the node's CPUs with local transactions (processor sharing).
        busy = np.minimum((served * exec_ms + apply_load) / cpu_ms_per_s, 1.0 - 1e-6)
        rho = apply_load / (applier_ms_per_s[..., None] * (1.0 - busy))
        running = np.prod((1.0 - _queue(rho)[0]) ** layout.class_nodes, axis=-1)
        return (served * layout.class_nodes).sum(axis=-1) * running, rho

    return attempts


def responses(
    solution: _Solution,
    k: Calibration = CALIBRATION,
    scale: float = 1.0,
    rng: np.random.Generator | None = None,
) -> dict[str, FloatArray]:
    """Responses of solved configurations; `scale` and `rng` add the run's noise."""
    runtime = solution.runtime_s
    stalled_s = runtime - solution.fast_s
    tps = solution.fast_tps * scale * (solution.fast_s + k.stall_share * stalled_s) / runtime
    latency_ms = 1000.0 * solution.connections / tps
    conflicts = tps * runtime * solution.retries
    cert_share = np.minimum(solution.window_ms / latency_ms, 1.0)
    cert_failures = conflicts * cert_share
    bf_aborts = conflicts - cert_failures
    if rng is not None:
        cert_failures = np.asarray(rng.poisson(cert_failures), dtype=np.float64)
        bf_aborts = np.asarray(rng.poisson(bf_aborts), dtype=np.float64)
    errors = cert_failures + bf_aborts
    full, queue_len = _queue(solution.apply_rho * scale)
    paused_fast = 1.0 - np.prod((1.0 - full) ** solution.class_nodes, axis=-1)
    queue_fast = (solution.class_nodes * queue_len).sum(axis=-1) / solution.nodes
    # During the stall one node is stuck at the queue limit and flow control holds the cluster.
    queue_stalled = (FC_LIMIT + (solution.nodes - 1.0) * queue_fast) / solution.nodes
    paused = (solution.fast_s * paused_fast + stalled_s * (1.0 - k.stall_share)) / runtime
    queue = (solution.fast_s * queue_fast + stalled_s * queue_stalled) / runtime
    queueing_ms = np.maximum(latency_ms - solution.service_ms, 0.0)
    return {
        "tps": tps,
        "qps": QUERIES_PER_TRX * tps,
        "latency_avg_ms": latency_ms,
        "latency_p95_ms": solution.service_ms + P95_OF_EXPONENTIAL * queueing_ms,
        "errors_per_s": errors / runtime,
        "reconnects_per_s": np.zeros_like(tps),  # the model loses no connections
        "cert_failures": cert_failures,
        "bf_aborts": bf_aborts,
        "flow_control_paused": paused,
        "recv_queue_avg": queue,
        "abort_rate": errors / (tps * runtime + errors),
    }


def response_surface(
    nodes: ArrayLike,
    clients: ArrayLike,
    threads_per_client: ArrayLike,
    wsrep_slave_threads: ArrayLike,
    runtime_s: ArrayLike,
    write_share: ArrayLike,
    calibration: Calibration = CALIBRATION,
) -> dict[str, FloatArray]:
    """Noise-free responses for arrays of configurations (broadcast together, not range-checked)."""
    solution = solve(
        nodes, clients, threads_per_client, wsrep_slave_threads, runtime_s, write_share, calibration
    )
    return responses(solution, calibration)
