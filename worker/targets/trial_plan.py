"""A trial on a real cluster as settings: the factors, with the target's defaults for the rest,
checked as the worker will apply them (`TrialPlan`, `plan_trial`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from experiments.galera.kinds import CLUSTER_FACTORS, MIN_RUNTIME_S, WAN_FACTORS
from experiments.galera.provider_options import (
    is_provider_option_name,
    provider_option,
    provider_value,
)
from experiments.galera.restart_settings import config_value, is_restart_only
from experiments.galera.ssh_settings import OperatorWorkload, operator_workloads
from experiments.galera.variable_policy import check_settings
from experiments.galera.workloads import WORKLOAD_OPTIONS, WORKLOADS
from worker.targets.base import InfeasibleError, Value

_COUNTS = ("nodes", "clients", "threads_per_client", "runtime_s", "load_nodes")


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


@dataclass(frozen=True)
class _Settings:
    """The server settings a trial makes: dynamic variables, provider options, restart-only."""

    variables: dict[str, Value]
    provider: dict[str, str]
    restart: dict[str, str]


def plan_trial(
    config: Mapping[str, Value],
    *,
    defaults: Mapping[str, Value],
    settings: Mapping[str, Any],
    tpcc_scale: int,
    warmup_s: int,
) -> TrialPlan:
    """The trial's settings (`config` over `defaults`); InfeasibleError for values no cluster
    can run. `settings` are the target's (its policy on server variables, the operator's own
    workloads an `ssh` target declares: levels of `workload`, their options its factors)."""
    merged = {**defaults, **config}
    workload = str(merged["workload"])
    declared = _declared_workloads(settings)
    if workload not in WORKLOADS and workload not in declared:
        raise InfeasibleError(f"workload must be one of {', '.join((*WORKLOADS, *declared))}")
    merged.setdefault("load_nodes", merged["nodes"])
    numbers = _counts(merged)
    wan = _wan(merged, numbers["nodes"])
    own = {name: w for w in declared.values() for name in w.options}
    server = _server_settings({k: v for k, v in config.items() if k not in own}, settings)
    options = (
        _declared_options(merged, declared[workload])
        if workload in declared
        else _workload_options(merged, workload, tpcc_scale=tpcc_scale, warmup_s=warmup_s)
    )
    # An option of another of the operator's workloads set by the trial (a default of one only
    # applies to its own workload).
    foreign = [k for k in own if k in config and own[k].name != workload]
    if foreign:
        raise InfeasibleError(f"{foreign[0]} applies to the {own[foreign[0]].name} workload only")
    return TrialPlan(
        workload=workload,
        variables=server.variables,
        options=options,
        sites=int(wan["sites"]),
        wan_rtt_ms=float(wan["wan_rtt_ms"]),
        wan_jitter_ms=float(wan["wan_jitter_ms"]),
        provider_options=server.provider,
        restart_settings=server.restart,
        **numbers,
    )


def _counts(merged: Mapping[str, Value]) -> dict[str, int]:
    """The whole-number factors every trial has, each at least 1, load on no more nodes than
    the cluster has, runs long enough to find a steady state."""
    numbers = {}
    for name in _COUNTS:
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
    if numbers["runtime_s"] < MIN_RUNTIME_S:
        raise InfeasibleError(
            f"runtime_s must be at least {MIN_RUNTIME_S} s: the steady state is estimated "
            "from one-second interval reports"
        )
    return numbers


def _wan(merged: Mapping[str, Value], nodes: int) -> dict[str, Value]:
    """The topology factors (each at its low end unless set), within their ranges, with a node
    in every site."""
    wan = {name: merged.get(name, low) for name, (low, _) in WAN_FACTORS.items()}
    for name, (low, high) in WAN_FACTORS.items():
        value = wan[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InfeasibleError(f"{name} must be a number")
        if not low <= value <= high:
            raise InfeasibleError(f"{name} must be from {low:g} to {high:g}")
    sites = float(wan["sites"])
    if sites != int(sites) or sites > nodes:
        raise InfeasibleError(
            f"sites ({wan['sites']}) must be a whole number of sites, each with a node"
            f" (nodes: {nodes})"
        )
    return wan


def _server_settings(config: Mapping[str, Value], settings: Mapping[str, Any]) -> _Settings:
    """The factors that are server settings, sorted into dynamic variables (checked against
    the catalogue and the target's policy), provider options and restart-only settings (both
    written as the provider and the option file take them)."""
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
        checked = check_settings(variables, settings)
    except ValueError as error:
        raise InfeasibleError(str(error)) from error
    return _Settings(variables=dict(checked), provider=provider, restart=restart)


def _workload_options(
    merged: Mapping[str, Value], workload: str, *, tpcc_scale: int, warmup_s: int
) -> dict[str, Value]:
    """The options of the trial's workload, refusing those of another; the TPC-C-like
    workload's with the target's scale and warm-up."""
    owned = {name: w for w, names in WORKLOAD_OPTIONS.items() for name in names}
    options = {k: merged[k] for k in owned if k in merged}
    foreign = [k for k in options if owned[k] != workload]
    if foreign:
        raise InfeasibleError(
            f"{', '.join(foreign)} apply to the {owned[foreign[0]]} workload only"
        )
    if workload == "tpcc":
        return {
            "warehouses": int(options.get("warehouses", 1)),
            "tpcc_scale": tpcc_scale,
            "tpcc_warmup": warmup_s,
        }
    return options


def _declared_workloads(settings: Mapping[str, Any]) -> dict[str, OperatorWorkload]:
    """The operator's workloads the target's settings declare (none on most targets)."""
    if "workloads" not in settings:
        return {}
    try:
        return operator_workloads(settings)
    except ValueError as error:
        raise InfeasibleError(f"settings.{error}") from error


def _declared_options(merged: Mapping[str, Value], workload: OperatorWorkload) -> dict[str, Value]:
    """The values of the operator's workload's options the trial sets (its script's defaults
    for the others), each of its declared kind and in its range; a project workload's option
    is refused."""
    project = [k for names in WORKLOAD_OPTIONS.values() for k in names if k in merged]
    if project:
        raise InfeasibleError(f"{project[0]} does not apply to the {workload.name} workload")
    options: dict[str, Value] = {}
    for name, option in workload.options.items():
        if name not in merged:
            continue
        value = merged[name]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not option.low <= value <= option.high:
            raise InfeasibleError(f"{name} must be from {option.low:g} to {option.high:g}")
        if option.whole and float(value) != int(value):
            raise InfeasibleError(f"{name} must be a whole number")
        options[name] = int(value) if option.whole else float(value)
    return options
