"""The analysis, checked against published textbook examples with known answers.

Coded coefficients are half the published effects (an effect is the change from the low to the
high end, a coded unit is half of that range).
"""

import itertools
import json
import math

import numpy as np
import pytest

from experiments.analysis import fit
from experiments.constraints import parse_constraints
from experiments.errors import DomainError
from experiments.factors import FactorSpace


def space(*factors: dict) -> FactorSpace:
    return FactorSpace.from_dicts(factors)


def standard_order(levels: dict[str, list]) -> list[dict]:
    """Configurations of a full factorial in standard (Yates) order: first factor fastest."""
    names = list(levels)
    return [
        dict(zip(names, reversed(combo), strict=True))
        for combo in itertools.product(*(levels[n] for n in reversed(names)))
    ]


def coefficients(analysis) -> dict[str, float]:
    return {term.name: term.coefficient for term in analysis.terms}


def effects(analysis) -> dict[str, float]:
    return {e.factor: e.effect for e in analysis.ranked_factors}


# Montgomery, Design and Analysis of Experiments (8th ed.), Example 6.2: filtration rate in a
# chemical pilot plant, unreplicated 2^4 (A temperature, B pressure, C formaldehyde
# concentration, D stirring rate), responses in standard order (Table 6.10) and the effect
# estimates of Table 6.12.
FILTRATION = [45, 71, 48, 65, 68, 60, 80, 65, 43, 100, 45, 104, 75, 86, 70, 96]
FILTRATION_EFFECTS = {
    "A": 21.625,
    "B": 3.125,
    "C": 9.875,
    "D": 14.625,
    "A:B": 0.125,
    "A:C": -18.125,
    "A:D": 16.625,
    "B:C": 2.375,
    "B:D": -0.375,
    "C:D": -1.125,
}
CODED_2_4 = space(*({"name": name, "low": -1, "high": 1} for name in "ABCD"))


def test_montgomery_example_6_2_filtration_rate_effects():
    configs = standard_order({name: [-1, 1] for name in "ABCD"})
    analysis = fit(CODED_2_4, configs, FILTRATION, model="interaction")
    fitted = coefficients(analysis)
    assert fitted["Intercept"] == pytest.approx(70.06, abs=5e-3)
    for term, effect in FILTRATION_EFFECTS.items():
        assert fitted[term] == pytest.approx(effect / 2, abs=5e-4), term
    assert [e.factor for e in analysis.ranked_factors] == ["A", "D", "C", "B"]
    main = {name: FILTRATION_EFFECTS[name] for name in "ABCD"}
    assert effects(analysis) == pytest.approx(main, abs=5e-4)
    # Montgomery's conclusion: A and D high, C low (less formaldehyde) maximize the rate.
    best = analysis.optimum.config
    assert (best["A"], best["C"], best["D"]) == (1.0, -1.0, 1.0)


# Montgomery, Design and Analysis of Experiments (8th ed.), Example 6.1: plasma etch rate,
# 2^3 with two replicates (A gap 0.80/1.20 cm, B C2F6 flow 125/200 SCCM, C power 275/325 W),
# effect estimates in Table 6.5 and sums of squares in Table 6.6. The reduced model in A, C and
# AC has R^2 = 0.9608 and adjusted R^2 = 0.9509 (Section 6.3).
ETCH = [550, 669, 604, 650, 633, 642, 601, 635, 1037, 749, 1052, 868, 1075, 729, 1063, 860]
ETCH_LEVELS = {"gap": [0.8, 1.2], "flow": [125, 200], "power": [275, 325]}


def etch_runs(names: list[str]) -> list[dict]:
    # The book lists the data as (1), a, (1), a, b, ab, b, ab, ...: both replicates of each
    # pair of A levels in turn.
    corners = standard_order(ETCH_LEVELS)
    runs = [c for k in range(0, 8, 2) for _ in range(2) for c in corners[k : k + 2]]
    return [{name: run[name] for name in names} for run in runs]


def test_montgomery_example_6_1_plasma_etch_effects():
    etch_space = space(*({"name": n, "low": lo, "high": hi} for n, (lo, hi) in ETCH_LEVELS.items()))
    analysis = fit(etch_space, etch_runs(list(ETCH_LEVELS)), ETCH, model="interaction")
    published = {
        "gap": -101.625,
        "flow": 7.375,
        "gap:flow": -24.875,
        "power": 306.125,
        "gap:power": -153.625,
        "flow:power": -2.125,
    }
    fitted = coefficients(analysis)
    for term, effect in published.items():
        assert fitted[term] == pytest.approx(effect / 2, abs=5e-4), term
    assert fitted["Intercept"] == pytest.approx(776.0625, abs=5e-5)


def test_montgomery_example_6_1_reduced_model_statistics():
    reduced = space(
        {"name": "gap", "low": 0.8, "high": 1.2}, {"name": "power", "low": 275, "high": 325}
    )
    analysis = fit(reduced, etch_runs(["gap", "power"]), ETCH, model="interaction")
    assert coefficients(analysis) == pytest.approx(
        {"Intercept": 776.0625, "gap": -50.8125, "power": 153.0625, "gap:power": -76.8125},
        abs=5e-5,
    )
    assert analysis.r_squared == pytest.approx(0.9608, abs=5e-5)
    assert analysis.adj_r_squared == pytest.approx(0.9509, abs=5e-5)
    # Table 6.6: SS_total 531,420.9375 less SS_A 41,310.5625, SS_C 374,850.0625, SS_AC 94,402.5625.
    assert analysis.residual_df == 12
    assert analysis.rmse**2 * 12 == pytest.approx(20_857.75, abs=5e-3)
    assert effects(analysis) == pytest.approx({"gap": -101.625, "power": 306.125}, abs=5e-4)
    assert analysis.ranked_factors[0].direction == "increases"
    assert analysis.ranked_factors[1].direction == "decreases"


# Montgomery, Design and Analysis of Experiments (8th ed.), Section 6.2: the 2^2 design for
# reactant concentration (A, 15/25 %) and catalyst (B, 1/2 lb), three replicates; effects
# A = 8.33, B = -5.00, AB = 1.67 and Table 6.1 (SS_A 208.33, SS_B 75.00, SS_T 323.00). The
# first-order model in natural units is y = 18.33 + 0.8333 Conc - 5.00 Catalyst.
YIELD_CONFIGS = [
    {"conc": conc, "catalyst": catalyst}
    for catalyst in (1, 2)
    for _ in range(3)
    for conc in (15, 25)
]
YIELD = [28, 36, 25, 32, 27, 32, 18, 31, 19, 30, 23, 29]
YIELD_SPACE = space(
    {"name": "conc", "low": 15, "high": 25}, {"name": "catalyst", "low": 1, "high": 2}
)


def test_montgomery_2x2_yield_first_order_model():
    analysis = fit(YIELD_SPACE, YIELD_CONFIGS, YIELD)
    assert coefficients(analysis) == pytest.approx(
        {"Intercept": 27.5, "conc": 8.33 / 2, "catalyst": -5.00 / 2}, abs=5e-3
    )
    # Residual SS of the first-order model: 323.00 - 208.33 - 75.00.
    assert analysis.rmse**2 * analysis.residual_df == pytest.approx(39.67, abs=0.01)
    best = analysis.optimum
    assert best.config == {"conc": 25.0, "catalyst": 1.0}
    assert best.predicted == pytest.approx(18.33 + 0.8333 * 25 - 5.00 * 1, abs=0.01)
    assert best.ci_low < best.predicted < best.ci_high
    assert best.pi_low < best.ci_low and best.ci_high < best.pi_high
    assert best.on_edge == {"conc": "high", "catalyst": "low"}


def test_montgomery_2x2_yield_minimum():
    best = fit(YIELD_SPACE, YIELD_CONFIGS, YIELD, goal="minimize").optimum
    assert best.config == {"conc": 15.0, "catalyst": 2.0}
    assert best.predicted == pytest.approx(18.33 + 0.8333 * 15 - 5.00 * 2, abs=0.01)


# Box, Hunter & Hunter, Statistics for Experimenters (2nd ed., 2005), Chapter 5: the pilot plant
# 2^3 with temperature T (160/180 C), concentration C (20/40 %) and catalyst K (A/B), yields in
# standard order; effects T = 23, C = -5, K = 1.5, TC = 1.5, TK = 10, CK = 0. K is categorical
# here, so it enters as a treatment dummy K[B].
PILOT_SPACE = space(
    {"name": "T", "low": 160, "high": 180},
    {"name": "C", "low": 20, "high": 40},
    {"name": "K", "kind": "categorical", "levels": ["A", "B"]},
)
PILOT_CONFIGS = standard_order({"T": [160, 180], "C": [20, 40], "K": ["A", "B"]})
PILOT_YIELD = [60, 72, 54, 68, 52, 83, 45, 80]


def test_box_hunter_hunter_pilot_plant_with_a_categorical_catalyst():
    linear = fit(PILOT_SPACE, PILOT_CONFIGS, PILOT_YIELD, model="linear")
    assert effects(linear) == pytest.approx({"T": 23.0, "C": -5.0, "K": 1.5})
    assert coefficients(linear)["K[B]"] == pytest.approx(1.5)
    assert (linear.ranked_factors[2].low, linear.ranked_factors[2].high) == ("A", "B")

    interaction = fit(PILOT_SPACE, PILOT_CONFIGS, PILOT_YIELD, model="interaction")
    fitted = coefficients(interaction)
    assert fitted["T:C"] == pytest.approx(1.5 / 2)
    # A dummy spans half the range of a +-1 column, so its coefficients are the effects.
    assert fitted["T:K[B]"] == pytest.approx(10.0)
    assert fitted["C:K[B]"] == pytest.approx(0.0, abs=1e-9)
    # Main effects are averaged over the catalysts, as in the book.
    assert effects(interaction) == pytest.approx({"T": 23.0, "C": -5.0, "K": 1.5})
    assert interaction.optimum.config == {"T": 180.0, "C": 20.0, "K": "B"}
    assert interaction.optimum.on_edge == {"T": "high", "C": "low"}


def test_categorical_with_three_levels_reports_the_largest_difference():
    cat_space = space(
        {"name": "x", "low": 0, "high": 10},
        {"name": "engine", "kind": "categorical", "levels": ["a", "b", "c"]},
    )
    offsets = {"a": 0.0, "b": 7.0, "c": -3.0}
    configs = [{"x": x, "engine": e} for x in (0, 5, 10) for e in offsets]
    values = [100 + 2 * c["x"] + offsets[c["engine"]] for c in configs]
    analysis = fit(cat_space, configs, values)
    engine = next(e for e in analysis.ranked_factors if e.factor == "engine")
    assert (engine.low, engine.high) == ("b", "c")
    assert engine.effect == pytest.approx(-10.0)
    assert engine.direction == "decreases"
    assert analysis.optimum.config == {"x": 10.0, "engine": "b"}
    assert analysis.optimum.predicted == pytest.approx(127.0)


GALERA = space(
    {"name": "threads", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
    {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
    {"name": "slave_threads", "kind": "integer", "levels": [1, 4, 16]},
)


def galera_surface(config: dict) -> float:
    # Throughput grows with log2(threads), falls with nodes, and gains a little from slave threads.
    return (
        500 + 80 * math.log2(config["threads"]) - 25 * config["nodes"] + 3 * config["slave_threads"]
    )


def test_integer_factors_give_integer_optima_at_the_right_corner():
    configs = standard_order({"threads": [4, 64], "nodes": [1, 9], "slave_threads": [1, 16]})
    configs.append({"threads": 16, "nodes": 5, "slave_threads": 4})
    values = [galera_surface(c) for c in configs]
    best = fit(GALERA, configs, values).optimum
    assert best.config == {"threads": 64, "nodes": 1, "slave_threads": 16}
    assert all(isinstance(v, int) for v in best.config.values())
    assert best.predicted == pytest.approx(galera_surface(best.config))
    assert best.search == "lattice"
    worst = fit(GALERA, configs, values, goal="minimize").optimum
    assert worst.config == {"threads": 4, "nodes": 9, "slave_threads": 1}


def test_large_lattices_are_searched_coordinate_wise():
    names = [f"x{i}" for i in range(6)]
    wide = space(*({"name": n, "low": 0, "high": 1} for n in names))
    slopes = [3, -2, 1, -4, 5, -0.5]
    configs = standard_order({n: [0, 1] for n in names})
    values = [sum(s * c[n] for s, n in zip(slopes, names, strict=True)) for c in configs]
    best = fit(wide, configs, values).optimum
    assert best.search == "coordinate"
    assert best.config == {n: (1.0 if s > 0 else 0.0) for n, s in zip(names, slopes, strict=True)}


def test_too_few_observations_say_how_many_are_needed():
    configs = standard_order({"threads": [4, 64], "nodes": [1, 9]})
    observed = [dict(c, slave_threads=1) for c in configs]
    with pytest.raises(DomainError) as error:
        fit(GALERA, observed, [1.0, 2.0, 3.0, 4.0], model="linear")
    assert error.value.field == "model"
    assert "needs at least 5 successful runs; 4 given" in error.value.rule
    with pytest.raises(DomainError) as error:
        fit(GALERA, observed[:2], [1.0, 2.0])
    assert error.value.field == "model"
    assert error.value.rule == (
        "needs at least 3 successful runs to fit even the linear model of the factors the runs"
        " vary; 2 given"
    )


def test_interaction_model_needs_more_observations():
    configs = standard_order({"T": [160, 180], "C": [20, 40]})
    two = space({"name": "T", "low": 160, "high": 180}, {"name": "C", "low": 20, "high": 40})
    with pytest.raises(DomainError, match="at least 5 successful runs"):
        fit(two, configs, [1.0, 2.0, 3.0, 4.0], model="interaction")


@pytest.mark.parametrize("bad", [math.nan, math.inf, "fast", None, True])
def test_values_must_be_finite_numbers(bad: object):
    values = [*YIELD[:-1], bad]
    with pytest.raises(DomainError) as error:
        fit(YIELD_SPACE, YIELD_CONFIGS, values)
    assert error.value.field == "response"


def test_values_and_configs_must_pair_up():
    with pytest.raises(DomainError) as error:
        fit(YIELD_SPACE, YIELD_CONFIGS, YIELD[:-1])
    assert error.value.field == "response"


def test_a_factor_that_never_varied_cannot_be_estimated():
    configs = [dict(c, catalyst=1) for c in YIELD_CONFIGS]
    with pytest.raises(DomainError) as error:
        fit(YIELD_SPACE, configs, YIELD, model="linear")
    assert error.value.field == "model"
    assert "cannot separate catalyst from the other terms of the linear model" in error.value.rule


def test_auto_leaves_out_what_the_runs_cannot_separate_and_says_so():
    configs = [dict(c, catalyst=1) for c in YIELD_CONFIGS]
    analysis = fit(YIELD_SPACE, configs, YIELD)
    assert analysis.selection is not None
    assert "catalyst" in analysis.selection.aliased
    assert all("catalyst" not in term.name for term in analysis.terms)
    assert analysis.model_label.startswith("auto (selected from the quadratic model by AICc): ")


def test_bad_configs_name_the_observation_and_factor():
    configs = [*YIELD_CONFIGS[:-1], {"conc": 20, "catalyst": "lots"}]
    with pytest.raises(DomainError) as error:
        fit(YIELD_SPACE, configs, YIELD)
    assert error.value.field == "configs.11.catalyst"


@pytest.mark.parametrize(
    ("option", "field"), [({"goal": "maximise"}, "goal"), ({"model": "cubic"}, "model")]
)
def test_unknown_goal_or_model(option: dict, field: str):
    with pytest.raises(DomainError) as error:
        fit(YIELD_SPACE, YIELD_CONFIGS, YIELD, **option)
    assert error.value.field == field


def test_analysis_is_json_friendly_and_summarized():
    analysis = fit(PILOT_SPACE, PILOT_CONFIGS, PILOT_YIELD, model="interaction")
    data = json.loads(json.dumps(analysis.as_dict(), allow_nan=False))
    assert data["optimum"]["config"] == {"T": 180.0, "C": 20.0, "K": "B"}
    assert [t["name"] for t in data["terms"]][:4] == ["Intercept", "T", "C", "K[B]"]
    text = analysis.summary()
    for fragment in ("R-squared", "T:K[B]", "optimum (maximize)", "95% PI"):
        assert fragment in text


def test_a_perfect_fit_is_still_reported():
    configs = standard_order({"conc": [15, 25], "catalyst": [1, 2]}) * 2
    values = [10 + c["conc"] - 3 * c["catalyst"] for c in configs]
    analysis = fit(YIELD_SPACE, configs, values)
    assert analysis.r_squared == pytest.approx(1.0)
    assert json.dumps(analysis.as_dict(), allow_nan=False)


def test_candidate_lattice_honours_explicit_levels_and_every_integer():
    from experiments.lattice import candidate_values as _candidates

    threads, nodes, slave_threads = _candidates(GALERA, [])
    assert threads == list(range(4, 65))
    assert nodes == list(range(1, 10))
    assert slave_threads == [1, 4, 16]


def test_a_factor_fixed_at_one_level_is_left_out_of_the_model():
    fixed = space(
        {"name": "conc", "low": 15, "high": 25},
        {"name": "catalyst", "low": 1, "high": 2},
        {"name": "nodes", "kind": "integer", "levels": [3]},
        {"name": "engine", "kind": "categorical", "levels": ["innodb"]},
    )
    configs = [dict(c, nodes=3, engine="innodb") for c in YIELD_CONFIGS]
    analysis = fit(fixed, configs, YIELD, model="interaction")
    assert [t.name for t in analysis.terms] == ["Intercept", "conc", "catalyst", "conc:catalyst"]
    assert [e.factor for e in analysis.ranked_factors] == ["conc", "catalyst"]
    assert analysis.optimum.config == {
        "conc": 25.0,
        "catalyst": 1.0,
        "nodes": 3,
        "engine": "innodb",
    }


# Montgomery, Design and Analysis of Experiments (8th ed.), Example 11.2: chemical process yield,
# central composite design in time (x1) and temperature (x2), five centre points. Published fit:
# y = 79.94 + 0.99 x1 + 0.52 x2 - 1.38 x1^2 - 1.00 x2^2 + 0.25 x1 x2, R^2 = 0.9827, with the
# stationary point at x1 = 0.389, x2 = 0.306 and a predicted yield there of 80.21.
CCD_YIELD = [
    (-1, -1, 76.5), (1, -1, 78.0), (-1, 1, 77.0), (1, 1, 79.5),
    (0, 0, 79.9), (0, 0, 80.3), (0, 0, 80.0), (0, 0, 79.7), (0, 0, 79.8),
    (1.414, 0, 78.4), (-1.414, 0, 75.6), (0, 1.414, 78.5), (0, -1.414, 77.0),
]  # fmt: skip


def test_montgomery_example_11_2_quadratic_response_surface():
    factors = space(
        {"name": "x1", "kind": "continuous", "low": -1, "high": 1},
        {"name": "x2", "kind": "continuous", "low": -1, "high": 1},
    )
    analysis = fit(
        factors,
        [{"x1": x1, "x2": x2} for x1, x2, _ in CCD_YIELD],
        [y for _, _, y in CCD_YIELD],
        model="quadratic",
    )
    published = {"Intercept": 79.94, "x1": 0.99, "x2": 0.52, "x1^2": -1.38, "x2^2": -1.00,
                 "x1:x2": 0.25}  # fmt: skip
    fitted = coefficients(analysis)
    assert set(fitted) == set(published)
    for name, value in published.items():
        assert fitted[name] == pytest.approx(value, abs=0.006), name
    assert analysis.r_squared == pytest.approx(0.9827, abs=5e-5)
    best = analysis.optimum
    # Published stationary point (0.389, 0.306): Nelder-Mead refines the grid's best point to
    # the published precision.
    assert best.config == pytest.approx({"x1": 0.389, "x2": 0.306}, abs=5e-4)
    assert best.predicted == pytest.approx(80.21, abs=0.005)
    assert best.on_edge == {}


def test_quadratic_terms_only_for_factors_seen_at_three_levels():
    factors = space(
        {"name": "a", "kind": "continuous", "low": 0, "high": 1},
        {"name": "b", "kind": "integer", "low": 1, "high": 9},
    )
    configs = [{"a": a, "b": b} for a in (0, 1) for b in (1, 5, 9)] * 2
    values = [10 + 2 * c["a"] - (c["b"] - 5) ** 2 / 4 + 0.1 * i for i, c in enumerate(configs)]
    analysis = fit(factors, configs, values, model="quadratic")
    assert "b^2" in coefficients(analysis) and "a^2" not in coefficients(analysis)
    assert analysis.optimum.config == {"a": 1, "b": 5}


def test_the_optimum_honours_the_factor_constraints():
    factors = space(
        {"name": "clients", "kind": "integer", "low": 1, "high": 8},
        {"name": "threads", "kind": "integer", "low": 4, "high": 64},
    )
    configs = [{"clients": c, "threads": t} for c in (1, 4, 8) for t in (4, 32, 64)]
    values = [100 + 10 * c["clients"] + c["threads"] for c in configs]
    free = fit(factors, configs, values)
    assert free.optimum.config == {"clients": 8, "threads": 64}
    limited = fit(
        factors,
        configs,
        values,
        constraints=parse_constraints(["clients * threads <= 256"], factors),
    )
    best = limited.optimum.config
    assert best["clients"] * best["threads"] <= 256
    # The best feasible point of 100 + 10 c + t under c t <= 256 on the integer lattice.
    feasible = [(c, t) for c in range(1, 9) for t in range(4, 65) if c * t <= 256]
    assert (best["clients"], best["threads"]) == max(feasible, key=lambda p: 10 * p[0] + p[1])
    with pytest.raises(DomainError) as error:
        fit(factors, configs, values, constraints=parse_constraints(["clients >= 9"], factors))
    assert error.value.field == "constraints"


def test_auto_model_that_drops_every_term_of_a_factor_reports_it_without_a_test():
    space = FactorSpace.from_dicts(
        [
            {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
            {"name": "idle", "kind": "continuous", "low": 0.0, "high": 1.0},
        ]
    )
    rng = np.random.default_rng(4)
    configs = [{"nodes": n, "idle": b} for n in (1, 3, 5, 7, 9) for b in (0.0, 0.5, 1.0)]
    values = [100.0 - 3.0 * (c["nodes"] - 5) ** 2 + rng.normal(0.0, 0.1) for c in configs]
    result = fit(space, configs, values, model="auto")
    assert all("idle" not in term.name for term in result.terms)
    idle = next(e for e in result.ranked_factors if e.factor == "idle")
    assert idle.p_value is None and idle.effect == 0.0 and idle.direction == "none"
