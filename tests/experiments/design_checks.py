"""Checks on design matrices shared by the family tests."""

from __future__ import annotations

import numpy as np
import pytest


def assert_blocks_orthogonal(model: np.ndarray, block: np.ndarray) -> None:
    """Block effects are orthogonal to every model column: each block holds its share of it."""
    for label in np.unique(block):
        inside = block == label
        share = inside.sum() / len(block)
        assert model[inside].sum(axis=0) == pytest.approx(share * model.sum(axis=0), abs=1e-9)
