"""A trial on a real Galera cluster, shared by the `lab` and `external` targets.

Per trial: bring the cluster to the node count (the subclass's job), check that every node is
healthy, set the dynamic server variables named by factors on every node (and set back, at
their values before the first change, those an earlier trial changed: `worker.targets.restore`),
make sure each client's schema `sbtest<i>` is prepared as the trial would prepare it and has not
drifted (`worker.targets.schemas`), read the Galera counters, run one sysbench process per client
(client i on node i mod N) at once, read the counters again, check health again, and combine
everything into the responses. An unhealthy cluster is an infrastructure failure (retried), a
configuration the server refuses is infeasible (never retried). A trial that reads today's
settings first (a baseline's "current": `read_current`) gets the nodes ready the same way and
reads them with every earlier trial's setting set back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import shlex
import subprocess
import threading
import time
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pymysql.cursors import Cursor

from experiments.galera.kinds import CLUSTER_FACTORS
from experiments.galera.provider_options import is_provider_option_name, reported_value
from worker import galera_sql, sysbench, sysbench_output
from worker.targets import record, restore, schemas
from worker.targets.base import (
    InfeasibleError,
    InfrastructureError,
    Target,
    TargetError,
    TrialResult,
    Value,
    check_cancelled,
)
from worker.targets.cluster_responses import Measured, check_membership_unchanged, trial_responses
from worker.targets.processes import run_processes
from worker.targets.trial_plan import TrialPlan, plan_trial

log = logging.getLogger(__name__)

# Workloads that change how many rows the tables hold: after one, the schema is checked again.
RESIZING_WORKLOADS = ("oltp_insert", "oltp_delete", "tpcc")
# Server errors that mean "this configuration cannot run here", not "the cluster broke".
INFEASIBLE_MARKERS = ("Too many connections", "max_connections", "Out of memory", "(1040)")
PREPARE_TIMEOUT_S = 600


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
        return plan_trial(
            config,
            defaults=self.defaults,
            settings=self.settings,
            tpcc_scale=self.tpcc_scale,
            warmup_s=self.warmup_s,
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
            nodes, restart_s = self._ready(plan, cancel, fresh=fresh)
            size = self.cluster_size(nodes)
            galera_sql.check_healthy(nodes, self.credentials, expected_size=size)
            self.apply_settings(nodes, plan)
            measured = self._measure(nodes, plan, cancel)
            if plan.workload in RESIZING_WORKLOADS:
                self._prepared.clear()
            galera_sql.check_healthy(nodes, self.credentials, expected_size=size)
            check_membership_unchanged(measured.before, measured.after)
            kept = record.trial_record(
                versions=self._versions(nodes[0]),
                plan=dataclasses.asdict(plan),
                commands=[self._redact(shlex.join(argv)) for argv in measured.argvs],
                before=measured.states_before,
                after=measured.states_after,
            )
        except galera_sql.VariableError as error:
            raise InfeasibleError(str(error)) from error
        except galera_sql.GaleraError as error:
            raise InfrastructureError(str(error)) from error
        raw_output = self._redact("\n".join(measured.outputs))
        try:
            responses = trial_responses(measured, restart_s=restart_s, workload=plan.workload)
        except sysbench_output.SysbenchOutputError as error:
            raise TargetError(f"{error}: {raw_output[-2000:]}") from error
        return TrialResult(responses=responses, raw_output=raw_output, record=kept)

    def read_current(self, config: Mapping[str, Value], names: Sequence[str]) -> dict[str, str]:
        """The text of each setting in `names` on the trial's nodes (`Target.read_current`).

        The nodes are made ready as a run makes them (their shape, and the restart-only
        settings among the given values, which the ones read are not), and every setting an
        earlier trial changed is set back first: a baseline is the operator's configuration,
        not what the last trial left. Then each node is read: server variables from SHOW GLOBAL
        VARIABLES, provider options (dotted names) from wsrep_provider_options. TargetError
        naming a setting a node does not report, or one the nodes disagree on."""
        plan = self.plan(config)
        try:
            nodes, _ = self._ready(plan, None, fresh=False)
            size = self.cluster_size(nodes)
            galera_sql.check_healthy(nodes, self.credentials, expected_size=size)
            self.apply_settings(nodes, dataclasses.replace(plan, variables={}, provider_options={}))
            read = [self._settings_on(node, names) for node in nodes]
        except galera_sql.VariableError as error:
            raise InfeasibleError(str(error)) from error
        except galera_sql.GaleraError as error:
            raise InfrastructureError(str(error)) from error
        for name in names:
            values = [settings[name] for settings in read]
            if len(set(values)) > 1:
                each = ", ".join(f"{n.name} {v}" for n, v in zip(nodes, values, strict=True))
                raise TargetError(
                    f"the nodes disagree on {name}: {each}; a baseline is one configuration"
                )
        return read[0]

    def _settings_on(self, node: galera_sql.Node, names: Sequence[str]) -> dict[str, str]:
        """The text of each setting in `names` as `node` reports it; TargetError naming one
        it does not report."""
        variables = [name for name in names if not is_provider_option_name(name)]
        reported = galera_sql.global_variables(node, self.credentials, variables)
        options = (
            galera_sql.provider_options(node, self.credentials)
            if len(variables) < len(names)
            else {}
        )
        values: dict[str, str] = {}
        for name in names:
            provider = is_provider_option_name(name)
            value = options.get(name) if provider else reported.get(name.lower())
            if value is None:
                where = "wsrep_provider_options" if provider else "SHOW GLOBAL VARIABLES"
                raise TargetError(f"{node.name} does not report {name} (in its {where})")
            values[name] = reported_value(name, value) if provider else value
        return values

    def _ready(
        self, plan: TrialPlan, cancel: threading.Event | None, *, fresh: bool
    ) -> tuple[list[galera_sql.Node], float]:
        """Put the nodes where the trial says, with its restart-only settings, at its node
        count (all restarted when `fresh`): the nodes that take load, and the seconds the
        restarts took."""
        # A resize is not interrupted (a half-joined node is worse than a late stop): the
        # cancellation is honoured between the phases and during every sysbench run.
        self.place(plan)
        # Before a resize: nodes it starts must start with the settings already.
        restart_s = self.restart_with(plan.restart_settings)
        nodes = self.nodes_for(plan.nodes)
        if fresh and restart_s == 0:
            # After the resize, so only the trial's nodes restart; a restart for the settings
            # above restarted every node already, and a node the resize started is fresh.
            restart_s = self.restart_with(plan.restart_settings, every_node=True)
        check_cancelled(cancel)
        return nodes, restart_s

    def _measure(
        self, nodes: list[galera_sql.Node], plan: TrialPlan, cancel: threading.Event | None
    ) -> Measured:
        """Prepare the schemas, time commits on the idle cluster, and run the benchmark
        between two snapshots of every node."""
        with sysbench.password_file(self.credentials.password) as secret:
            self.prepare_schemas(nodes[0], plan, cancel, secret=secret)
            # Timed on the idle cluster, as the published WAN study timed its INSERTs.
            commit_ms = galera_sql.commit_latency_ms(nodes[0], self.credentials, self.commit_probes)
            argvs = self._run_commands(nodes, plan, secret)
            # One snapshot of every node on each side of the run serves the responses and the
            # record alike (a second read would reset wsrep_local_recv_queue_avg again).
            states_before = record.node_states(nodes, self.credentials)
            started = time.monotonic()
            outputs = self._benchmark(argvs, plan, cancel, secret)
            elapsed = time.monotonic() - started
        return Measured(
            argvs=argvs,
            outputs=outputs,
            states_before=states_before,
            states_after=record.node_states(nodes, self.credentials),
            elapsed_s=elapsed,
            commit_ms=commit_ms,
        )

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
        outputs = []
        inherited = sysbench.inherited(secret)
        for code, output in run_processes(
            argvs, timeout=self.benchmark_timeout(plan), cancel=cancel, pass_fds=inherited
        ):
            if code != 0:
                raise self.sysbench_failure(code, output)
            outputs.append(output)
        return outputs

    def benchmark_timeout(self, plan: TrialPlan) -> float:
        """How long a trial's sysbench runs may take: the run, its warm-up and two minutes."""
        return plan.runtime_s + self.warmup_s + 120

    def sysbench_failure(self, code: int, output: str, where: str = "") -> TargetError:
        """Why a sysbench run (on `where`, when not here) exited `code`: infeasible when the
        server refused the load, else a failed trial; the output's tail, redacted."""
        tail = self._redact(output[-2000:])
        if any(marker in output for marker in INFEASIBLE_MARKERS):
            return InfeasibleError(f"the server refused the load: {tail}")
        return TargetError(f"sysbench exited {code}{f' on {where}' if where else ''}: {tail}")

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


def _database(plan: TrialPlan, client: int) -> str:
    """The schema a client machine works in: its own (as the published study ran), except
    under rw_mix, whose question is how writers on different nodes collide on one hot set, and
    tpcc, whose clients share the warehouses (one schema per warehouse count, reused)."""
    if plan.workload == "tpcc":
        return f"tpcc_w{plan.options['warehouses']}"
    return "sbtest1" if plan.workload == "rw_mix" else f"sbtest{client}"
