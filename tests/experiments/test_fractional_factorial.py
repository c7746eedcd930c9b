"""Two-level fractional factorials, checked against published designs and catalogues.

Sources: Montgomery, Design and Analysis of Experiments, Table 8.14 (generators, resolutions) and
sections 7.4-7.6 (blocking); Chen, Sun & Wu (1993), Int. Stat. Review 61, Tables 2-4 (word length
patterns of the minimum-aberration 16-, 32- and 64-run designs, k-p.1); Xu (2009), Technometrics
51, 128-run table (k-p.1).
"""

import itertools
import time

import numpy as np
import pytest

from experiments.designs import fractional_factorial as ff
from experiments.designs.request import DesignRequest
from experiments.errors import DomainError
from experiments.factors import FactorSpace

FAMILY = ff.FractionalFactorial()


def numeric(k: int) -> FactorSpace:
    return FactorSpace.from_dicts([{"name": f"x{i}", "low": 0, "high": 1} for i in range(k)])


def request(**options) -> DesignRequest:
    return DesignRequest(kind="fractional_factorial", randomize=False, **options)


def plan(k: int, **options):
    return FAMILY.build(numeric(k), request(**options), [])


def column(coded: np.ndarray, effect: str) -> np.ndarray:
    """The +-1 column of an effect named by letters (A, AB, BCD...)."""
    return np.prod(coded[:, [ff.LETTERS.index(letter) for letter in effect]], axis=1)


# Word length pattern as published, from the first length listed: CSW tables start at A3 for 16
# and 32 runs and at A4 for 64 runs; Xu's 128-run table at A4.
PUBLISHED_WLP = {
    (5, 16): (3, [0, 0, 1]),
    (6, 16): (3, [0, 3, 0, 0]),
    (7, 16): (3, [0, 7, 0, 0, 0]),
    (8, 16): (3, [0, 14, 0, 0, 0, 1]),
    (9, 16): (3, [4, 14, 8, 0, 4, 1, 0]),
    (10, 16): (3, [8, 18, 16, 8, 8, 5, 0, 0]),
    (11, 16): (3, [12, 26, 28, 24, 20, 13, 4]),
    (12, 16): (3, [16, 39, 48, 48, 48, 39, 16, 0, 0, 1]),
    (6, 32): (3, [0, 0, 0, 1, 0]),
    (7, 32): (3, [0, 1, 2, 0, 0]),
    (8, 32): (3, [0, 3, 4, 0, 0]),
    (9, 32): (3, [0, 6, 8, 0, 0]),
    (10, 32): (3, [0, 10, 16, 0, 0]),
    (11, 32): (3, [0, 25, 0, 27, 0]),
    (12, 32): (3, [0, 38, 0, 52, 0]),
    (13, 32): (3, [0, 55, 0, 96, 0]),
    (14, 32): (3, [0, 77, 0, 168, 0]),
    (15, 32): (3, [0, 105, 0, 280, 0]),
    (7, 64): (4, [0, 0, 0, 1]),
    (8, 64): (4, [0, 2, 1, 0]),
    (9, 64): (4, [1, 4, 2, 0]),
    (10, 64): (4, [2, 8, 4, 0]),
    (11, 64): (4, [4, 14, 8, 0]),
    (12, 64): (4, [6, 24, 16, 0]),
    (13, 64): (4, [14, 28, 24, 24]),
    (14, 64): (4, [22, 40, 36, 56]),
    (15, 64): (4, [30, 60, 60, 105]),
    (8, 128): (4, [0, 0, 0, 0, 1]),
    (9, 128): (4, [0, 0, 3, 0, 0]),
    (10, 128): (4, [0, 3, 3, 1, 0]),
    (11, 128): (4, [0, 6, 6, 2, 1]),
    (12, 128): (4, [1, 8, 12, 8]),
    (13, 128): (4, [2, 16, 18, 10]),
    (14, 128): (4, [3, 24, 36, 16]),
    (15, 128): (4, [7, 32, 52, 40]),
}
# Resolution as published: Montgomery Table 8.14 for the 4- and 8-run designs, resolution III for
# the saturated 16-run design and its projections; the first non-zero WLP entry for the rest.
PUBLISHED_RESOLUTION = {
    (3, 4): 3,
    (4, 8): 4,
    (5, 8): 3,
    (6, 8): 3,
    (7, 8): 3,
    (13, 16): 3,
    (14, 16): 3,
    (15, 16): 3,
    **{
        key: start + next(i for i, count in enumerate(wlp) if count)
        for key, (start, wlp) in PUBLISHED_WLP.items()
    },
}


def test_every_catalogue_entry_has_a_published_resolution():
    assert set(PUBLISHED_RESOLUTION) == set(ff.CATALOGUE)


@pytest.mark.parametrize(("k", "runs"), sorted(ff.CATALOGUE))
def test_catalogue_entry_has_the_published_resolution_and_word_length_pattern(k, runs):
    report = plan(k, runs=runs).report
    assert report["resolution"] == PUBLISHED_RESOLUTION[k, runs]
    if (k, runs) in PUBLISHED_WLP:
        start, published = PUBLISHED_WLP[k, runs]
        expected = [0] * (start - 3) + published
        # Catalogues pad with lengths beyond k, always zero.
        pattern = report["word_length_pattern"] + [0] * len(expected)
        assert pattern[: len(expected)] == expected
    assert len(report["defining_relation"]) == 2 ** (k - runs.bit_length() + 1) - 1


@pytest.mark.parametrize(("k", "runs"), sorted(ff.CATALOGUE))
def test_catalogue_entry_is_an_orthogonal_regular_fraction(k, runs):
    family = plan(k, runs=runs)
    coded = family.coded
    assert coded.shape == (runs, k)
    assert set(np.unique(coded)) == {-1.0, 1.0}
    model = np.column_stack([np.ones(runs), coded])
    np.testing.assert_array_equal(model.T @ model, runs * np.eye(k + 1))
    # Every word of the defining relation is the identity column: the computed relation is the
    # one of the design actually built.
    for word in family.report["defining_relation"]:
        np.testing.assert_array_equal(column(coded, word.removeprefix("I = ")), np.ones(runs))
    assert len({tuple(row) for row in coded}) == runs


@pytest.mark.parametrize(("k", "runs"), sorted(ff.CATALOGUE))
def test_aliases_share_their_column(k, runs):
    family = plan(k, runs=runs)
    for effect, aliases in family.report["aliases"].items():
        assert len(effect) <= 2
        for alias in aliases:
            assert len(alias) <= 3
            np.testing.assert_array_equal(column(family.coded, alias), column(family.coded, effect))


def test_2_7_4_resolution_iii_has_the_textbook_generators():
    family = plan(7, runs=8)
    report = family.report
    assert report["generators"] == ["D = AB", "E = AC", "F = BC", "G = ABC"]
    assert report["resolution"] == 3
    assert report["word_length_pattern"] == [7, 7, 0, 0, 1]
    # Base factors in standard (Yates) order, the first changing fastest.
    expected = [[a, b, c] for c, b, a in itertools.product([-1.0, 1.0], repeat=3)]
    assert family.coded[:, :3].tolist() == expected
    for letter, word in zip("DEFG", ["AB", "AC", "BC", "ABC"], strict=True):
        np.testing.assert_array_equal(column(family.coded, letter), column(family.coded, word))
    assert report["aliases"]["A"][:3] == ["BD", "CE", "FG"]


def test_2_5_1_resolution_v_is_the_half_fraction_e_abcd():
    report = plan(5, resolution=5).report
    assert report["generators"] == ["E = ABCD"]
    assert report["defining_relation"] == ["I = ABCDE"]
    assert report["resolution"] == 5
    assert report["word_length_pattern"] == [0, 0, 1]
    assert report["aliases"]["A"] == []
    assert report["aliases"]["AB"] == ["CDE"]


def test_2_6_2_resolution_iv_is_the_default_design_of_six_factors():
    family = plan(6)
    assert len(family.coded) == 16
    assert family.report["generators"] == ["E = ABC", "F = BCD"]
    assert family.report["defining_relation"] == ["I = ABCE", "I = ADEF", "I = BCDF"]
    assert family.report["resolution"] == 4


def test_2_8_4_resolution_iv_is_the_default_design_of_eight_factors():
    report = plan(8).report
    assert report["generators"] == ["E = BCD", "F = ACD", "G = ABC", "H = ABD"]
    assert report["resolution"] == 4
    assert report["word_length_pattern"] == [0, 14, 0, 0, 0, 1]


def test_2_4_1_aliases_pair_main_effects_with_three_factor_interactions():
    report = plan(4, runs=8).report
    assert report["defining_relation"] == ["I = ABCD"]
    assert report["aliases"] == {
        "A": ["BCD"],
        "B": ["ACD"],
        "C": ["ABD"],
        "D": ["ABC"],
        "AB": ["CD"],
        "AC": ["BD"],
        "AD": ["BC"],
        "BC": ["AD"],
        "BD": ["AC"],
        "CD": ["AB"],
    }


def test_letters_name_the_factors_and_skip_i():
    space = FactorSpace.from_dicts(
        [{"name": f"f{i}", "low": 0, "high": 1} for i in range(9)]
        + [{"name": "engine", "kind": "categorical", "levels": ["innodb", "myrocks"]}]
    )
    family = FAMILY.build(space, request(), [])
    assert list(family.report["letters"]) == list("ABCDEFGHJK")
    assert family.report["letters"]["K"] == "engine"
    assert set(np.unique(family.coded[:, 9])) == {-1.0, 1.0}


@pytest.mark.parametrize(
    ("k", "resolution", "runs"),
    [(3, 3, 4), (3, 4, 8), (5, 3, 8), (5, 4, 16), (6, 5, 32), (7, 5, 64), (9, 5, 128), (11, 4, 32)],
)
def test_a_resolution_gives_the_smallest_design_reaching_it(k, resolution, runs):
    family = plan(k, resolution=resolution)
    assert len(family.coded) == runs
    assert (family.report["resolution"] or 99) >= resolution


def test_two_to_the_k_runs_is_the_full_factorial_without_aliases():
    report = plan(3).report
    assert report["resolution"] is None
    assert report["generators"] == report["defining_relation"] == []
    assert report["word_length_pattern"] == []
    assert report["aliases"] == {}
    assert len(plan(5, runs=32).coded) == 32


def test_two_level_fraction_serves_the_factorial_portion_of_other_designs():
    coded, generators = ff.two_level_fraction(5, 5)
    assert coded.shape == (16, 5)
    assert generators == ["E = ABCD"]
    coded, generators = ff.two_level_fraction(2, 5)
    assert coded.tolist() == [[-1, -1], [1, -1], [-1, 1], [1, 1]]
    assert generators == []


def test_2_3_in_two_blocks_confounds_abc():
    family = plan(3, blocks=2)
    assert family.report["block_generators"] == ["ABC"]
    assert family.report["confounded_with_blocks"] == ["ABC"]
    # Montgomery 7.4: (1), ab, ac, bc in one block; a, b, c, abc in the other.
    assert family.blocks == (1, 2, 2, 1, 2, 1, 1, 2)


def test_2_5_in_two_blocks_confounds_the_five_factor_interaction():
    family = plan(5, runs=32, blocks=2)
    assert family.report["confounded_with_blocks"] == ["ABCDE"]


def test_2_4_in_four_blocks_confounds_one_two_factor_interaction_at_best():
    # Montgomery 7.6: ABC and ACD, so BD too; any 4 blocks of 2^4 confound a 2FI.
    confounded = plan(4, runs=16, blocks=4).report["confounded_with_blocks"]
    assert sorted(len(effect) for effect in confounded) == [2, 3, 3]


def test_2_6_2_in_two_blocks_keeps_two_factor_interactions_clear():
    confounded = plan(6, blocks=2).report["confounded_with_blocks"]
    assert min(len(effect) for effect in confounded) >= 3


BLOCKED = [
    (k, runs, blocks)
    for k in range(3, 12)
    for runs in (4, 8, 16, 32, 64)
    for blocks in (2, 4, 8, 16)
    if (k, runs) in ff.CATALOGUE or runs == 2**k
    if blocks < runs
]


@pytest.mark.parametrize(("k", "runs", "blocks"), BLOCKED)
def test_blocks_are_confounded_only_with_the_reported_effects(k, runs, blocks):
    try:
        family = plan(k, runs=runs, blocks=blocks)
    except DomainError as error:
        assert error.field == "design.blocks"
        return
    run_blocks = np.array(family.blocks)
    assert sorted(set(family.blocks)) == list(range(1, blocks + 1))
    assert all((run_blocks == b).sum() == runs // blocks for b in range(1, blocks + 1))
    for b in range(1, blocks + 1):
        inside = family.coded[run_blocks == b]
        # Main effects stay orthogonal to blocks; confounded effects are constant in a block.
        np.testing.assert_array_equal(inside.sum(axis=0), np.zeros(k))
        for effect in family.report["confounded_with_blocks"]:
            assert len(set(column(inside, effect))) == 1
    assert len(family.report["block_generators"]) == blocks.bit_length() - 1


@pytest.mark.parametrize(
    ("k", "options", "field", "words"),
    [
        (11, {"resolution": 6}, "design.resolution", "more than 128 runs"),
        (7, {"runs": 24}, "design.runs", "power-of-two"),
        (7, {"runs": 4}, "design.runs", "at least 8 runs"),
        (4, {"runs": 32}, "design.runs", "at most 16 runs"),
        (8, {"runs": 256}, "design.runs", "at most 128 runs"),
        (4, {"blocks": 3}, "design.blocks", "power-of-two"),
        (3, {"blocks": 8}, "design.blocks", "at most 4 blocks"),
        (16, {}, "design.kind", "at most 15 factors"),
    ],
)
def test_impossible_requests_name_the_rule(k, options, field, words):
    for call in (FAMILY.check, FAMILY.size):
        with pytest.raises(DomainError) as raised:
            call(numeric(k), request(**options))
        assert raised.value.field == field
        assert words in raised.value.rule


@pytest.mark.parametrize(
    "factor",
    [
        {"name": "nodes", "kind": "integer", "levels": [1, 3, 5]},
        {"name": "workload", "kind": "categorical", "levels": ["oltp", "read", "write"]},
        {"name": "engine", "kind": "categorical", "levels": ["innodb"]},
    ],
)
def test_factors_with_other_than_two_levels_are_refused(factor):
    space = FactorSpace.from_dicts([{"name": "a", "low": 0, "high": 1}, factor])
    with pytest.raises(DomainError) as raised:
        FAMILY.build(space, request(), [])
    assert raised.value.field == "factors.1.levels"
    assert f"'{factor['name']}' has {len(factor['levels'])} level" in raised.value.rule


@pytest.mark.parametrize(
    "options", [{}, {"resolution": 3}, {"resolution": 5}, {"runs": 64}, {"blocks": 4}]
)
def test_size_is_the_number_of_runs_built(options):
    for k in range(2, 12):
        try:
            expected = FAMILY.size(numeric(k), request(**options))
        except DomainError:
            continue
        assert len(plan(k, **options).coded) == expected


def test_ten_factors_plan_well_under_100_ms():
    for cached in (ff._fraction, ff._block_space, ff._subspaces):
        cached.cache_clear()
    for options in ({}, {"resolution": 5}, {"runs": 16}, {"resolution": 5, "blocks": 8}):
        start = time.perf_counter()
        FAMILY.check(numeric(10), request(**options))
        plan(10, **options)
        assert time.perf_counter() - start < 0.1, options
