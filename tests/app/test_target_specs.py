"""The operator's targets file and what each kind of target accepts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from app.target_specs import TargetsFileError, load_targets
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.galera.responses import GALERA_RESPONSES
from experiments.galera.target_spec import TargetSpec
from experiments.galera.variable_policy import policy_from_settings
from experiments.objective import Objective
from worker.sysbench import Connection, run_command

CONNECTION = Connection(host="db1", port=3306, user="sbtest", database="sbtest1")


def test_defaults_are_simulated_manual_and_the_lab():
    targets = load_targets(None)
    assert set(targets) == {"simulated", "manual", "lab"}
    assert targets["lab"].runnable and targets["lab"].accepts_server_variables
    assert targets["simulated"].runnable and not targets["manual"].runnable
    assert targets["simulated"].responses == GALERA_RESPONSES
    assert targets["manual"].factors is None


def test_a_targets_file_is_read(tmp_path: Path):
    path = tmp_path / "targets.yaml"
    path.write_text(
        "targets:\n"
        "  - {name: sim-noisy, kind: simulated, settings: {seed: 7, noise: 0.1}}\n"
        "  - {name: notebook, kind: manual}\n"
    )
    targets = load_targets(path)
    assert targets["sim-noisy"].settings == {"seed": 7, "noise": 0.1}
    assert targets["notebook"].kind == "manual"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("targets: 3", "'targets' list"),
        ("targets:\n  - {kind: simulated}", "targets[0].name"),
        ("targets:\n  - {name: a, kind: cloud}", "targets[0].kind"),
        ("targets:\n  - {name: a, kind: manual}\n  - {name: a, kind: manual}", "duplicate"),
        ("targets:\n  - {name: a, kind: manual, settings: [1]}", "settings"),
        ("targets: [", "cannot read"),
    ],
)
def test_a_malformed_targets_file_is_refused(tmp_path: Path, text: str, words: str):
    path = tmp_path / "targets.yaml"
    path.write_text(text)
    with pytest.raises(TargetsFileError, match=words.replace("[", r"\[").replace("]", r"\]")):
        load_targets(path)


def test_factor_and_response_checks_name_the_field():
    simulated = load_targets(None)["simulated"]
    simulated.check_space(space("nodes", "clients"))
    with pytest.raises(DomainError) as error:
        simulated.check_space(space("nodes", "innodb_buffer_pool_size"))
    assert error.value.field == "factors.1.name" and "cannot set" in error.value.rule
    with pytest.raises(DomainError, match="does not report"):
        simulated.check_response("happiness", "objective.response")
    load_targets(None)["manual"].check_space(space("anything_at_all"))


def space(*names: str) -> FactorSpace:
    return FactorSpace.from_dicts(
        [{"name": n, "kind": "integer", "low": 1, "high": 2} for n in names]
    )


def test_the_range_of_a_built_in_factor_is_the_targets_own():
    targets = load_targets(None)
    assert targets["simulated"].factor_range("nodes") == (1, 16)
    assert targets["lab"].factor_range("nodes") == (1, 9)
    assert TargetSpec("big", "lab", {"max_nodes": 16}).factor_range("load_nodes") == (1, 16)
    two = TargetSpec("dc", "external", {"nodes": [{"host": "db1"}, {"host": "db2"}]})
    assert two.factor_range("nodes") == (1, 2) and two.factor_range("sites") is None
    assert targets["lab"].factor_range("runtime_s") == (10, 3600)
    assert targets["lab"].factor_range("workload") is None
    assert targets["manual"].factor_range("nodes") is None


@pytest.mark.parametrize(
    "check",
    [
        lambda: space("nodes\n"),
        lambda: Objective.parse({"response": "tps\n"}, lambda response, field: None),
        lambda: load_targets(None)["lab"].check_space(space("sync_binlog\n")),
        lambda: policy_from_settings({"server_variables": {"deny": ["general_log\n"]}}),
        lambda: dataclasses.replace(CONNECTION, host="db1\n"),
        lambda: dataclasses.replace(CONNECTION, database="sbtest1\n"),
        lambda: run_command(CONNECTION, workload="oltp_read_write", threads=1, time_s=10,
                            warmup_s=0, tables=1, table_size=10, ignore_errors="all\n"),
    ],
    ids=["factor", "response", "lab factor", "policy", "host", "database", "ignore"],
)  # fmt: skip
def test_no_name_passes_with_a_trailing_newline(check):
    # "$" matches before a final newline: every name check ends at the end of the text (\Z).
    with pytest.raises((DomainError, ValueError)):
        check()


@pytest.mark.parametrize("other", ["load_nodes", "sites"])
def test_categorical_nodes_beside_load_nodes_or_sites_is_refused_naming_the_kind(other: str):
    # Its high end was read as a number from the levels: a ValueError, a 500.
    categorical = {"name": "nodes", "kind": "categorical", "levels": ["three", "five"]}
    spaced = FactorSpace.from_dicts(
        [categorical, {"name": other, "kind": "integer", "levels": [1]}]
    )
    with pytest.raises(DomainError) as refused:
        load_targets(None)["lab"].check_space(spaced)
    assert refused.value.field == "factors.0.kind"
    assert "nodes is an integer factor from 1 to 9 on target 'lab', not categorical" in (
        refused.value.rule
    )


@pytest.mark.parametrize(
    ("target", "factor", "field", "words"),
    [
        ("simulated", {"name": "nodes", "kind": "integer", "low": 1, "high": 40}, "factors.0",
         "nodes is an integer factor from 1 to 16 on target 'simulated'"),
        ("lab", {"name": "nodes", "kind": "integer", "low": 1, "high": 16}, "factors.0",
         "nodes is an integer factor from 1 to 9 on target 'lab'"),
        ("lab", {"name": "threads_per_client", "kind": "categorical", "levels": ["4"]},
         "factors.0.kind", "not categorical"),
        ("lab", {"name": "runtime_s", "kind": "continuous", "low": 10, "high": 60},
         "factors.0.kind", "runtime_s takes whole numbers on target 'lab'"),
        ("lab", {"name": "runtime_s", "kind": "integer", "low": 5, "high": 60}, "factors.0",
         "runtime_s is an integer factor from 10 to 3600"),
        ("simulated", {"name": "runtime_s", "kind": "continuous", "low": 10, "high": 4000},
         "factors.0", "runtime_s is a number from 10 to 3600 on target 'simulated'"),
        ("lab", {"name": "clients", "kind": "continuous", "levels": [1, 2.5]}, "factors.0",
         "clients is an integer factor from 1 to 16"),
        ("simulated", {"name": "write_share", "kind": "categorical", "levels": ["half"]},
         "factors.0.kind", "write_share is a number from 0 to 1"),
    ],
)  # fmt: skip
def test_a_built_in_factor_keeps_to_its_kind_and_range_on_each_target(
    target: str, factor: dict, field: str, words: str
):
    with pytest.raises(DomainError) as refused:
        load_targets(None)[target].check_space(FactorSpace.from_dicts([factor]))
    assert refused.value.field == field and words in refused.value.rule


def test_whole_levels_of_a_continuous_built_in_factor_are_accepted(tmp_path: Path):
    lab = load_targets(None)["lab"]
    lab.check_space(FactorSpace.from_dicts([{"name": "nodes", "levels": [1, 3]}]))
    path = tmp_path / "targets.yaml"
    path.write_text("targets:\n  - {name: l, kind: lab, settings: {max_nodes: two}}\n")
    with pytest.raises(TargetsFileError, match=r"targets\[0\]\.settings\.max_nodes: a whole"):
        load_targets(path)
