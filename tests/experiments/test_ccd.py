"""Central composite designs against the published tables (Box & Hunter 1957, Montgomery DAE
ch. 8 and 11, NIST/SEMATECH e-Handbook 5.3.3.6) and the definitions of rotatable, orthogonal and
orthogonally blocked designs."""

import itertools
import json
import time

import numpy as np
import pytest

from experiments.designs import _pydoe, ccd, plan
from experiments.designs.request import DesignRequest
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from tests.experiments.design_checks import assert_blocks_orthogonal

FAMILY = ccd.CentralComposite()


def numeric(k: int) -> FactorSpace:
    return FactorSpace.from_dicts({"name": f"x{i}", "low": 0, "high": 10} for i in range(k))


def build(k: int, **options):
    return FAMILY.build(numeric(k), DesignRequest(kind="ccd", **options), ())


def with_centres(runs, per_block: int) -> tuple[np.ndarray, np.ndarray]:
    """The family's runs plus the planner's centre points, and the block of each run."""
    blocks = np.array(runs.blocks)
    labels = sorted(set(runs.blocks))
    centres = np.zeros((per_block * len(labels), runs.coded.shape[1]))
    return (
        np.vstack([runs.coded, centres]),
        np.concatenate([blocks, np.repeat(labels, per_block)]),
    )


def resolution(cube: np.ndarray) -> int | None:
    """Length of the shortest word of the defining relation (None for a full factorial)."""
    k = cube.shape[1]
    for length in range(1, k + 1):
        for word in itertools.combinations(range(k), length):
            if len(set(cube[:, list(word)].prod(axis=1))) == 1:
                return length
    return None


def test_adapter_two_level_factorial_is_in_standard_order():
    assert _pydoe.ff2n(2).tolist() == [[-1, -1], [1, -1], [-1, 1], [1, 1]]


@pytest.mark.parametrize(
    ("k", "factorial", "axial", "alpha"),
    [
        # Box & Hunter (1957); NIST e-Handbook table 5.3.3.6.1; k = 5, 6 use the half fraction.
        (2, 4, 4, 1.414),
        (3, 8, 6, 1.682),
        (4, 16, 8, 2.000),
        (5, 16, 10, 2.000),
        (6, 32, 12, 2.378),
        (7, 64, 14, 2.828),
        (8, 128, 16, 3.364),
    ],
)
def test_rotatable_alpha_and_run_counts_match_the_published_table(k, factorial, axial, alpha):
    runs = build(k)
    assert runs.report["alpha"] == pytest.approx(alpha, abs=5e-4)
    assert runs.report["alpha_kind"] == "rotatable"
    assert (runs.report["factorial_runs"], runs.report["axial_runs"]) == (factorial, axial)
    assert runs.point_types == ("factorial",) * factorial + ("axial",) * axial
    assert (
        len(runs.coded) == factorial + axial == FAMILY.size(numeric(k), DesignRequest(kind="ccd"))
    )


def test_two_factor_design_in_standard_order():
    a = 2**0.5
    runs = build(2)
    expected = [[-1, -1], [1, -1], [-1, 1], [1, 1], [-a, 0], [a, 0], [0, -a], [0, a]]
    assert runs.coded == pytest.approx(np.array(expected))
    assert runs.blocks == (1,) * 8
    assert runs.report["outside_range"] is True
    assert runs.report["factorial_fraction"] == "full"


@pytest.mark.parametrize(
    ("k", "fraction", "expected_resolution"),
    [
        (2, "full", None),
        (3, "full", None),
        (4, "full", None),
        (5, "E = ABCD", 5),
        (6, "F = ABCDE", 6),
        (7, "G = ABCDEF", 7),
        (8, "H = ABCDEFG", 8),
        # Montgomery DAE table 8.14: the 128-run minimum-aberration fractions.
        (9, "H = ACDFG, J = BCEFG", 6),
        (10, "H = ABCG, J = BCDE, K = ACDF", 5),
    ],
)
def test_factorial_portion_is_the_published_fraction_of_resolution_v_or_more(
    k, fraction, expected_resolution
):
    runs = build(k)
    assert runs.report["factorial_fraction"] == fraction
    cube = runs.coded[: runs.report["factorial_runs"]]
    assert resolution(cube) == expected_resolution
    # Resolution V or more: main effects and two-factor interactions are mutually orthogonal.
    pairs = [cube[:, i] * cube[:, j] for i, j in itertools.combinations(range(k), 2)]
    model = np.column_stack([cube, *pairs])
    assert model.T @ model == pytest.approx(len(cube) * np.eye(model.shape[1]))


@pytest.mark.parametrize(
    ("k", "alpha"),
    # Orthogonal CCDs with one centre point (Myers & Montgomery, RSM, table of orthogonal alpha).
    [(2, 1.000), (3, 1.215), (4, 1.414), (5, 1.547)],
)
def test_orthogonal_alpha_with_one_centre_point_matches_the_published_values(k, alpha):
    runs = build(k, alpha="orthogonal", centre_points=1)
    assert runs.report["alpha"] == pytest.approx(alpha, abs=5e-4)
    assert runs.report["alpha_kind"] == "orthogonal"


@pytest.mark.parametrize("k", range(2, 11))
@pytest.mark.parametrize("centres", [0, 1, 4])
def test_orthogonal_alpha_makes_the_quadratic_columns_orthogonal(k, centres):
    coded, _ = with_centres(build(k, alpha="orthogonal", centre_points=centres), centres)
    squares = coded**2 - (coded**2).mean(axis=0)
    gram = squares.T @ squares
    assert gram - np.diag(np.diag(gram)) == pytest.approx(np.zeros((k, k)), abs=1e-9)


@pytest.mark.parametrize(
    ("k", "blocks", "centres", "alpha"),
    [
        # Montgomery DAE section 11.4.3 (Box & Hunter 1957): factorial | axial, 3 centres each.
        (2, 2, 3, 1.414),
        # Box & Hunter (1957), Minitab's 3-block CCD: two factorial halves | axial.
        (3, 3, 2, 1.633),
        (4, 3, 2, 2.000),
    ],
)
def test_orthogonal_blocking_alpha_matches_the_published_designs(k, blocks, centres, alpha):
    runs = build(k, alpha="orthogonal", blocks=blocks, centre_points=centres)
    assert runs.report["alpha"] == pytest.approx(alpha, abs=5e-4)
    assert runs.report["alpha_kind"] == "orthogonal_blocks"


@pytest.mark.parametrize(
    ("k", "blocks"), [(k, 2) for k in range(2, 11)] + [(k, 3) for k in (3, 4, 6, 7, 8, 9, 10)]
)
@pytest.mark.parametrize("centres", [0, 2, 5])
def test_orthogonal_blocking_alpha_blocks_the_design_orthogonally(k, blocks, centres):
    runs = build(k, alpha="orthogonal", blocks=blocks, centre_points=centres)
    coded, block = with_centres(runs, centres)
    pairs = [coded[:, i] * coded[:, j] for i, j in itertools.combinations(range(k), 2)]
    assert_blocks_orthogonal(np.column_stack([coded, *pairs, coded**2]), block)


def test_two_blocks_put_the_factorial_portion_first_and_the_axial_portion_second():
    runs = build(3, blocks=2)
    assert runs.blocks == (1,) * 8 + (2,) * 6


def test_three_blocks_split_the_factorial_portion_on_its_highest_order_interaction():
    runs = build(3, blocks=3)
    cube = runs.coded[:8]
    assert runs.report["blocks_confounded_with"] == "ABC"
    assert [b for b, row in zip(runs.blocks, cube, strict=False) if row.prod() < 0] == [1] * 4
    assert [b for b, row in zip(runs.blocks, cube, strict=False) if row.prod() > 0] == [2] * 4
    assert runs.blocks[8:] == (3,) * 6
    # A half fraction: the confounded interaction is reported with its alias.
    assert build(6, blocks=3).report["blocks_confounded_with"] == "ABC = DEF"


@pytest.mark.parametrize(("k", "blocks"), [(2, 3), (5, 3), (3, 4), (3, 6)])
def test_impossible_block_counts_are_refused(k, blocks):
    with pytest.raises(DomainError) as error:
        build(k, blocks=blocks)
    assert error.value.field == "design.blocks"


@pytest.mark.parametrize("k", range(2, 11))
def test_inscribed_design_stays_inside_the_ranges(k):
    runs = build(k, ccd_type="inscribed")
    alpha = runs.report["alpha"]
    cube = runs.coded[: runs.report["factorial_runs"]]
    assert np.abs(runs.coded).max() == pytest.approx(1.0)
    assert np.abs(cube) == pytest.approx(np.full(cube.shape, 1 / alpha))
    assert runs.report["outside_range"] is False


def test_inscribed_design_with_alpha_below_one_keeps_the_factorial_points_on_the_ends():
    runs = build(2, ccd_type="inscribed", alpha=0.5)
    assert np.abs(runs.coded).max() == pytest.approx(1.0)
    assert runs.report["outside_range"] is False


@pytest.mark.parametrize("alpha", ["rotatable", "orthogonal", 1, 1.0])
def test_face_centred_design_has_alpha_one(alpha):
    runs = build(3, ccd_type="face_centred", alpha=alpha)
    assert runs.report["alpha"] == 1.0
    assert runs.report["alpha_kind"] == "face_centred"
    assert set(runs.coded.ravel()) == {-1.0, 0.0, 1.0}
    assert runs.report["outside_range"] is False


def test_face_centred_design_refuses_another_numeric_alpha():
    with pytest.raises(DomainError) as error:
        build(3, ccd_type="face_centred", alpha=1.5)
    assert error.value.field == "design.alpha"


def test_numeric_alpha_places_the_axial_points():
    runs = build(3, alpha=1.5)
    assert runs.report["alpha_kind"] == "numeric"
    assert np.abs(runs.coded[8:]).max(axis=1) == pytest.approx([1.5] * 6)


def test_categorical_factor_is_refused_by_name():
    space = FactorSpace.from_dicts(
        [
            {"name": "threads", "low": 1, "high": 64},
            {"name": "engine", "kind": "categorical", "levels": ["innodb", "myrocks"]},
        ]
    )
    with pytest.raises(DomainError) as error:
        FAMILY.check(space, DesignRequest(kind="ccd"))
    assert error.value.field == "design.kind"
    assert error.value.rule == (
        "a central composite design needs numeric factors; 'engine' is categorical"
    )


@pytest.mark.parametrize("k", [1, 11])
def test_factor_counts_outside_two_to_ten_are_refused(k):
    for call in (FAMILY.check, FAMILY.size):
        with pytest.raises(DomainError) as error:
            call(numeric(k), DesignRequest(kind="ccd"))
        assert error.value.field == "design.kind"


def test_factors_with_explicit_levels_are_allowed():
    space = FactorSpace.from_dicts(
        [
            {"name": "nodes", "kind": "integer", "levels": [1, 3, 5, 9]},
            {"name": "threads", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
        ]
    )
    runs = FAMILY.build(space, DesignRequest(kind="ccd"), ())
    assert len(runs.coded) == 8
    assert runs.report["factor_letters"] == {"A": "nodes", "B": "threads"}


def test_report_is_json_friendly():
    report = build(5, blocks=2, alpha="orthogonal", centre_points=2).report
    assert set(report) == {
        "alpha",
        "alpha_kind",
        "ccd_type",
        "factorial_runs",
        "axial_runs",
        "factorial_fraction",
        "outside_range",
        "blocks_confounded_with",
        "factor_letters",
    }
    assert json.loads(json.dumps(report)) == report


def test_ten_factor_design_is_fast():
    space, request = numeric(10), DesignRequest(kind="ccd", blocks=3, alpha="orthogonal")
    start = time.perf_counter()
    runs = FAMILY.build(space, request, ())
    assert time.perf_counter() - start < 0.1
    assert len(runs.coded) == 128 + 20


# --- hard ranges (issue 54, item 5) -----------------------------------------------------------

NODES_AND_THREADS = FactorSpace.from_dicts(
    [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
    ]
)


def test_a_ccd_left_open_over_integer_factors_is_face_centred_and_says_why():
    # The circumscribed design planned nodes = -1 and 11, which no cluster can run.
    design = plan(NODES_AND_THREADS, DesignRequest(kind="ccd", randomize=False))
    assert sorted({p.config["nodes"] for p in design.points}) == [1, 5, 9]
    assert sorted({p.config["threads_per_client"] for p in design.points}) == [4, 16, 64]
    assert design.family["ccd_type"] == "face_centred" and design.family["alpha"] == 1.0
    assert design.notes[0].startswith(
        "face-centred central composite design (alpha = 1), chosen because the circumscribed"
        " design's axial points, at the rotatable alpha 1.41, would plan nodes = -1 and 11"
        " (nodes is an integer factor bounded 1..9); threads_per_client = 2 and 114"
        " (threads_per_client is an integer factor bounded 4..64)."
    )
    assert "rather than inscribed" in design.notes[0]
    assert not any("outside the low..high range" in note for note in design.notes)


@pytest.mark.parametrize(
    ("options", "field", "words"),
    [
        ({"ccd_type": "circumscribed"}, "design.ccd_type", "the rotatable alpha 1.41, which plans"
         " nodes = -1 and 11"),
        ({"ccd_type": "circumscribed", "alpha": "orthogonal"}, "design.ccd_type",
         "the orthogonal alpha 1.21, which plans nodes = 0 and 10"),
        ({"alpha": 1.5}, "design.alpha", "alpha 1.5, which plans nodes = -1 and 11"),
    ],
)  # fmt: skip
def test_asking_for_axial_points_beyond_an_integer_range_is_refused(options, field, words):
    with pytest.raises(DomainError) as error:
        plan(NODES_AND_THREADS, DesignRequest(kind="ccd", **options))
    assert error.value.field == field
    assert words + " (nodes is an integer factor bounded 1..9)" in error.value.rule
    assert "no planned run may leave a hard range" in error.value.rule


def test_a_numeric_alpha_whose_rounded_axial_points_stay_inside_is_kept():
    space = FactorSpace.from_dicts(
        [
            {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
            {"name": "x", "low": 0, "high": 1},
        ]
    )
    design = plan(space, DesignRequest(kind="ccd", alpha=1.1, randomize=False))
    # 5 -+ 4.4 nodes round to 1 and 9: inside, flagged as rounded; x runs beyond its range.
    assert sorted({p.config["nodes"] for p in design.points}) == [1, 5, 9]
    assert design.family["ccd_type"] == "circumscribed" and design.family["alpha"] == 1.1
    assert any("x at -0.05, 1.05 (range 0..1)" in note for note in design.notes)


@pytest.mark.parametrize("ccd_type", ["inscribed", "face_centred"])
def test_inscribed_and_face_centred_designs_over_integer_factors_are_planned(ccd_type):
    design = plan(NODES_AND_THREADS, DesignRequest(kind="ccd", ccd_type=ccd_type))
    assert design.family["ccd_type"] == ccd_type
    assert {p.config["nodes"] for p in design.points} <= set(range(1, 10))
    assert not any("chosen because" in note for note in design.notes)


def test_continuous_factors_without_a_limit_keep_the_circumscribed_rotatable_design():
    design = plan(numeric(2), DesignRequest(kind="ccd"))
    assert design.family["ccd_type"] == "circumscribed"
    assert design.family["alpha"] == pytest.approx(2**0.5)
    assert any("runs outside the low..high range" in note for note in design.notes)


def test_the_targets_range_of_a_continuous_factor_is_a_hard_range():
    space = FactorSpace.from_dicts(
        [{"name": "write_share", "low": 0, "high": 1}, {"name": "x", "low": 0, "high": 10}]
    )
    limits = {"write_share": (0.0, 1.0)}
    design = plan(space, DesignRequest(kind="ccd"), limits=limits)
    assert design.family["ccd_type"] == "face_centred"
    assert (
        "write_share = -0.207107 and 1.20711 (the target accepts write_share from 0 to 1)"
        in (design.notes[0])
    )
    # Inside the target's range, axial points beyond the factor's own low..high are runnable.
    narrow = FactorSpace.from_dicts(
        [{"name": "write_share", "low": 0.2, "high": 0.8}, {"name": "x", "low": 0, "high": 10}]
    )
    rotatable = plan(narrow, DesignRequest(kind="ccd"), limits=limits)
    assert rotatable.family["ccd_type"] == "circumscribed"
    assert all(0 <= p.config["write_share"] <= 1 for p in rotatable.points)
