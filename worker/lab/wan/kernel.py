"""The Linux calls of the WAN delay proxy, through libc: sockets in another network namespace
(setns), the delay lines' clock (timerfd) and the timer slack of its thread (prctl)."""

from __future__ import annotations

import ctypes
import math
import os
import socket
from pathlib import Path

CLONE_NEWNET = 0x40000000
_CLOCK_MONOTONIC = 1
_TFD_TIMER_ABSTIME = 1
_PR_SET_TIMERSLACK = 29
NETNS_DIR = Path("/run/netns")

_libc = ctypes.CDLL(None, use_errno=True)


class _Timespec(ctypes.Structure):
    _fields_ = (("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long))


class Itimerspec(ctypes.Structure):
    """struct itimerspec: a timer's interval and next expiry."""

    _fields_ = (("it_interval", _Timespec), ("it_value", _Timespec))


_libc.timerfd_settime.argtypes = (
    ctypes.c_int, ctypes.c_int, ctypes.POINTER(Itimerspec), ctypes.c_void_p
)  # fmt: skip


def _check(result: int, call: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{call}: {os.strerror(errno)}")
    return result


def monotonic_timerfd() -> int:
    """A non-blocking timerfd of CLOCK_MONOTONIC, the clock of asyncio's loop.time()."""
    return _check(
        _libc.timerfd_create(_CLOCK_MONOTONIC, os.O_NONBLOCK | os.O_CLOEXEC), "timerfd_create"
    )


def arm_at(fd: int, spec: Itimerspec, when: float) -> None:
    """Have timerfd `fd` expire once at the absolute monotonic time `when` (`spec`: reused)."""
    seconds = math.floor(when)
    spec.it_value.tv_sec = seconds
    spec.it_value.tv_nsec = int((when - seconds) * 1e9)
    _check(
        _libc.timerfd_settime(fd, _TFD_TIMER_ABSTIME, ctypes.byref(spec), None),
        "timerfd_settime",
    )


def tight_timer_slack() -> None:
    """The kernel may wake a timer up to the thread's slack late (50 us by default) to batch
    wake-ups: one nanosecond of slack instead, since every delivery waits on a timer."""
    _libc.prctl(_PR_SET_TIMERSLACK, 1, 0, 0, 0)


def _setns(fd: int) -> None:
    _check(_libc.setns(fd, CLONE_NEWNET), "setns")


def socket_in(netns: str | None, family: int = socket.AF_INET) -> socket.socket:
    """A TCP socket of network namespace `netns` (/run/netns/<netns>; None: the thread's own).

    Only creation needs the switch: a socket keeps its namespace for good, so whatever binds,
    listens or connects it later, in any thread, does so in `netns`.
    """
    if netns is None:
        return socket.socket(family, socket.SOCK_STREAM)
    target = os.open(NETNS_DIR / netns, os.O_RDONLY | os.O_CLOEXEC)
    try:
        # Opened here rather than once per process: setns acts on the calling thread only, and
        # once switched /proc/thread-self/ns/net would name the target.
        home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        try:
            _setns(target)
            try:
                return socket.socket(family, socket.SOCK_STREAM)
            finally:
                _setns(home)
        finally:
            os.close(home)
    finally:
        os.close(target)


def nodelay(sock: socket.socket) -> None:
    """Send at once: Galera sends many small messages, and Nagle would hold them for an ACK,
    a delay of its own."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
