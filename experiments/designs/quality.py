"""How good a design is for a model: estimable terms, degrees of freedom, D-efficiency, VIF.

The figures are computed on the coded model matrix as JMP and Design-Expert do: numeric factors
coded -1..+1 (`Factor.encode`), categorical factors in effect coding (level l of the
non-reference levels +1, the reference level -1, other levels 0; for two levels that is -1/+1).
Which terms are estimable does not depend on that choice: effect and treatment coding span the
same model space. D-efficiency and VIF do, and effect coding is the one under which an
orthogonal design scores 100 % and VIF 1 whatever the kind of its factors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from experiments.errors import DomainError
from experiments.factors import Factor, FactorSpace, Value
from experiments.terms import (
    MODEL_ORDERS,
    ModelTerms,
    columns_of,
    distinct_levels,
    factor_columns,
)

# A column whose part orthogonal to the earlier columns is this small (relative to its length)
# is a combination of them: exact aliasing leaves ~1e-15, a real if weak direction far more.
DEPENDENCE_TOLERANCE = 1e-8
# An alias coefficient below this is rounding noise, not a term the column is aliased with.
ALIAS_TOLERANCE = 1e-6


@dataclass(frozen=True)
class DesignQuality:
    """The quality report of a design for one model.

    - `runs`, `model`, `parameters` (p, the model's terms including the intercept) and
      `residual_df` (runs minus the rank of the model matrix: 0 or less means no error estimate).
    - `terms`: every term of the model; `estimable` and `not_estimable` split them, taking the
      terms in model order (intercept, main effects, interactions, squares), so a term is not
      estimable when its column is a combination of earlier ones; `aliased_with` names, for
      each term not estimable, the earlier terms its column equals a combination of.
    - `d_efficiency`: 100 |X'X|^(1/p) / n; `vif` per non-intercept term and `max_vif`; all
      None when the model matrix is singular (some term is not estimable).
    """

    runs: int
    model: str
    parameters: int
    residual_df: int
    terms: tuple[str, ...]
    estimable: tuple[str, ...]
    not_estimable: tuple[str, ...]
    aliased_with: dict[str, tuple[str, ...]]
    d_efficiency: float | None
    max_vif: float | None
    vif: dict[str, float] | None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-friendly dict (lists for tuples)."""
        raw = asdict(self)
        for key in ("terms", "estimable", "not_estimable"):
            raw[key] = list(raw[key])
        raw["aliased_with"] = {term: list(names) for term, names in self.aliased_with.items()}
        return raw


def assess(space: FactorSpace, configs: Sequence[Mapping[str, Value]], model: str) -> DesignQuality:
    """The quality report of natural configurations (one per run) for a model order."""
    if model not in MODEL_ORDERS:
        raise DomainError("design.model", f"must be one of {', '.join(MODEL_ORDERS)}")
    terms = ModelTerms(space, model, distinct_levels(space, configs))
    mains = np.hstack([coded_columns(f, [c[f.name] for c in configs]) for f in space.factors])
    x = terms.matrix(mains)
    names = tuple(terms.names)
    dependent = dependent_columns(x)
    aliased_with = {names[j]: tuple(names[i] for i in aliases) for j, aliases in dependent.items()}
    singular = bool(dependent)
    vif = None if singular else _vif(x)
    return DesignQuality(
        runs=len(configs),
        model=model,
        parameters=len(names),
        residual_df=len(configs) - (len(names) - len(dependent)),
        terms=names,
        estimable=tuple(name for j, name in enumerate(names) if j not in dependent),
        not_estimable=tuple(name for j, name in enumerate(names) if j in dependent),
        aliased_with=aliased_with,
        d_efficiency=None if singular else d_efficiency(x),
        max_vif=None if vif is None else max(vif.values(), default=None),
        vif=None if vif is None else {names[j + 1]: v for j, v in vif.items()},
    )


def coded_columns(factor: Factor, values: Sequence[Value]) -> np.ndarray:
    """Main-effect columns of one factor: coded numeric values, or effect-coded levels."""
    if factor.is_numeric or not columns_of(factor):
        return factor_columns(factor, values)
    levels = factor.levels or ()
    index = np.array([levels.index(v) for v in values], dtype=int)
    # Row l of the lookup is level l: the reference level (0) is -1 in every column.
    lookup = np.vstack([-np.ones(len(levels) - 1), np.eye(len(levels) - 1)])
    return lookup[index]


def d_efficiency(x: np.ndarray) -> float | None:
    """100 |X'X|^(1/p) / n of a model matrix (n runs, p columns); None when singular."""
    sign, log_det = np.linalg.slogdet(x.T @ x)
    if sign <= 0:
        return None
    return float(100.0 * np.exp(log_det / x.shape[1]) / x.shape[0])


def dependent_columns(x: np.ndarray) -> dict[int, tuple[int, ...]]:
    """Columns that are combinations of earlier columns, each with the earlier ones it uses.

    Gram-Schmidt in column order (twice per column, for accuracy): a column whose remainder
    vanishes is dependent, and a least-squares fit on the earlier independent columns names
    the terms it is aliased with.
    """
    basis = np.empty(x.shape)
    kept: list[int] = []
    dependent: dict[int, tuple[int, ...]] = {}
    for j in range(x.shape[1]):
        column = x[:, j]
        earlier = basis[:, : len(kept)]
        rest = column - earlier @ (earlier.T @ column)
        rest -= earlier @ (earlier.T @ rest)
        remainder = float(np.linalg.norm(rest))
        if remainder <= DEPENDENCE_TOLERANCE * float(np.linalg.norm(column)):
            coefficients = np.linalg.lstsq(x[:, kept], column, rcond=None)[0] if kept else []
            dependent[j] = tuple(
                i for i, c in zip(kept, coefficients, strict=True) if abs(c) > ALIAS_TOLERANCE
            )
        else:
            basis[:, len(kept)] = rest / remainder
            kept.append(j)
    return dependent


def _vif(x: np.ndarray) -> dict[int, float]:
    """Variance inflation factor of each non-intercept column (index from 0 after it).

    1 / (1 - R²) of the column regressed on the others with an intercept: the diagonal of the
    inverse correlation matrix of the centred columns.
    """
    centred = x[:, 1:] - x[:, 1:].mean(axis=0)
    if centred.shape[1] == 0:
        return {}
    cross = centred.T @ centred
    inverse_diagonal = np.diag(np.linalg.inv(cross))
    return {j: float(v) for j, v in enumerate(inverse_diagonal * np.diag(cross))}
