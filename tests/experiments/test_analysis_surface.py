"""Canonical analysis, natural-unit coefficients and term selection of response surfaces.

Published references: Montgomery's Example 11.2 and the rising-ridge example of R's rsm
documentation (Myers, Montgomery & Anderson-Cook, Table 6.2). The saddle example uses the
published coefficients of Hackney & Jones (1969) (Myers, Montgomery & Anderson-Cook, Exercise
6.1) and checks them against values computed here independently of the module.
"""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import fsolve

from experiments.analysis import fit
from experiments.analysis.selection import select_terms
from experiments.analysis.surface import RIDGE_RATIO, canonical, natural_coefficients
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.suggest.steepest_ascent import steepest_ascent
from experiments.terms import ModelTerms, main_columns
from tests.experiments.test_analysis import CCD_YIELD, YIELD, YIELD_CONFIGS, YIELD_SPACE


def space(*factors: dict) -> FactorSpace:
    return FactorSpace.from_dicts(factors)


def coded_space(*names: str) -> FactorSpace:
    return space(*({"name": n, "low": -1, "high": 1} for n in names))


def fitted(analysis) -> tuple[list[float], list[str]]:
    return [t.coefficient for t in analysis.terms], [t.name for t in analysis.terms]


# Montgomery, Design and Analysis of Experiments (8th ed.), Example 11.2: the chemical process
# CCD around time 85 +- 5 min and temperature 175 +- 5 F (x1 = (time - 85)/5, x2 = (temp -
# 175)/5). Published: stationary point x1 = 0.389, x2 = 0.306 (time 86.95 min, temperature
# 176.53 F), predicted yield 80.21, eigenvalues -0.9634 and -1.4141 (a maximum). The book
# computes the eigenvalues from rounded coefficients, so they agree to about 2e-4.
CHEMICAL = space(
    {"name": "time", "low": 80, "high": 90, "unit": "min"},
    {"name": "temp", "low": 170, "high": 180, "unit": "F"},
)


def chemical_fit():
    configs = [{"time": 85 + 5 * x1, "temp": 175 + 5 * x2} for x1, x2, _ in CCD_YIELD]
    return fit(CHEMICAL, configs, [y for _, _, y in CCD_YIELD], model="quadratic")


def test_montgomery_example_11_2_canonical_analysis():
    result = canonical(*fitted(chemical_fit()), CHEMICAL)
    assert result is not None
    assert result.factors == ["time", "temp"]
    assert result.stationary_coded == pytest.approx({"time": 0.389, "temp": 0.306}, abs=5e-4)
    assert result.stationary_natural == pytest.approx({"time": 86.95, "temp": 176.53}, abs=5e-3)
    assert result.predicted == pytest.approx(80.21, abs=5e-3)
    assert result.eigenvalues == pytest.approx([-0.9634, -1.4141], abs=3e-4)
    assert result.nature == "maximum"
    assert result.inside and result.beyond == []
    assert result.ridge_threshold == pytest.approx(RIDGE_RATIO * 1.4141, abs=1e-3)
    assert result.ridge_direction is None and result.ridge_point_coded is None
    # B has the squared coefficients on the diagonal and half the interaction off it
    # (published fit: -1.38 x1^2 - 1.00 x2^2 + 0.25 x1x2).
    assert np.array(result.quadratic) == pytest.approx(
        np.array([[-1.38, 0.125], [0.125, -1.00]]), abs=6e-3
    )
    for vector, value in zip(result.eigenvectors, result.eigenvalues, strict=True):
        v = np.array([vector["time"], vector["temp"]])
        assert np.array(result.quadratic) @ v == pytest.approx(value * v)
    assert json.loads(json.dumps(result.as_dict(), allow_nan=False))["nature"] == "maximum"


# R package rsm, documentation of `rsm` / `canonical` (rsm 2.10.5 reference page), "Example of a
# rising-ridge situation from Montgomery et al, Table 6.2": a face-centred CCD in A and B with
# three centre points. Published output: eigenvalues -0.509419 and -12.70637, eigenvectors
# (-0.8396245, -0.5431673) and (-0.5431673, 0.8396245); with threshold 0 the stationary point is
# A = -5.176505, B = -2.706733; with the default threshold (a tenth of the largest eigenvalue)
# the near-zero eigenvalue is dropped and the stationary point becomes A = -0.2928046,
# B = 0.4526154.
RIDGE_POINTS = [(-1, -1), (1, -1), (-1, 1), (1, 1), (-1, 0), (1, 0), (0, -1), (0, 1)] + [(0, 0)] * 3
RIDGE_RESPONSE = [52.3, 5.3, 46.7, 44.2, 58.5, 33.5, 32.8, 49.2, 49.3, 50.2, 51.6]


def test_rsm_rising_ridge_example():
    factors = coded_space("A", "B")
    configs = [{"A": a, "B": b} for a, b in RIDGE_POINTS]
    result = canonical(*fitted(fit(factors, configs, RIDGE_RESPONSE, model="quadratic")), factors)
    assert result is not None
    assert result.eigenvalues == pytest.approx([-0.509419, -12.70637], abs=5e-6)
    published = [(-0.8396245, -0.5431673), (-0.5431673, 0.8396245)]
    for vector, (a, b) in zip(result.eigenvectors, published, strict=True):
        sign = math.copysign(1.0, vector["A"] * a)  # an eigenvector's sign is arbitrary
        assert (sign * vector["A"], sign * vector["B"]) == pytest.approx((a, b), abs=5e-7)
    assert result.stationary_coded == pytest.approx({"A": -5.176505, "B": -2.706733}, abs=5e-6)
    assert result.nature == "ridge" and result.ridge_of == "maximum"
    assert result.ridge_point_coded == pytest.approx({"A": -0.2928046, "B": 0.4526154}, abs=5e-7)
    assert not result.inside and result.beyond == ["A", "B"]
    # The rising ridge climbs towards the distant stationary point, along the flat eigenvector.
    assert result.ridge_direction == pytest.approx({"A": -0.8396245, "B": -0.5431673}, abs=5e-7)
    towards = np.array(list(result.stationary_coded.values())) - np.array(
        list(result.ridge_point_coded.values())
    )
    assert np.dot(towards, list(result.ridge_direction.values())) > 0
    assert result.predicted > result.ridge_predicted


# Myers, Montgomery & Anderson-Cook, Response Surface Methodology, Exercise 6.1: dry modulus of
# rupture of a ceramic, Hackney & Jones (1969), fitted in coded units (y / 100):
# 6.88 + 0.0325 x1 + 0.2588 x2 - 0.1363 x3 - 0.1466 x1^2 - 0.0053 x2^2 + 0.1359 x3^2
# + 0.1875 x1x2 + 0.2050 x1x3 - 0.1450 x2x3. The answers are not published with the exercise, so
# the test solves them independently: the stationary point by root-finding on the gradient written
# out by hand, the eigenvalues as the roots of B's characteristic polynomial.
CERAMIC = {
    "Intercept": 6.88, "x1": 0.0325, "x2": 0.2588, "x3": -0.1363,
    "x1:x2": 0.1875, "x1:x3": 0.2050, "x2:x3": -0.1450,
    "x1^2": -0.1466, "x2^2": -0.0053, "x3^2": 0.1359,
}  # fmt: skip


def ceramic(x: np.ndarray) -> float:
    x1, x2, x3 = x
    c = CERAMIC
    return (
        c["Intercept"] + c["x1"] * x1 + c["x2"] * x2 + c["x3"] * x3
        + c["x1:x2"] * x1 * x2 + c["x1:x3"] * x1 * x3 + c["x2:x3"] * x2 * x3
        + c["x1^2"] * x1**2 + c["x2^2"] * x2**2 + c["x3^2"] * x3**2
    )  # fmt: skip


def ceramic_gradient(x: np.ndarray) -> list[float]:
    x1, x2, x3 = x
    c = CERAMIC
    return [
        c["x1"] + 2 * c["x1^2"] * x1 + c["x1:x2"] * x2 + c["x1:x3"] * x3,
        c["x2"] + 2 * c["x2^2"] * x2 + c["x1:x2"] * x1 + c["x2:x3"] * x3,
        c["x3"] + 2 * c["x3^2"] * x3 + c["x1:x3"] * x1 + c["x2:x3"] * x2,
    ]


def test_myers_montgomery_ceramic_surface_is_a_saddle():
    factors = coded_space("x1", "x2", "x3")
    result = canonical(list(CERAMIC.values()), list(CERAMIC), factors)
    assert result is not None
    point = fsolve(ceramic_gradient, np.zeros(3))
    assert ceramic_gradient(point) == pytest.approx([0.0] * 3, abs=1e-12)
    assert list(result.stationary_coded.values()) == pytest.approx(list(point), abs=1e-9)
    assert result.predicted == pytest.approx(ceramic(point), abs=1e-9)
    # det(lambda I - B) = lambda^3 - tr(B) lambda^2 + (sum of principal 2x2 minors) lambda - det(B)
    d = [CERAMIC["x1^2"], CERAMIC["x2^2"], CERAMIC["x3^2"]]
    o12, o13, o23 = CERAMIC["x1:x2"] / 2, CERAMIC["x1:x3"] / 2, CERAMIC["x2:x3"] / 2
    minors = d[0] * d[1] - o12**2 + d[0] * d[2] - o13**2 + d[1] * d[2] - o23**2
    det = (
        d[0] * (d[1] * d[2] - o23**2)
        - o12 * (o12 * d[2] - o23 * o13)
        + o13 * (o12 * o23 - d[1] * o13)
    )
    roots = sorted(np.roots([1.0, -sum(d), minors, -det]).real, reverse=True)
    assert result.eigenvalues == pytest.approx(roots, abs=1e-12)
    assert roots[0] > 0 > roots[-1]
    assert result.nature == "saddle" and result.ridge_of is None
    assert result.beyond == ["x1", "x2"] and not result.inside
    # Outside the region: the flattest canonical axis, rising from the centre.
    flat = result.eigenvectors[int(np.argmin(np.abs(result.eigenvalues)))]
    assert result.ridge_direction == pytest.approx(
        {
            k: math.copysign(1.0, np.dot(list(flat.values()), [0.0325, 0.2588, -0.1363])) * v
            for k, v in flat.items()
        }
    )


def test_no_squared_terms_no_canonical_analysis():
    factors = coded_space("A", "B")
    configs = [{"A": a, "B": b} for a, b in RIDGE_POINTS]
    analysis = fit(factors, configs, RIDGE_RESPONSE, model="interaction")
    assert canonical(*fitted(analysis), factors) is None


def test_categorical_factors_are_held_at_their_reference_level():
    factors = space(
        {"name": "a", "low": 0, "high": 10},
        {"name": "engine", "kind": "categorical", "levels": ["innodb", "rocks"]},
        {"name": "b", "low": 0, "high": 4},
    )
    names = ["Intercept", "a", "engine[rocks]", "b", "a:engine[rocks]", "a:b",
             "engine[rocks]:b", "a^2", "b^2"]  # fmt: skip
    with_dummies = canonical([5, 2, 9, 1, 7, 0, -3, -1, -2], names, factors)
    keep = [0, 1, 3, 5, 7, 8]
    numeric_only = canonical([5, 2, 1, 0, -1, -2], [names[i] for i in keep], factors)
    assert with_dummies is not None and numeric_only is not None
    assert with_dummies.reference == {"engine": "innodb"}
    assert with_dummies.factors == ["a", "b"]
    assert with_dummies.stationary_coded == pytest.approx({"a": 1.0, "b": 0.25})
    assert with_dummies.stationary_natural == pytest.approx({"a": 10.0, "b": 2.5})
    assert with_dummies.predicted == pytest.approx(5 + 1 + 0.125)
    assert with_dummies.inside  # |x| <= 1 is inside
    assert {k: v for k, v in with_dummies.as_dict().items() if k != "reference"} == {
        k: v for k, v in numeric_only.as_dict().items() if k != "reference"
    }


def test_stationary_point_in_natural_units_is_not_rounded_and_honours_log2():
    factors = space(
        {"name": "threads", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
    )
    # Maximum at coded threads = 0.25, nodes = -0.3.
    names = ["Intercept", "threads", "nodes", "threads^2", "nodes^2"]
    result = canonical([100.0, 1.0, -1.2, -2.0, -2.0], names, factors)
    assert result is not None
    assert result.stationary_coded == pytest.approx({"threads": 0.25, "nodes": -0.3})
    # log2 threads runs 2..6: coded 0.25 is log2 4.5; nodes 1..9: coded -0.3 is 3.8.
    assert result.stationary_natural == pytest.approx({"threads": 2**4.5, "nodes": 3.8})


def test_a_surface_without_curvature_is_a_ridge_along_steepest_ascent():
    names = ["Intercept", "A", "B", "A:B", "A^2", "B^2"]
    result = canonical([1.0, 3.0, 4.0, 0.0, 0.0, 0.0], names, coded_space("A", "B"))
    assert result is not None
    assert result.nature == "ridge" and result.stationary_coded is None and not result.inside
    assert result.ridge_point_coded is None and result.ridge_of is None
    assert result.ridge_direction == pytest.approx({"A": 0.6, "B": 0.8})
    assert json.dumps(result.as_dict(), allow_nan=False)


def test_unknown_term_names_are_refused():
    with pytest.raises(DomainError) as error:
        canonical([1.0, 2.0, 3.0], ["Intercept", "A", "C^2"], coded_space("A", "B"))
    assert error.value.field == "terms.2"
    with pytest.raises(DomainError):
        canonical([1.0, 2.0], ["Intercept", "A", "A^2"], coded_space("A", "B"))


# --- natural coefficients ------------------------------------------------------------------


def natural_prediction(coefficients: dict[str, float], config: dict) -> float:
    def value(variable: str) -> float:
        if variable.startswith("log2("):
            return math.log2(config[variable[5:-1]])
        if variable.endswith("]"):
            name, level = variable[:-1].split("[", 1)
            return float(config[name] == level)
        return float(config[variable])

    total = 0.0
    for key, coefficient in coefficients.items():
        if key == "Intercept":
            total += coefficient
        elif key.endswith("^2"):
            total += coefficient * value(key[:-2]) ** 2
        else:
            total += coefficient * math.prod(value(v) for v in key.split(":"))
    return total


def test_montgomery_2x2_yield_in_natural_units():
    # Montgomery (8th ed.), Section 6.2: y = 18.33 + 0.8333 Conc - 5.00 Catalyst.
    analysis = fit(YIELD_SPACE, YIELD_CONFIGS, YIELD)
    natural = natural_coefficients(*fitted(analysis), YIELD_SPACE)
    assert natural == pytest.approx(
        {"Intercept": 18.33, "conc": 0.8333, "catalyst": -5.00}, abs=5e-3
    )


def test_natural_coefficients_reproduce_coded_predictions():
    factors = space(
        {"name": "threads", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "engine", "kind": "categorical", "levels": ["innodb", "rocks", "mem"]},
        {"name": "buffer", "low": 0.5, "high": 8.0},
    )
    terms = ModelTerms(factors, "quadratic", [3, 3, 3, 3])
    rng = np.random.default_rng(7)
    params = rng.normal(size=len(terms.names)) * 10
    natural = natural_coefficients(params, terms.names, factors)
    assert "log2(threads)" in natural and "log2(threads)^2" in natural
    assert "log2(threads):engine[rocks]" in natural and "nodes:buffer" in natural
    assert natural["engine[mem]"] != 0.0
    configs = [
        {
            "threads": int(rng.integers(4, 65)),
            "nodes": int(rng.integers(1, 10)),
            "engine": str(rng.choice(["innodb", "rocks", "mem"])),
            "buffer": float(rng.uniform(0.5, 8.0)),
        }
        for _ in range(50)
    ]
    coded = terms.matrix(main_columns(factors, configs)) @ params
    assert [natural_prediction(natural, c) for c in configs] == pytest.approx(list(coded))


def test_natural_coefficients_of_the_chemical_process_surface():
    params, names = fitted(chemical_fit())
    natural = natural_coefficients(params, names, CHEMICAL)
    coded = dict(zip(names, params, strict=True))
    # Independently: x1 = (time - 85)/5 makes the time^2 coefficient b11/25, and so on.
    assert natural["time^2"] == pytest.approx(coded["time^2"] / 25)
    assert natural["time:temp"] == pytest.approx(coded["time:temp"] / 25)
    assert natural["time"] == pytest.approx(
        coded["time"] / 5 - 2 * 85 * coded["time^2"] / 25 - 175 * coded["time:temp"] / 25
    )
    # The stationary point is the same in either form.
    best = canonical(params, names, CHEMICAL).stationary_natural
    assert natural_prediction(natural, best) == pytest.approx(80.21, abs=5e-3)


# --- term selection ------------------------------------------------------------------------

SELECTION_SPACE = coded_space("a", "b", "c")
FULL_FACTORIAL_3 = [
    {"a": a, "b": b, "c": c} for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1)
]


def simulated(seed: int) -> tuple[np.ndarray, np.ndarray, ModelTerms]:
    # A known surface: a, b, a:b and a^2 are real; c, a:c, b:c, b^2 and c^2 are null.
    terms = ModelTerms(SELECTION_SPACE, "quadratic", [3, 3, 3])
    x = terms.matrix(main_columns(SELECTION_SPACE, FULL_FACTORIAL_3 * 2))
    truth = dict.fromkeys(terms.names, 0.0) | {
        "Intercept": 50.0, "a": 4.0, "b": -3.0, "a:b": 2.0, "a^2": -2.5,
    }  # fmt: skip
    rng = np.random.default_rng(seed)
    y = x @ np.array([truth[n] for n in terms.names]) + rng.normal(scale=0.5, size=len(x))
    return x, y, terms


@pytest.mark.parametrize("criterion", ["aicc", "p"])
def test_selection_keeps_the_true_terms_and_drops_the_null_ones(criterion: str):
    x, y, terms = simulated(seed=11)
    selection = select_terms(x, y, terms.names, terms.factors, criterion=criterion)
    assert selection.kept_names == ["Intercept", "a", "b", "a:b", "a^2"]
    assert sorted(selection.dropped) == sorted(["c", "a:c", "b:c", "b^2", "c^2"])
    assert selection.dropped.index("c") > max(selection.dropped.index(t) for t in ("a:c", "b:c"))
    assert selection.kept == [terms.names.index(n) for n in selection.kept_names]
    assert len(selection.path) == len(selection.dropped) + 1
    assert selection.path[0].dropped is None
    if criterion == "aicc":
        values = [step.value for step in selection.path]
        assert values == sorted(values, reverse=True)  # each step lowers AICc
        assert selection.alpha is None
    else:
        assert selection.alpha == 0.05
        assert all(step.value > 0.05 for step in selection.path[1:])
    assert json.dumps(selection.as_dict(), allow_nan=False)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    criterion=st.sampled_from(["aicc", "p"]),
    scale=st.floats(0.0, 5.0),
)
def test_selection_never_breaks_hierarchy(seed: int, criterion: str, scale: float):
    x, _, terms = simulated(seed)
    rng = np.random.default_rng(seed)
    y = x @ rng.normal(size=x.shape[1]) * scale + rng.normal(size=len(x))
    selection = select_terms(x, y, terms.names, terms.factors, criterion=criterion)
    kept = set(selection.kept)
    assert 0 in kept
    for j in kept:
        name = terms.names[j]
        if ":" in name:
            assert {terms.names.index(part) for part in name.split(":")} <= kept
        if name.endswith("^2"):
            assert terms.names.index(name[:-2]) in kept


def test_selection_criterion_must_be_known():
    x, y, terms = simulated(seed=1)
    with pytest.raises(DomainError) as error:
        select_terms(x, y, terms.names, terms.factors, criterion="bic")
    assert error.value.field == "criterion"


# --- path of steepest ascent ---------------------------------------------------------------

# Montgomery, Design and Analysis of Experiments (8th ed.), Example 11.1 (Table 11.1; Myers,
# Montgomery & Anderson-Cook, RSM, section 5.2): time 35 +- 5 min, temperature 155 +- 5 F, a
# 2^2 with five centre points; yhat = 40.44 + 0.775 x1 + 0.325 x2. The published path moves
# x2 0.42 per unit of x1, about 2 F per 5 min: 40 min / 157 F, 45 / 159, 50 / 161, ...
STEEPEST_RUNS = [(30, 150, 39.3), (30, 160, 40.0), (40, 150, 40.9), (40, 160, 41.5)] + [
    (35, 155, y) for y in (40.3, 40.5, 40.7, 40.2, 40.6)
]
# R 4.2.2, rsm 2.10.6: steepest(rsm(y ~ FO(x1, x2), data = coded.data(runs, x1 ~ (time - 35)/5,
# x2 ~ (temp - 155)/5))), printed to 3 decimals: dist, x1, x2, time, temp, yhat.
RSM_STEEPEST = [
    (0.0, 0.000, 0.000, 35.000, 155.000, 40.444),
    (0.5, 0.461, 0.193, 37.305, 155.965, 40.864),
    (1.0, 0.922, 0.387, 39.610, 156.935, 41.285),
]
# The same with x1 ~ (time - 35)/60, x2 ~ (temp - 155)/60: coded units of ranges 12 design
# half-ranges wide, the coding of WIDE_SPACE below.
RSM_STEEPEST_WIDE = [
    (0.0, 0.000, 0.000, 35.00, 155.00, 40.444),
    (0.5, 0.461, 0.193, 62.66, 166.58, 45.484),
    (1.0, 0.922, 0.387, 90.32, 178.22, 50.528),
    (1.5, 1.383, 0.580, 117.98, 189.80, 55.568),
]
WIDE_SPACE = space(
    {"name": "time", "low": 5, "high": 125, "unit": "min"},
    {"name": "temp", "low": 95, "high": 215, "unit": "F"},
)


def steepest_of(factors: FactorSpace, goal: str = "maximize"):
    configs = [{"time": t, "temp": T} for t, T, _ in STEEPEST_RUNS]
    return fit(factors, configs, [y for *_, y in STEEPEST_RUNS], model="linear", goal=goal)


def test_the_path_of_steepest_ascent_of_montgomery_example_11_1_as_rsm_gives_it():
    book = space({"name": "time", "low": 30, "high": 40}, {"name": "temp", "low": 150, "high": 160})
    path = steepest_of(book).steepest
    assert path is not None and path.goal == "ascent"
    # The published direction: x2 moves 0.42 per unit of x1; 5 min of time per about 2 F.
    assert path.direction["temp"] / path.direction["time"] == pytest.approx(0.42, abs=0.005)
    assert path.direction == pytest.approx({"time": 0.9221, "temp": 0.3867}, abs=1e-4)
    assert path.natural_direction == pytest.approx({"time": 4.611, "temp": 1.934}, abs=1e-3)
    assert 5 * path.natural_direction["temp"] / path.natural_direction["time"] == pytest.approx(
        2.0, abs=0.1
    )
    assert len(path.steps) == len(RSM_STEEPEST)
    for step, (distance, x1, x2, time, temp, predicted) in zip(
        path.steps, RSM_STEEPEST, strict=True
    ):
        assert step.distance == distance
        # rsm rounds the coded point to 3 decimals before decoding and predicting.
        assert step.coded == pytest.approx({"time": x1, "temp": x2}, abs=1e-3)
        assert step.natural == pytest.approx({"time": time, "temp": temp}, abs=3e-3)
        assert step.predicted == pytest.approx(predicted, abs=1e-3)
    # The ranges are the design region: the next step (x1 = 1.383) leaves them.
    assert path.stop == "the next step would leave the range of time"
    assert json.dumps(path.as_dict(), allow_nan=False)


def test_the_path_runs_to_the_edge_of_wide_ranges_through_the_published_points():
    path = steepest_of(WIDE_SPACE).steepest
    assert path is not None
    assert [s.distance for s in path.steps] == [0.0, 0.5, 1.0, 1.5]
    for step, (_, x1, x2, time, temp, predicted) in zip(path.steps, RSM_STEEPEST_WIDE, strict=True):
        assert step.coded == pytest.approx({"time": x1 - 0.5, "temp": x2}, abs=1e-3)
        # rsm's coded point rounded to 3 decimals moves time by up to 0.03 min here, and the
        # prediction (slope 9.3 per coded unit) by up to 0.01.
        assert step.natural == pytest.approx({"time": time, "temp": temp}, abs=0.03)
        assert step.predicted == pytest.approx(predicted, abs=0.01)
    assert path.stop == "the next step would leave the range of time"
    # The published points lie on the path: 2.1 F more per 5 min more.
    per_minute = path.natural_direction["temp"] / path.natural_direction["time"]
    for k, published in enumerate([157, 159, 161, 163, 165, 167], start=1):
        assert 155 + per_minute * 5 * k == pytest.approx(published, abs=0.6)
    # The suggestion walks the same line.
    configs = [{"time": t, "temp": T} for t, T, _ in STEEPEST_RUNS]
    suggested = steepest_ascent(WIDE_SPACE, configs, [y for *_, y in STEEPEST_RUNS], count=2)
    for s in suggested:
        assert (s.config["temp"] - 155) / (s.config["time"] - 35) == pytest.approx(per_minute)


def test_descent_reverses_the_path_and_curved_models_have_none():
    ascent, descent = steepest_of(WIDE_SPACE).steepest, steepest_of(WIDE_SPACE, "minimize").steepest
    assert ascent is not None and descent is not None and descent.goal == "descent"
    assert descent.direction == pytest.approx({k: -v for k, v in ascent.direction.items()})
    assert descent.steps[1].predicted == pytest.approx(2 * 40.444 - 45.484, abs=0.01)
    # Descent from time 35 (coded -0.5) reaches the low end (5 min) after 0.5 / 0.922 = 0.54
    # coded units.
    assert [s.distance for s in descent.steps] == [0.0, 0.5]
    configs = [{"time": t, "temp": T} for t, T, _ in STEEPEST_RUNS]
    values = [y for *_, y in STEEPEST_RUNS]
    assert fit(WIDE_SPACE, configs, values, model="interaction").steepest is None
    assert chemical_fit().steepest is None
