"""The knowledge gradient of the recommendation against the closed forms of Frazier, Powell and
Dayanik (2008, 2009) and against scikit-learn's posterior covariance."""

import numpy as np
import pytest
from scipy.stats import norm

from experiments.suggest.gaussian_process import fit, posterior_covariance
from experiments.suggest.knowledge_gradient import recommendation_gain


def f(z: float) -> float:
    """z Phi(z) + phi(z): the knowledge gradient's function of the normalized gap."""
    return z * norm.cdf(z) + norm.pdf(z)


@pytest.mark.parametrize(
    ("mean", "variance", "measured", "noise"),
    [
        ((1.0, 1.3), (0.5, 0.2), 0, 0.3),
        ((1.0, 1.3), (0.5, 0.2), 1, 0.3),
        ((5.0, 2.0, 4.5), (1.0, 4.0, 0.1), 1, 1.0),
        ((0.0, 0.0), (1.0, 1.0), 0, 0.0),
    ],
)
def test_independent_beliefs_give_the_closed_form(mean, variance, measured, noise):
    # Independent normal beliefs (Frazier et al. 2008, eq. 9): measuring alternative x gains
    # s f(-|mu_x - max of the others| / s), s = var_x / sqrt(var_x + noise).
    mean, variance = np.array(mean), np.array(variance)
    s = variance[measured] / np.sqrt(variance[measured] + noise)
    others = np.delete(mean, measured).max()
    expected = s * f(-abs(mean[measured] - others) / s)
    with_run = np.where(np.arange(len(mean)) == measured, variance, 0.0)
    gain = recommendation_gain(mean, variance, with_run, variance[measured] + noise)
    assert gain == pytest.approx(expected, rel=1e-9)


def test_correlated_beliefs_of_two_give_the_closed_form():
    # Two correlated alternatives (Frazier et al. 2009): the lines a_i + b_i Z cross once and
    # E[max] - max(a) = |b_1 - b_2| f(-|a_1 - a_2| / |b_1 - b_2|).
    mean = np.array([10.0, 10.4])
    covariance = np.array([[2.0, 1.2], [1.2, 1.5]])
    run = np.array([0.5, 0.5])  # a run of the average of both, noise 0.7
    with_run = covariance @ run
    run_variance = float(run @ covariance @ run) + 0.7
    b = with_run / np.sqrt(run_variance)
    expected = abs(b[0] - b[1]) * f(-0.4 / abs(b[0] - b[1]))
    gain = recommendation_gain(mean, np.diag(covariance), with_run, run_variance)
    assert gain == pytest.approx(expected, rel=1e-9)


def test_a_run_that_teaches_nothing_or_cannot_change_the_choice_gains_nothing():
    mean, variance = np.array([1.0, 0.5]), np.array([0.04, 0.04])
    assert recommendation_gain(mean, variance, np.zeros(2), 1.0) == 0.0
    assert recommendation_gain(mean, variance, np.array([0.04, 0.0]), 0.0) == 0.0
    # Twenty standard deviations apart: no outcome of the run changes the recommendation.
    far = np.array([10.0, 0.0])
    assert recommendation_gain(far, np.array([0.25, 0.25]), np.array([0.0, 0.25]), 0.5) < 1e-9


def test_with_risk_the_gain_is_of_the_mean_not_of_the_judgement():
    # A replicate of a lone contender shrinks its standard deviation (its mean less risk x sd
    # rises) but cannot change which configuration is recommended, so it gains nothing.
    assert recommendation_gain(np.array([1.0]), np.array([1.0]), np.array([1.0]), 2.0, 1.0) == 0.0
    # A leader on mean passed over for its uncertainty (10.5 - 1 against 10 - 0.1): measured
    # once more (slope b = 1 / sqrt(1.5), sd after sqrt(1 - b^2)), it is recommended when
    # Z > t = (9.9 - (10.5 - sd_after)) / b, and then counts at its mean 10.5 + b Z.
    mean, variance = np.array([10.0, 10.5]), np.array([0.01, 1.0])
    b = 1.0 / np.sqrt(1.5)
    t = (9.9 - (10.5 - np.sqrt(1.0 - b**2))) / b
    expected = norm.cdf(t) * 10.0 + norm.sf(t) * 10.5 + b * norm.pdf(t) - 10.0
    gain = recommendation_gain(mean, variance, np.array([0.0, 1.0]), 1.5, 1.0)
    assert gain == pytest.approx(expected, rel=1e-9)


def test_the_posterior_covariance_is_what_scikit_learn_predicts_without_the_noise():
    rng = np.random.default_rng(4)
    x = rng.uniform(-1.0, 1.0, (40, 2))
    model = fit(x, np.cos(2.0 * x[:, 0]) * x[:, 1] + rng.normal(0.0, 0.1, 40), seed=0)
    points = rng.uniform(-1.0, 1.0, (15, 2))
    mean, covariance, noise = posterior_covariance(model, points)
    expected_mean, expected = model.predict(points, return_cov=True)
    # scikit-learn's covariance of new points carries the white kernel's noise on its diagonal.
    assert mean == pytest.approx(expected_mean, abs=1e-9)
    assert covariance == pytest.approx(expected - noise * np.eye(len(points)), abs=1e-9)
    assert noise > 0


@pytest.mark.parametrize("risk", [0.0, 1.0])
def test_many_contenders_agree_with_a_dense_sum_over_the_outcome(risk):
    # The envelope of many lines, ties of slope included, against the brute force: the best
    # line at each of 400 001 outcomes, its mean averaged by the normal density.
    rng = np.random.default_rng(7)
    z = np.linspace(-8.0, 8.0, 400_001)
    weights = norm.pdf(z) / norm.pdf(z).sum()
    for _ in range(20):
        m = int(rng.integers(2, 17))
        factor = rng.normal(size=(m, m))
        covariance = factor @ factor.T / m
        mean = rng.normal(0.0, 1.0, m)
        run = int(rng.integers(m))
        with_run = covariance[:, run].copy()
        with_run[rng.integers(m)] = with_run[run]  # a second line of the same slope
        run_variance = covariance[run, run] + 0.5
        b = with_run / np.sqrt(run_variance)
        variance = np.diag(covariance)
        judged = mean - risk * np.sqrt(np.maximum(variance - b**2, 0.0))
        chosen = np.argmax(judged[:, None] + b[:, None] * z[None, :], axis=0)
        now = mean[np.argmax(mean - risk * np.sqrt(variance))]
        brute = max(float(np.sum((mean[chosen] + b[chosen] * z) * weights)) - now, 0.0)
        gain = recommendation_gain(mean, variance, with_run, run_variance, risk)
        assert gain == pytest.approx(brute, abs=1e-4)
