"""Maximin Latin hypercubes: the Latin property, seeding, space filling and categorical balance."""

import collections
import json
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import pdist

from experiments.designs import latin_hypercube
from experiments.designs.request import DesignRequest
from experiments.errors import DomainError
from experiments.factors import FactorSpace

FAMILY = latin_hypercube.LatinHypercube()


def numeric(k: int) -> FactorSpace:
    return FactorSpace.from_dicts({"name": f"x{i}", "low": 0, "high": 10} for i in range(k))


MIXED = FactorSpace.from_dicts(
    [
        {"name": "threads", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
        {"name": "engine", "kind": "categorical", "levels": ["innodb", "myrocks", "aria"]},
        {"name": "buffer_gb", "low": 1, "high": 32},
        {"name": "sync", "kind": "categorical", "levels": ["on", "off"]},
    ]
)


def build(space: FactorSpace, **options):
    return FAMILY.build(space, DesignRequest(kind="latin_hypercube", **options), ())


@settings(max_examples=30, deadline=None)
@given(
    runs=st.integers(min_value=2, max_value=60),
    k=st.integers(min_value=1, max_value=6),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_every_numeric_column_has_one_run_per_stratum(runs, k, seed):
    coded = build(numeric(k), runs=runs, seed=seed).coded
    assert coded.shape == (runs, k)
    assert np.all((coded >= -1.0) & (coded < 1.0))
    strata = np.floor((coded + 1.0) / 2.0 * runs).astype(int)
    for column in strata.T:
        assert sorted(column) == list(range(runs))


def test_same_seed_gives_the_same_design_and_another_seed_another():
    first = build(MIXED, runs=20, seed=7)
    assert np.array_equal(first.coded, build(MIXED, runs=20, seed=7).coded)
    assert not np.array_equal(first.coded, build(MIXED, runs=20, seed=8).coded)


@pytest.mark.parametrize(("runs", "k"), [(20, 2), (30, 3), (100, 10)])
def test_maximin_beats_the_best_of_many_plain_random_latin_hypercubes(runs, k):
    design = build(numeric(k), runs=runs, seed=1)
    rng = np.random.default_rng(12345)
    plain = [pdist(2 * latin_hypercube.random_lhs(runs, k, rng) - 1).min() for _ in range(100)]
    assert design.report["min_distance"] > max(plain)


def test_default_size_is_ten_runs_per_factor():
    request = DesignRequest(kind="latin_hypercube")
    assert FAMILY.size(MIXED, request) == 40
    assert len(build(MIXED).coded) == 40
    assert FAMILY.size(MIXED, DesignRequest(kind="latin_hypercube", runs=13)) == 13


@pytest.mark.parametrize("runs", [10, 11, 12])
def test_categorical_levels_are_dealt_out_evenly(runs):
    design = build(MIXED, runs=runs, seed=3)
    engine, sync = MIXED["engine"], MIXED["sync"]
    engine_codes = [engine.encode(level) for level in ("innodb", "myrocks", "aria")]
    counts = collections.Counter(design.coded[:, 1])
    assert set(counts) <= set(engine_codes)
    assert max(counts.values()) - min(counts.values()) <= 1
    assert sum(counts.values()) == runs and len(counts) == 3
    sync_counts = collections.Counter(design.coded[:, 3])
    assert set(sync_counts) == {sync.encode("on"), sync.encode("off")}
    assert max(sync_counts.values()) - min(sync_counts.values()) <= 1


def test_report_and_point_types():
    design = build(MIXED, runs=12, seed=0)
    assert design.point_types == ("space_filling",) * 12
    assert design.blocks == (1,) * 12
    assert design.report["criterion"] == "maximin"
    assert design.report["runs"] == 12
    assert design.report["min_distance"] == pytest.approx(pdist(design.coded[:, [0, 2]]).min())
    assert json.loads(json.dumps(design.report)) == design.report


def test_all_categorical_factors_are_refused():
    space = FactorSpace.from_dicts(
        [{"name": "engine", "kind": "categorical", "levels": ["innodb", "myrocks"]}]
    )
    with pytest.raises(DomainError) as error:
        FAMILY.size(space, DesignRequest(kind="latin_hypercube"))
    assert error.value.field == "design.kind"


def test_blocks_are_refused():
    with pytest.raises(DomainError) as error:
        build(numeric(3), blocks=2)
    assert error.value.field == "design.blocks"


def test_hundred_runs_of_ten_factors_are_fast():
    space, request = numeric(10), DesignRequest(kind="latin_hypercube", runs=100)
    FAMILY.build(space, request, ())  # warm-up: one-off costs of a first call
    start = time.perf_counter()
    FAMILY.build(space, request, ())
    assert time.perf_counter() - start < 0.1
