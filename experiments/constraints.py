"""Linear inequality constraints on factors, written as text and parsed safely.

A constraint compares two sums of terms, each a number, a number times a factor, or a number
times the product of two factors (the well-known pair, e.g. ``clients * threads_per_client <=
256``): linear in the factors and in their products. The text is parsed with `ast` into that
form and never evaluated; only numbers, factor names, ``+ - * /``, unary minus, parentheses and
one comparison are accepted. Values are compared in natural units (before any log2 scale).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from experiments.errors import DomainError
from experiments.factors import FactorSpace, Value

MAX_CONSTRAINTS = 20
MAX_TEXT = 200
# A point this close to the boundary (relative to the size of the terms) lies on it: decoding
# through a log2 scale can miss an integer boundary by a rounding error either way.
RELATIVE_TOLERANCE = 1e-9

# A monomial is the sorted tuple of the factor names it multiplies: () is the constant term.
_Polynomial = dict[tuple[str, ...], float]
_OPERATORS = "only +, -, * and / by a number are allowed"


class _Refused(Exception):
    """A rule the text breaks; `parse_constraints` adds which constraint it is."""

    def __init__(self, rule: str) -> None:
        super().__init__(rule)
        self.rule = rule


@dataclass(frozen=True)
class Constraint:
    """``sum(coefficient * product of factors) + constant <= 0`` (``< 0`` when strict).

    `text` is what the user wrote; `terms` pairs each monomial (one or two factor names, sorted)
    with its coefficient, after moving everything to the left-hand side (a ``>=`` constraint is
    stored negated).
    """

    text: str
    terms: tuple[tuple[tuple[str, ...], float], ...]
    constant: float
    strict: bool

    @property
    def factors(self) -> tuple[str, ...]:
        """Names of the factors the constraint involves, sorted."""
        return tuple(sorted({name for names, _ in self.terms for name in names}))

    def satisfied(self, config: Mapping[str, Value]) -> bool:
        """Whether a configuration in natural units meets the constraint."""
        return bool(self._holds({name: float(config[name]) for name in self.factors}))

    def _holds(self, values: Mapping[str, float | np.ndarray]) -> np.ndarray | np.bool_:
        """The comparison for scalars or for whole columns of values at once."""
        total: float | np.ndarray = self.constant
        size: float | np.ndarray = abs(self.constant)
        for names, coefficient in self.terms:
            term = coefficient * math.prod(values[name] for name in names)
            total = total + term
            size = size + np.abs(term)
        tolerance = RELATIVE_TOLERANCE * np.maximum(size, 1.0)
        # Within tolerance of the boundary counts as on it: allowed by <=, refused by <.
        return total < -tolerance if self.strict else total <= tolerance


def parse_constraints(texts: Sequence[str], space: FactorSpace) -> tuple[Constraint, ...]:
    """Parse the user's constraint texts over a factor space, naming the broken rule."""
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise DomainError("constraints", "must be a list of constraint texts")
    if len(texts) > MAX_CONSTRAINTS:
        raise DomainError("constraints", f"at most {MAX_CONSTRAINTS} constraints")
    parsed = []
    for i, text in enumerate(texts):
        try:
            parsed.append(_parse(text, space))
        except _Refused as error:
            raise DomainError(f"constraints.{i}", error.rule) from None
    return tuple(parsed)


def satisfied_rows(
    constraints: Sequence[Constraint],
    space: FactorSpace,
    configs: Sequence[Mapping[str, Value]] | np.ndarray,
) -> np.ndarray:
    """Boolean mask of the rows that meet every constraint.

    `configs` is either a sequence of configurations or an array of natural values with one
    column per factor in factor order (columns of categorical factors are ignored: no
    constraint can name them).
    """
    names = sorted({name for constraint in constraints for name in constraint.factors})
    if isinstance(configs, np.ndarray):
        count = configs.shape[0]
        columns = {name: configs[:, space.names.index(name)].astype(float) for name in names}
    else:
        count = len(configs)
        columns = {name: np.array([float(c[name]) for c in configs]) for name in names}
    mask = np.ones(count, dtype=bool)
    for constraint in constraints:
        mask &= constraint._holds(columns)
    return mask


def _parse(text: object, space: FactorSpace) -> Constraint:
    if not isinstance(text, str) or not text.strip():
        raise _Refused("must be a non-empty text such as 'clients * threads <= 256'")
    if len(text) > MAX_TEXT:
        raise _Refused(f"at most {MAX_TEXT} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise _Refused("is not a valid expression such as 'nodes >= clients / 4'") from None
    if not (isinstance(tree, ast.Compare) and len(tree.ops) == 1):
        raise _Refused("needs exactly one of <=, >=, <, >")
    operator = tree.ops[0]
    if not isinstance(operator, ast.LtE | ast.Lt | ast.GtE | ast.Gt):
        raise _Refused("needs exactly one of <=, >=, <, >")
    left, right = tree.left, tree.comparators[0]
    if isinstance(operator, ast.GtE | ast.Gt):
        # a >= b is b <= a: one orientation (left - right <= 0) is stored.
        left, right = right, left
    strict = isinstance(operator, ast.Lt | ast.Gt)
    polynomial = _subtract(_polynomial(left, space), _polynomial(right, space))
    constant = polynomial.pop((), 0.0)
    terms = tuple(sorted((names, c) for names, c in polynomial.items() if c != 0.0))
    if not terms:
        raise _Refused("must involve at least one factor")
    if not all(math.isfinite(c) for _, c in terms) or not math.isfinite(constant):
        raise _Refused("numbers must be finite")
    return Constraint(text=text.strip(), terms=terms, constant=constant, strict=strict)


def _polynomial(node: ast.expr, space: FactorSpace) -> _Polynomial:
    """A sum of monomials of degree at most two, or _Refused naming what is not allowed."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise _Refused(_OPERATORS)
        number = float(node.value)
        if not math.isfinite(number):
            raise _Refused("numbers must be finite")
        return {(): number}
    if isinstance(node, ast.Name | ast.Attribute):
        name = _dotted(node)
        if name not in space.names:
            raise _Refused(f"unknown factor '{name}'; factors are {space.names}")
        if not space[name].is_numeric:
            raise _Refused(f"categorical factor '{name}' cannot appear in a constraint")
        return {(name,): 1.0}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _polynomial(node.operand, space)
        sign = -1.0 if isinstance(node.op, ast.USub) else 1.0
        return {names: sign * c for names, c in operand.items()}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div):
        left, right = _polynomial(node.left, space), _polynomial(node.right, space)
        if isinstance(node.op, ast.Add):
            return _subtract(left, {names: -c for names, c in right.items()})
        if isinstance(node.op, ast.Sub):
            return _subtract(left, right)
        if isinstance(node.op, ast.Mult):
            return _multiply(left, right)
        if set(right) - {()}:
            raise _Refused(_OPERATORS)
        if right.get((), 0.0) == 0.0:
            raise _Refused("division by zero")
        return {names: c / right[()] for names, c in left.items()}
    raise _Refused(_OPERATORS)


def _dotted(node: ast.expr) -> str:
    """A factor's name: Python reads a provider option such as gcs.fc_limit as attributes."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    raise _Refused(_OPERATORS)


def _subtract(left: _Polynomial, right: _Polynomial) -> _Polynomial:
    result = dict(left)
    for names, coefficient in right.items():
        result[names] = result.get(names, 0.0) - coefficient
    return result


def _multiply(left: _Polynomial, right: _Polynomial) -> _Polynomial:
    result: _Polynomial = {}
    for names_a, a in left.items():
        for names_b, b in right.items():
            names = tuple(sorted(names_a + names_b))
            if len(names) > 2:
                raise _Refused("a product of more than two factors is not linear")
            result[names] = result.get(names, 0.0) + a * b
    return result
