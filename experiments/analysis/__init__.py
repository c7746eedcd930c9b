"""The analysis of an experiment: OLS on coded factors, ANOVA, factors ranked by effect, the
predicted optimum and the explanation. `fit` (in `fit.py`) does the work; the value types it
returns are in `results.py`."""

from __future__ import annotations

from experiments.analysis.fit import MODELS, fit
from experiments.analysis.results import (
    Analysis,
    FactorEffect,
    Optimum,
    ResponseGoal,
    ResponseLimit,
    Term,
)
from experiments.goals import GOALS

__all__ = [
    "GOALS",
    "MODELS",
    "Analysis",
    "FactorEffect",
    "Optimum",
    "ResponseGoal",
    "ResponseLimit",
    "Term",
    "fit",
]
