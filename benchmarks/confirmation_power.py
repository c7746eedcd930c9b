"""How often a confirmation finds a true gain, and how often it claims one that is not there.

A confirmation plans its pairs from the model's residual standard deviation, which a small
design estimates on few degrees of freedom. This simulates many confirmations of a known gain
at a known run-to-run noise: the design's estimate of the noise is drawn as the design would
give it (a chi-square on `--design-df` degrees of freedom), the pairs are planned from it
(`planned_pairs`), and the pairs are drawn as normal runs. Two ways to end are compared:
- planned only: the result from the planned pairs, whatever their spread;
- internal pilot (what the service does): the spread of the planned pairs' own differences
  re-estimates the count once, and the extra pairs run too (Wittes and Brittain 1990).
Against the baseline of the power asked (0.8) and the type I error asked (0.05), it prints, per
gain: the share of confirmations whose 95 % interval excludes 0, and the mean pairs run.

    python benchmarks/confirmation_power.py --repeats 2000
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from experiments.analysis.confirmation import confirmation, planned_pairs

RUN_SD = 50.0  # tps, one run's noise
BASELINE = 1000.0  # tps
GAINS = (0.0, 50.0, 75.0, 100.0)  # in run standard deviations: 0, 1, 1.5, 2
MAX_PAIRS = 10


def one(gain: float, design_df: int, pilot: bool, rng: np.random.Generator) -> tuple[bool, int]:
    """Whether one confirmation found a gain (its interval excludes 0), and its pairs."""
    # The design's estimate of the run-to-run sd: s^2 ~ sigma^2 chi2(df) / df.
    estimate = RUN_SD * math.sqrt(rng.chisquare(design_df) / design_df)
    # The model predicts the true gain (a confirmation of 0 plans from the smallest gain asked).
    planned = planned_pairs(gain or 50.0, estimate, max_pairs=MAX_PAIRS).pairs
    candidate = BASELINE + gain + rng.normal(0.0, RUN_SD, planned)
    baseline = BASELINE + rng.normal(0.0, RUN_SD, planned)
    if pilot:
        spread = float(np.std(candidate - baseline, ddof=1))
        replanned = planned_pairs(
            gain or 50.0, spread / math.sqrt(2.0), min_pairs=planned, max_pairs=MAX_PAIRS
        ).pairs
        extra = replanned - planned
        candidate = np.append(candidate, BASELINE + gain + rng.normal(0.0, RUN_SD, extra))
        baseline = np.append(baseline, BASELINE + rng.normal(0.0, RUN_SD, extra))
    found = confirmation(candidate.tolist(), baseline.tolist(), response="tps", goal="maximize")
    return found.significant, len(candidate)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2000)
    parser.add_argument("--design-df", type=int, default=2, help="the design's residual df")
    parser.add_argument("--seed", type=int, default=57)
    args = parser.parse_args()
    print(
        f"{args.repeats} confirmations per row; run sd {RUN_SD:g} tps; the design's noise"
        f" estimate on {args.design_df} df; power asked 0.8, alpha 0.05, 3-{MAX_PAIRS} pairs"
    )
    print(f"{'gain (run sd)':>14} {'method':>15} {'found':>7} {'mean pairs':>11}")
    for gain in GAINS:
        for pilot in (False, True):
            rng = np.random.default_rng([args.seed, int(gain), int(pilot)])
            runs = [one(gain, args.design_df, pilot, rng) for _ in range(args.repeats)]
            found = np.mean([r[0] for r in runs])
            pairs = np.mean([r[1] for r in runs])
            method = "internal pilot" if pilot else "planned only"
            print(f"{gain / RUN_SD:>14.1f} {method:>15} {found:>7.3f} {pairs:>11.2f}")


if __name__ == "__main__":
    main()
