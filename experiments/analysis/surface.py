"""Response-surface follow-ups: canonical analysis and natural-unit coefficients.

Both work on a model fitted on coded factors with the term names of
`experiments.terms.ModelTerms` ("Intercept", "x", "cat[level]", "x:y", "x^2").

Canonical analysis follows Myers, Montgomery & Anderson-Cook (Response Surface Methodology,
ch. 6) and R's rsm `canonical`: the quadratic part is y = b0 + x'b + x'Bx with B symmetric
(B_ii the coefficient of x_i^2, B_ij half the coefficient of x_i:x_j); the stationary point is
x_s = -B^-1 b / 2 and the eigenvalues of B give its nature.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from experiments.errors import DomainError
from experiments.factors import Factor, FactorSpace

__all__ = ["RIDGE_RATIO", "Canonical", "canonical", "natural_coefficients"]

# An eigenvalue counts as zero (a ridge) when its size is below this share of the largest size;
# the default threshold of rsm's `canonical` (one tenth of the largest eigenvalue).
RIDGE_RATIO = 0.1
# Coded distance beyond which a stationary point is rounding error of an eigenvalue that is zero
# in exact arithmetic (seen at 2.6e15 coded units, where a log2 factor's natural value overflows).
NO_STATIONARY_BEYOND = 1e6


@dataclass(frozen=True)
class Canonical:
    """Canonical analysis of the quadratic part of a model, in coded units unless named natural.

    Only numeric factors take part; categorical factors are held at their reference (first)
    level, listed in `reference`, so terms with a dummy drop out. `linear` is b and `quadratic`
    is B (rows and columns in `factors` order). `stationary_coded` is x_s = -B^-1 b / 2, None
    when B is singular; `stationary_natural` decodes it without rounding (a log2-scaled factor
    through 2**, an integer factor left fractional). `beyond` lists factors with |x_s| > 1 and
    `inside` is True when there are none. Eigenvalues are in decreasing order, each eigenvector
    a unit vector by factor (its largest component made positive).

    `nature` is "maximum" (all eigenvalues < 0), "minimum" (all > 0), "saddle" (mixed) or
    "ridge" when the smallest |eigenvalue| is below `ridge_threshold` = RIDGE_RATIO times the
    largest; `ridge_of` then gives the nature of the other eigenvalues. For a ridge, as in rsm,
    the near-zero eigenvalues are treated as zero: `ridge_point_coded` is the stationary point
    of the remaining canonical directions (the point of the ridge nearest the design centre),
    with its natural units and prediction.

    When the surface is a ridge or its stationary point lies outside the ±1 region,
    `ridge_direction` is the unit eigenvector of the eigenvalue closest to zero, the canonical
    axis along which the response changes least (Myers-Montgomery's rising or stationary
    ridge), signed so the first-order slope b·v is >= 0: following it raises the predicted
    response; to minimize, go the opposite way. It is None otherwise. When every squared and
    interaction coefficient is zero (a plane), it is the direction of steepest ascent b/|b|.
    """

    factors: list[str]
    reference: dict[str, str]
    linear: list[float]
    quadratic: list[list[float]]
    stationary_coded: dict[str, float] | None
    stationary_natural: dict[str, float] | None
    predicted: float | None
    beyond: list[str]
    inside: bool
    eigenvalues: list[float]
    eigenvectors: list[dict[str, float]]
    nature: str
    ridge_threshold: float
    ridge_of: str | None
    ridge_point_coded: dict[str, float] | None
    ridge_point_natural: dict[str, float] | None
    ridge_predicted: float | None
    ridge_direction: dict[str, float] | None

    def as_dict(self) -> dict[str, object]:
        """Plain, JSON-serializable dict."""
        return asdict(self)


# --- parsing term names ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Main:
    """One main-effect column: a numeric factor's coded value or a categorical dummy."""

    name: str
    factor: Factor


def _mains(space: FactorSpace) -> list[_Main]:
    mains: list[_Main] = []
    for factor in space.factors:
        if factor.is_numeric:
            mains.append(_Main(factor.name, factor))
        else:
            levels = factor.levels or ()
            mains += [_Main(f"{factor.name}[{level}]", factor) for level in levels[1:]]
    return mains


def _parse(term_names: Sequence[str], space: FactorSpace) -> list[tuple[_Main, ...]]:
    """The main columns whose product each term is (the intercept is the empty product)."""
    mains = _mains(space)
    lookup: dict[str, tuple[_Main, ...]] = {"Intercept": ()}
    for main in mains:
        lookup[main.name] = (main,)
        if main.factor.is_numeric:
            lookup[f"{main.name}^2"] = (main, main)
    for a, b in itertools.combinations(mains, 2):
        if a.factor.name != b.factor.name:
            lookup[f"{a.name}:{b.name}"] = (a, b)
    parsed = []
    for i, name in enumerate(term_names):
        if name not in lookup:
            raise DomainError(f"terms.{i}", f"'{name}' is not a term of these factors")
        parsed.append(lookup[name])
    return parsed


def _checked_params(params: Sequence[float], term_names: Sequence[str]) -> np.ndarray:
    values = np.asarray(params, dtype=float).reshape(-1)
    if len(values) != len(term_names):
        raise DomainError("params", f"{len(values)} coefficients for {len(term_names)} terms")
    if not np.all(np.isfinite(values)):
        raise DomainError("params", "coefficients must be finite numbers")
    return values


# --- canonical analysis ---------------------------------------------------------------------


def canonical(
    params: Sequence[float], term_names: Sequence[str], space: FactorSpace
) -> Canonical | None:
    """Canonical analysis of a quadratic model on coded factors; None without squared terms.

    Categorical factors are held at their reference level (see `Canonical`).
    """
    values = _checked_params(params, term_names)
    parsed = _parse(term_names, space)
    if not any(len(t) == 2 and t[0] == t[1] for t in parsed):
        return None
    surface = _surface(values, parsed, space)
    b = surface.b
    eigenvalues, vectors = _eigen(surface.big_b)
    largest = float(np.max(np.abs(eigenvalues)))
    threshold = RIDGE_RATIO * largest
    stationary = _stationary_point(b, eigenvalues, vectors)
    is_ridge = bool(np.min(np.abs(eigenvalues)) < threshold) or largest == 0
    active = (np.abs(eigenvalues) >= threshold) & (np.abs(eigenvalues) > 0)
    beyond: list[str] = []
    if stationary is not None:
        beyond = [n for n, v in zip(surface.names, stationary, strict=True) if abs(v) > 1.0]
    inside = stationary is not None and not beyond
    ridge_point = None
    if is_ridge and active.any():
        ridge_point = _stationary(b, eigenvalues[active], vectors[:, active])
    direction = None
    if largest == 0 or is_ridge or not inside:
        along = _ridge_direction(b, eigenvalues, vectors)
        direction = None if along is None else surface.by_factor(along)
    stationary_coded, stationary_natural, predicted = surface.at(stationary)
    ridge_coded, ridge_natural, ridge_predicted = surface.at(ridge_point)
    return Canonical(
        factors=surface.names,
        reference=surface.reference,
        linear=[float(v) for v in b],
        quadratic=[[float(v) for v in row] for row in surface.big_b],
        stationary_coded=stationary_coded,
        stationary_natural=stationary_natural,
        predicted=predicted,
        beyond=beyond,
        inside=inside,
        eigenvalues=[float(v) for v in eigenvalues],
        eigenvectors=[surface.by_factor(vectors[:, j]) for j in range(len(surface.names))],
        nature="ridge" if is_ridge else _nature(eigenvalues),
        ridge_threshold=threshold,
        ridge_of=_nature(eigenvalues[active]) if is_ridge and active.any() else None,
        ridge_point_coded=ridge_coded,
        ridge_point_natural=ridge_natural,
        ridge_predicted=ridge_predicted,
        ridge_direction=direction,
    )


@dataclass(frozen=True)
class _Surface:
    """The numeric part of the model as y = b0 + x'b + x'Bx (B symmetric) over the numeric
    `factors` in a term, and the level every categorical factor in a term is held at."""

    factors: list[Factor]
    intercept: float
    b: np.ndarray
    big_b: np.ndarray
    reference: dict[str, str]

    @property
    def names(self) -> list[str]:
        """The factors' names, in the order of b and B."""
        return [f.name for f in self.factors]

    def by_factor(self, x: np.ndarray) -> dict[str, float]:
        """A coded point or direction by factor name."""
        return {name: float(v) for name, v in zip(self.names, x, strict=True)}

    def natural(self, x: np.ndarray) -> dict[str, float]:
        """A coded point in natural units, unrounded."""
        return {f.name: f.unrounded(float(v)) for f, v in zip(self.factors, x, strict=True)}

    def predict(self, x: np.ndarray) -> float:
        """The model's prediction at coded point `x`."""
        return float(self.intercept + self.b @ x + x @ self.big_b @ x)

    def at(
        self, x: np.ndarray | None
    ) -> tuple[dict[str, float] | None, dict[str, float] | None, float | None]:
        """A point in coded and natural units and the prediction there; all None without one."""
        if x is None:
            return None, None, None
        return self.by_factor(x), self.natural(x), self.predict(x)


def _surface(
    values: np.ndarray, parsed: Sequence[tuple[_Main, ...]], space: FactorSpace
) -> _Surface:
    """The quadratic form of the model over the numeric factors its terms contain."""
    numeric = [
        f for f in space.factors if f.is_numeric and any(m.factor is f for t in parsed for m in t)
    ]
    intercept, b, big_b, reference = _quadratic_form(values, parsed, [f.name for f in numeric])
    return _Surface(numeric, intercept, b, big_b, reference)


def _stationary_point(
    b: np.ndarray, eigenvalues: np.ndarray, vectors: np.ndarray
) -> np.ndarray | None:
    """x_s = -B^-1 b / 2, None when B is singular."""
    largest = float(np.max(np.abs(eigenvalues)))
    exact_zero = np.abs(eigenvalues) <= largest * len(eigenvalues) * np.finfo(float).eps
    if largest == 0 or exact_zero.any():
        return None
    stationary = _stationary(b, eigenvalues, vectors)
    if np.max(np.abs(stationary)) > NO_STATIONARY_BEYOND:
        return None  # an eigenvalue zero but for rounding put it there: there is none
    return stationary


def _quadratic_form(
    values: Sequence[float], parsed: Sequence[tuple[_Main, ...]], names: list[str]
) -> tuple[float, np.ndarray, np.ndarray, dict[str, str]]:
    """The numeric part of the model as y = b0 + x'b + x'Bx (B symmetric), and the reference
    level of every categorical factor in a term (held there)."""
    index = {name: i for i, name in enumerate(names)}
    k = len(names)
    intercept, b, big_b = 0.0, np.zeros(k), np.zeros((k, k))
    reference: dict[str, str] = {}
    for coefficient, term in zip(values, parsed, strict=True):
        dummies = [m.factor for m in term if not m.factor.is_numeric]
        if dummies:
            for factor in dummies:
                reference[factor.name] = str((factor.levels or ("",))[0])
            continue
        if not term:
            intercept += coefficient
        elif len(term) == 1:
            b[index[term[0].name]] += coefficient
        elif term[0] == term[1]:
            i = index[term[0].name]
            big_b[i, i] += coefficient
        else:
            i, j = index[term[0].name], index[term[1].name]
            big_b[i, j] += coefficient / 2.0
            big_b[j, i] += coefficient / 2.0
    return intercept, b, big_b, reference


def _eigen(big_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues, largest first, and eigenvectors with their largest component positive."""
    eigenvalues, vectors = np.linalg.eigh(big_b)
    order = np.argsort(eigenvalues)[::-1]
    eigenvalues, vectors = eigenvalues[order], vectors[:, order]
    for j in range(len(eigenvalues)):
        if vectors[np.argmax(np.abs(vectors[:, j])), j] < 0:
            vectors[:, j] = -vectors[:, j]
    return eigenvalues, vectors


def _ridge_direction(
    b: np.ndarray, eigenvalues: np.ndarray, vectors: np.ndarray
) -> np.ndarray | None:
    """Along the flattest axis, uphill; for a plane (no curvature) steepest ascent."""
    if float(np.max(np.abs(eigenvalues))) == 0:
        norm = float(np.linalg.norm(b))
        return b / norm if norm > 0 else None
    v = vectors[:, int(np.argmin(np.abs(eigenvalues)))]
    return -v if b @ v < 0 else v


def _stationary(b: np.ndarray, eigenvalues: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """-B^-1 b / 2 over the given canonical directions only (all of them: the full inverse)."""
    return -0.5 * vectors @ ((vectors.T @ b) / eigenvalues)


def _nature(eigenvalues: np.ndarray) -> str:
    if np.all(eigenvalues < 0):
        return "maximum"
    if np.all(eigenvalues > 0):
        return "minimum"
    return "saddle"


def _scaled(factor: Factor, value: float) -> float:
    return math.log2(value) if factor.scale == "log2" else value


# --- natural-unit coefficients --------------------------------------------------------------


def natural_coefficients(
    params: Sequence[float], term_names: Sequence[str], space: FactorSpace
) -> dict[str, float]:
    """The fitted polynomial rewritten in natural units, one coefficient per term.

    A linear-scale numeric factor enters as its value, a log2-scaled one as log2(value) (its key
    says so: "log2(threads)", "log2(threads)^2", "log2(threads):nodes"); a categorical dummy
    enters unchanged (1 at its level, else 0), so its key keeps the coded name. Keys follow the
    order of `term_names`; predictions equal those of the coded coefficients.
    """
    values = _checked_params(params, term_names)
    parsed = _parse(term_names, space)
    # Each main column is affine in its natural variable u: x = offset + slope * u.
    affine: dict[str, tuple[float, float, str]] = {}
    for main in _mains(space):
        factor = main.factor
        if not factor.is_numeric:
            affine[main.name] = (0.0, 1.0, main.name)
            continue
        low, high = (_scaled(factor, v) for v in factor.bounds)
        half = (high - low) / 2.0 if high > low else 1.0
        label = f"log2({factor.name})" if factor.scale == "log2" else factor.name
        affine[main.name] = (-(low + high) / 2.0 / half, 1.0 / half, label)

    def key(variables: tuple[str, ...]) -> str:
        if not variables:
            return "Intercept"
        if len(variables) == 2 and variables[0] == variables[1]:
            return f"{variables[0]}^2"
        return ":".join(variables)

    result = {key(tuple(affine[m.name][2] for m in term)): 0.0 for term in parsed}
    for coefficient, term in zip(values, parsed, strict=True):
        # Expand the product of affine columns into monomials of the natural variables.
        columns = [affine[m.name] for m in term]
        for picks in itertools.product((False, True), repeat=len(columns)):
            weight, variables = coefficient, []
            for (offset, slope, label), pick in zip(columns, picks, strict=True):
                weight *= slope if pick else offset
                if pick:
                    variables.append(label)
            name = key(tuple(variables))
            if name in result or weight != 0.0:
                result[name] = result.get(name, 0.0) + float(weight)
    return result
