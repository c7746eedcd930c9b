"""First runs of an experiment that has none: a screening factorial or a space-filling start.

Both come from the planner (`experiments.designs.plan`), so they honour integer levels, explicit
levels and the factor constraints exactly as a planned design does, and are run whole: a
design's statistics need every one of its runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from experiments.constraints import Constraint
from experiments.designs import Design, DesignRequest, design_size, plan
from experiments.errors import DomainError
from experiments.factors import FactorSpace, Value
from experiments.suggest.values import Suggestion

# Centre points of a screening factorial: enough for a curvature test with 2 df of pure error.
SCREENING_CENTRE_POINTS = 3
# Up to this many numeric factors the screening design is the full 2^k factorial.
FULL_FACTORIAL_UP_TO = 4


def screening_request(space: FactorSpace, seed: int) -> DesignRequest:
    """The two-level factorial an expert screens with before a response surface: the full 2^k
    up to 4 factors, else the smallest resolution V fraction (every main effect and two-factor
    interaction clear, so axial points can later complete it into a central composite)."""
    kind = "full_factorial" if len(space) <= FULL_FACTORIAL_UP_TO else "fractional_factorial"
    return DesignRequest(
        kind=kind,
        levels=2,
        resolution=None if kind == "full_factorial" else 5,
        centre_points=SCREENING_CENTRE_POINTS,
        seed=seed,
    )


def screening_size(space: FactorSpace, seed: int = 0) -> int | None:
    """Runs of the screening design, or None when the space cannot be screened that way."""
    try:
        return design_size(space, screening_request(space, seed))
    except DomainError:
        return None


def screening_design(space: FactorSpace, constraints: Sequence[Constraint], seed: int) -> Design:
    """The screening design, planned (runs that break a constraint removed and counted)."""
    return plan(space, screening_request(space, seed), constraints)


def screening(
    space: FactorSpace, constraints: Sequence[Constraint], seed: int, reason: str
) -> list[Suggestion]:
    """The screening design's runs, in randomized run order."""
    design = screening_design(space, constraints, seed)
    return [
        Suggestion(
            config=dict(p.config),
            strategy="screening",
            point_type=p.point_type,
            reason=f"{reason} Run {i} of {len(design.points)} ({p.point_type} point).",
        )
        for i, p in enumerate(design.points, start=1)
    ]


def space_filling(
    space: FactorSpace,
    runs: int,
    constraints: Sequence[Constraint],
    seed: int,
    reason: str,
    already: Sequence[Mapping[str, Value]] = (),
) -> list[Suggestion]:
    """A maximin Latin hypercube of `runs` points, without configurations run already; with a
    fidelity, all but the last at its shortest length."""
    design = plan(space, DesignRequest(kind="latin_hypercube", runs=runs, seed=seed), constraints)
    points = [(dict(p.config), p.point_type) for p in design.points]
    length = space.fidelity
    if length is not None:
        # Short runs are cheap: the start measures every point at the shortest length, and the
        # last at the full one, so the model sees what the length changes from the start.
        for i, (config, _) in enumerate(points):
            config[length.name] = length.decode(1.0 if i == len(points) - 1 else -1.0)
    seen = {space.key(c) for c in already}
    picked = []
    for config, point_type in points:
        key = space.key(config)
        if key not in seen:
            seen.add(key)
            picked.append(
                Suggestion(config=config, strategy="initial", point_type=point_type, reason=reason)
            )
    return picked


def initial_runs(space: FactorSpace) -> int:
    """Runs of the space-filling design that starts Bayesian optimization from nothing: two
    per factor (at least 4), which measured better than k + 1 on every benchmark problem."""
    return max(4, 2 * len(space))
