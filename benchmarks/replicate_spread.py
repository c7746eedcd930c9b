"""How much replicates of one configuration spread on the lab, with and without a restart first.

Run `python -m benchmarks.replicate_spread [--replicates 6] [--runtime 20]` as root. It brings
up a lab cluster of its own (a fresh directory and free ports), then runs one configuration
(3 nodes, 1 client machine, 4 threads, oltp_read_write) `--replicates` times in each of two
modes, alternating so that drift over the session falls on both alike: consecutive (the baseline:
each trial starts where the last one left the cluster) and fresh (every node restarted first,
what a loop's `restart_replicates` does). For each mode it prints the mean tps, the spread
between replicates (sample standard deviation, % of the mean), the mean standard error a trial
reports of its own steady-state tps (`tps_se`, % of the mean), their ratio, and the seconds the
restarts cost. The ratio says how much of the run-to-run noise a trial's own standard error can
account for: a Gaussian process that took `tps_se` as each run's noise would miss the rest.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from rich.console import Console
from rich.table import Table

from benchmarks.own_lab import own_lab_target

CONFIG = {"nodes": 3, "clients": 1, "threads_per_client": 4, "workload": "oltp_read_write"}
MODES = ("consecutive", "fresh")


def main() -> None:
    """Run the replicates and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replicates", type=int, default=6, help="trials per mode (>= 2)")
    parser.add_argument("--runtime", type=int, default=20, help="seconds per trial (>= 10)")
    args = parser.parse_args()
    if args.replicates < 2 or args.runtime < 10:
        sys.exit("--replicates must be at least 2 and --runtime at least 10")
    config = CONFIG | {"runtime_s": args.runtime}
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    walls: dict[str, list[float]] = {mode: [] for mode in MODES}
    with own_lab_target("replicate-spread") as target:
        target.run(config, run_key=0)  # prepares the schema and warms the cluster up
        for key in range(1, args.replicates + 1):
            for mode in MODES:
                started = time.monotonic()
                done = target.run(config, run_key=key, fresh=mode == "fresh")
                walls[mode].append(time.monotonic() - started)
                results[mode].append(done.responses)
                print(
                    f"{mode:>11} {key}: tps {done.responses['tps']:.1f}, tps_se"
                    f" {done.responses['tps_se']:.2f}, restart {done.responses['restart_s']:.1f} s",
                    flush=True,
                )
    setting = ", ".join(f"{name} {value}" for name, value in CONFIG.items())
    table = Table(
        title=f"Replicates of one configuration ({setting}), {args.runtime} s trials",
        caption="baseline: consecutive replicates; ratio = spread between replicates / tps_se",
    )
    for column in (
        "mode",
        "runs",
        "tps mean",
        "spread %",
        "tps_se %",
        "ratio",
        "restart s",
        "wall s per trial",
        "wall vs baseline",
    ):
        table.add_column(column, justify="left" if column == "mode" else "right")
    base_wall = statistics.mean(walls["consecutive"])
    for mode in MODES:
        tps = [r["tps"] for r in results[mode]]
        mean = statistics.mean(tps)
        spread = statistics.stdev(tps) / mean * 100
        own = statistics.mean(r["tps_se"] for r in results[mode]) / mean * 100
        wall = statistics.mean(walls[mode])
        table.add_row(
            mode,
            str(len(tps)),
            f"{mean:.1f}",
            f"{spread:.2f}",
            f"{own:.2f}",
            f"{spread / own:.1f}" if own > 0 else "n/a",
            f"{statistics.mean(r['restart_s'] for r in results[mode]):.1f}",
            f"{wall:.1f}",
            f"{wall / base_wall:.2f}",
        )
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
