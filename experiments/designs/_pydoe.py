"""The one adapter around pyDOE2; no other module imports it.

pyDOE2 (last release 2020) imports the `imp` module, removed in Python 3.12. There the maintained
successor, the `pydoe` distribution, serves the same functions: its module is `pydoe` from
release 1.0 and `pyDOE` before. The dependency markers in pyproject.toml install exactly one.
"""

import warnings
from collections.abc import Sequence

import numpy as np

with warnings.catch_warnings():
    # pyDOE2 warns on import that `imp` is deprecated; the warning is about pyDOE2, not us.
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import pyDOE2 as _backend
    except ImportError:
        try:
            import pydoe as _backend
        except ImportError:
            import pyDOE as _backend


def fullfact(levels: Sequence[int]) -> np.ndarray:
    """Level indices (0..k-1 per factor) of the general full factorial, first factor fastest."""
    return np.asarray(_backend.fullfact(list(levels)), dtype=int)


def ff2n(factors: int) -> np.ndarray:
    """Two-level full factorial coded -1/+1, standard order (first factor fastest)."""
    return np.asarray(_backend.ff2n(factors), dtype=float)


def bbdesign(factors: int) -> np.ndarray:
    """Box-Behnken design without centre points: a 2^2 factorial on every pair of factors."""
    return np.asarray(_backend.bbdesign(factors, center=0), dtype=float)
