"""What /proc and log files say of the processes the lab starts: its nodes and its WAN proxy."""

from __future__ import annotations

from pathlib import Path

LOG_TAIL_LINES = 30


def running(pid: int) -> bool:
    """Whether `pid` runs (a zombie has exited)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat_line.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def argv(pid: int) -> list[str]:
    """The command line of `pid`, empty when it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines of a log file, or why there are none."""
    try:
        text = path.read_text(errors="replace")
    except OSError as error:
        return f"(no log: {error})"
    return "\n".join(text.splitlines()[-lines:])
