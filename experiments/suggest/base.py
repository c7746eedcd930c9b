"""What every suggestion strategy returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from experiments.factors import Config


@dataclass(frozen=True)
class Suggestion:
    """A configuration to run next, with what the strategy expects of it and why it chose it.

    `predicted` and `uncertainty` (a standard deviation, in response units) are None when the
    strategy has no model to predict with (e.g. the axial points of an augmentation before the
    quadratic model exists). `point_type` tells the run table what kind of run it is
    ("axial", "centre", "path", "bayes", "replicate", "confirmation").
    """

    config: Config
    strategy: str
    point_type: str
    reason: str
    predicted: float | None = None
    uncertainty: float | None = None
    expected_improvement: float | None = None

    def as_dict(self) -> dict[str, object]:
        """Plain dict."""
        return asdict(self)
