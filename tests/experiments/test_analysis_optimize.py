"""The optimum search: desirability, constraints on other responses, integer neighbours.

Desirability values are checked against the definitions of Derringer & Suich (1980),
"Simultaneous optimization of several response variables", Journal of Quality Technology 12(4),
214-219, computed by hand, and against the worked example of the R `desirability` package
vignette (M. Kuhn, "The desirability Package", desirability/vignettes/desirability.tex in
github.com/topepo/desirability), which optimizes the two fitted response surfaces of Myers &
Montgomery's (1995) Response Surface Methodology conversion / thermal activity experiment.
Constrained optima are checked against brute force over every integer point.
"""

import itertools
import json

import numpy as np
import pytest

from experiments.analysis.optimize import (
    DesirabilityGoal,
    ResponseBound,
    best_configuration,
    desirability,
    most_desirable,
    overall_desirability,
)
from experiments.constraints import parse_constraints
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.lattice import candidate_values


def space(*factors: dict) -> FactorSpace:
    return FactorSpace.from_dicts(factors)


# --- Derringer-Suich desirability, hand-computed from the definitions -----------------------


@pytest.mark.parametrize(
    ("value", "weight", "expected"),
    [(70, 1, 0.0), (80, 1, 0.0), (90, 1, 0.5), (90, 2, 0.25), (90, 0.5, 0.5**0.5), (100, 1, 1.0)],
)
def test_desirability_of_a_response_to_maximize(value: float, weight: float, expected: float):
    # d = ((y - L) / (U - L)) ** s between L and U, 0 below, 1 above.
    assert desirability(value, "maximize", 80, 100, weight=weight) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("value", "weight", "expected"), [(10, 1, 1.0), (85, 1, 0.75), (85, 2, 0.5625), (120, 1, 0.0)]
)
def test_desirability_of_a_response_to_minimize(value: float, weight: float, expected: float):
    # d = ((U - y) / (U - L)) ** s between L and U, 1 below, 0 above.
    assert desirability(value, "minimize", 80, 100, weight=weight) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("value", "weights", "expected"),
    [
        (54, (1, 1), 0.0),
        (56.25, (1, 1), 0.5),
        (57.5, (1, 1), 1.0),
        (59, (1, 1), 0.4),
        (59, (1, 2), 0.16),
        (56.25, (3, 1), 0.125),
        (61, (1, 1), 0.0),
    ],
)
def test_desirability_of_a_response_with_a_target(value: float, weights: tuple, expected: float):
    # d = ((y - L) / (T - L)) ** s from L to T, ((U - y) / (U - T)) ** t from T to U, else 0.
    low_weight, high_weight = weights
    d = desirability(value, "target", 55, 60, 57.5, weight=low_weight, weight_high=high_weight)
    assert d == pytest.approx(expected)


def test_desirability_takes_arrays():
    d = desirability(np.array([54.0, 56.25, 59.0]), "target", 55, 60, 57.5)
    assert d == pytest.approx([0.0, 0.5, 0.4])


def test_overall_desirability_is_a_weighted_geometric_mean():
    assert overall_desirability([0.25, 1.0]) == pytest.approx(0.5)
    assert overall_desirability([0.25, 1.0], importances=[2, 1]) == pytest.approx(0.0625 ** (1 / 3))
    assert overall_desirability([0.0, 1.0]) == 0.0
    rows = overall_desirability(np.array([[0.25, 1.0], [0.5, 0.5], [0.0, 0.9]]))
    assert rows == pytest.approx([0.5, 0.5, 0.0])


@pytest.mark.parametrize(
    "arguments",
    [
        {"goal": "largest", "low": 0, "high": 1},
        {"goal": "maximize", "low": 1, "high": 1},
        {"goal": "target", "low": 0, "high": 1},
        {"goal": "target", "low": 0, "high": 1, "target": 2},
        {"goal": "maximize", "low": 0, "high": 1, "weight": 0},
    ],
)
def test_desirability_refuses_bad_definitions(arguments: dict):
    with pytest.raises(DomainError) as error:
        desirability(0.5, **arguments)
    assert error.value.field == "objective.desirability"


# --- Myers & Montgomery's two-response example (R desirability vignette) --------------------
# Coded factors x1 (time), x2 (temperature), x3 (catalyst), the cuboidal region |x| <= 1.682
# (the axial distance), and the vignette's prediction equations of the two quadratic models.
AXIAL = 1.682
CONVERSION_REGION = space(
    *({"name": name, "low": -AXIAL, "high": AXIAL} for name in ("time", "temperature", "catalyst"))
)


def conversion(mains: np.ndarray) -> np.ndarray:
    x1, x2, x3 = (AXIAL * mains).T
    return (
        81.09 + 1.0284 * x1 + 4.043 * x2 + 6.2037 * x3 - 1.8366 * x1**2 + 2.9382 * x2**2
        - 5.1915 * x3**2 + 2.215 * x1 * x2 + 11.375 * x1 * x3 - 3.875 * x2 * x3
    )  # fmt: skip


def activity(mains: np.ndarray) -> np.ndarray:
    x1, x2, x3 = (AXIAL * mains).T
    return (
        59.85 + 3.583 * x1 + 0.2546 * x2 + 2.2298 * x3 + 0.83479 * x1**2 + 0.07484 * x2**2
        + 0.05716 * x3**2 - 0.3875 * x1 * x2 - 0.375 * x1 * x3 + 0.3125 * x2 * x3
    )  # fmt: skip


# Maximize conversion (A = 80, B = 97); activity on target 57.5 between 55 and 60.
CONVERSION_GOALS = [
    DesirabilityGoal("conversion", conversion, "maximize", 80, 97),
    DesirabilityGoal("activity", activity, "target", 55, 60, target=57.5),
]


def test_vignette_desirabilities_at_the_design_centre():
    centre = np.zeros((1, 3))
    # Published: predictions 81.09 and 59.85, d = 0.06411765 and 0.06, overall 0.06202466.
    d = [goal.of(goal.predict(centre)[0]) for goal in CONVERSION_GOALS]
    assert d == pytest.approx([0.06411765, 0.06], abs=5e-9)
    assert overall_desirability(d) == pytest.approx(0.06202466, abs=5e-9)


def test_vignette_maximum_desirability_in_the_cuboidal_region():
    grid = list(np.linspace(-AXIAL, AXIAL, 41))
    best = most_desirable(CONVERSION_REGION, [grid, grid, grid], CONVERSION_GOALS)
    # Published (Nelder-Mead from 125 starts): time -0.5117, temperature 1.682, catalyst
    # -0.5864, overall desirability 0.9425, conversion 95.1 and activity 57.5. The lattice's
    # best point (step 0.084 in x) is polished by Nelder-Mead to the published precision.
    assert best.search == "lattice"
    assert best.searched == best.feasible_candidates == 41**3
    assert best.config["temperature"] == AXIAL
    assert best.config["time"] == pytest.approx(-0.5117, abs=5e-5)
    assert best.config["catalyst"] == pytest.approx(-0.5864, abs=5e-5)
    assert best.score == pytest.approx(0.9425, abs=5e-5)
    assert best.predictions["conversion"] == pytest.approx(95.1, abs=0.05)
    assert best.predictions["activity"] == pytest.approx(57.5, abs=0.05)
    assert best.desirabilities["activity"] == pytest.approx(1.0, abs=0.01)
    assert best.neighbours_checked is False
    assert json.loads(json.dumps(best.as_dict()))["score"] == best.score


def test_a_coarse_grid_reaches_the_same_maximum_desirability():
    # The defect: the best of a 21-point grid was reported (0.9376 here) instead of 0.9425.
    grid = list(np.linspace(-AXIAL, AXIAL, 21))
    best = most_desirable(CONVERSION_REGION, [grid, grid, grid], CONVERSION_GOALS)
    assert best.score == pytest.approx(0.9425, abs=5e-5)
    assert best.config["time"] == pytest.approx(-0.5117, abs=5e-5)
    assert best.config["catalyst"] == pytest.approx(-0.5864, abs=5e-5)


def test_a_desirability_that_is_zero_everywhere_is_refused():
    goals = [DesirabilityGoal("conversion", conversion, "maximize", 200, 300)]
    grid = list(np.linspace(-AXIAL, AXIAL, 5))
    with pytest.raises(DomainError) as error:
        most_desirable(CONVERSION_REGION, [grid, grid, grid], goals)
    assert error.value.field == "objective.desirability"
    assert "conversion 200 to 300" in error.value.rule


# --- constraints on other responses, against brute force ------------------------------------
CLUSTER = space(
    {"name": "clients", "kind": "integer", "low": 1, "high": 8},
    {"name": "threads", "kind": "integer", "low": 4, "high": 64},
)


def natural(mains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Clients and threads from their coded columns (linear scale)."""
    return 4.5 + 3.5 * mains[:, 0], 34 + 30 * mains[:, 1]


def throughput(clients, threads):
    return 100 + 40 * clients + 3 * threads


def latency(clients, threads):
    return 5 + 2 * clients + 0.5 * threads


def test_constrained_optimum_equals_brute_force():
    bound = ResponseBound("latency_p95_ms", lambda m: latency(*natural(m)), "<=", 50)
    constraints = parse_constraints(["clients * threads <= 256"], CLUSTER)
    best = best_configuration(
        CLUSTER,
        candidate_values(CLUSTER),
        lambda m: throughput(*natural(m)),
        response="tps",
        bounds=[bound],
        constraints=constraints,
    )
    points = list(itertools.product(range(1, 9), range(4, 65)))
    feasible = [(c, t) for c, t in points if latency(c, t) <= 50 and c * t <= 256]
    c, t = max(feasible, key=lambda p: throughput(*p))
    assert best.config == {"clients": c, "threads": t}
    assert best.score == pytest.approx(throughput(c, t))
    assert best.predictions["latency_p95_ms"] == pytest.approx(latency(c, t))
    assert best.searched == len(points)
    assert best.feasible_candidates == len(feasible)
    assert best.neighbours_checked is True
    assert best.neighbour_moves == 0


def test_minimizing_with_a_lower_bound_on_another_response():
    bound = ResponseBound("tps", lambda m: throughput(*natural(m)), ">=", 400)
    best = best_configuration(
        CLUSTER,
        candidate_values(CLUSTER),
        lambda m: latency(*natural(m)),
        goal="minimize",
        bounds=[bound],
    )
    points = itertools.product(range(1, 9), range(4, 65))
    feasible = [p for p in points if throughput(*p) >= 400]
    c, t = min(feasible, key=lambda p: (latency(*p), p))
    assert latency(best.config["clients"], best.config["threads"]) == pytest.approx(latency(c, t))


def test_no_feasible_configuration_says_which_bound_and_how_close():
    # The lowest latency in the region is 5 + 2 * 1 + 0.5 * 4 = 9 ms.
    bound = ResponseBound("latency_p95_ms", lambda m: latency(*natural(m)), "<=", 8)
    with pytest.raises(DomainError) as error:
        best_configuration(
            CLUSTER, candidate_values(CLUSTER), lambda m: throughput(*natural(m)), bounds=[bound]
        )
    assert error.value.field == "objective.constraints"
    assert error.value.rule == (
        "no configuration in the region is predicted to meet latency_p95_ms <= 8 "
        "(the lowest predicted is 9)"
    )


def test_bounds_met_one_at_a_time_but_not_together():
    low_latency = ResponseBound("latency_p95_ms", lambda m: latency(*natural(m)), "<=", 20)
    high_tps = ResponseBound("tps", lambda m: throughput(*natural(m)), ">=", 400)
    with pytest.raises(DomainError) as error:
        best_configuration(
            CLUSTER,
            candidate_values(CLUSTER),
            lambda m: throughput(*natural(m)),
            bounds=[low_latency, high_tps],
        )
    points = itertools.product(range(1, 9), range(4, 65))
    assert not [p for p in points if latency(*p) <= 20 and throughput(*p) >= 400]
    assert error.value.rule.endswith("latency_p95_ms <= 20 and tps >= 400 together")


def test_factor_constraints_nobody_meets_are_refused_as_before():
    with pytest.raises(DomainError) as error:
        best_configuration(
            CLUSTER,
            candidate_values(CLUSTER),
            lambda m: throughput(*natural(m)),
            constraints=parse_constraints(["clients >= 9"], CLUSTER),
        )
    assert error.value.field == "constraints"


# --- integer optima checked against their neighbours ----------------------------------------
GRID = space(
    {"name": "x", "kind": "integer", "low": 0, "high": 10},
    {"name": "y", "kind": "integer", "low": 0, "high": 10},
)


def ridge(x, y):
    """A narrow ridge along y = 2x + 0.3: the continuous maximum is at (3.45, 7.2)."""
    return -50 * (y - 2 * x - 0.3) ** 2 - (x - 3.45) ** 2


def test_neighbour_check_moves_a_rounded_optimum_to_the_integer_optimum():
    # Rounding the continuous maximum (3.45, 7.2) gives (3, 7), where the ridge term costs
    # 50 * 0.7^2 = 24.5; the integer maximum is (3, 6) (ridge term 50 * 0.3^2 = 4.5).
    brute = max(itertools.product(range(11), range(11)), key=lambda p: ridge(*p))
    assert brute == (3, 6)
    assert ridge(3, 6) > ridge(3, 7)
    # A coarse grid whose best point is the rounded optimum (3, 7).
    coarse = [[0, 3, 6, 9], [1, 4, 7, 10]]
    best = best_configuration(GRID, coarse, lambda m: ridge(5 + 5 * m[:, 0], 5 + 5 * m[:, 1]))
    assert best.neighbours_checked is True
    assert best.neighbour_moves >= 1
    assert best.config == {"x": 3, "y": 6}
    assert best.score == pytest.approx(ridge(3, 6))
    assert best.searched == 16


def test_neighbours_honour_the_constraints():
    # Forbid the integer maximum (3, 6): the check must not step onto it.
    constraints = parse_constraints(["y >= 7"], GRID)
    coarse = [[0, 3, 6, 9], [1, 4, 7, 10]]
    best = best_configuration(
        GRID, coarse, lambda m: ridge(5 + 5 * m[:, 0], 5 + 5 * m[:, 1]), constraints=constraints
    )
    allowed = list(itertools.product(range(11), range(7, 11)))
    assert (best.config["x"], best.config["y"]) == max(allowed, key=lambda p: ridge(*p))


def test_large_lattices_are_searched_coordinate_wise_counting_distinct_points():
    names = [f"x{i}" for i in range(6)]
    wide = space(*({"name": n, "low": 0, "high": 1} for n in names))
    slopes = np.array([3, -2, 1, -4, 5, -0.5])
    candidates = candidate_values(wide)
    best = best_configuration(wide, candidates, lambda m: m @ slopes)
    assert best.search == "coordinate"
    assert best.config == {n: (1.0 if s > 0 else 0.0) for n, s in zip(names, slopes, strict=True)}
    assert best.searched < 21**6
    assert best.feasible_candidates == best.searched


def test_candidates_must_fit_the_space():
    with pytest.raises(DomainError) as error:
        best_configuration(GRID, [[0, 1]], lambda m: m[:, 0])
    assert error.value.field == "candidates"
    with pytest.raises(DomainError):
        best_configuration(GRID, [[0, 1], [0, 1]], lambda m: m[:, 0], goal="best")
