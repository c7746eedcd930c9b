"""The confirmation benchmark: one simulated confirmation of each kind, and a tiny table."""

import sys

import numpy as np

from benchmarks import confirmation_power
from benchmarks.confirmation_power import MAX_PAIRS, RUN_SD, one


def test_a_confirmation_runs_at_least_the_planned_pairs_and_the_pilot_never_fewer():
    for gain in (0.0, 2 * RUN_SD):
        planned = [one(gain, 2, False, np.random.default_rng(seed))[1] for seed in range(20)]
        pilot = [one(gain, 2, True, np.random.default_rng(seed))[1] for seed in range(20)]
        assert all(3 <= p <= MAX_PAIRS for p in planned + pilot)
        assert all(b >= a for a, b in zip(planned, pilot, strict=True))  # same draws, then more


def test_a_large_gain_is_found_and_the_table_has_a_row_per_gain_and_method(capsys, monkeypatch):
    found = [one(4 * RUN_SD, 2, True, np.random.default_rng(seed))[0] for seed in range(10)]
    assert all(found)
    monkeypatch.setattr(sys, "argv", ["confirmation_power", "--repeats", "3"])
    confirmation_power.main()
    rows = capsys.readouterr().out.splitlines()[2:]
    assert len(rows) == 2 * len(confirmation_power.GAINS)
    assert {row.split()[1] for row in rows} == {"planned", "internal"}
