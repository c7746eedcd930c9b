"""`TargetSpec`: one target as the operator defined it, and the checks of an experiment's factor
space, planned runs and responses against what its kind of target accepts and reports.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from experiments.errors import DomainError
from experiments.factors import Factor, FactorSpace
from experiments.galera.kinds import (
    CLUSTER_FACTORS,
    CLUSTER_KINDS,
    CLUSTER_RANGES,
    KIND_FACTORS,
    KIND_RESPONSES,
    LAB_MAX_NODES,
    RUNNABLE_KINDS,
    SERVER_VARIABLE_KINDS,
    SIMULATED_RANGES,
    WAN_FACTORS,
    FactorRange,
)
from experiments.galera.provider_options import is_provider_option_name
from experiments.galera.restart_settings import is_restart_only
from experiments.galera.server_variables import NAME as SERVER_VARIABLE_NAME
from experiments.galera.server_variables import SERVER_VARIABLES, ServerVariable
from experiments.galera.setting_checks import (
    check_config_values,
    check_provider_factor,
    check_variable_factor,
)
from experiments.galera.ssh_settings import OperatorWorkload, operator_workloads, ssh_clients
from experiments.galera.variable_policy import Policy, policy_from_settings
from experiments.galera.workloads import WORKLOAD_OPTIONS, WORKLOADS

WORKLOAD_OPTIONS_NAMES = frozenset(o for options in WORKLOAD_OPTIONS.values() for o in options)
# Lab factors whose change restarts nodes, and what the change does.
_RESTARTING_FACTORS = {
    "nodes": "the cluster is resized per whole plot",
    "sites": "the nodes move between one site and two per whole plot",
}


@dataclass(frozen=True)
class TargetSpec:
    """One target as the operator defined it."""

    name: str
    kind: str
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def runnable(self) -> bool:
        """Whether a worker runs trials on it (a manual target only records observations)."""
        return self.kind in RUNNABLE_KINDS

    @property
    def factors(self) -> tuple[str, ...] | None:
        """Factor names the target can set (on an `ssh` target also the options of the
        operator's workloads); None when it accepts any."""
        accepted = KIND_FACTORS[self.kind]
        options = [o for w in self.operator_workloads.values() for o in w.options]
        return accepted if accepted is None or not options else (*accepted, *options)

    @property
    def operator_workloads(self) -> dict[str, OperatorWorkload]:
        """The operator's own workloads an `ssh` target declares (settings.workloads)."""
        return operator_workloads(self.settings) if self.kind == "ssh" else {}

    @property
    def workloads(self) -> tuple[str, ...]:
        """The levels its `workload` factor may take: sysbench's, the project's, and on an
        `ssh` target the operator's own."""
        return (*WORKLOADS, *self.operator_workloads)

    @property
    def responses(self) -> tuple[str, ...] | None:
        """Response names the target reports; None when any name is accepted."""
        return KIND_RESPONSES[self.kind]

    @property
    def accepts_server_variables(self) -> bool:
        """Whether factors may name dynamic server variables (real clusters)."""
        return self.kind in SERVER_VARIABLE_KINDS

    def factor_range(self, name: str) -> tuple[float, float] | None:
        """The values a numeric factor may take on this target, low to high: a built-in one's
        (for `nodes` and `load_nodes`: up to the target's node count; on an `ssh` target
        `clients` up to its client hosts, if listed, and its workloads' options as declared),
        or a catalogued numeric
        server variable's; None for any other name (a categorical factor, an ON/OFF or enum
        variable, a provider option, a name the operator allowed, any name on a manual
        target)."""
        rule = self._builtin_range(name)
        if rule is not None:
            return rule.low, rule.high
        variable = SERVER_VARIABLES.get(name) if self.accepts_server_variables else None
        if variable is None or variable.kind not in ("integer", "number"):
            return None
        return variable.bounds

    def reads_setting(self, name: str) -> bool:
        """Whether the target can read a factor's value from its nodes (`baseline: current`):
        a server variable or provider option of a real cluster; the simulated cluster's
        wsrep_slave_threads. The load and the cluster's shape are never read."""
        if self.kind == "simulated":
            return name == "wsrep_slave_threads"
        operator_options = {o for w in self.operator_workloads.values() for o in w.options}
        if self.kind not in CLUSTER_KINDS or name in WAN_FACTORS or name in operator_options:
            return False
        if name in CLUSTER_FACTORS or name in WORKLOAD_OPTIONS_NAMES:
            return name == "wsrep_slave_threads"
        return is_provider_option_name(name) or bool(SERVER_VARIABLE_NAME.match(name))

    @property
    def server_variables(self) -> Policy:
        """The operator's changes to the catalogue of server variables on this target
        (settings.server_variables; `experiments.galera.variable_policy`)."""
        return policy_from_settings(self.settings)

    def _builtin_range(self, name: str) -> FactorRange | None:
        if self.kind == "simulated":
            return SIMULATED_RANGES.get(name)
        if self.kind not in CLUSTER_KINDS or name not in (self.factors or ()):
            return None
        listed = self.settings.get("nodes")
        if name in ("nodes", "load_nodes"):
            counted = self.kind != "lab" and isinstance(listed, list) and bool(listed)
            why = f"settings.nodes lists {len(listed)}" if counted else ""
            return FactorRange(1, self._node_ceiling(), why=why)
        clients = ssh_clients(self.settings) if self.kind == "ssh" else []
        if name == "clients" and clients:
            # One sysbench per client host: as many clients as hosts listed.
            return FactorRange(1, len(clients), why=f"settings.clients lists {len(clients)}")
        for workload in self.operator_workloads.values():
            if name in workload.options:
                option = workload.options[name]
                return FactorRange(option.low, option.high, whole=option.whole)
        return CLUSTER_RANGES.get(name)

    def _node_ceiling(self) -> int:
        """The most nodes a trial may ask for: the lab's `max_nodes`, an external target's
        listed nodes."""
        if self.kind == "lab":
            return int(self.settings.get("max_nodes", LAB_MAX_NODES))
        listed = self.settings.get("nodes")
        return len(listed) if isinstance(listed, list) and listed else self._fixed_nodes()

    @property
    def restartable(self) -> bool:
        """Whether restart-only settings can be factors: the lab and an `ssh` target restart
        their own nodes, an external target needs a restart command for every node."""
        listed = self.settings.get("nodes")
        return self.kind in ("lab", "ssh") or (
            self.kind == "external"
            and isinstance(listed, list)
            and all(isinstance(n, Mapping) and n.get("restart") for n in listed)
        )

    @property
    def starts_fresh(self) -> bool:
        """Whether a trial can start from a fresh cluster state: the simulated cluster keeps
        none between trials, a real one restarts its nodes (`restartable`), and on a manual
        target whoever runs the trial restarts them, as its `restart_first` says."""
        return self.kind in ("simulated", "manual") or self.restartable

    def check_starts_fresh(self) -> None:
        """Refuse `restart_replicates` (a `DomainError` naming it) where the nodes cannot
        restart (`starts_fresh`)."""
        if not self.starts_fresh:
            raise DomainError(
                "restart_replicates",
                f"target '{self.name}' cannot restart its nodes: an external target needs a"
                " restart command for every node (settings.nodes[].restart)",
            )

    def prepared_space(self, space: FactorSpace) -> tuple[FactorSpace, list[str]]:
        """Check the space (`check_space`); factors whose change restarts nodes become hard to
        change (on the lab `nodes` and `sites` too), so trials run whole plot by whole plot and
        the restarts are as few as the design allows."""
        self.check_space(space)
        costly = {name: why for name, why in self._restarting().items() if name in space.names}
        if self.accepts_server_variables:
            costly |= {
                name: "its change restarts every node, one at a time, per whole plot"
                for name in space.names
                if is_restart_only(name)
            }
        made = [name for name in costly if not space[name].hard_to_change]
        if not made:
            return space, []
        factors = tuple(
            dataclasses.replace(f, hard_to_change=True) if f.name in made else f
            for f in space.factors
        )
        where = "the lab" if self.kind == "lab" else f"target '{self.name}'"
        notes = [f"{name} is treated as hard to change on {where}: {costly[name]}" for name in made]
        return FactorSpace(factors), notes

    def _restarting(self) -> dict[str, str]:
        """The built-in factors whose change restarts nodes here: the lab's `nodes` and
        `sites`; an `ssh` target's `nodes`, the cluster's size."""
        if self.kind == "lab":
            return _RESTARTING_FACTORS
        return {"nodes": _RESTARTING_FACTORS["nodes"]} if self.kind == "ssh" else {}

    def check_space(self, space: FactorSpace) -> None:
        """Raise naming the first factor this target cannot set, or a workload it cannot run."""
        accepted = self.factors
        if accepted is None:
            return
        for i, factor in enumerate(space.factors):
            if factor.name in accepted:
                self._check_builtin(i, factor)
                continue
            if factor.name in WAN_FACTORS:
                raise DomainError(
                    f"factors.{i}.name",
                    f"target '{self.name}' ({self.kind}) cannot set '{factor.name}': only a lab"
                    " target can move its nodes apart",
                )
            if self.accepts_server_variables and self._check_setting(i, factor):
                continue
            also = (
                ", a dynamic server variable or a Galera provider option"
                if self.accepts_server_variables
                else ""
            )
            raise DomainError(
                f"factors.{i}.name",
                f"target '{self.name}' ({self.kind}) cannot set '{factor.name}'; "
                f"it accepts {', '.join(accepted)}{also}",
            )
        if "workload" in space.names:
            i = space.names.index("workload")
            workload = space["workload"]
            known = self.workloads
            if workload.kind != "categorical" or not set(workload.levels or ()) <= set(known):
                raise DomainError(
                    f"factors.{i}.levels",
                    f"workload is categorical with levels among {', '.join(known)}",
                )
        if self.kind in CLUSTER_KINDS:
            self.check_load_nodes(space)
            self.check_workload_options(space)
        if self.kind == "lab":
            self.check_wan(space)

    def _check_builtin(self, i: int, factor: Factor) -> None:
        """Raise unless a built-in factor is of a kind and inside the range this target takes
        (`factor_range`); on a real cluster `wsrep_slave_threads` is a server variable too."""
        rule = self._builtin_range(factor.name)
        if rule is None:
            return
        if self.accepts_server_variables and factor.name in SERVER_VARIABLES:
            self._policy_variable(i, factor.name)
        where = f"target '{self.name}'"
        whole = "an integer factor" if rule.whole else "a number"
        if not factor.is_numeric:
            raise DomainError(
                f"factors.{i}.kind",
                f"{factor.name} is {whole} from {_fmt(rule.low)} to {_fmt(rule.high)} on {where},"
                " not categorical",
            )
        if rule.whole and factor.kind == "continuous" and factor.levels is None:
            raise DomainError(
                f"factors.{i}.kind",
                f"{factor.name} takes whole numbers on {where}: make it an integer factor",
            )
        low, high = factor.bounds
        values = [float(v) for v in factor.levels] if factor.levels is not None else [low, high]
        if low < rule.low or high > rule.high or (rule.whole and not _whole(values)):
            why = f" ({rule.why})" if rule.why else ""
            raise DomainError(
                f"factors.{i}",
                f"{factor.name} is {whole} from {_fmt(rule.low)} to {_fmt(rule.high)} on"
                f" {where}{why}",
            )

    def _policy_variable(self, i: int, name: str) -> ServerVariable | None:
        """The catalogue's entry for server variable `name` on this target (None: one its
        operator allowed); DomainError at the factor's name when it may not be set."""
        try:
            return self.server_variables.variable(name)
        except ValueError as error:
            raise DomainError(f"factors.{i}.name", str(error)) from None

    def _check_setting(self, i: int, factor: Factor) -> bool:
        """Whether `factor` names a server setting of a real cluster (a server variable or a
        provider option); raise when it is one this target cannot set to its values."""
        provider = is_provider_option_name(factor.name)
        if not (provider or SERVER_VARIABLE_NAME.match(factor.name)):
            return False
        if not provider and factor.name in self.server_variables.deny:
            self._policy_variable(i, factor.name)
        restart = is_restart_only(factor.name)
        if restart and not self.restartable:
            raise DomainError(
                f"factors.{i}.name",
                f"{factor.name} takes effect only when the nodes restart, and target"
                f" '{self.name}' has no restart command for every node (settings.nodes[].restart)",
            )
        if provider:
            check_provider_factor(i, factor)
        elif restart:
            check_config_values(i, factor)
        else:
            check_variable_factor(i, factor, self.server_variables)
        return True

    def check_load_nodes(self, space: FactorSpace) -> None:
        """Raise unless `load_nodes` cannot exceed `nodes` (the factor's high end, or the
        target's fixed node count); its kind and range were checked with the other built-in
        factors (`_check_builtin`)."""
        if "load_nodes" not in space.names:
            return
        i = space.names.index("load_nodes")
        load = space["load_nodes"]
        most = self._fixed_nodes() if "nodes" not in space.names else int(space["nodes"].bounds[1])
        if load.bounds[1] > most:
            raise DomainError(
                f"factors.{i}.high",
                f"load_nodes cannot exceed nodes: at most {most} on target '{self.name}'",
            )

    def check_workload_options(self, space: FactorSpace) -> None:
        """Raise unless a workload's own options are asked of an experiment whose only workload
        is that one (their kinds and ranges are checked with the other built-in factors)."""
        workloads = space["workload"].levels if "workload" in space.names else None
        declared = {w.name: tuple(w.options) for w in self.operator_workloads.values()}
        for workload, options in {**WORKLOAD_OPTIONS, **declared}.items():
            for name in options:
                if name not in space.names:
                    continue
                i = space.names.index(name)
                if workloads is None or list(workloads) != [workload]:
                    raise DomainError(
                        f"factors.{i}.name",
                        f"{name} is an option of the {workload} workload: add the factor"
                        f" workload with the single level {workload}",
                    )

    def check_wan(self, space: FactorSpace) -> None:
        """Raise unless two sites can have a node each (the topology factors' kinds and ranges
        are checked with the other built-in factors)."""
        if (
            "sites" in space.names
            and "nodes" not in space.names
            and space["sites"].bounds[1] > self._fixed_nodes()
        ):
            raise DomainError(
                f"factors.{space.names.index('sites')}.high",
                "sites cannot exceed nodes: each site needs a node",
            )

    def _fixed_nodes(self) -> int:
        """The node count of an experiment that does not vary `nodes`: the target's default,
        else its listed nodes (external), else 3."""
        defaults = self.settings.get("defaults") or {}
        listed = self.settings.get("nodes")
        return int(defaults.get("nodes", len(listed) if isinstance(listed, list) else 3))

    def check_plan(self, configs: Sequence[Mapping[str, Any]]) -> None:
        """Raise when a planned run sets a factor beyond the range this target accepts, puts
        load on more nodes than the cluster has, or more sites than nodes."""
        for name in dict.fromkeys(name for config in configs for name in config):
            accepted = self.factor_range(name)
            if accepted is None:
                continue
            low, high = accepted
            # Only numbers: a categorical factor of a built-in name is refused by check_space.
            values = {float(c[name]) for c in configs if isinstance(c.get(name), int | float)}
            beyond = sorted(v for v in values if not low <= v <= high)
            if beyond:
                raise DomainError(
                    "design",
                    f"planned runs set {name} to {', '.join(f'{v:g}' for v in beyond)}: target"
                    f" '{self.name}' accepts {low:g} to {high:g}",
                )
        for above, below, rule in (
            ("load_nodes", "nodes", "put load_nodes above nodes"),
            ("sites", "nodes", "split fewer nodes than sites (each site needs a node)"),
        ):
            broken = sum(1 for c in configs if above in c and below in c and c[above] > c[below])
            if broken:
                raise DomainError(
                    "constraints",
                    f"{broken} planned run(s) {rule}: add the constraint '{above} <= {below}'",
                )

    def check_response(self, response: str, field_name: str) -> None:
        """Raise unless the target reports `response`."""
        accepted = self.responses
        if accepted is not None and response not in accepted:
            raise DomainError(
                field_name,
                f"target '{self.name}' does not report '{response}'; "
                f"it reports {', '.join(accepted)}",
            )


def _whole(values: Iterable[float]) -> bool:
    return all(float(v).is_integer() for v in values)


def _fmt(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else f"{number:g}"
