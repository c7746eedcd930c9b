"""A trial on a real Galera cluster, shared by the `lab` and `external` targets.

Per trial: bring the cluster to the node count (the subclass's job), check that every node is
healthy, set the dynamic server variables named by factors on every node (and set back, at
their values before the first change, those an earlier trial changed: `worker.targets.restore`),
make sure each client's schema `sbtest<i>` is prepared as the trial would prepare it and has not
drifted (`worker.targets.schemas`), read the Galera counters, run one sysbench process per client
(client i on node i mod N) at once, read the counters again, check health again, and combine
everything into the responses. An unhealthy cluster is an infrastructure failure (retried), a
configuration the server refuses is infeasible (never retried).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import shlex
import subprocess
import tempfile
import threading
import time
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pymysql.cursors import Cursor

from experiments.galera.kinds import CLUSTER_FACTORS, MIN_RUNTIME_S, WAN_FACTORS
from experiments.galera.provider_options import (
    is_provider_option_name,
    provider_option,
    provider_value,
)
from experiments.galera.restart_settings import config_value, is_restart_only
from experiments.galera.variable_policy import check_settings
from experiments.galera.workloads import WORKLOAD_OPTIONS, WORKLOADS
from worker import galera_sql, sysbench
from worker.targets import record, restore, schemas
from worker.targets.base import (
    InfeasibleError,
    InfrastructureError,
    Target,
    TargetError,
    TrialCancelledError,
    TrialResult,
    Value,
    check_cancelled,
)

log = logging.getLogger(__name__)

# Workloads that change how many rows the tables hold: after one, the schema is checked again.
RESIZING_WORKLOADS = ("oltp_insert", "oltp_delete", "tpcc")
# Server errors that mean "this configuration cannot run here", not "the cluster broke".
INFEASIBLE_MARKERS = ("Too many connections", "max_connections", "Out of memory", "(1040)")
PREPARE_TIMEOUT_S = 600
# How often a running sysbench is checked for exit and for cancellation, and how long one that
# was told to stop (SIGTERM) gets before SIGKILL.
POLL_S = 0.2
STOP_GRACE_S = 5.0


@dataclass(frozen=True)
class TrialPlan:
    """One trial's settings, from the factors with the target's defaults for the rest."""

    nodes: int
    clients: int
    threads_per_client: int
    runtime_s: int
    workload: str
    variables: dict[str, Value]
    load_nodes: int
    options: dict[str, Value]
    sites: int = 1
    wan_rtt_ms: float = 0.0
    wan_jitter_ms: float = 0.0
    # Galera provider options, written as the provider takes them.
    provider_options: dict[str, str] = dataclasses.field(default_factory=dict)
    # Settings the nodes read only when they start (server variables, provider options).
    restart_settings: dict[str, str] = dataclasses.field(default_factory=dict)


class ClusterTarget(Target):
    """Runs sysbench trials on Galera nodes; subclasses say which nodes and how to reach them."""

    accepted_factors = CLUSTER_FACTORS

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        super().__init__(name, settings)
        self.tables = int(self.settings.get("tables", 4))
        # The TPC-C-like workload's scale divisor (1 = full scale): small on a lab by default,
        # so that preparing a warehouse takes well under a second.
        self.tpcc_scale = int(self.settings.get("tpcc_scale", 100))
        self.table_size = int(self.settings.get("table_size", 10_000))
        self.warmup_s = int(self.settings.get("warmup_s", 2))
        self.reprepare = bool(self.settings.get("reprepare", False))
        # How far (a fraction of its rows) trials may move a schema before it is prepared again.
        self.max_schema_drift = float(self.settings.get("max_schema_drift", schemas.MAX_DRIFT))
        # Single-row INSERTs timed on the writing node per trial, for commit_latency_ms.
        self.commit_probes = int(self.settings.get("commit_probes", 20))
        # Values of the factors an experiment does not vary (settings.defaults overrides them).
        self.defaults: dict[str, Value] = {
            "nodes": 3,
            "clients": 1,
            "threads_per_client": 4,
            "runtime_s": 10,
            "workload": "oltp_read_write",
            **dict(self.settings.get("defaults") or {}),
        }
        # Schemas checked complete since the last trial that resized one.
        self._prepared: set[str] = set()
        self._sysbench_version: str | None = None

    @property
    @abstractmethod
    def restore_file(self) -> Path:
        """Where the values to set back after the trials' settings are kept (`restore`)."""

    @abstractmethod
    def nodes_for(self, count: int) -> list[galera_sql.Node]:
        """The nodes that receive client load for a trial on `count` nodes (ready to use)."""

    def place(self, plan: TrialPlan) -> None:
        """Put the nodes where the trial says (the lab's sites); a real cluster stays put."""

    @abstractmethod
    def restart_with(self, settings: Mapping[str, str], *, every_node: bool = False) -> float:
        """Run the nodes with the restart-only `settings` (restarting them when those differ
        from what they run with, every node with `every_node`); the seconds the restarts
        took, 0 without one."""

    def cluster_size(self, nodes: list[galera_sql.Node]) -> int:
        """The size every node must see throughout the trial: the nodes given (lab)."""
        return len(nodes)

    @property
    @abstractmethod
    def credentials(self) -> galera_sql.Credentials:
        """How sysbench and the status queries log in."""

    def plan(self, config: Mapping[str, Value]) -> TrialPlan:
        """The trial's settings; refuses values no cluster can run."""
        merged = {**self.defaults, **config}
        workload = str(merged["workload"])
        if workload not in WORKLOADS:
            raise InfeasibleError(f"workload must be one of {', '.join(WORKLOADS)}")
        merged.setdefault("load_nodes", merged["nodes"])
        numbers = {}
        for name in ("nodes", "clients", "threads_per_client", "runtime_s", "load_nodes"):
            value = merged[name]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InfeasibleError(f"{name} must be a number")
            if int(value) < 1:
                raise InfeasibleError(f"{name} must be at least 1")
            numbers[name] = int(value)
        if numbers["load_nodes"] > numbers["nodes"]:
            raise InfeasibleError(
                f"load_nodes ({numbers['load_nodes']}) cannot exceed nodes ({numbers['nodes']})"
            )
        wan = {name: merged.get(name, low) for name, (low, _) in WAN_FACTORS.items()}
        for name, (low, high) in WAN_FACTORS.items():
            value = wan[name]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InfeasibleError(f"{name} must be a number")
            if not low <= value <= high:
                raise InfeasibleError(f"{name} must be from {low:g} to {high:g}")
        if wan["sites"] != int(wan["sites"]) or wan["sites"] > numbers["nodes"]:
            raise InfeasibleError(
                f"sites ({wan['sites']}) must be a whole number of sites, each with a node"
                f" (nodes: {numbers['nodes']})"
            )
        if numbers["runtime_s"] < MIN_RUNTIME_S:
            raise InfeasibleError(
                f"runtime_s must be at least {MIN_RUNTIME_S} s: the steady state is estimated "
                "from one-second interval reports"
            )
        variables = {
            k: v for k, v in config.items() if k not in CLUSTER_FACTORS and k not in WAN_FACTORS
        }
        provider, restart = {}, {}
        for name in [k for k in variables if is_provider_option_name(k) or is_restart_only(k)]:
            value = variables.pop(name)
            try:
                text = (
                    provider_value(provider_option(name), value)
                    if is_provider_option_name(name)
                    else config_value(name, value)
                )
            except ValueError as error:
                raise InfeasibleError(str(error)) from error
            (restart if is_restart_only(name) else provider)[name] = text
        if "wsrep_slave_threads" in config:
            variables["wsrep_slave_threads"] = config["wsrep_slave_threads"]
        try:
            # The API checked them at submission; checked again here, as the worker sets them.
            variables = check_settings(variables, self.settings)
        except ValueError as error:
            raise InfeasibleError(str(error)) from error
        owned = {name: w for w, names in WORKLOAD_OPTIONS.items() for name in names}
        options = {k: merged[k] for k in owned if k in merged}
        foreign = [k for k in options if owned[k] != workload]
        if foreign:
            raise InfeasibleError(
                f"{', '.join(foreign)} apply to the {owned[foreign[0]]} workload only"
            )
        if workload == "tpcc":
            options = {
                "warehouses": int(options.get("warehouses", 1)),
                "tpcc_scale": self.tpcc_scale,
                "tpcc_warmup": self.warmup_s,
            }
        return TrialPlan(
            workload=workload,
            variables=variables,
            options=options,
            sites=int(wan["sites"]),
            wan_rtt_ms=float(wan["wan_rtt_ms"]),
            wan_jitter_ms=float(wan["wan_jitter_ms"]),
            provider_options=provider,
            restart_settings=restart,
            **numbers,
        )

    def run(
        self,
        config: Mapping[str, Value],
        *,
        run_key: int,
        cancel: threading.Event | None = None,
        fresh: bool = False,
    ) -> TrialResult:
        """Run one trial (module docstring); `cancel` stops its sysbench processes, `fresh`
        restarts every node first."""
        plan = self.plan(config)
        check_cancelled(cancel)
        try:
            # A resize is not interrupted (a half-joined node is worse than a late stop): the
            # cancellation is honoured between the phases and during every sysbench run.
            self.place(plan)
            # Before a resize: nodes it starts must start with the settings already.
            restart_s = self.restart_with(plan.restart_settings)
            nodes = self.nodes_for(plan.nodes)
            if fresh and restart_s == 0:
                # After the resize, so only the trial's nodes restart; a restart for the
                # settings above restarted every node already, and a node the resize
                # started is fresh.
                restart_s = self.restart_with(plan.restart_settings, every_node=True)
            check_cancelled(cancel)
            size = self.cluster_size(nodes)
            galera_sql.check_healthy(nodes, self.credentials, expected_size=size)
            self.apply_settings(nodes, plan)
            with sysbench.password_file(self.credentials.password) as secret:
                self.prepare_schemas(nodes[0], plan, cancel, secret=secret)
                # Timed on the idle cluster, as the published WAN study timed its INSERTs.
                commit_ms = galera_sql.commit_latency_ms(
                    nodes[0], self.credentials, self.commit_probes
                )
                argvs = self._run_commands(nodes, plan, secret)
                # One snapshot of every node on each side of the run serves the responses and
                # the record alike (a second read would reset wsrep_local_recv_queue_avg again).
                states_before = record.node_states(nodes, self.credentials)
                started = time.monotonic()
                outputs = self._benchmark(argvs, plan, cancel, secret)
                elapsed = time.monotonic() - started
            states_after = record.node_states(nodes, self.credentials)
            if plan.workload in RESIZING_WORKLOADS:
                self._prepared.clear()
            before = [state["wsrep_status"] for state in states_before]
            after = [state["wsrep_status"] for state in states_after]
            galera_sql.check_healthy(nodes, self.credentials, expected_size=size)
            _check_membership_unchanged(before, after)
            kept = record.trial_record(
                versions=self._versions(nodes[0]),
                plan=dataclasses.asdict(plan),
                commands=[self._redact(shlex.join(argv)) for argv in argvs],
                before=states_before,
                after=states_after,
            )
        except galera_sql.VariableError as error:
            raise InfeasibleError(str(error)) from error
        except galera_sql.GaleraError as error:
            raise InfrastructureError(str(error)) from error
        raw_output = self._redact("\n".join(outputs))
        try:
            combined = sysbench.combine([sysbench.parse(output) for output in outputs])
            responses = _responses(combined, before, after, elapsed)
            responses["commit_latency_ms"] = commit_ms
            responses["restart_s"] = restart_s
            if plan.workload == "tpcc":
                responses |= _tpcc_responses(sysbench.tpcc_counts(outputs))
        except sysbench.SysbenchOutputError as error:
            raise TargetError(f"{error}: {raw_output[-2000:]}") from error
        return TrialResult(responses=responses, raw_output=raw_output, record=kept)

    def apply_settings(self, nodes: list[galera_sql.Node], plan: TrialPlan) -> None:
        """Set the trial's server variables and provider options on `nodes`, and every other
        one an earlier trial (of this process or another) changed back at its value before the
        first change. Those values are in `restore_file`, written before the first `SET`:
        a worker killed at any point leaves them to the next trial."""
        saved = restore.load(self.restore_file)
        new_options = [n for n in plan.provider_options if n not in saved.provider_options]
        reported = galera_sql.provider_options(nodes[0], self.credentials) if new_options else {}
        originals = restore.Originals(
            saved.variables
            | galera_sql.read_globals(
                nodes[0], self.credentials, [n for n in plan.variables if n not in saved.variables]
            ),
            saved.provider_options | {n: reported[n] for n in new_options if n in reported},
        )
        if originals != saved:
            restore.save(self.restore_file, originals)
        back = originals.only(
            [n for n in originals.variables if n not in plan.variables],
            [n for n in originals.provider_options if n not in plan.provider_options],
        )
        galera_sql.set_globals(nodes, self.credentials, back.variables | plan.variables)
        galera_sql.set_provider_options(
            nodes, self.credentials, back.provider_options | plan.provider_options
        )
        left = originals.only(plan.variables, plan.provider_options)
        if left != originals:
            restore.save(self.restore_file, left)

    def prepare_schemas(
        self,
        node: galera_sql.Node,
        plan: TrialPlan,
        cancel: threading.Event | None = None,
        *,
        secret: sysbench.PasswordFile | None,
    ) -> list[str]:
        """Prepare each schema the trial's clients use unless it is as the trial's prepare
        would leave it (`schemas`); the schemas prepared. `secret`: the password file."""
        prepared = []
        made = schemas.layout(
            plan.workload, tables=self.tables, table_size=self.table_size, options=plan.options
        )
        for database in sorted({_database(plan, c) for c in range(1, plan.clients + 1)}):
            check_cancelled(cancel)
            if database in self._prepared and not self.reprepare:
                continue
            with self._schema_cursor(node, database) as cursor:
                why = "reprepare is set" if self.reprepare else ""
                why = why or schemas.problem(cursor, database, made, self.max_schema_drift)
                if not why:
                    self._prepared.add(database)
                    continue
                log.info("preparing %s on %s: %s", database, node.name, why)
                cursor.execute(f"DROP DATABASE IF EXISTS {database}")
                cursor.execute(f"CREATE DATABASE {database}")
            tpcc = plan.workload == "tpcc"
            # Every oltp-family workload runs on the same tables: one prepare for all of them,
            # without the options of a script that only runs.
            argv = sysbench.prepare_command(
                self._connection(node, database, secret),
                workload=plan.workload if tpcc else schemas.OLTP_PREPARE,
                tables=self.tables,
                table_size=self.table_size,
                options={k: v for k, v in plan.options.items() if k != "tpcc_warmup"}
                if tpcc
                else {},
                auto_inc=tpcc,
            )
            # A prepare cut short leaves no marker: the schema is prepared again next time.
            ((code, output),) = run_processes(
                [argv],
                timeout=PREPARE_TIMEOUT_S,
                cancel=cancel,
                name=f"prepare of {database}",
                pass_fds=sysbench.inherited(secret),
            )
            if code != 0:
                raise TargetError(
                    f"sysbench prepare of {database} failed: " + self._redact(output[-2000:])
                )
            with self._schema_cursor(node, database) as cursor:
                schemas.finish(cursor, database, made)
            self._prepared.add(database)
            prepared.append(database)
        return prepared

    def _schema_cursor(
        self, node: galera_sql.Node, database: str
    ) -> contextlib.AbstractContextManager[Cursor]:
        """A cursor for checking and finishing a schema: counting and altering big tables
        takes longer than a status query."""
        connection = galera_sql.connect(node, self.credentials, timeout=PREPARE_TIMEOUT_S)
        return galera_sql.cursor_of(connection, f"the schema {database} on {node.name}")

    def _run_commands(
        self, nodes: list[galera_sql.Node], plan: TrialPlan, secret: sysbench.PasswordFile | None
    ) -> list[list[str]]:
        """One sysbench run per client machine; clients go round the nodes that take load,
        the others only replicate."""
        loaded = nodes[: plan.load_nodes]
        commands = []
        for client in range(1, plan.clients + 1):
            # A client machine sits in its node's site.
            node = loaded[(client - 1) % len(loaded)]
            argv = sysbench.run_command(
                self._connection(node, _database(plan, client), secret),
                workload=plan.workload,
                threads=plan.threads_per_client,
                time_s=plan.runtime_s,
                warmup_s=self.warmup_s,
                tables=self.tables,
                table_size=self.table_size,
                options=plan.options,
            )
            commands.append(node.local_command(argv))
        return commands

    def _benchmark(
        self,
        argvs: list[list[str]],
        plan: TrialPlan,
        cancel: threading.Event | None,
        secret: sysbench.PasswordFile | None,
    ) -> list[str]:
        deadline = plan.runtime_s + self.warmup_s + 120
        outputs = []
        inherited = sysbench.inherited(secret)
        for code, output in run_processes(
            argvs, timeout=deadline, cancel=cancel, pass_fds=inherited
        ):
            if code != 0:
                tail = self._redact(output[-2000:])
                if any(marker in output for marker in INFEASIBLE_MARKERS):
                    raise InfeasibleError(f"the server refused the load: {tail}")
                raise TargetError(f"sysbench exited {code}: {tail}")
            outputs.append(output)
        return outputs

    def _versions(self, node: galera_sql.Node) -> dict[str, str]:
        if self._sysbench_version is None:
            done = subprocess.run(["sysbench", "--version"], capture_output=True, text=True)
            self._sysbench_version = done.stdout.strip() or done.stderr.strip()
        return record.versions(node, self.credentials, self._sysbench_version)

    def _connection(
        self, node: galera_sql.Node, database: str, secret: sysbench.PasswordFile | None
    ) -> sysbench.Connection:
        return sysbench.Connection(
            host=node.host,
            port=node.port,
            user=self.credentials.user,
            database=database,
            password_file=secret,
        )

    def _redact(self, text: str) -> str:
        return sysbench.redact(text, self.credentials.password)

    def recover(self) -> None:
        """Schemas may be half-prepared after a failure: prepare them again next time."""
        self._prepared.clear()


def run_processes(
    argvs: Sequence[list[str]],
    *,
    timeout: float,
    cancel: threading.Event | None = None,
    name: str = "sysbench",
    pass_fds: Sequence[int] = (),
) -> list[tuple[int, str]]:
    """Run the commands at once and return each one's exit code and output, in order; each
    inherits the descriptors `pass_fds` (the password file) and no other.

    Every process is stopped by its pid (SIGTERM, SIGKILL after STOP_GRACE_S) when `cancel` is
    set (TrialCancelledError), when `timeout` seconds pass (InfrastructureError), or on any
    other exception: none outlives the call.
    """
    processes: list[subprocess.Popen[bytes]] = []
    with contextlib.ExitStack() as files:
        # Files, not pipes: an hour of interval reports would fill a pipe read only at the end.
        outputs = [files.enter_context(tempfile.TemporaryFile()) for _ in argvs]
        try:
            for argv, output in zip(argvs, outputs, strict=True):
                process = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    pass_fds=pass_fds,
                )
                processes.append(process)
                log.info("started %s (pid %d)", name, process.pid)
            deadline = time.monotonic() + timeout
            while any(process.poll() is None for process in processes):
                if cancel is not None and cancel.wait(POLL_S):
                    pids = ", ".join(str(p.pid) for p in processes)
                    log.info("trial cancelled: stopping %s (pid %s)", name, pids)
                    raise TrialCancelledError(f"the trial was cancelled; {name} was stopped")
                if cancel is None:
                    time.sleep(POLL_S)
                if time.monotonic() > deadline:
                    raise InfrastructureError(f"{name} did not finish within {timeout:g} s")
        finally:
            _stop(processes)
        results = []
        for process, output in zip(processes, outputs, strict=True):
            output.seek(0)
            results.append((process.returncode, output.read().decode(errors="replace")))
        return results


def _stop(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every process still running, SIGKILL those that outlive the grace; reap all."""
    running = [process for process in processes if process.poll() is None]
    for process in running:
        process.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for process in running:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _check_membership_unchanged(before: list[dict[str, str]], after: list[dict[str, str]]) -> None:
    """Healthy before and after is not enough: a node that left and came back during the run
    changed the cluster's configuration id, and the run did not measure one cluster."""
    if [b["wsrep_cluster_conf_id"] for b in before] != [a["wsrep_cluster_conf_id"] for a in after]:
        raise galera_sql.GaleraError("the cluster's membership changed during the trial")


def _tpcc_responses(counts: sysbench.TpccCounts) -> dict[str, float]:
    """NOTPM (tpmc: the same count under TPC-C's name), the rollback rate of new orders and
    their p95 latency; the abort rate of certification conflicts stays in `abort_rate`."""
    return {
        "notpm": counts.notpm,
        "tpmc": counts.notpm,
        "rollback_rate": counts.rollback_rate,
        "new_order_latency_p95_ms": counts.latency_p95_ms,
    }


def _database(plan: TrialPlan, client: int) -> str:
    """The schema a client machine works in: its own (as the published study ran), except
    under rw_mix, whose question is how writers on different nodes collide on one hot set, and
    tpcc, whose clients share the warehouses (one schema per warehouse count, reused)."""
    if plan.workload == "tpcc":
        return f"tpcc_w{plan.options['warehouses']}"
    return "sbtest1" if plan.workload == "rw_mix" else f"sbtest{client}"


def _responses(
    combined: sysbench.Combined,
    before: list[dict[str, str]],
    after: list[dict[str, str]],
    elapsed_s: float,
) -> dict[str, float]:
    def delta(name: str) -> float:
        return sum(float(a[name]) - float(b[name]) for a, b in zip(after, before, strict=True))

    nodes = len(after)
    transactions = combined.transactions
    errors = combined.ignored_errors
    return {
        "tps": combined.tps,
        "qps": combined.qps,
        "latency_avg_ms": combined.latency_avg_ms,
        "latency_p95_ms": combined.latency_p95_ms,
        "errors_per_s": combined.errors_per_s,
        "reconnects_per_s": combined.reconnects_per_s,
        "cert_failures": delta("wsrep_local_cert_failures"),
        "bf_aborts": delta("wsrep_local_bf_aborts"),
        # Each node counts the time it was paused; flow control pauses the whole cluster.
        "flow_control_paused": delta("wsrep_flow_control_paused_ns") / (nodes * elapsed_s * 1e9),
        # Reading wsrep_local_recv_queue_avg resets it: the value after is the run's average.
        "recv_queue_avg": sum(float(a["wsrep_local_recv_queue_avg"]) for a in after) / nodes,
        # How many write-sets could be applied in parallel (averaged over the node's life).
        "cert_deps_distance": sum(float(a["wsrep_cert_deps_distance"]) for a in after) / nodes,
        "abort_rate": errors / (transactions + errors) if transactions + errors else 0.0,
        "tps_steady": combined.steady.tps_mean,
        "tps_se": combined.steady.tps_se,
        "latency_p95_steady_ms": combined.steady.p95_mean,
        "latency_p95_se_ms": combined.steady.p95_se,
    }
