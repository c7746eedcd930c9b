"""The planner: from a factor space and a design request to a run table with its quality report.

Each design family is a `base.DesignFamily` subclass in `experiments/designs/<kind>.py`, listed in
`FAMILIES`; this package does what every family shares, in this order: the family's fit to the
hard ranges (`limits`), centre points (per block), replicates, decoding to natural values
(integers rounded, explicit levels snapped to the nearest, with the `rounded` flag), removal of
runs that break the constraints, the check that no run left a hard range, reporting of points
that collapsed onto each other, the run order (randomized within blocks, grouped into whole
plots by the hard-to-change factors), and the quality report for the chosen model.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from experiments.designs.base import DesignFamily, FamilyRuns
from experiments.designs.box_behnken import BoxBehnken
from experiments.designs.ccd import CentralComposite
from experiments.designs.d_optimal import DOptimal
from experiments.designs.fractional_factorial import FractionalFactorial
from experiments.designs.full_factorial import FullFactorial, factor_levels
from experiments.designs.latin_hypercube import LatinHypercube
from experiments.designs.limits import HardRange, Limits, breaches, hard_ranges, natural
from experiments.designs.plackett_burman import PlackettBurman
from experiments.designs.quality import DesignQuality, assess
from experiments.designs.request import KINDS, DesignRequest
from experiments.errors import DomainError
from experiments.factors import Config, FactorSpace, Value

if TYPE_CHECKING:
    from experiments.constraints import Constraint

__all__ = [
    "FAMILIES",
    "KINDS",
    "Design",
    "DesignPoint",
    "DesignRequest",
    "Limits",
    "design_size",
    "factor_levels",
    "plan",
]

# A point counts as moved by rounding when its coded position shifts by more than float noise.
_CODED_TOLERANCE = 1e-9


@dataclass(frozen=True)
class DesignPoint:
    """One run of the table.

    `coded` is the point's planned position; `config` the natural values that are actually run.
    They disagree, and `rounded` is set, when an integer factor is rounded or a factor with
    explicit levels takes its nearest level. `duplicate_of` names the standard order of an
    earlier, different design point that this one collapsed onto after rounding (not set for
    intended replicates and centre points). `whole_plot` numbers the group of consecutive runs
    that share the hard-to-change factors' settings (None when no factor is hard to change).
    """

    std_order: int
    run_order: int
    replicate: int
    block: int
    whole_plot: int | None
    point_type: str
    coded: dict[str, float]
    config: Config
    rounded: bool
    duplicate_of: int | None


@dataclass(frozen=True)
class Design:
    """A planned design: runs in run order, the family's facts, quality, and notes for the user."""

    kind: str
    model: str
    points: tuple[DesignPoint, ...]
    family: dict[str, Any]
    quality: DesignQuality
    removed_by_constraints: int
    notes: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """Plain, JSON-serializable dict."""
        return {
            "kind": self.kind,
            "model": self.model,
            "runs": len(self.points),
            "points": [asdict(p) for p in self.points],
            "family": self.family,
            "quality": self.quality.as_dict(),
            "removed_by_constraints": self.removed_by_constraints,
            "notes": list(self.notes),
        }


FAMILIES: dict[str, DesignFamily] = {
    family.kind: family
    for family in (
        FullFactorial(),
        FractionalFactorial(),
        PlackettBurman(),
        CentralComposite(),
        BoxBehnken(),
        LatinHypercube(),
        DOptimal(),
    )
}
if tuple(FAMILIES) != KINDS:
    raise ImportError(f"design families {tuple(FAMILIES)} do not match the request's KINDS {KINDS}")


def design_size(space: FactorSpace, request: DesignRequest) -> int:
    """Number of runs `plan` would produce (before constraints), without building the design."""
    family = FAMILIES[request.kind]
    family.check(space, request)
    _check_centre_points(space, request)
    return (
        family.size(space, request) * request.replicates
        + request.centre_point_count * request.blocks * _categorical_combinations(space)
    )


def plan(
    space: FactorSpace,
    request: DesignRequest,
    constraints: Sequence[Constraint] = (),
    limits: Limits | None = None,
) -> Design:
    """Plan the design: the family's runs, then everything the families share (module doc).

    `limits` are the ranges the target accepts for the factors it bounds; with the integer
    factors' ranges they are the hard ranges no planned run may leave (`limits` module)."""
    family = FAMILIES[request.kind]
    family.check(space, request)
    _check_centre_points(space, request)
    ranges = hard_ranges(space, limits)
    request, chosen = family.fit_ranges(space, request, ranges)
    runs = family.build(space, request, constraints)
    planned = _planned(space, request, runs)
    feasible = _feasible(request, planned, constraints, ranges)
    points = _points(space, request, feasible)
    quality = assess(space, [p.config for p in points], request.model_order)
    removed = len(planned) - len(feasible)
    return Design(
        kind=request.kind,
        model=request.model_order,
        points=tuple(points),
        family=runs.report,
        quality=quality,
        removed_by_constraints=removed,
        notes=(*filter(None, [chosen]), *_notes(space, request, points, removed)),
    )


def _planned(space: FactorSpace, request: DesignRequest, runs: FamilyRuns) -> list[tuple[Any, ...]]:
    """Every planned run in standard order, as (std_order, replicate, point_type, block, coded,
    config, rounded): the family's runs once per replicate, then the centre points of each
    block, each decoded to natural values."""
    rows = [
        (replicate, point_type, block, coded)
        for replicate in range(1, request.replicates + 1)
        for coded, point_type, block in zip(runs.coded, runs.point_types, runs.blocks, strict=True)
    ]
    rows += [
        (replicate, "centre", block, coded)
        for block in sorted(set(runs.blocks))
        for replicate in range(1, request.centre_point_count + 1)
        for coded in _centre_rows(space)
    ]
    return [
        (std_order, replicate, point_type, block, coded, *_decode(space, coded))
        for std_order, (replicate, point_type, block, coded) in enumerate(rows, start=1)
    ]


def _feasible(
    request: DesignRequest,
    planned: list[tuple[Any, ...]],
    constraints: Sequence[Constraint],
    ranges: Sequence[HardRange],
) -> list[tuple[Any, ...]]:
    """The planned runs that keep the constraints; a 422 when none does, or when one that
    does leaves a hard range."""
    feasible = [p for p in planned if all(c.satisfied(p[5]) for c in constraints)]
    if not feasible:
        raise DomainError(
            "constraints", f"every one of the {len(planned)} planned runs breaks a constraint"
        )
    beyond = breaches(ranges, (p[5] for p in feasible))
    if beyond:
        raise DomainError(
            "design",
            f"the {request.kind} design plans {'; '.join(beyond)}: no planned run may leave a"
            " hard range",
        )
    return feasible


def _points(
    space: FactorSpace, request: DesignRequest, feasible: list[tuple[Any, ...]]
) -> list[DesignPoint]:
    """The runs as design points in run order, each with its whole plot and the earlier point
    it collapsed onto, if any."""
    duplicates = _collapsed(space, feasible)
    orders, plots = _run_order(space, request, feasible)
    return sorted(
        (
            DesignPoint(
                std_order=std_order,
                run_order=orders[std_order],
                replicate=replicate,
                block=block,
                whole_plot=plots.get(std_order),
                point_type=point_type,
                coded={f.name: float(c) for f, c in zip(space.factors, coded, strict=True)},
                config=config,
                rounded=rounded,
                duplicate_of=duplicates.get(std_order),
            )
            for std_order, replicate, point_type, block, coded, config, rounded in feasible
        ),
        key=lambda point: point.run_order,
    )


def _categorical_combinations(space: FactorSpace) -> int:
    return math.prod(len(f.levels or ()) for f in space.factors if not f.is_numeric)


def _check_centre_points(space: FactorSpace, request: DesignRequest) -> None:
    if request.centre_point_count and not any(f.is_numeric for f in space.factors):
        raise DomainError("design.centre_points", "centre points need at least one numeric factor")


def _centre_rows(space: FactorSpace) -> list[np.ndarray]:
    """Coded centre points: numeric factors at 0, repeated at every categorical combination."""
    choices = [
        [0.0] if f.is_numeric else [f.encode(level) for level in f.levels or ()]
        for f in space.factors
    ]
    return [np.array(combo, dtype=float) for combo in itertools.product(*choices)]


def _decode(space: FactorSpace, coded: np.ndarray) -> tuple[Config, bool]:
    """Natural values of a coded point, and whether rounding or snapping moved it."""
    config = {f.name: natural(f, float(c)) for f, c in zip(space.factors, coded, strict=True)}
    moved = any(
        abs(f.encode(config[f.name]) - float(c)) > _CODED_TOLERANCE
        for f, c in zip(space.factors, coded, strict=True)
        if f.is_numeric
    )
    return config, moved


def _collapsed(space: FactorSpace, planned: list[tuple[Any, ...]]) -> dict[int, int]:
    """std_order -> std_order of the first different design point it now coincides with."""
    first: dict[tuple[Value, ...], tuple[int, np.ndarray]] = {}
    duplicates: dict[int, int] = {}
    for std_order, _, _, _, coded, config, _ in planned:
        key = space.key(config)
        if key not in first:
            first[key] = (std_order, coded)
        elif not np.allclose(first[key][1], coded, atol=_CODED_TOLERANCE):
            duplicates[std_order] = first[key][0]
    return duplicates


def _run_order(
    space: FactorSpace, request: DesignRequest, planned: list[tuple[Any, ...]]
) -> tuple[dict[int, int], dict[int, int]]:
    """std_order -> run order, and std_order -> whole plot (hard-to-change factors only).

    Blocks run one after the other. Within a block the runs that share the hard-to-change
    factors' settings form one whole plot, so those factors change as rarely as the design
    allows; whole plots, and runs within them, are randomized with the seed (standard order
    without randomization).
    """
    rng = np.random.default_rng(request.seed)
    hard = [f.name for f in space.factors if f.hard_to_change]
    sequence: list[int] = []
    plots: dict[int, int] = {}
    for block in sorted({p[3] for p in planned}):
        members = [p for p in planned if p[3] == block]
        groups: dict[tuple[Value, ...], list[int]] = {}
        for p in members:
            groups.setdefault(tuple(p[5][name] for name in hard), []).append(p[0])
        keys = sorted(groups, key=_sortable)
        if request.randomize:
            keys = [keys[i] for i in rng.permutation(len(keys))]
        for key in keys:
            runs = groups[key]
            if request.randomize:
                runs = [runs[i] for i in rng.permutation(len(runs))]
            if hard:
                plots.update(dict.fromkeys(runs, len(set(plots.values())) + 1))
            sequence += runs
    return {std_order: i for i, std_order in enumerate(sequence, start=1)}, plots


def _sortable(key: tuple[Value, ...]) -> tuple[tuple[int, float | str], ...]:
    return tuple((0, float(v)) if isinstance(v, int | float) else (1, str(v)) for v in key)


def _notes(
    space: FactorSpace,
    request: DesignRequest,
    points: list[DesignPoint],
    removed: int,
) -> tuple[str, ...]:
    notes = []
    moved = sum(point.rounded for point in points)
    if moved:
        notes.append(
            f"{moved} of {len(points)} runs are not at their coded position: integer rounding or"
            " the nearest explicit level moved them (see `rounded`)"
        )
    collapsed = sum(point.duplicate_of is not None for point in points)
    if collapsed:
        notes.append(
            f"{collapsed} runs collapsed onto other design points after rounding and repeat "
            "them (see `duplicate_of`); consider a wider range or fewer levels"
        )
    if removed:
        notes.append(f"{removed} planned runs broke a constraint and were removed")
    outside = _outside_range(space, points)
    if outside:
        notes.append("runs outside the low..high range: " + "; ".join(outside))
    categorical = [f.name for f in space.factors if not f.is_numeric]
    if request.centre_point_count and categorical:
        notes.append(
            "centre points are repeated at every combination of the levels of "
            + ", ".join(categorical)
        )
    hard = [f.name for f in space.factors if f.hard_to_change]
    if hard:
        plots = len({p.whole_plot for p in points})
        notes.append(
            f"split-plot run order: {plots} whole plots of {', '.join(hard)} "
            f"({plots - 1} changes), runs randomized within each"
            if request.randomize
            else f"{plots} whole plots of {', '.join(hard)} ({plots - 1} changes), standard order"
        )
    if not request.randomize:
        notes.append("run order is the standard order, not randomized")
    return tuple(notes)


def _outside_range(space: FactorSpace, points: list[DesignPoint]) -> list[str]:
    found = []
    for factor in space.factors:
        if not factor.is_numeric:
            continue
        low, high = factor.bounds
        values = sorted({float(p.config[factor.name]) for p in points})
        beyond = [v for v in values if not low <= v <= high]
        if beyond:
            shown = ", ".join(f"{v:g}" for v in beyond)
            found.append(f"{factor.name} at {shown} (range {low:g}..{high:g})")
    return found
