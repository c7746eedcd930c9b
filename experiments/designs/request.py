"""What a user asks the planner for: the design kind and its options, validated on construction."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from experiments.errors import DomainError

KINDS: tuple[str, ...] = (
    "full_factorial",
    "fractional_factorial",
    "plackett_burman",
    "ccd",
    "box_behnken",
    "latin_hypercube",
    "d_optimal",
)
CCD_TYPES: tuple[str, ...] = ("circumscribed", "inscribed", "face_centred")
ALPHAS: tuple[str, ...] = ("rotatable", "orthogonal")
MODELS: tuple[str, ...] = ("linear", "interaction", "quadratic")
# The model each kind is built to estimate: the quality report's default.
DEFAULT_MODELS: dict[str, str] = {
    "full_factorial": "interaction",
    "fractional_factorial": "linear",
    "plackett_burman": "linear",
    "ccd": "quadratic",
    "box_behnken": "quadratic",
    "latin_hypercube": "quadratic",
    "d_optimal": "quadratic",
}

# Centre points per block when the request gives none: without them a Box-Behnken design, and a
# rotatable CCD of 2 or 4 factors, cannot separate the squared terms from the intercept.
DEFAULT_CENTRE_POINTS: dict[str, int] = {"ccd": 4, "box_behnken": 3}

# Inclusive bounds of the whole-number options.
_LIMITS: dict[str, tuple[int, int]] = {
    "levels": (2, 9),
    "replicates": (1, 20),
    "blocks": (1, 64),
    "seed": (0, 2**32 - 1),
}
_OPTIONAL_LIMITS: dict[str, tuple[int, int]] = {
    "centre_points": (0, 100),
    "resolution": (3, 8),
    "runs": (2, 100_000),
    "candidates": (10, 100_000),
}


@dataclass(frozen=True)
class DesignRequest:
    """The design to plan.

    - `kind`: one of KINDS.
    - `levels`: levels per low/high factor of a full factorial (explicit levels are used as given).
    - `resolution` or `runs`: the size of a fractional factorial (give one; default resolution 4
      or the smallest design that reaches it); `runs` also sizes Plackett-Burman (rounded up to a
      multiple of 4), Latin hypercube and D-optimal designs.
    - `ccd_type` and `alpha` for central composite designs (`alpha` a name or a number);
      `ccd_type` None leaves the choice to the planner: circumscribed, unless its axial points
      would leave a factor's hard range (`experiments.designs.limits`), then face-centred.
    - `model`: the model the design must estimate (D-optimal) and the quality report describes;
      default per kind (DEFAULT_MODELS).
    - `candidates`: size of the D-optimal candidate set when the lattice of levels is larger.
    - `centre_points` per block (default DEFAULT_CENTRE_POINTS for the kind, else 0),
      `replicates`, `blocks`, `randomize`, `seed`.
    """

    kind: str = "full_factorial"
    levels: int = 2
    resolution: int | None = None
    runs: int | None = None
    ccd_type: str | None = None
    alpha: str | float = "rotatable"
    model: str | None = None
    candidates: int | None = None
    centre_points: int | None = None
    replicates: int = 1
    blocks: int = 1
    randomize: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise DomainError("design.kind", f"must be one of {', '.join(KINDS)}")
        for name, (low, high) in _LIMITS.items():
            _check_whole(name, getattr(self, name), low, high)
        for name, (low, high) in _OPTIONAL_LIMITS.items():
            if getattr(self, name) is not None:
                _check_whole(name, getattr(self, name), low, high)
        if not isinstance(self.randomize, bool):
            raise DomainError("design.randomize", "must be true or false")
        if self.ccd_type is not None and self.ccd_type not in CCD_TYPES:
            raise DomainError("design.ccd_type", f"must be one of {', '.join(CCD_TYPES)}")
        if isinstance(self.alpha, str):
            if self.alpha not in ALPHAS:
                raise DomainError(
                    "design.alpha", f"must be one of {', '.join(ALPHAS)} or a number above 0"
                )
        elif isinstance(self.alpha, bool) or not isinstance(self.alpha, int | float):
            raise DomainError("design.alpha", "must be a name or a number")
        elif not 0 < self.alpha <= 10:
            raise DomainError("design.alpha", "a numeric alpha must lie in (0, 10]")
        if self.model is not None and self.model not in MODELS:
            raise DomainError("design.model", f"must be one of {', '.join(MODELS)}")
        if self.resolution is not None and self.runs is not None:
            raise DomainError("design.runs", "give either resolution or runs, not both")

    @property
    def centre_point_count(self) -> int:
        """Centre points per block: the ones asked for, or the kind's default."""
        if self.centre_points is not None:
            return self.centre_points
        return DEFAULT_CENTRE_POINTS.get(self.kind, 0)

    @property
    def ccd_shape(self) -> str:
        """The central composite type asked for, circumscribed when the request leaves it open."""
        return self.ccd_type or "circumscribed"

    @property
    def model_order(self) -> str:
        """The model the design is judged against: the one asked for, or the kind's default."""
        return self.model or DEFAULT_MODELS[self.kind]

    @classmethod
    def from_dict(cls, raw: Mapping[str, object]) -> DesignRequest:
        """Build from a plain dict (JSON); missing options take their defaults."""
        if not isinstance(raw, Mapping):
            raise DomainError("design", "must be an object of design options")
        options = [f.name for f in fields(cls)]
        unknown = sorted(str(key) for key in raw if key not in options)
        if unknown:
            raise DomainError(
                f"design.{unknown[0]}", f"is not a design option; options are {', '.join(options)}"
            )
        present = {key: value for key, value in raw.items() if value is not None}
        return cls(**present)  # type: ignore[arg-type]


def _check_whole(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise DomainError(f"design.{name}", f"must be a whole number from {low} to {high}")
