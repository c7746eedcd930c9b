"""Timing limits that mean the same on a slower machine.

The code under test is timed in CPU seconds with the collector paused (as `timeit` does), so
neither the rest of a loaded machine nor the sweeps over the suite's other objects are charged
to it. The machines here run the same code up to 4x slower from one day to the next
(benchmarks/README), so a limit set on one machine is stretched on a slower one by how much
longer a fixed reference workload of the same kind takes there.
"""

from __future__ import annotations

import functools
import gc
import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from experiments.blas import one_blas_thread

# CPU seconds of `_reference_work` on the machine the limits were checked on (2026-11-27's,
# best of five, beside a running test suite), where a 10-factor linear D-optimal design took
# 28 ms of CPU beside it.
REFERENCE_SECONDS = 0.022
T = TypeVar("T")


def _timed(repeats: int, work: Callable[[], T]) -> tuple[float, T]:
    """The least CPU time of this process over `repeats` calls of `work`, and what the last
    call returned."""
    timings = []
    collecting = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            started = time.process_time()
            result = work()
            timings.append(time.process_time() - started)
    finally:
        if collecting:
            gc.enable()
    return min(timings), result


@functools.cache
def slowdown() -> float:
    """How many times longer than on the limits' machine the reference work takes here, at
    least 1: a faster machine keeps the limits as they are."""
    return max(1.0, _timed(5, _reference_work)[0] / REFERENCE_SECONDS)


def assert_within(limit: float, repeats: int, work: Callable[[], T]) -> T:
    """What `work` returns; fails unless the fastest of `repeats` calls takes at most `limit`
    CPU seconds stretched by `slowdown()`, with both figures in the message."""
    (seconds, result), factor = _timed(repeats, work), slowdown()
    assert seconds <= limit * factor, (
        f"{seconds:.3f} CPU s against the limit of {limit} s x {factor:.2f} (this machine's "
        "slowdown on the reference work)"
    )
    return result


@one_blas_thread
def _reference_work() -> None:
    """Products of a 2000 x 11 matrix and reductions over its rows in a Python loop: the
    kind of work the design searches and the Gaussian process do."""
    rng = np.random.default_rng(0)
    candidates = rng.normal(size=(2000, 11))
    inverse = np.linalg.inv(candidates.T @ candidates)
    for _ in range(300):
        variance = np.sum((candidates @ inverse) * candidates, axis=1)
        u = inverse @ candidates[int(np.argmax(variance))]
        inverse = inverse - np.outer(u, u) * 1e-6
