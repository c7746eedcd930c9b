"""The analysis's optimum with noise factors: the control factors chosen, judged across the
noise levels (a combined array, Myers, Montgomery and Anderson-Cook, "Response Surface
Methodology", 3rd ed., ch. 10), checked against published results and hand derivations."""

import itertools
import json

import numpy as np
import pytest
import scipy.optimize
import scipy.stats

from experiments.analysis import ResponseGoal, ResponseLimit, fit
from experiments.constraints import parse_constraints
from experiments.errors import DomainError
from experiments.factors import FactorSpace
from experiments.robust import RobustAim

# Montgomery, Design and Analysis of Experiments (8th ed.), Example 6.2: the filtration rate of
# an unreplicated 2^4 (A temperature, B pressure, C formaldehyde concentration, D stirring
# rate), responses in standard order. Its robust analysis (Montgomery ch. 12, Example 12.1;
# Myers, Montgomery and Anderson-Cook, RSM 3rd ed., ch. 10) takes temperature as the noise
# factor and the model A + C + D + AC + AD:
#   y = 70.06 + 10.81 x1 + 4.94 x3 + 7.31 x4 - 9.06 x1 x3 + 8.31 x1 x4,
# with the mean model E_z(y) = 70.06 + 4.94 x3 + 7.31 x4 and the variance model
# V_z(y) = sigma_z^2 (10.81 - 9.06 x3 + 8.31 x4)^2 + sigma^2, sigma^2 = 19.51.
FILTRATION = [45, 71, 48, 65, 68, 60, 80, 65, 43, 100, 45, 104, 75, 86, 70, 96]
FILTRATION_MODEL = {
    "Intercept": 70.0625,
    "A": 10.8125,
    "C": 4.9375,
    "D": 7.3125,
    "A:C": -9.0625,
    "A:D": 8.3125,
}
FILTRATION_RUNS = [
    dict(zip("ABCD", reversed(combo), strict=True))
    for combo in itertools.product([-1, 1], repeat=4)
]


def filtration_space() -> FactorSpace:
    return FactorSpace.from_dicts(
        [
            {"name": "A", "low": -1, "high": 1, "noise": True},
            *({"name": name, "low": -1, "high": 1} for name in "BCD"),
        ]
    )


def filtration(aim: RobustAim | None = None):
    # AICc selects exactly the published model from the interaction model of A-D.
    return fit(filtration_space(), FILTRATION_RUNS, FILTRATION, robust=aim)


def coefficients(analysis) -> dict[str, float]:
    return {term.name: term.coefficient for term in analysis.terms}


def test_filtration_fits_the_published_combined_array_model():
    analysis = filtration()
    assert analysis.model_label.endswith("A + C + D + A:C + A:D")
    assert coefficients(analysis) == pytest.approx(FILTRATION_MODEL, abs=1e-9)
    assert round(analysis.rmse**2, 2) == 19.51


def test_filtration_mean_aim_is_the_published_mean_model_optimum():
    best = filtration().optimum
    # E_z(y) = 70.06 + 4.94 x3 + 7.31 x4 is largest at x3 = x4 = +1: 82.31. B is not in the
    # model, so its setting is arbitrary; temperature is varied, never chosen.
    assert {name: best.config[name] for name in "CD"} == {"C": 1.0, "D": 1.0}
    assert "A" not in best.config
    assert round(best.predicted, 2) == 82.31
    assert best.robust is not None
    assert best.robust.aim == "the mean over the noise levels"
    assert best.robust.aim_value == pytest.approx(82.3125)
    assert [level.scenario for level in best.robust.levels] == [{"A": -1.0}, {"A": 1.0}]
    # The two temperatures: 70.0625 -+ (10.8125 - 9.0625 + 8.3125) around the mean.
    assert [level.predicted for level in best.robust.levels] == pytest.approx([72.25, 92.375])
    assert best.robust.sd_across_levels == pytest.approx(10.0625)
    assert best.robust.held == {"A": 0.0}


def test_filtration_mean_intervals_are_those_of_the_averaged_model_row():
    best = filtration().optimum
    # The average of the two temperatures' rows (1, -+1, 1, 1, -+1, -+1) is (1, 0, 1, 1, 0, 0):
    # an orthogonal 2^4 gives each coefficient variance sigma^2 / 16, so b0 + b3 + b4 has
    # 3 sigma^2 / 16. sigma^2 is the residual mean square, 19.51 on 10 df: the total sum of
    # squares less 16 b^2 for each of the five terms.
    y = np.array(FILTRATION, dtype=float)
    model_ss = 16 * sum(b**2 for name, b in FILTRATION_MODEL.items() if name != "Intercept")
    sigma2 = (((y - y.mean()) ** 2).sum() - model_ss) / 10
    assert round(sigma2, 2) == 19.51
    t = scipy.stats.t.ppf(0.975, 10)
    half, pi = t * np.sqrt(3 * sigma2 / 16), t * np.sqrt(sigma2 * (1 + 3 / 16))
    assert (best.ci_low, best.ci_high) == pytest.approx((82.3125 - half, 82.3125 + half))
    assert (best.pi_low, best.pi_high) == pytest.approx((82.3125 - pi, 82.3125 + pi))


@pytest.mark.parametrize(("c", "d"), [(-1, -1), (1, 1), (1, -1), (-1, 1)])
def test_filtration_spread_across_temperatures_is_the_published_variance_model(c, d):
    # sd_across_levels at the ±1 temperatures (sigma_z = 1) is |dy/dx1| = |10.8125 - 9.0625 x3
    # + 8.3125 x4|: the variance model without the residual variance. The constraints pin the
    # optimum at the control point asked for.
    pinned = parse_constraints(
        [f"{name} {'>=' if end > 0 else '<='} {end}" for name, end in (("C", c), ("D", d))],
        filtration_space(),
    )
    analysis = fit(filtration_space(), FILTRATION_RUNS, FILTRATION, constraints=pinned)
    assert analysis.optimum.robust.sd_across_levels == pytest.approx(
        abs(10.8125 - 9.0625 * c + 8.3125 * d)
    )


def max_min_of_the_two_temperatures() -> tuple[float, float, float]:
    """The exact max-min over the control box of y(x1 = -1) = 59.25 + 14 x3 - x4 and
    y(x1 = +1) = 80.875 - 4.125 x3 + 15.625 x4, as the LP max t, t <= each line."""
    b = FILTRATION_MODEL
    lines = [
        (b["Intercept"] + s * b["A"], b["C"] + s * b["A:C"], b["D"] + s * b["A:D"]) for s in (-1, 1)
    ]
    # Variables (x3, x4, t): minimize -t subject to t - (a + u x3 + v x4) <= 0.
    result = scipy.optimize.linprog(
        c=[0.0, 0.0, -1.0],
        A_ub=[[-u, -v, 1.0] for _, u, v in lines],
        b_ub=[a for a, _, _ in lines],
        bounds=[(-1, 1), (-1, 1), (None, None)],
    )
    assert result.success
    x3, x4, t = result.x
    return float(x3), float(x4), float(t)


def test_filtration_worst_aim_is_the_exact_max_min_of_the_two_temperatures():
    x3, x4, value = max_min_of_the_two_temperatures()
    best = filtration(RobustAim("worst")).optimum
    assert best.robust.aim == "the worst noise level"
    assert best.robust.aim_value == pytest.approx(value, abs=1e-6)
    assert best.config["C"] == pytest.approx(x3, abs=1e-4)
    assert best.config["D"] == pytest.approx(x4, abs=1e-4)
    # At the max-min both temperatures predict the same: the worst is either.
    levels = [level.predicted for level in best.robust.levels]
    assert levels == pytest.approx([value, value], abs=1e-6)
    assert best.predicted == pytest.approx(min(levels))
    assert best.robust.held in ({"A": -1.0}, {"A": 1.0})


def test_filtration_quantile_aim_interpolates_between_the_temperatures():
    best = filtration(RobustAim("quantile", 0.25)).optimum
    low, high = sorted(level.predicted for level in best.robust.levels)
    assert best.robust.aim_value == pytest.approx(0.75 * low + 0.25 * high)
    # The prediction is that same weighted sum of the two levels' model rows, with its intervals.
    assert best.predicted == pytest.approx(best.robust.aim_value)
    assert best.ci_low < best.predicted < best.ci_high
    assert best.robust.aim.startswith("the 0.25 quantile over the noise levels")


def test_filtration_explanation_and_json():
    analysis = filtration()
    text = " ".join(analysis.explanation.sentences)
    assert "chosen for the mean over the noise levels (A)" in text
    assert "from about 72.3 (A = -1) to about 92.4 (A = 1)" in text
    # The effects are read at the centre temperature: the mean model's 2 x 7.3125 for D.
    stirring = next(e for e in analysis.ranked_factors if e.factor == "D")
    assert stirring.change_at_optimum == pytest.approx(14.625)
    data = json.loads(json.dumps(analysis.as_dict()))
    assert data["optimum"]["robust"]["levels"][1]["scenario"] == {"A": 1.0}
    assert "A" not in data["optimum"]["on_edge"]
    assert "for the mean over the noise levels: 82.31; across the 2 noise levels 72.25 to" in (
        analysis.summary()
    )


def test_without_noise_factors_there_is_no_robust_report():
    space = FactorSpace.from_dicts([{"name": n, "low": -1, "high": 1} for n in "ABCD"])
    assert fit(space, FILTRATION_RUNS, FILTRATION).optimum.robust is None


# A hand-derivable combined array: one control factor x (-1..1), a categorical noise factor
# (the workload), each response linear in x per workload, every point run twice at -+e around
# the line (e = 0.1) so the interaction model recovers the lines exactly, with a residual mean
# square of 20 e^2 / 16 (20 runs, 4 parameters).
# tps: read-only 20 + 6x, read-write 10 - 2x: the mean 15 + 2x is best at x = +1 (17); the
# worst is always read-write, best at x = -1 (12). latency: read-only 5 + 3x, read-write
# 9 - 5x: its mean 7 - x is at most 7.5 from x = -0.5 up; read-write meets 7.5 only from
# x = 0.3 up, read-only up to x = 5/6.
X_SETTINGS = [-1.0, -0.5, 0.0, 0.5, 1.0]
LINES = {
    "tps": {"ro": (20.0, 6.0), "rw": (10.0, -2.0)},
    "latency": {"ro": (5.0, 3.0), "rw": (9.0, -5.0)},
}


def workload_space() -> FactorSpace:
    return FactorSpace.from_dicts(
        [
            {"name": "x", "low": -1, "high": 1},
            {"name": "workload", "kind": "categorical", "levels": ["ro", "rw"], "noise": True},
        ]
    )


def workload_runs() -> tuple[list[dict], dict[str, list[float]]]:
    configs, values = [], {name: [] for name in LINES}
    for x, workload, sign in itertools.product(X_SETTINGS, ["ro", "rw"], [-1, 1]):
        configs.append({"x": x, "workload": workload})
        for name, lines in LINES.items():
            a, b = lines[workload]
            values[name].append(a + b * x + sign * 0.1)
    return configs, values


def workload_fit(aim: RobustAim | None, **arguments):
    configs, values = workload_runs()
    analysis = fit(
        workload_space(), configs, values["tps"], model="interaction", robust=aim, **arguments
    )
    assert analysis.rmse**2 == pytest.approx(20 * 0.1**2 / 16)
    return analysis


@pytest.mark.parametrize(
    ("aim", "x", "value"),
    [(None, 1.0, 17.0), (RobustAim("mean"), 1.0, 17.0), (RobustAim("worst"), -1.0, 12.0)],
)
def test_hand_derived_mean_and_worst_optimum(aim, x, value):
    best = workload_fit(aim).optimum
    assert best.config == {"x": x}
    assert best.robust.aim_value == pytest.approx(value)
    # Two levels: the standard deviation across them is half their distance, |10 + 8x| / 2.
    assert best.robust.sd_across_levels == pytest.approx(abs(10 + 8 * x) / 2)
    assert [level.scenario for level in best.robust.levels] == [
        {"workload": "ro"},
        {"workload": "rw"},
    ]


def test_hand_derived_worst_when_minimizing_is_the_highest_level():
    configs, values = workload_runs()
    best = fit(
        workload_space(),
        configs,
        values["latency"],
        model="interaction",
        goal="minimize",
        robust=RobustAim("worst"),
    ).optimum
    # max(5 + 3x, 9 - 5x) is lowest where the lines cross: x = 0.5, latency 6.5.
    assert best.config["x"] == pytest.approx(0.5, abs=0.01)
    assert best.robust.aim_value == pytest.approx(6.5, abs=0.01)
    assert best.robust.aim == "the worst noise level"


def test_a_limit_must_hold_at_every_noise_level():
    values = workload_runs()[1]
    limit = ResponseLimit(response="latency", values=values["latency"], max=7.5)
    best = workload_fit(RobustAim("worst"), limits=[limit]).optimum
    # The worst tps (read-write, 10 - 2x) wants x low; latency <= 7.5 at both workloads needs
    # 0.3 <= x <= 5/6 (the mean of latency would allow x from -0.5), so x = 0.3.
    assert best.config["x"] == pytest.approx(0.3, abs=0.01)
    assert best.limits_met["latency <= 7.5"] == pytest.approx(7.5, abs=0.05)
    with pytest.raises(DomainError, match="latency <= 5"):
        workload_fit(None, limits=[ResponseLimit("latency", values["latency"], max=5.0)])


def test_a_constraint_naming_a_numeric_noise_factor_holds_at_every_level():
    space = FactorSpace.from_dicts(
        [{"name": "x", "low": -1, "high": 1}, {"name": "z", "low": -1, "high": 1, "noise": True}]
    )
    configs = [{"x": x, "z": z} for x, z in itertools.product([-1.0, 0.0, 1.0], [-1.0, 1.0])]
    values = [3.0 + 2.0 * c["x"] + 0.1 * c["x"] * c["z"] for c in configs]
    values = [v + 0.01 * (i % 3 - 1) for i, v in enumerate(values)]
    best = fit(
        space,
        configs,
        values,
        model="interaction",
        constraints=parse_constraints(["x + z <= 0.5"], space),
    ).optimum
    # At z = +1 the constraint leaves x <= -0.5: the mean's optimum, x as high as allowed.
    assert best.config["x"] == pytest.approx(-0.5, abs=1e-6)


def test_desirability_takes_the_aim_of_each_scenarios_overall_desirability():
    values = workload_runs()[1]
    goals = [
        ResponseGoal(response="tps", values=values["tps"], goal="maximize", low=8.0, high=26.0),
        ResponseGoal(
            response="latency", values=values["latency"], goal="minimize", low=4.0, high=12.0
        ),
    ]
    best = workload_fit(RobustAim("worst"), desirability=goals).optimum
    grid = np.linspace(-1.0, 1.0, 2001)

    def overall(workload: str) -> np.ndarray:
        (a, b), (c, d) = LINES["tps"][workload], LINES["latency"][workload]
        tps = np.clip((a + b * grid - 8.0) / 18.0, 0, 1)
        latency = np.clip((12.0 - (c + d * grid)) / 8.0, 0, 1)
        return np.sqrt(tps * latency)

    worst = np.minimum(overall("ro"), overall("rw"))
    assert best.config["x"] == pytest.approx(grid[np.argmax(worst)], abs=0.01)
    assert best.desirability["overall"] == pytest.approx(worst.max(), abs=1e-4)
    assert best.robust.aim_value == pytest.approx(worst.max(), abs=1e-4)


def test_the_full_length_of_a_fidelity_holds_with_noise_factors():
    space = FactorSpace.from_dicts(
        [
            {"name": "x", "low": -1, "high": 1},
            {"name": "runtime_s", "low": 30, "high": 120, "fidelity": True},
            {"name": "z", "low": -1, "high": 1, "noise": True},
        ]
    )
    configs = [
        {"x": x, "runtime_s": t, "z": z}
        for x, t, z in itertools.product([-1.0, 0.0, 1.0], [30.0, 120.0], [-1.0, 1.0])
    ]
    values = [10 - c["x"] + 0.01 * c["runtime_s"] + c["x"] * c["z"] for c in configs]
    values = [v + 0.01 * (i % 3 - 1) for i, v in enumerate(values)]
    best = fit(space, configs, values, model="interaction").optimum
    assert best.config == {"x": -1.0, "runtime_s": 120.0}


def test_the_optimum_stays_in_the_hull_of_the_runs_at_every_noise_level():
    # Runs only where x1 + x2 <= 0 (observations, not a design), at both ends of the noise z:
    # y = 2 x1 + x2 + z is best in the box at (1, 1), in the hull of the runs at (1, -1).
    space = FactorSpace.from_dicts(
        [
            {"name": "x1", "low": -1, "high": 1},
            {"name": "x2", "low": -1, "high": 1},
            {"name": "z", "low": -1, "high": 1, "noise": True},
        ]
    )
    corners = [(-1.0, -1.0), (1.0, -1.0), (-1.0, 1.0), (0.0, 0.0), (-0.5, -0.5)]
    configs = [{"x1": a, "x2": b, "z": z} for (a, b), z in itertools.product(corners, [-1.0, 1.0])]
    values = [2 * c["x1"] + c["x2"] + c["z"] + 0.01 * (i % 3 - 1) for i, c in enumerate(configs)]
    best = fit(space, configs, values, model="linear").optimum
    assert best.region == "the hull of the observed runs"
    assert best.config == pytest.approx({"x1": 1.0, "x2": -1.0}, abs=1e-6)


def test_a_control_configuration_counts_as_inside_only_when_every_crossing_is():
    # At z = -1 the runs fill the box, at z = +1 only x1 + x2 <= 0: (1, 1) was run, but its
    # crossing with z = +1 would extrapolate, so the optimum of 2 x1 + x2 is (1, -1).
    space = FactorSpace.from_dicts(
        [
            {"name": "x1", "low": -1, "high": 1},
            {"name": "x2", "low": -1, "high": 1},
            {"name": "z", "low": -1, "high": 1, "noise": True},
        ]
    )
    box = [(-1.0, -1.0), (1.0, -1.0), (-1.0, 1.0), (1.0, 1.0), (0.0, 0.0)]
    triangle = [(-1.0, -1.0), (1.0, -1.0), (-1.0, 1.0), (-0.5, -0.5)]
    configs = [{"x1": a, "x2": b, "z": -1.0} for a, b in box]
    configs += [{"x1": a, "x2": b, "z": 1.0} for a, b in triangle]
    values = [2 * c["x1"] + c["x2"] + c["z"] + 0.01 * (i % 3 - 1) for i, c in enumerate(configs)]
    best = fit(space, configs, values, model="linear").optimum
    assert best.region == "the hull of the observed runs"
    assert best.config == pytest.approx({"x1": 1.0, "x2": -1.0}, abs=1e-6)


def test_the_steepest_path_holds_a_noise_factor_and_moves_the_control_factors():
    analysis = fit(filtration_space(), FILTRATION_RUNS, FILTRATION, model="linear")
    path = analysis.steepest
    assert path is not None and "A" not in path.direction and set(path.direction) <= set("BCD")
    assert "A" in path.held  # temperature stays where the robust report holds it
    assert analysis.optimum.held["A"] == analysis.optimum.robust.held["A"]
