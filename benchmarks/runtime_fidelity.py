"""What a short trial measures on the lab: throughput, spread and cost by runtime.

Run `python -m benchmarks.runtime_fidelity [--runtimes 10 20 40 80] [--replicates 3]` as root.
It brings up a lab cluster of its own and runs one configuration (3 nodes, 1 client machine,
4 threads, oltp_read_write) at every runtime, every node restarted first (so each trial starts
from the same state), the runtimes in turn within each round so that drift over the session
falls on all alike. For each runtime it prints the mean tps and its ratio to the longest
runtime's (the bias of a short run), the spread between replicates and a trial's own standard
error (% of the mean), the wall seconds a trial took, the restart's share of them, and the
rest beyond the runtime: the fixed cost of a trial without a restart. These are the facts
behind the optimizer's use of short runs as a cheap fidelity (`experiments.suggest.fidelity`).
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


def main() -> None:
    """Run the trials and print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runtimes", type=int, nargs="+", default=[10, 20, 40, 80])
    parser.add_argument("--replicates", type=int, default=3, help="trials per runtime (>= 2)")
    args = parser.parse_args()
    runtimes = sorted(set(args.runtimes))
    if args.replicates < 2 or runtimes[0] < 10:
        sys.exit("--replicates must be at least 2 and every runtime at least 10")
    results: dict[int, list[dict[str, float]]] = {t: [] for t in runtimes}
    walls: dict[int, list[float]] = {t: [] for t in runtimes}
    with own_lab_target("runtime-fidelity") as target:
        target.run(CONFIG | {"runtime_s": runtimes[0]}, run_key=0)  # prepares and warms up
        for key in range(1, args.replicates + 1):
            # Alternate the order between rounds so no runtime always follows the longest.
            for runtime in runtimes if key % 2 else runtimes[::-1]:
                started = time.monotonic()
                done = target.run(CONFIG | {"runtime_s": runtime}, run_key=key, fresh=True)
                walls[runtime].append(time.monotonic() - started)
                results[runtime].append(done.responses)
                print(
                    f"{runtime:>4} s, round {key}: tps {done.responses['tps']:.1f}, tps_se"
                    f" {done.responses['tps_se']:.2f}, wall {walls[runtime][-1]:.1f} s, restart"
                    f" {done.responses['restart_s']:.1f} s",
                    flush=True,
                )
    setting = ", ".join(f"{name} {value}" for name, value in CONFIG.items())
    table = Table(
        title=f"One configuration ({setting}) by runtime, every node restarted first",
        caption=f"baseline: the {runtimes[-1]} s trials; spread = sd between replicates",
    )
    for column in (
        "runtime s",
        "runs",
        "tps mean",
        "vs baseline",
        "spread %",
        "tps_se %",
        "wall s",
        "restart s",
        "wall - runtime - restart s",
    ):
        table.add_column(column, justify="right")
    base = statistics.mean(r["tps"] for r in results[runtimes[-1]])
    for runtime in runtimes:
        tps = [r["tps"] for r in results[runtime]]
        mean = statistics.mean(tps)
        wall = statistics.mean(walls[runtime])
        restart = statistics.mean(r["restart_s"] for r in results[runtime])
        table.add_row(
            str(runtime),
            str(len(tps)),
            f"{mean:.1f}",
            f"{mean / base:.3f}",
            f"{statistics.stdev(tps) / mean * 100:.2f}",
            f"{statistics.mean(r['tps_se'] for r in results[runtime]) / mean * 100:.2f}",
            f"{wall:.1f}",
            f"{restart:.1f}",
            f"{wall - runtime - restart:.1f}",
        )
    Console(width=140).print(table)


if __name__ == "__main__":
    main()
