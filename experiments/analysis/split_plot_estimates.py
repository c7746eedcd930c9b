"""The estimates behind a split-plot fit: REML with a random intercept per whole plot, or OLS
when the mixed model cannot be estimated, each giving the coefficients, their covariance and a
contrast's degrees of freedom (Satterthwaite's for REML: the module doc of
`experiments.analysis.split_plot` has the formulas)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import scipy.optimize
import scipy.sparse

from experiments.numbers import finite_or_none

# A variance ratio s_wp^2 / s^2 below the first is taken as 0 (no whole-plot variance), above
# the second as no sub-plot variance; the search covers both with room to spare.
_BOUNDARY = 1e-6
_NO_SUB_PLOT = 1e8
_LOG_RATIOS = np.linspace(math.log(1e-9), math.log(1e9), 73)


class Estimates(Protocol):
    """Coefficients, their covariance and each contrast's degrees of freedom."""

    method: str
    params: np.ndarray
    cov: np.ndarray
    whole_plot_variance: float | None
    sub_plot_variance: float | None

    def df(self, contrast: np.ndarray) -> float | None:
        """Degrees of freedom of the contrast's estimate."""

    def whole_plot_share(self, contrast: np.ndarray) -> float:
        """How much of the contrast's variance moves with the whole-plot variance (0: none)."""


class Ols:
    method = "OLS"

    def __init__(self, params: np.ndarray, cov: np.ndarray, residual_df: int, mse: float) -> None:
        self.params, self.cov, self.residual_df = params, cov, residual_df
        self.whole_plot_variance: float | None = None
        self.sub_plot_variance = finite_or_none(mse) if residual_df > 0 else None

    @classmethod
    def fit(cls, y: np.ndarray, x: np.ndarray) -> Ols:
        params, _, rank, _ = np.linalg.lstsq(x, y, rcond=None)
        residual = y - x @ params
        df = len(y) - int(rank)
        mse = float(residual @ residual) / df if df > 0 else math.nan
        with np.errstate(invalid="ignore"):
            cov = mse * np.linalg.pinv(x.T @ x)
        return cls(params, cov, df, mse)

    def df(self, contrast: np.ndarray) -> float | None:
        return float(self.residual_df) if self.residual_df > 0 else None

    def whole_plot_share(self, contrast: np.ndarray) -> float:
        return 0.0


@dataclass(frozen=True)
class _Plots:
    """The whole-plot incidence matrix Z (sparse, one column per whole plot) and the plots'
    sizes: V / s^2 = I + ratio Z Z', so V^-1 = (I - Z diag(gamma) Z') / s^2 with
    gamma = ratio / (1 + ratio * size), applied without forming an n x n matrix."""

    z: scipy.sparse.csr_matrix
    sizes: np.ndarray

    @classmethod
    def of(cls, groups: np.ndarray) -> _Plots:
        n = len(groups)
        z = scipy.sparse.csr_matrix((np.ones(n), (np.arange(n), groups)))
        return cls(z, np.bincount(groups).astype(float))

    def gamma(self, ratio: float) -> np.ndarray:
        return ratio / (1.0 + ratio * self.sizes)

    def sums(self, a: np.ndarray) -> np.ndarray:
        """Z' a: the sum of each whole plot's rows."""
        return np.asarray(self.z.T @ a)

    def solve(self, a: np.ndarray, ratio: float, scale: float) -> np.ndarray:
        """V^-1 a."""
        gamma = self.gamma(ratio)
        weighted = gamma[:, None] * self.sums(a) if a.ndim == 2 else gamma * self.sums(a)
        return (a - np.asarray(self.z @ weighted)) / scale


class Reml:
    """The REML fit and what Satterthwaite's degrees of freedom need: the derivatives of
    cov(b) in (s_wp^2, s^2) and the asymptotic covariance of their estimates, twice the inverse
    of the observed Hessian of the REML deviance, H_ij = -tr(P V_i P V_j) + 2 y'P V_i P V_j P y
    with P = V^-1 - V^-1 X C X' V^-1, V_wp = Z Z' and V_e = I."""

    method = "REML"

    def __init__(self, y: np.ndarray, x: np.ndarray, plots: _Plots, ratio: float) -> None:
        n, p = x.shape
        _, self.params, rss, inverse = _profile(y, x, plots, ratio)
        scale = rss / (n - p)
        self.sub_plot_variance: float | None = scale
        self.whole_plot_variance: float | None = ratio * scale
        self.cov = scale * inverse
        cov = self.cov

        def solve(a: np.ndarray) -> np.ndarray:
            return plots.solve(a, ratio, scale)

        def project(a: np.ndarray) -> np.ndarray:
            return solve(a) - w @ (cov @ (w.T @ a))

        w = solve(x)
        k = plots.sums(w)  # Z' V^-1 X
        wtw = w.T @ w
        self.derivatives = (cov @ k.T @ k @ cov, cov @ wtw @ cov)
        # Z' V^-1 Z is diagonal: size * (1 - gamma * size) / s^2.
        c = (1.0 - plots.gamma(ratio) * plots.sizes) / scale
        kck = k @ cov @ k.T
        zpz = np.diag(c * plots.sizes) - kck
        u = solve(y - x @ self.params)  # P y
        pu = project(u)
        a = plots.sums(u)
        pz_squared = (
            np.sum(plots.sizes * c**2)
            - 2 * np.sum(c * np.diag(kck))
            + np.trace(k @ cov @ wtw @ cov @ k.T)
        )
        gamma = plots.gamma(ratio)
        vinv_squared = (n - 2 * gamma @ plots.sizes + gamma**2 @ plots.sizes**2) / scale**2
        p_squared = (
            vinv_squared - 2 * np.trace(cov @ (w.T @ solve(w))) + np.trace(cov @ wtw @ cov @ wtw)
        )
        cross = -pz_squared + 2 * a @ plots.sums(pu)
        hessian = np.array(
            [
                [-np.sum(zpz**2) + 2 * a @ zpz @ a, cross],
                [cross, -p_squared + 2 * u @ pu],
            ]
        )
        self.positive = bool(np.all(np.linalg.eigvalsh(hessian) > 0))
        self.variance_cov = 2.0 * np.linalg.inv(hessian) if self.positive else None

    @classmethod
    def fit(cls, y: np.ndarray, x: np.ndarray, groups: np.ndarray, notes: list[str]) -> Reml | None:
        """The REML fit, or None (with a note) when a variance is estimated at 0."""
        plots = _Plots.of(groups)

        def deviance(log_ratio: float) -> float:
            return _profile(y, x, plots, math.exp(log_ratio))[0]

        best = int(np.argmin([deviance(t) for t in _LOG_RATIOS]))
        low, high = _LOG_RATIOS[max(best - 1, 0)], _LOG_RATIOS[min(best + 1, len(_LOG_RATIOS) - 1)]
        found = scipy.optimize.minimize_scalar(
            deviance, bounds=(low, high), method="bounded", options={"xatol": 1e-10}
        )
        ratio = math.exp(float(found.x))
        if ratio <= _BOUNDARY or _profile(y, x, plots, 0.0)[0] <= float(found.fun):
            notes.append(
                "the whole-plot variance is estimated at 0 (whole plots differ no more than runs "
                "within them): fitted by OLS"
            )
            return None
        if ratio >= _NO_SUB_PLOT:
            notes.append(
                "the sub-plot variance is estimated at 0 (the model fits the runs within each "
                "whole plot exactly): fitted by OLS"
            )
            return None
        reml = cls(y, x, plots, ratio)
        if not reml.positive:
            notes.append(
                "the REML criterion is not curved at its minimum: Satterthwaite's degrees of "
                "freedom are undefined"
            )
        return reml

    def df(self, contrast: np.ndarray) -> float | None:
        if self.variance_cov is None:
            return None
        variance = contrast @ self.cov @ contrast
        gradient = np.array([contrast @ d @ contrast for d in self.derivatives])
        denominator = gradient @ self.variance_cov @ gradient
        return finite_or_none(2 * variance**2 / denominator) if denominator > 0 else None

    def whole_plot_share(self, contrast: np.ndarray) -> float:
        variance = contrast @ self.cov @ contrast
        moved = self.whole_plot_variance * (contrast @ self.derivatives[0] @ contrast)
        return float(moved / variance) if variance > 0 else 0.0


def _profile(
    y: np.ndarray, x: np.ndarray, plots: _Plots, ratio: float
) -> tuple[float, np.ndarray, float, np.ndarray]:
    """The REML deviance profiled over s^2 at `ratio` = s_wp^2 / s^2 (up to a constant), the GLS
    coefficients, the weighted residual sum of squares and (X' L^-1 X)^-1, L = V / s^2."""
    n, p = x.shape
    gamma = plots.gamma(ratio)
    zx, zy = plots.sums(x), plots.sums(y)
    xlx = x.T @ x - (zx.T * gamma) @ zx
    xly = x.T @ y - (zx.T * gamma) @ zy
    inverse = np.linalg.inv(xlx)
    params = inverse @ xly
    residual = y - x @ params
    rss = float(residual @ residual - gamma @ plots.sums(residual) ** 2)
    deviance = (
        (n - p) * math.log(rss)
        + float(np.sum(np.log1p(ratio * plots.sizes)))
        + float(np.linalg.slogdet(xlx)[1])
    )
    return deviance, params, rss, inverse
