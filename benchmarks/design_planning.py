"""How long the planner takes for each design kind, against the issue's limits.

Run `python benchmarks/design_planning.py [--repeats N]`. Every kind is planned through the
public planner, `experiments.designs.plan(space, request, constraints)`, for 3, 6 and 10 numeric
factors (the full factorial at 3 levels while that stays under the service's default limit of
2000 runs, else 2; the D-optimal design for the linear model, whose limit the issue states for
10 factors), plus the issue's D-optimal case: 6 factors, quadratic model, 1000 candidates. Each
figure is the best of N repeats. The baseline, measured in the same run, is pyDOE2's bare
two-level full factorial over the same factors (`fullfact([2] * k)` through the adapter): the
ratio is what planning costs beyond generating a table. Limits: 100 ms per design up to 10
factors, 2 s for the D-optimal case. A kind whose module does not import is skipped and named;
a request a kind refuses shows the rule it breaks.
"""

from __future__ import annotations

import argparse
import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from experiments.designs import _pydoe, plan
from experiments.designs.request import KINDS, DesignRequest
from experiments.errors import DomainError
from experiments.factors import FactorSpace

FACTOR_COUNTS = (3, 6, 10)
LIMIT_S = 0.1
D_OPTIMAL_LIMIT_S = 2.0
MAX_RUNS = 2000  # the service's default GALERA_DOE_MAX_DESIGN_RUNS


@dataclass(frozen=True)
class Case:
    """One planning request to time."""

    kind: str
    factors: int
    options: dict[str, object]
    limit_s: float


def space(count: int) -> FactorSpace:
    """`count` numeric factors in the style of a Galera experiment: integers and a continuous."""
    factors: list[dict[str, object]] = [
        {"name": f"x{i}", "kind": "integer", "low": 1, "high": 64} for i in range(count - 1)
    ]
    factors.append({"name": "runtime", "low": 30.0, "high": 300.0})
    return FactorSpace.from_dicts(factors)


def cases() -> list[Case]:
    """Every kind at every factor count, then the issue's D-optimal case."""
    result = []
    for kind in KINDS:
        for count in FACTOR_COUNTS:
            options: dict[str, object] = {"kind": kind, "seed": 1}
            if kind == "full_factorial":
                options["levels"] = 3 if 3**count <= MAX_RUNS else 2
            if kind == "d_optimal":
                options["model"] = "linear"
            result.append(Case(kind, count, options, LIMIT_S))
    result.append(
        Case(
            "d_optimal",
            6,
            {"kind": "d_optimal", "model": "quadratic", "candidates": 1000, "seed": 1},
            D_OPTIMAL_LIMIT_S,
        )
    )
    return result


def best_of(repeats: int, action: Callable[[], object]) -> float:
    """Smallest wall time of `repeats` calls, in seconds."""
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        timings.append(time.perf_counter() - started)
    return min(timings)


def importable(kind: str) -> str | None:
    """None when the family module imports, else why it does not."""
    try:
        importlib.import_module(f"experiments.designs.{kind}")
    except Exception as error:  # a module being written may fail in any way
        return f"{type(error).__name__}: {error}"
    return None


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5, help="best of this many (default 5)")
    args = parser.parse_args()
    baselines = {
        count: best_of(args.repeats, lambda count=count: _pydoe.fullfact([2] * count))
        for count in FACTOR_COUNTS
    }
    table = Table(title=f"Planning time per design kind (best of {args.repeats})")
    for column in ("kind", "factors", "options", "runs", "plan ms", "baseline ms", "ratio",
                   "limit ms", "within"):  # fmt: skip
        table.add_column(column, justify="left" if column in ("kind", "options") else "right")
    skipped: dict[str, str] = {}
    refused: list[str] = []
    for case in cases():
        reason = skipped.get(case.kind) or importable(case.kind)
        if reason:
            skipped[case.kind] = reason
            continue
        factors = space(case.factors)
        request = DesignRequest.from_dict(case.options)
        shown = ", ".join(f"{k}={v}" for k, v in case.options.items() if k not in ("kind", "seed"))
        try:
            runs = len(plan(factors, request).points)
        except DomainError as error:
            refused.append(f"{case.kind}, {case.factors} factors: {error.field}: {error.rule}")
            continue
        seconds = best_of(args.repeats, lambda f=factors, r=request: plan(f, r))
        baseline = baselines[case.factors]
        within = seconds <= case.limit_s
        table.add_row(case.kind, str(case.factors), shown or "defaults", str(runs),
                      f"{seconds * 1e3:.1f}", f"{baseline * 1e3:.3f}", f"{seconds / baseline:.0f}",
                      f"{case.limit_s * 1e3:.0f}",
                      "[green]yes[/green]" if within else "[red]NO[/red]")  # fmt: skip
    console = Console(width=max(Console().width, 120))
    console.print(table)
    for kind, reason in skipped.items():
        console.print(f"skipped {kind}: the module does not import ({reason})")
    for line in refused:
        console.print(f"refused {line}")


if __name__ == "__main__":
    main()
