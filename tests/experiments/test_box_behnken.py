"""Box-Behnken designs against the published designs (Box & Behnken 1960; Myers & Montgomery,
RSM, ch. 7; NIST/SEMATECH e-Handbook 5.3.3.6.2; Minitab's blocked designs)."""

import itertools
import json
import time

import numpy as np
import pytest

from experiments.designs import _pydoe, box_behnken
from experiments.designs.request import DesignRequest
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from tests.experiments.design_checks import assert_blocks_orthogonal

FAMILY = box_behnken.BoxBehnken()

# Runs without centre points and how many factors vary in each run. The published totals add
# 3, 3, 6, 6, 6, 10, 10, 12 and 12 centre points (15, 27, 46, 54, 62, 130, 170, 188, 204 runs).
PUBLISHED = {
    3: (12, 2),
    4: (24, 2),
    5: (40, 2),
    6: (48, 3),
    7: (56, 3),
    8: (112, 4),  # Design-Expert's; not in the 1960 paper
    9: (120, 3),
    10: (160, 4),
    11: (176, 5),
    12: (192, 4),
}


def numeric(k: int) -> FactorSpace:
    return FactorSpace.from_dicts({"name": f"x{i}", "low": 0, "high": 10} for i in range(k))


def build(k: int, **options):
    return FAMILY.build(numeric(k), DesignRequest(kind="box_behnken", **options), ())


def quadratic(coded: np.ndarray) -> np.ndarray:
    k = coded.shape[1]
    pairs = [coded[:, i] * coded[:, j] for i, j in itertools.combinations(range(k), 2)]
    return np.column_stack([np.ones(len(coded)), coded, *pairs, coded**2])


@pytest.mark.parametrize("k", sorted(PUBLISHED))
def test_run_counts_and_structure_match_the_published_designs(k):
    runs_without_centres, varied = PUBLISHED[k]
    runs = build(k)
    assert len(runs.coded) == runs_without_centres
    assert FAMILY.size(numeric(k), DesignRequest(kind="box_behnken")) == runs_without_centres
    assert runs.report["runs"] == runs_without_centres
    assert runs.point_types == ("edge",) * runs_without_centres
    assert runs.blocks == (1,) * runs_without_centres
    assert set(runs.coded.ravel()) == {-1.0, 0.0, 1.0}
    # Every run varies the same number of factors (k - varied of them sit at their centre).
    assert set((runs.coded != 0).sum(axis=1)) == {varied}
    # Balanced: every factor is at -1 and +1 equally often, and varied equally often.
    assert runs.coded.sum(axis=0) == pytest.approx(np.zeros(k))
    assert len(set((runs.coded**2).sum(axis=0))) == 1
    # Only the 9-factor design repeats runs: its 15 groups run the first parallel class twice.
    repeated = 24 if k == 9 else 0
    assert len({tuple(row) for row in runs.coded}) == len(runs.coded) - repeated


@pytest.mark.parametrize("k", sorted(PUBLISHED))
def test_full_quadratic_model_is_estimable_with_one_centre_point(k):
    coded = np.vstack([build(k).coded, np.zeros(k)])
    model = quadratic(coded)
    assert np.linalg.matrix_rank(model) == model.shape[1]


@pytest.mark.parametrize("k", [3, 4, 5])
def test_three_to_five_factors_come_from_pydoe2(k):
    runs = build(k)
    assert runs.report["source"] == "pyDOE2 bbdesign"
    assert runs.coded.tolist() == _pydoe.bbdesign(k).tolist()
    supports = {tuple(np.flatnonzero(row)) for row in runs.coded}
    assert supports == set(itertools.combinations(range(k), 2))


def test_pydoe2_is_not_the_published_design_from_six_factors():
    # pyDOE2 keeps a 2^2 on every pair: 60 and 84 runs instead of the published 48 and 56.
    assert len(_pydoe.bbdesign(6)) == 60
    assert len(_pydoe.bbdesign(7)) == 84
    assert build(6).report["source"] == "Box & Behnken 1960 table"
    assert build(8).report["source"] == "Design-Expert table"


def test_six_factor_design_uses_the_published_generating_groups():
    runs = build(6)
    supports = {tuple(int(i) + 1 for i in np.flatnonzero(row)) for row in runs.coded}
    assert supports == {(1, 2, 4), (2, 3, 5), (3, 4, 6), (1, 4, 5), (2, 5, 6), (1, 3, 6)}
    # Each group runs the full 2^3.
    first = runs.coded[:8][:, [0, 1, 3]]
    assert {tuple(row) for row in first} == set(itertools.product((-1.0, 1.0), repeat=3))


@pytest.mark.parametrize(("k", "together"), [(7, 1), (11, 2)])
def test_seven_and_eleven_factor_groups_are_balanced_incomplete_blocks(k, together):
    # Every pair of factors varies together in the same number of groups (lambda).
    counts = {pair: 0 for pair in itertools.combinations(range(k), 2)}
    for group in box_behnken.GROUPS[k]:
        for pair in itertools.combinations(sorted(f - 1 for f in group), 2):
            counts[pair] += 1
    assert set(counts.values()) == {together}


@pytest.mark.parametrize("k", [8, 11])
def test_groups_of_the_eight_and_eleven_factor_designs_run_a_half_fraction(k):
    runs = build(k)
    varied = np.where(runs.coded == 0, 1.0, runs.coded).prod(axis=1)
    assert set(varied) == {1.0}


@pytest.mark.parametrize("k", [4, 7])
def test_four_and_seven_factor_designs_are_rotatable(k):
    # Box & Behnken (1960): for these two, sum x_i^4 = 3 sum x_i^2 x_j^2 (rotatable moments).
    coded = build(k).coded
    fourth = (coded**4).sum(axis=0)
    pairs = itertools.combinations(range(k), 2)
    mixed = [(coded[:, i] ** 2 * coded[:, j] ** 2).sum() for i, j in pairs]
    assert set(fourth) == {3 * mixed[0]}
    assert len(set(mixed)) == 1


@pytest.mark.parametrize(
    ("k", "counts"),
    [
        (3, (1,)),
        (4, (1, 3)),
        (5, (1, 2)),
        (6, (1, 2)),
        (7, (1, 2)),
        (8, (1,)),
        (9, (1, 2, 5, 10)),
        (10, (1, 2)),
        (11, (1,)),
        (12, (1, 2)),
    ],
)
def test_block_counts_include_minitabs_orthogonal_blockings(k, counts):
    assert box_behnken.block_counts(k) == counts


@pytest.mark.parametrize(
    ("k", "blocks"),
    [(k, b) for k in sorted(PUBLISHED) for b in box_behnken.block_counts(k) if b > 1],
)
@pytest.mark.parametrize("centres", [1, 3])
def test_blocks_are_orthogonal_to_the_quadratic_model(k, blocks, centres):
    runs = build(k, blocks=blocks)
    labels = np.array(runs.blocks)
    assert set(labels) == set(range(1, blocks + 1))
    assert len(set(np.bincount(labels)[1:])) == 1
    coded = np.vstack([runs.coded, np.zeros((centres * blocks, k))])
    block = np.concatenate([labels, np.repeat(np.arange(1, blocks + 1), centres)])
    assert_blocks_orthogonal(quadratic(coded), block)


def test_four_factors_in_three_blocks_pair_the_factors_as_published():
    runs = build(4, blocks=3)
    by_block: dict[int, set] = {}
    for block, row in zip(runs.blocks, runs.coded, strict=True):
        by_block.setdefault(block, set()).add(tuple(int(i) + 1 for i in np.flatnonzero(row)))
    assert by_block == {1: {(1, 2), (3, 4)}, 2: {(1, 3), (2, 4)}, 3: {(1, 4), (2, 3)}}


@pytest.mark.parametrize(("k", "blocks"), [(3, 2), (4, 2), (8, 2), (6, 3), (9, 3)])
def test_other_block_counts_are_refused(k, blocks):
    with pytest.raises(DomainError) as error:
        build(k, blocks=blocks)
    assert error.value.field == "design.blocks"


def test_fewer_than_three_factors_are_refused():
    with pytest.raises(DomainError) as error:
        FAMILY.check(numeric(2), DesignRequest(kind="box_behnken"))
    assert error.value.field == "design.kind"
    assert error.value.rule == "a Box-Behnken design needs at least 3 numeric factors; 2 given"


def test_more_factors_than_published_are_refused():
    with pytest.raises(DomainError) as error:
        FAMILY.size(numeric(13), DesignRequest(kind="box_behnken"))
    assert error.value.field == "design.kind"


def test_categorical_factor_is_refused_by_name():
    space = FactorSpace.from_dicts(
        [
            {"name": "threads", "low": 1, "high": 64},
            {"name": "nodes", "low": 1, "high": 9},
            {"name": "engine", "kind": "categorical", "levels": ["innodb", "myrocks"]},
        ]
    )
    with pytest.raises(DomainError) as error:
        FAMILY.build(space, DesignRequest(kind="box_behnken"), ())
    assert error.value.field == "design.kind"
    assert error.value.rule == (
        "a Box-Behnken design needs numeric factors; 'engine' is categorical"
    )


def test_report_is_json_friendly():
    report = build(6, blocks=2).report
    assert report == {"runs": 48, "source": "Box & Behnken 1960 table"}
    assert json.loads(json.dumps(report)) == report


@pytest.mark.parametrize("k", [10, 12])
def test_large_designs_are_fast(k):
    space, request = numeric(k), DesignRequest(kind="box_behnken", blocks=2)
    start = time.perf_counter()
    FAMILY.build(space, request, ())
    assert time.perf_counter() - start < 0.1
