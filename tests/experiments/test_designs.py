"""The planner: sizes, coded and natural values, run order, rounding, and request validation."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.designs import (
    KINDS,
    Design,
    DesignRequest,
    design_size,
    factor_levels,
    plan,
)
from experiments.designs._pydoe import fullfact
from experiments.errors import DomainError
from experiments.factors import FactorSpace


def space(*factors: dict) -> FactorSpace:
    return FactorSpace.from_dicts(factors)


THREE_NUMERIC = space(
    {"name": "a", "low": 0, "high": 1},
    {"name": "b", "low": 10, "high": 20},
    {"name": "c", "kind": "integer", "low": 1, "high": 9},
)
MIXED = space(
    {"name": "threads", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
    {"name": "engine", "kind": "categorical", "levels": ["innodb", "myrocks"]},
    {"name": "nodes", "kind": "integer", "levels": [1, 3, 5, 9]},
)


def test_adapter_gives_level_indices_first_factor_fastest():
    assert fullfact([2, 3]).tolist() == [[0, 0], [1, 0], [0, 1], [1, 1], [0, 2], [1, 2]]


def test_two_level_full_factorial_of_three_factors_is_eight_corners_in_yates_order():
    design = plan(THREE_NUMERIC, DesignRequest(randomize=False))
    assert len(design.points) == 8
    coded = [[p.coded[n] for n in ("a", "b", "c")] for p in design.points]
    # Standard (Yates) order: the first factor changes fastest.
    expected = [[a, b, c] for c, b, a in itertools.product([-1.0, 1.0], repeat=3)]
    assert coded == expected
    assert design.points[1].config == {"a": 1.0, "b": 10.0, "c": 1}
    assert {p.point_type for p in design.points} == {"factorial"}


def test_mixed_levels_use_explicit_and_categorical_levels():
    design = plan(MIXED, DesignRequest(levels=3, randomize=False))
    assert len(design.points) == 3 * 2 * 4
    assert sorted({p.config["nodes"] for p in design.points}) == [1, 3, 5, 9]
    assert {p.config["engine"] for p in design.points} == {"innodb", "myrocks"}
    assert {p.coded["engine"] for p in design.points} == {-1.0, 1.0}


def test_log2_levels_are_evenly_spaced_after_the_scale():
    design = plan(MIXED, DesignRequest(levels=3, randomize=False))
    threads = sorted({(p.coded["threads"], p.config["threads"]) for p in design.points})
    assert threads == [(-1.0, 4), (0.0, 16), (1.0, 64)]
    assert all(isinstance(p.config["threads"], int) for p in design.points)


def test_ends_are_the_exact_bounds_so_every_point_is_in_the_region():
    fine = space(
        {"name": "ratio", "low": 0.1, "high": 0.3},
        {"name": "size", "low": 3, "high": 1000, "scale": "log2"},
    )
    assert [v for _, v in factor_levels(fine["ratio"], 3)] == [0.1, 0.2, 0.3]
    design = plan(fine, DesignRequest(levels=4, centre_points=1))
    for point in design.points:
        fine.check_config(point.config)
    assert {p.config["size"] for p in design.points} >= {3.0, 1000.0}


def test_replicates_and_centre_points_add_runs():
    request = DesignRequest(replicates=2, centre_points=3, randomize=False)
    design = plan(THREE_NUMERIC, request)
    assert len(design.points) == 2 * 8 + 3
    assert [p.replicate for p in design.points if p.point_type == "factorial"] == [1] * 8 + [2] * 8
    centres = [p for p in design.points if p.point_type == "centre"]
    assert [p.replicate for p in centres] == [1, 2, 3]
    assert centres[0].coded == {"a": 0.0, "b": 0.0, "c": 0.0}
    assert centres[0].config == {"a": 0.5, "b": 15.0, "c": 5}
    assert not any(p.rounded for p in design.points)


def test_centre_points_repeat_at_every_categorical_combination():
    request = DesignRequest(centre_points=2, randomize=False)
    design = plan(MIXED, request)
    centres = [p for p in design.points if p.point_type == "centre"]
    assert len(centres) == 2 * 2
    assert {p.config["engine"] for p in centres} == {"innodb", "myrocks"}
    assert any("centre points are repeated" in note for note in design.notes)


def test_only_categorical_factors_cannot_have_centre_points():
    categorical = space({"name": "engine", "kind": "categorical", "levels": ["x", "y"]})
    request = DesignRequest(centre_points=1)
    for call in (plan, design_size):
        with pytest.raises(DomainError) as error:
            call(categorical, request)
        assert error.value.field == "design.centre_points"


def test_integer_rounding_is_flagged():
    rounded = space(
        {"name": "nodes", "kind": "integer", "low": 1, "high": 4},
        {"name": "runtime", "low": 30, "high": 90},
    )
    design = plan(rounded, DesignRequest(levels=3, centre_points=1, randomize=False))
    middle = [p for p in design.points if p.coded["nodes"] == 0.0]
    assert middle and all(p.rounded for p in middle)
    assert all(isinstance(p.config["nodes"], int) for p in middle)
    assert all(p.config["nodes"] in (2, 3) for p in middle)
    ends = [p for p in design.points if p.coded["nodes"] != 0.0]
    assert not any(p.rounded for p in ends)
    assert any("not at their coded position" in note for note in design.notes)


def test_centre_of_a_factor_with_explicit_levels_is_its_nearest_level():
    design = plan(MIXED, DesignRequest(centre_points=1))
    centres = [p for p in design.points if p.point_type == "centre"]
    # nodes 1..9 (linear): the centre 5 is a level, so nothing moved for nodes; threads 16 is exact.
    assert {p.config["nodes"] for p in centres} == {5}
    assert not any(p.rounded for p in centres)
    skewed = space({"name": "nodes", "kind": "integer", "levels": [1, 2, 9]})
    centre = next(
        p for p in plan(skewed, DesignRequest(centre_points=1)).points if p.coded == {"nodes": 0.0}
    )
    assert centre.config == {"nodes": 2} and centre.rounded


def test_seeded_randomization_is_reproducible_and_a_permutation():
    request = DesignRequest(levels=2, replicates=2, centre_points=2, seed=42)
    first, again = plan(MIXED, request), plan(MIXED, request)
    assert first == again
    n = len(first.points)
    assert [p.run_order for p in first.points] == list(range(1, n + 1))
    assert sorted(p.std_order for p in first.points) == list(range(1, n + 1))
    std_orders = [p.std_order for p in first.points]
    assert std_orders != sorted(std_orders)
    other = plan(MIXED, DesignRequest(levels=2, replicates=2, centre_points=2, seed=43))
    assert [p.std_order for p in other.points] != std_orders


def test_without_randomization_run_order_is_standard_order():
    design = plan(MIXED, DesignRequest(randomize=False))
    assert all(p.run_order == p.std_order for p in design.points)


@pytest.mark.parametrize("factor_space", [THREE_NUMERIC, MIXED], ids=["numeric", "mixed"])
def test_design_size_matches_the_plan(factor_space: FactorSpace):
    for levels, centre_points, replicates in itertools.product((2, 3, 5), (0, 1, 4), (1, 3)):
        request = DesignRequest(levels=levels, centre_points=centre_points, replicates=replicates)
        design = plan(factor_space, request)
        assert isinstance(design, Design)
        assert design_size(factor_space, request) == len(design.points)


def test_design_size_is_cheap_for_an_oversized_request():
    huge = FactorSpace.from_dicts({"name": f"f{i}", "low": 0, "high": 1} for i in range(30))
    assert design_size(huge, DesignRequest(levels=9, replicates=20)) == 9**30 * 20


def test_every_planned_config_is_a_valid_config():
    design = plan(MIXED, DesignRequest(levels=4, centre_points=2, replicates=2))
    for point in design.points:
        assert MIXED.check_config(point.config) == point.config
        assert point.block == 1


def test_request_from_dict_defaults_and_values():
    assert DesignRequest.from_dict({}) == DesignRequest()
    request = DesignRequest.from_dict(
        {"kind": "full_factorial", "levels": 3, "centre_points": 4, "randomize": False}
    )
    assert (request.levels, request.centre_points, request.randomize) == (3, 4, False)
    assert KINDS == (
        "full_factorial", "fractional_factorial", "plackett_burman", "ccd", "box_behnken",
        "latin_hypercube", "d_optimal",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"kind": "magic"}, "design.kind"),
        ({"kind": 3}, "design.kind"),
        ({"blocks": 0}, "design.blocks"),
        ({"blocks": 65}, "design.blocks"),
        ({"resolution": 2}, "design.resolution"),
        ({"runs": 1}, "design.runs"),
        ({"resolution": 4, "runs": 16}, "design.runs"),
        ({"ccd_type": "spherical"}, "design.ccd_type"),
        ({"alpha": "spherical"}, "design.alpha"),
        ({"alpha": -1.0}, "design.alpha"),
        ({"alpha": True}, "design.alpha"),
        ({"model": "cubic"}, "design.model"),
        ({"candidates": 5}, "design.candidates"),
        ({"levels": 1}, "design.levels"),
        ({"levels": 10}, "design.levels"),
        ({"levels": 2.5}, "design.levels"),
        ({"levels": True}, "design.levels"),
        ({"centre_points": -1}, "design.centre_points"),
        ({"centre_points": 101}, "design.centre_points"),
        ({"replicates": 0}, "design.replicates"),
        ({"replicates": 21}, "design.replicates"),
        ({"randomize": "yes"}, "design.randomize"),
        ({"seed": -1}, "design.seed"),
        ({"seed": "7"}, "design.seed"),
    ],
)
def test_request_errors_name_the_field(raw: dict, field: str):
    with pytest.raises(DomainError) as error:
        DesignRequest.from_dict(raw)
    assert error.value.field == field


def test_unknown_kind_lists_the_supported_kinds():
    with pytest.raises(DomainError, match="full_factorial"):
        DesignRequest.from_dict({"kind": "magic"})


def test_request_must_be_a_mapping():
    with pytest.raises(DomainError) as error:
        DesignRequest.from_dict([("levels", 2)])  # type: ignore[arg-type]
    assert error.value.field == "design"


def test_coded_values_are_numbers_between_minus_one_and_one():
    design = plan(MIXED, DesignRequest(levels=5, centre_points=1))
    coded = np.array([[p.coded[n] for n in MIXED.names] for p in design.points])
    assert coded.min() >= -1.0 and coded.max() <= 1.0


# --- hard ranges (issue 54, item 5) -----------------------------------------------------------


@st.composite
def bounded_spaces(draw: st.DrawFn) -> tuple[FactorSpace, dict[str, tuple[float, float]]]:
    """Three or four numeric factors: integer ones (linear or log2) and continuous ones, each
    continuous factor bounded by the target (its limits) or not."""
    factors, limits = [], {}
    for i in range(draw(st.integers(3, 4))):
        log2 = draw(st.booleans())
        low = draw(st.integers(1 if log2 else -20, 20))
        high = low + draw(st.integers(1, 200))
        kind = draw(st.sampled_from(["integer", "continuous"]))
        factors.append(
            {"name": f"f{i}", "kind": kind, "low": low, "high": high,
             "scale": "log2" if log2 else "linear"}
        )  # fmt: skip
        if kind == "continuous" and draw(st.booleans()):
            limits[f"f{i}"] = (float(low), float(high))
    return FactorSpace.from_dicts(factors), limits


@settings(max_examples=150, deadline=None)
@given(
    bounded_spaces(),
    st.sampled_from(KINDS),
    st.sampled_from([None, "circumscribed", "inscribed", "face_centred"]),
    st.sampled_from(["rotatable", "orthogonal", 1.2, 2.0]),
    st.integers(1, 3),
)
def test_no_planned_run_leaves_a_hard_range(bounded, kind, ccd_type, alpha, blocks):
    space, limits = bounded
    request = DesignRequest(
        kind=kind, ccd_type=ccd_type, alpha=alpha, blocks=blocks if kind == "ccd" else 1
    )
    try:
        design = plan(space, request, limits=limits)
    except DomainError as error:
        # Only an explicit circumscribed type or a numeric alpha may be refused for the ranges.
        if "hard range" in error.rule:
            assert kind == "ccd" and (ccd_type == "circumscribed" or alpha in (1.2, 2.0))
            assert error.field in ("design.ccd_type", "design.alpha")
        return
    hard = {f.name for f in space.factors if f.kind == "integer"} | set(limits)
    for point in design.points:
        for name in hard:
            low, high = space[name].bounds
            assert low <= point.config[name] <= high, (point, design.notes)


def test_the_planner_refuses_runs_beyond_the_targets_range_whatever_the_family():
    space = FactorSpace.from_dicts(
        [{"name": "write_share", "low": 0, "high": 2}, {"name": "x", "low": 0, "high": 1}]
    )
    with pytest.raises(DomainError) as error:
        plan(space, DesignRequest(levels=3), limits={"write_share": (0.0, 1.0)})
    assert error.value.field == "design"
    assert error.value.rule == (
        "the full_factorial design plans write_share = 2 (the target accepts write_share from 0"
        " to 1): no planned run may leave a hard range"
    )
