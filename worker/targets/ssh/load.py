"""Where an `ssh` target's load comes from: sysbench on the client hosts, or on the worker.

With `clients` listed, the factor `clients` is the number of client machines: client i's
sysbench runs on client host i over SSH (`worker.targets.ssh.clients`), every one started at
one instant, their outputs merged as the local clients' are. With none listed, sysbench runs on
the worker as on the other real clusters. Either way each load generator's CPU busy share during
the run is measured: the busiest one's is the response `client_cpu_busy`, and the record says
how far apart the hosts started and flags a trial whose load generator was saturated
(`clients_saturated`, `saturated_clients`): the cluster may not have been the limit.

The operator's own workloads (`settings.workloads`, `experiments.galera.ssh_settings`) run like
the project's Lua workloads: the script shipped to the client hosts (or run from the worker's
path), its declared options given as `--name=value`, on the oltp tables the service prepares
(sbtest1..tables of table_size rows, passed as --tables and --table_size, which the script
declares too). Its files are checked at the first trial (`worker.targets.ssh.checks`): a script
that is missing or does not load fails it, naming the setting.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from experiments.galera.ssh_settings import OperatorWorkload, operator_workloads
from experiments.galera.workloads import WORKLOADS
from worker import galera_sql, sysbench
from worker.targets.base import (
    InfeasibleError,
    TargetError,
    TrialResult,
    Value,
    check_cancelled,
)
from worker.targets.cluster import ClusterTarget
from worker.targets.ssh.checks import check_local_files
from worker.targets.ssh.clients import (
    PASSWORD,
    WORKER,
    ClientHosts,
    ClientLoad,
    busy_share,
    local_cpu,
)
from worker.targets.ssh.hosts import HostPool, HostSpec
from worker.targets.trial_plan import TrialPlan

log = logging.getLogger(__name__)

# sysbench's argv for an operator's workload is that of a workload on the same tables with
# its script put in place: nothing else of the argv depends on the workload.
STAND_IN = "oltp_read_write"
_CONFIG_MAX = 4096  # the password's --config-file is one line of at most 255 characters


class ClientLoadTarget(ClusterTarget):
    """A real cluster whose clients may run on hosts of their own (module docstring); the
    subclass gives the SSH pool and the client hosts."""

    pool: HostPool
    client_hosts: list[HostSpec]

    def __init__(self, name: str, settings: Mapping[str, Any]) -> None:
        super().__init__(name, settings)
        self._clients: ClientHosts | None = None
        self._load: ClientLoad | None = None
        self._files_checked = False

    def operator_workloads(self) -> dict[str, OperatorWorkload]:
        """The operator's workloads the settings declare."""
        try:
            return operator_workloads(self.settings)
        except ValueError as error:
            raise TargetError(f"target '{self.name}': settings.{error}") from None

    def run(
        self,
        config: Mapping[str, Value],
        *,
        run_key: int,
        cancel: threading.Event | None = None,
        fresh: bool = False,
    ) -> TrialResult:
        """A trial as on any real cluster, with what its load generators did: the busiest
        one's CPU share among the responses, the start skew and the saturation in the record."""
        check_cancelled(cancel)
        if not self._files_checked:
            check_local_files(self.name, self.settings)
            self._files_checked = True
        self._load = None
        result = super().run(config, run_key=run_key, cancel=cancel, fresh=fresh)
        if self._load is None:
            return result
        return dataclasses.replace(
            result,
            responses=result.responses | self._load.responses(),
            record=(result.record or {}) | self._load.record(),
        )

    def client_machines(self) -> ClientHosts:
        """The client hosts, each with its directory and the scripts in it."""
        if self._clients is None:
            scripts = {path.name: path for path in sorted(sysbench.SCRIPTS.glob("*.lua"))}
            for workload in self.operator_workloads().values():
                scripts[f"{workload.name}.lua"] = Path(workload.script).expanduser()
            names = [host.name for host in self.client_hosts]
            self._clients = ClientHosts(self.name, self.pool, names, scripts)
        self._clients.ready()
        return self._clients

    def close_clients(self) -> None:
        """Remove what the client hosts hold of the service."""
        if self._clients is not None:
            self._clients.close()

    def _run_commands(
        self, nodes: list[galera_sql.Node], plan: TrialPlan, secret: sysbench.PasswordFile | None
    ) -> list[list[str]]:
        """Client i's sysbench as it runs: on client host i (the password as descriptor 3 of
        the command there) or on the worker; the operator's script put in place."""
        hosts = len(self.client_hosts)
        if hosts and plan.clients > hosts:
            raise InfeasibleError(
                f"clients ({plan.clients}) cannot exceed the {hosts} client hosts listed"
            )
        runs = plan if plan.workload in WORKLOADS else dataclasses.replace(plan, workload=STAND_IN)
        if hosts and secret is not None:
            secret = PASSWORD
        argvs = super()._run_commands(nodes, runs, secret)
        return [self._placed(argv, plan.workload, index) for index, argv in enumerate(argvs)]

    def _placed(self, argv: list[str], workload: str, index: int) -> list[str]:
        """`argv` (sysbench, its script, ...) with the script where client `index` finds it."""
        declared = self.operator_workloads()
        if self.client_hosts:
            directory = self.client_machines().directory(self.client_hosts[index].name)
            # The project's scripts are paths on the worker; sysbench's own go by name.
            ours = workload in declared or Path(sysbench.script(workload)).is_absolute()
            script = f"{directory}/{workload}.lua" if ours else workload
        elif workload in declared:
            script = str(Path(declared[workload].script).expanduser())
        else:
            return argv
        return [argv[0], script, *argv[2:]]

    def _benchmark(
        self,
        argvs: list[list[str]],
        plan: TrialPlan,
        cancel: threading.Event | None,
        secret: sysbench.PasswordFile | None,
    ) -> list[str]:
        """Run the clients where they run, measuring each load generator's CPU."""
        if self.client_hosts:
            return self._on_client_hosts(argvs, plan, cancel, secret)
        before = local_cpu()
        try:
            outputs = super()._benchmark(argvs, plan, cancel, secret)
        except TargetError as error:
            named = self._named(error, plan.workload, WORKER)
            if named is error:
                raise
            raise named from error
        self._load = ClientLoad([WORKER], [busy_share(before, local_cpu())])
        return outputs

    def _on_client_hosts(
        self,
        argvs: list[list[str]],
        plan: TrialPlan,
        cancel: threading.Event | None,
        secret: sysbench.PasswordFile | None,
    ) -> list[str]:
        """Client i's sysbench on client host i, all started at one instant."""
        commands = [(self.client_hosts[i].name, argv) for i, argv in enumerate(argvs)]
        config_file = os.pread(secret.fd, _CONFIG_MAX, 0) if secret is not None else None
        results, load = self.client_machines().run(
            commands,
            config_file=config_file,
            timeout=self.benchmark_timeout(plan),
            cancel=cancel,
        )
        self._load = load
        _log_load(load)
        for (host, _), (code, output) in zip(commands, results, strict=True):
            if code != 0:
                raise self._named(self.sysbench_failure(code, output, host), plan.workload, host)
        return [output for _, output in results]

    def _named(self, error: TargetError, workload: str, where: str) -> TargetError:
        """`error` of the operator's workload naming its setting (others as they are)."""
        declared = self.operator_workloads().get(workload)
        if declared is None or type(error) is not TargetError:
            return error
        return TargetError(
            f"target '{self.name}': settings.workloads.{workload}.script: {declared.script}"
            f" failed on {where} (it must load in sysbench and declare --tables, --table_size"
            f" and its options): {error}"
        )


def _log_load(load: ClientLoad) -> None:
    """How far apart the client hosts started and how busy they were; a warning when one was
    saturated."""
    busy = zip(load.hosts, load.cpu_busy, strict=True)
    log.info(
        "%d client host(s) started within %.1f ms; CPU busy %s",
        len(load.hosts),
        (load.start_skew_s or 0) * 1000,
        ", ".join(f"{host} {share:.2f}" for host, share in busy),
    )
    if load.saturated:
        log.warning(
            "client host(s) saturated, the load generator may have been the limit: %s",
            ", ".join(load.saturated),
        )
