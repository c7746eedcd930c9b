"""One BLAS thread for the small matrices of the planners and the Gaussian process."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

from threadpoolctl import threadpool_limits

T = TypeVar("T")


def one_blas_thread(function: Callable[..., T]) -> Callable[..., T]:
    """Run with one BLAS thread: for matrices of a few hundred or thousand rows, threads cost
    more than they save (a suggestion 4-6x slower, a quadratic D-optimal search 2x, with two
    OpenBLAS threads on two cores)."""

    @functools.wraps(function)
    def wrapper(*args: object, **kwargs: object) -> T:
        with threadpool_limits(limits=1, user_api="blas"):
            return function(*args, **kwargs)

    return wrapper
