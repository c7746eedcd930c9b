"""Whether a change to the suggestion engine left its races as they were, configuration for
configuration.

Run `python -m benchmarks.race_identity --record PATH` on the tree before a change (it writes,
for every race, the configurations suggested, their point types and the true value of the
recommendation after each trial), then `python -m benchmarks.race_identity --compare PATH` on
the tree after it: a table says, race by race, whether the sequences are identical and, where
not, the first trial that differs. Races are those of `benchmarks/optimizer.py` (one trial at a
time), with `--problems`, `--methods`, `--seeds` and `--budget` to choose them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table
from threadpoolctl import threadpool_limits

from benchmarks.optimizer import race
from benchmarks.optimizer_methods import make_method
from benchmarks.optimizer_problems import problem

PROBLEMS = ("simulated_failures", "simulated_latency", "hartmann6_noisy")
METHODS = ("auto", "bayes")
SEEDS = (0, 1, 2)
BUDGET = 20


def sequences(
    problems: tuple[str, ...], methods: tuple[str, ...], seeds: tuple[int, ...], budget: int
) -> dict[str, dict[str, list[object]]]:
    """For every race (`problem/method/seed`): its configurations, point types, and the true
    value of the recommendation after each trial (repr, so floats compare exactly)."""
    found = {}
    with threadpool_limits(1):
        for name in problems:
            p = problem(name)
            for method in methods:
                for seed in seeds:
                    r = race(p, make_method(method, p, seed, budget), seed, budget)
                    found[f"{name}/{method}/{seed}"] = {
                        "configs": [dict(c) for c in r.configs],
                        "point_types": list(r.point_types),
                        "recommended": [repr(v) for v in r.recommended],
                        "ended": [r.ended],
                    }
    return found


def _first_difference(old: dict[str, list[object]], new: dict[str, list[object]]) -> str:
    for key in ("configs", "point_types", "recommended", "ended"):
        a, b = old[key], new[key]
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if x != y:
                return f"{key} at trial {i + 1}"
        if len(a) != len(b):
            return f"{key}: {len(a)} recorded, {len(b)} now"
    return ""


def compare(recorded: dict[str, dict[str, list[object]]], budget: int) -> bool:
    """Print the table of recorded against current races; whether every one is identical."""
    problems = tuple(dict.fromkeys(k.split("/")[0] for k in recorded))
    methods = tuple(dict.fromkeys(k.split("/")[1] for k in recorded))
    seeds = tuple(sorted({int(k.split("/")[2]) for k in recorded}))
    current = sequences(problems, methods, seeds, budget)
    table = Table(title=f"races against the recorded sequences (budget {budget})")
    for column in ("problem", "method", "seed", "trials", "identical", "first difference"):
        table.add_column(column)
    same = True
    for key, old in recorded.items():
        new = current[key]
        difference = _first_difference(old, new)
        same &= not difference
        name, method, seed = key.split("/")
        trials = str(len(new["configs"]))
        table.add_row(name, method, seed, trials, "yes" if not difference else "NO", difference)
    Console().print(table)
    return same


def main() -> None:
    """Record the races to a JSON file, or compare the current tree with one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--record", type=Path)
    group.add_argument("--compare", type=Path)
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    parser.add_argument("--budget", type=int, default=BUDGET)
    args = parser.parse_args()
    if args.record is not None:
        found = sequences(tuple(args.problems), tuple(args.methods), tuple(args.seeds), args.budget)
        args.record.write_text(json.dumps({"budget": args.budget, "races": found}, indent=1))
        print(f"recorded {len(found)} races to {args.record}")
        return
    recorded = json.loads(args.compare.read_text())
    sys.exit(0 if compare(recorded["races"], recorded["budget"]) else 1)


if __name__ == "__main__":
    main()
