"""The operator's targets file: names, kinds and settings of the targets, read from YAML.

Targets are defined on the service side only (they can start processes and hold credentials),
never through the API. What each kind of target accepts and reports, and `TargetSpec` itself,
are Galera facts of the engine (`experiments.galera`); this module only reads the file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from experiments.galera.kinds import KIND_FACTORS, LAB_NODES_LIMIT, SERVER_VARIABLE_KINDS
from experiments.galera.ssh_settings import check_ssh_settings
from experiments.galera.target_spec import TargetSpec
from experiments.galera.variable_policy import SETTINGS_KEY, policy_from_settings

DEFAULT_TARGETS: tuple[dict[str, Any], ...] = (
    {"name": "simulated", "kind": "simulated", "settings": {"seed": 0, "noise": 0.03}},
    {"name": "manual", "kind": "manual", "settings": {}},
    {"name": "lab", "kind": "lab", "settings": {}},
)


class TargetsFileError(ValueError):
    """The operator's targets file is malformed."""


def load_targets(path: Path | None) -> dict[str, TargetSpec]:
    """Targets by name from the YAML file at `path`, or the built-in defaults."""
    if path is None:
        return _parse(DEFAULT_TARGETS)
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise TargetsFileError(f"cannot read targets file {path}: {error}") from error
    if not isinstance(document, Mapping) or not isinstance(document.get("targets"), list):
        raise TargetsFileError(f"{path}: expected a mapping with a 'targets' list")
    return _parse(document["targets"])


def _parse(entries: Iterable[Any]) -> dict[str, TargetSpec]:
    targets: dict[str, TargetSpec] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise TargetsFileError(f"targets[{i}]: expected a mapping")
        name, kind = entry.get("name"), entry.get("kind")
        settings = entry.get("settings") or {}
        if not isinstance(name, str) or not name:
            raise TargetsFileError(f"targets[{i}].name: a non-empty string is required")
        if kind not in KIND_FACTORS:
            raise TargetsFileError(
                f"targets[{i}].kind: must be one of {', '.join(sorted(KIND_FACTORS))}"
            )
        if not isinstance(settings, Mapping):
            raise TargetsFileError(f"targets[{i}].settings: expected a mapping")
        if name in targets:
            raise TargetsFileError(f"targets[{i}].name: duplicate target '{name}'")
        _check_settings(f"targets[{i}].settings", kind, settings)
        targets[name] = TargetSpec(name=name, kind=kind, settings=dict(settings))
    return targets


def _check_settings(where: str, kind: str, settings: Mapping[str, Any]) -> None:
    """Raise naming the setting the checks at submission rely on that is malformed: the lab's
    node count, an `ssh` target's hosts and workloads (`experiments.galera.ssh_settings`; its
    files are checked where the worker loads it), the operator's changes to the catalogue of
    server variables."""
    if kind == "ssh":
        try:
            check_ssh_settings(settings)
        except ValueError as error:
            raise TargetsFileError(f"{where}.{error}") from None
    elif "workloads" in settings:
        raise TargetsFileError(
            f"{where}.workloads: only an ssh target runs the operator's workloads"
        )
    if kind == "lab" and "max_nodes" in settings:
        most = settings["max_nodes"]
        if isinstance(most, bool) or not isinstance(most, int) or not 1 <= most <= LAB_NODES_LIMIT:
            raise TargetsFileError(
                f"{where}.max_nodes: a whole number from 1 to {LAB_NODES_LIMIT}, got {most!r}"
            )
    if SETTINGS_KEY not in settings:
        return
    if kind not in SERVER_VARIABLE_KINDS:
        raise TargetsFileError(
            f"{where}.{SETTINGS_KEY}: only a lab, an external or an ssh target sets server"
            " variables"
        )
    try:
        policy_from_settings(settings)
    except ValueError as error:
        raise TargetsFileError(f"{where}.{error}") from None
