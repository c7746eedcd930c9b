"""What strategies learn from (`Runs`, `Limit`) and what they return (`Suggestion`, `Plan`,
`Recommendation`): plain values."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from experiments.errors import DomainError
from experiments.factors import Config


@dataclass(frozen=True)
class Suggestion:
    """A configuration to run next, with what the strategy expects of it and why it chose it.

    `predicted` and `uncertainty` (a standard deviation of the mean response, in response
    units) come from the strategy's own model, or from a Gaussian process fitted to the runs
    when the strategy has none (`predicted_by` names the model); both are None only when there
    is nothing to model yet. `point_type` tells the run table what kind of run it is
    ("factorial", "centre", "axial", "path", "bayes", "exploration", "replicate", "full_length",
    "confirmation", "initial").
    """

    config: Config
    strategy: str
    point_type: str
    reason: str
    predicted: float | None = None
    uncertainty: float | None = None
    expected_improvement: float | None = None
    predicted_by: str | None = None

    def as_dict(self) -> dict[str, object]:
        """Plain dict."""
        return asdict(self)


@dataclass(frozen=True)
class Recommendation:
    """The configuration to deploy now: of the configurations run, the one a model puts best.

    `predicted` is the model's mean response there and `uncertainty` the standard deviation of
    that mean (response units); `runs` counts its measurements and `observed` is their mean.
    Measured configurations only: a prediction where nothing was run is a suggestion, not an
    answer. With noise factors `config` holds the control factors only, `predicted` and
    `observed` are the robust aim of the model's means and of the measured means across the
    noise levels, and `runs` counts its runs at every level
    (`experiments.suggest.bayes.robust_deploy`).
    """

    config: Config
    predicted: float
    uncertainty: float | None
    runs: int
    observed: float
    predicted_by: str | None
    reason: str

    def as_dict(self) -> dict[str, object]:
        """Plain dict."""
        return asdict(self)


@dataclass(frozen=True)
class Limit:
    """A limit another response must respect, e.g. ``latency_p95_ms`` at most 50."""

    response: str
    min: float | None = None
    max: float | None = None

    @property
    def text(self) -> str:
        """The limit as the user reads it."""
        parts = []
        if self.min is not None:
            parts.append(f"{self.response} >= {self.min:g}")
        if self.max is not None:
            parts.append(f"{self.response} <= {self.max:g}")
        return " and ".join(parts)


@dataclass(frozen=True)
class Runs:
    """The runs of an experiment as the strategies see them.

    `configs` and `values` are the succeeded runs and their objective response; `point_types`
    says what each run was planned as (empty: all "observed"); `responses` holds other
    responses, one value per run, for the limits; `failed` lists configurations whose trials
    failed, which are never suggested again.
    """

    configs: Sequence[Mapping[str, object]] = ()
    values: Sequence[float] = ()
    point_types: Sequence[str] = ()
    responses: Mapping[str, Sequence[float]] = field(default_factory=dict)
    failed: Sequence[Mapping[str, object]] = ()

    def __post_init__(self) -> None:
        if len(self.values) != len(self.configs):
            raise DomainError(
                "values", f"needs one value per run: {len(self.configs)} runs, {len(self.values)}"
            )
        if self.point_types and len(self.point_types) != len(self.configs):
            raise DomainError("point_types", "needs one point type per run")
        for name, values in self.responses.items():
            if len(values) != len(self.configs):
                raise DomainError(f"responses.{name}", "needs one value per run")

    def __len__(self) -> int:
        return len(self.configs)

    @property
    def types(self) -> list[str]:
        """The point type of every run ("observed" when none was given)."""
        return list(self.point_types) if self.point_types else ["observed"] * len(self.configs)

    def subset(self, keep: Sequence[int]) -> Runs:
        """The runs at the indices `keep`, in that order (failed configurations kept)."""
        types = self.types
        return Runs(
            configs=[self.configs[i] for i in keep],
            values=[self.values[i] for i in keep],
            point_types=[types[i] for i in keep],
            responses={n: [v[i] for i in keep] for n, v in self.responses.items()},
            failed=self.failed,
        )


# The stage of a plan that only says why to stop (budget used up, the strategy cannot go on).
DONE = "done"


@dataclass(frozen=True)
class Plan:
    """What a strategy proposes: the next runs, the stage it is at and why, or why to stop.

    `stage` is what the strategy did ("screening", "augment", "steepest_ascent",
    "confirmation", "bayes", "replicate", "confirmed", ...); `explanation` says why in plain
    words. `stop_reason` is set, and `suggestions` empty, when nothing is worth running.
    `expected_improvement` is the largest expected improvement of the batch when the strategy
    has one (Bayesian optimization), for stopping rules. `recommendation` is what to deploy
    now, when the strategy's model gives it (`next_batch` fills it in otherwise).
    """

    strategy: str
    stage: str
    explanation: str
    suggestions: list[Suggestion]
    stop_reason: str | None = None
    expected_improvement: float | None = None
    recommendation: Recommendation | None = None

    def as_dict(self) -> dict[str, object]:
        """Plain dict."""
        return asdict(self)
