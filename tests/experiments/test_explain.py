"""Each sentence template of the explanation, checked against the numbers it states."""

from __future__ import annotations

import math
import re

import pytest

from experiments.analysis import fit
from experiments.analysis.explain import Fit, explain, profile_phrase
from experiments.analysis.results import Profile
from experiments.factors import FactorSpace
from experiments.numbers import significant

HUMP = FactorSpace.from_dicts(
    [
        {"name": "clients", "kind": "integer", "low": 1, "high": 9},
        {"name": "nodes", "kind": "integer", "low": 1, "high": 5},
    ]
)


def hump_tps(clients: int, nodes: int) -> float:
    # Peaks at clients = 5; nodes cost throughput linearly; a fixed wobble keeps residuals.
    wobble = ((clients * 7 + nodes * 3) % 5 - 2) * 1.5
    return 1500 - 15 * (clients - 5) ** 2 - 40 * nodes + wobble


HUMP_CONFIGS = [{"clients": c, "nodes": n} for c in (1, 3, 5, 7, 9) for n in (1, 3, 5)]
HUMP_TPS = [hump_tps(**c) for c in HUMP_CONFIGS]


def numbers_in(sentence: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", sentence)]


def test_a_hump_is_told_by_its_peak_and_both_ends_with_the_numbers_of_the_profile():
    analysis = fit(HUMP, HUMP_CONFIGS, HUMP_TPS, model="quadratic", response="tps")
    clients = next(e for e in analysis.ranked_factors if e.factor == "clients")
    profile = clients.profile
    assert profile.best == 5
    top = profile.predicted[profile.settings.index(5)]
    sentence = next(s for s in analysis.explanation.sentences if "clients" in s and "near" in s)
    assert sentence.startswith("The factor that matters most is clients: tps is highest near")
    expected = (
        f"tps is highest near clients = 5 (about {significant(top)}); it is about"
        f" {significant(top - profile.predicted[0])} lower at 1 and about"
        f" {significant(top - profile.predicted[-1])} lower at 9"
    )
    assert expected in sentence
    # The numbers are the profile's: 15 * 4^2 = 240 below the peak at either end.
    assert top - profile.predicted[0] == pytest.approx(240, abs=3)
    assert "Clients" not in " ".join(analysis.explanation.sentences)


def test_a_slope_is_told_by_its_ends():
    analysis = fit(HUMP, HUMP_CONFIGS, HUMP_TPS, model="quadratic", response="tps")
    nodes = next(e for e in analysis.ranked_factors if e.factor == "nodes")
    drop = nodes.profile.predicted[0] - nodes.profile.predicted[-1]
    sentence = next(s for s in analysis.explanation.sentences if s.startswith("Next comes nodes"))
    assert f"going from 1 to 5 lowers tps by about {significant(drop)}" in sentence
    assert drop == pytest.approx(160, abs=3)


def test_a_minimized_response_is_told_by_its_lowest_point():
    profile = Profile(settings=[1, 2, 3], predicted=[12.0, 9.5, 11.25], best=2)
    phrase = profile_phrase("latency_p95_ms", "minimize", "clients", profile)
    assert phrase == (
        "latency_p95_ms is lowest near clients = 2 (about 9.5); it is about 2.5 higher at 1"
        " and about 1.75 higher at 3"
    )


def test_a_best_end_of_a_curve_that_turns_inside_is_told_with_its_worst_point():
    # The best is at the low end; the far end recovers part of the dip in the middle.
    profile = Profile(
        settings=[0.0, 0.25, 0.5, 0.75, 1.0],
        predicted=[3110.0, 2000.0, 1500.0, 1350.0, 1400.0],
        best=0.0,
    )
    phrase = profile_phrase("tps", "maximize", "write_share", profile)
    assert phrase == (
        "tps is highest at write_share = 0 (about 3110); it is about 1760 lower near 0.75"
        " and about 1710 lower at 1"
    )


def test_a_categorical_factor_is_told_by_its_best_level_and_the_gaps():
    profile = Profile(settings=["rw", "ro", "wo"], predicted=[1000.0, 1490.0, 610.0], best="ro")
    phrase = profile_phrase("tps", "maximize", "workload", profile)
    assert phrase == (
        "tps is highest with workload = ro (about 1490); about 880 lower with wo,"
        " about 490 lower with rw"
    )


def test_large_numbers_are_written_out_never_in_exponent_form():
    analysis = fit(HUMP, HUMP_CONFIGS, HUMP_TPS, model="quadratic", response="tps")
    text = " ".join(analysis.explanation.sentences)
    assert "e+" not in text and "e-0" not in text
    optimum = next(s for s in analysis.explanation.sentences if s.startswith("Best predicted"))
    assert f"tps about {significant(analysis.optimum.predicted)}" in optimum
    low, high = analysis.optimum.pi_low, analysis.optimum.pi_high
    assert f"interval {significant(low)} to {significant(high)}" in optimum


def fit_of(model: str, r2: float | None, predicted: float | None, lof: float | None = None) -> Fit:
    return Fit(model, r2, predicted, 10, lof)


def sentences_for(model_fit: Fit, on_edge: dict[str, str] | None = None) -> list[str]:
    return explain(
        response="tps",
        goal="maximize",
        effects=[],
        terms=[],
        fit=model_fit,
        optimum={"nodes": 1, "clients": 9},
        predicted=1490.2,
        interval=(1400.0, 1580.0),
        on_edge=on_edge or {},
    ).sentences


@pytest.mark.parametrize(
    ("predicted", "words", "confident"),
    [
        (0.44, "predicts new ones poorly (predicted R² 0.44)", False),
        (0.62, "predicts new runs fairly well (predicted R² 0.62)", True),
        (0.91, "predicts new runs well (predicted R² 0.91)", True),
    ],
)
def test_how_well_the_model_predicts_matches_its_predicted_r_squared(
    predicted: float, words: str, confident: bool
):
    result = explain(
        response="tps",
        goal="maximize",
        effects=[],
        terms=[],
        fit=fit_of("linear", 0.95, predicted),
        optimum={"nodes": 3},
        predicted=1490.0,
        interval=(None, None),
        on_edge={},
    )
    assert any(words in s for s in result.sentences), result.sentences
    assert result.confident is confident


def test_lack_of_fit_advice_never_suggests_the_model_already_fitted():
    quadratic = " ".join(sentences_for(fit_of("quadratic", 0.9, 0.85, lof=0.01)))
    assert "lack of fit (p = 0.01)" in quadratic
    assert "try the quadratic model" not in quadratic and "transform" in quadratic
    linear = " ".join(sentences_for(fit_of("linear", 0.9, 0.85, lof=0.0004)))
    assert "lack of fit (p < 0.001)" in linear and "try the quadratic model" in linear


def test_the_edge_sentence_names_the_end_and_the_value():
    text = sentences_for(fit_of("quadratic", 0.9, 0.85), on_edge={"clients": "high"})
    assert text[-1] == (
        "That optimum sits at the edge of the range of clients (at the high end, 9): the best"
        " may lie beyond it; widen the range in a follow-up experiment."
    )
    assert sentences_for(fit_of("quadratic", 0.9, 0.85))[-1].startswith("Best predicted")


def test_no_edge_advice_where_the_range_cannot_be_widened():
    # The optimum at nodes = 1 (no fewer nodes exist) and at a factor held at one setting.
    space = FactorSpace.from_dicts(
        [
            {"name": "nodes", "kind": "integer", "low": 1, "high": 5},
            {"name": "threads", "kind": "integer", "low": 1, "high": 16},
            {"name": "buffer_mb", "kind": "integer", "low": 64, "high": 512},
        ]
    )
    configs = [{"nodes": n, "threads": t, "buffer_mb": 512} for n in (1, 3, 5) for t in (1, 8, 16)]
    tps = [2000 - 100 * c["nodes"] + 30 * c["threads"] + (i % 3) for i, c in enumerate(configs)]
    analysis = fit(space, configs, tps)
    assert analysis.optimum.config["nodes"] == 1
    assert analysis.optimum.config["threads"] == 16
    assert analysis.optimum.on_edge == {"threads": "high"}
    edge = [s for s in analysis.explanation.sentences if "edge" in s]
    assert edge == [
        "That optimum sits at the edge of the range of threads (at the high end, 16): the best"
        " may lie beyond it; widen the range in a follow-up experiment."
    ]


def test_no_edge_advice_for_a_factor_the_model_left_out():
    # buffer_mb has no effect: the selected model has no term of it, so its setting in the
    # optimum is whatever run the search started from, and no advice to widen its range.
    space = FactorSpace.from_dicts(
        [
            {"name": "threads", "kind": "integer", "low": 1, "high": 16},
            {"name": "buffer_mb", "kind": "integer", "low": 64, "high": 512},
        ]
    )
    configs = [{"threads": t, "buffer_mb": b} for t in (1, 8, 16) for b in (64, 288, 512)] * 2
    noise = [3, -2, 1, -3, 2, -1, 0, 1, -1, -2, 3, -3, 1, 2, -1, 0, -2, 2]
    tps = [1000 + 30 * c["threads"] + e for c, e in zip(configs, noise, strict=True)]
    analysis = fit(space, configs, tps)
    assert [term.name for term in analysis.terms] == ["Intercept", "threads"]
    assert analysis.optimum.config["buffer_mb"] in (64, 512)  # an end of its range
    assert analysis.optimum.on_edge == {"threads": "high"}
    assert [e.factor for e in analysis.ranked_factors if not e.in_model] == ["buffer_mb"]
    best = next(s for s in analysis.explanation.sentences if s.startswith("Best predicted"))
    buffer_mb = analysis.optimum.config["buffer_mb"]
    assert f"buffer_mb = {buffer_mb} (any setting: not in the model)" in best
    assert "threads = 16," in best


def test_every_number_in_the_optimum_sentence_is_the_analysis_rounded():
    analysis = fit(HUMP, HUMP_CONFIGS, HUMP_TPS, response="tps")
    optimum = next(
        s for s in analysis.explanation.sentences if s.startswith(("Best", "The model's best"))
    )
    stated = numbers_in(optimum)
    best = analysis.optimum
    for value in (best.predicted, best.pi_low, best.pi_high):
        assert any(math.isclose(float(significant(value)), n) for n in stated), (value, optimum)


# --- one number for an effect; a factor no run varied (issue 54, item 7) ----------------------


def test_the_sentence_states_the_change_at_the_optimum_not_the_effect_at_the_centre():
    # Montgomery DAE Example 6.2 (filtration rate, 2^4): C's textbook effect is +9.875 (others
    # at the centre), but with A high, where the optimum is, the AC interaction (-18.125) turns
    # it: raising C there lowers the rate. The sentence states that change and says where.
    from tests.experiments.test_analysis import CODED_2_4, FILTRATION
    from tests.experiments.test_analysis_report import yates

    analysis = fit(CODED_2_4, yates("ABCD"), FILTRATION, model="interaction", response="rate")
    c = next(e for e in analysis.ranked_factors if e.factor == "C")
    assert c.effect == pytest.approx(9.875)
    assert c.change_at_optimum < 0
    sentence = next(s for s in analysis.explanation.sentences if s.startswith("Next comes C"))
    assert (
        f"going from -1 to 1 lowers rate by about {significant(abs(c.change_at_optimum))},"
        " with the other factors at the predicted optimum" in sentence
    )


UNVARIED = FactorSpace.from_dicts(
    [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "clients", "kind": "integer", "low": 1, "high": 9},
        {"name": "threads", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
    ]
)
# The first whole plot of a face-centred central composite design: every run at 1 node.
ONE_NODE_COUNT = [
    {"nodes": 1, "clients": c, "threads": t} for c, t in ((1, 4), (9, 4), (9, 64), (1, 64), (5, 16))
]
ONE_NODE_TPS = [381.0, 783.0, 24.0, 676.0, 588.0]


def test_a_factor_no_run_varied_is_untested_not_free_to_take_any_setting():
    analysis = fit(UNVARIED, ONE_NODE_COUNT, ONE_NODE_TPS, response="tps")
    nodes = next(e for e in analysis.ranked_factors if e.factor == "nodes")
    assert nodes.settings_run == 1 and not nodes.in_model
    sentences = analysis.explanation.sentences
    assert sentences[0] == (
        "Every run so far had nodes = 1: the runs cannot tell how that factor matters, so the"
        " optimum below holds there only. Run other settings of nodes before choosing one."
    )
    optimum = next(s for s in sentences if s.startswith(("Best", "The model's best")))
    assert "nodes = 1 (the only setting run)" in optimum and "any setting" not in optimum
    assert not analysis.explanation.confident
    assert not any("No clear effect" in s and "nodes" in s for s in sentences)
