"""Today's configuration as a client names it and as the nodes report it (issue 57)."""

from __future__ import annotations

import pytest

from experiments.baseline import Baseline, parse_baseline, read_value
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.galera.provider_options import reported_value

SPACE = FactorSpace.from_dicts(
    [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 5},
        {"name": "wsrep_slave_threads", "kind": "integer", "low": 1, "high": 32},
        {
            "name": "innodb_flush_log_at_trx_commit",
            "kind": "categorical",
            "levels": ["0", "1", "2"],
        },
        {"name": "wsrep_sync_wait", "kind": "categorical", "levels": ["on", "off"]},
        {"name": "workload", "kind": "categorical", "levels": ["a", "b"], "noise": True},
    ]
)
SETTINGS = {"wsrep_slave_threads", "innodb_flush_log_at_trx_commit", "wsrep_sync_wait"}


def readable(name: str) -> bool:
    return name in SETTINGS


def test_current_alone_reads_every_setting_and_leaves_the_rest_to_give():
    with pytest.raises(DomainError) as refused:
        parse_baseline("current", SPACE, readable)
    assert refused.value.field == "baseline.nodes"
    baseline = parse_baseline({"nodes": 3, **dict.fromkeys(SETTINGS, "current")}, SPACE, readable)
    assert baseline == Baseline(
        given={"nodes": 3},
        current=("wsrep_slave_threads", "innodb_flush_log_at_trx_commit", "wsrep_sync_wait"),
    )
    assert Baseline.from_stored(baseline.as_dict()) == baseline and not baseline.complete


def test_the_nodes_values_become_the_factors_values():
    baseline = Baseline(given={"nodes": 3}, current=tuple(sorted(SETTINGS)))
    raw = {
        "wsrep_slave_threads": "4",
        "innodb_flush_log_at_trx_commit": "1",
        "wsrep_sync_wait": "OFF",
    }
    assert baseline.resolved(SPACE, raw) == {
        "nodes": 3,
        "wsrep_slave_threads": 4,
        "innodb_flush_log_at_trx_commit": "1",
        "wsrep_sync_wait": "off",
    }


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("wsrep_slave_threads", " 16 ", 16),
        ("wsrep_slave_threads", "16.0", 16),
        ("wsrep_sync_wait", "ON", "on"),
        ("wsrep_sync_wait", "0", "off"),  # a switch spelled another way
        ("wsrep_sync_wait", "yes", "on"),
    ],
)
def test_read_value_accepts_the_spellings_of_a_value(name, raw, expected):
    assert read_value(SPACE[name], raw) == expected


@pytest.mark.parametrize(
    ("name", "raw", "words"),
    [
        ("wsrep_slave_threads", "64", "the nodes run wsrep_slave_threads = 64; must lie between"),
        ("wsrep_slave_threads", "many", "which is not a number"),
        ("wsrep_slave_threads", "nan", "which is not a number"),
        ("innodb_flush_log_at_trx_commit", "3", "which is not one of ['0', '1', '2']"),
    ],
)
def test_a_value_the_factor_does_not_have_is_refused_naming_it(name, raw, words):
    with pytest.raises(DomainError) as refused:
        read_value(SPACE[name], raw)
    assert refused.value.field == f"baseline.{name}" and words in refused.value.rule


def test_a_value_the_nodes_did_not_report_is_refused():
    with pytest.raises(DomainError) as refused:
        Baseline(given={"nodes": 1}, current=("wsrep_slave_threads",)).resolved(SPACE, {})
    assert refused.value.field == "baseline.wsrep_slave_threads"


def test_a_mapping_or_current_only():
    with pytest.raises(DomainError) as refused:
        parse_baseline(["nodes"], SPACE, readable)
    assert refused.value.field == "baseline"
    assert parse_baseline(None, SPACE, readable) is None


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("evs.suspect_timeout", "PT5S", "5.0"),
        ("evs.inactive_timeout", "PT1M30.5S", "90.5"),
        ("gcache.size", "128M", str(128 << 20)),
        ("gcs.fc_limit", " 16 ", "16"),
        ("no.such_option", "x", "x"),
    ],
)
def test_provider_options_are_reported_in_the_factors_units(name, text, expected):
    assert reported_value(name, text) == expected
