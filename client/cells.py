"""The text of table cells: numbers, p-values, settings and lists as the CLI and the report
print them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table

from experiments.numbers import format_value, significant


def facts_table(title: str) -> Table:
    """A two-column table of names and values."""
    table = Table(title=title, show_header=False)
    table.add_column("name", style="bold")
    table.add_column("value")
    return table


def shorten(text: str | None, width: int = 60) -> str:
    """The first line of `text`, cut to `width` characters with an ellipsis."""
    if not text:
        return ""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def config_text(config: Mapping[str, Any], sep: str = " ") -> str:
    return sep.join(f"{name}={format_value(value)}" for name, value in config.items())


def listed(value: object) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {listed(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(listed(v) for v in value)
    return format_value(value)


def num(value: float | None, spec: str = ".1f") -> str:
    return "n/a" if value is None else format(value, spec)


def sig(value: float | None, digits: int) -> str:
    """`value` to `digits` significant digits, written out in full (never 1.49e+03)."""
    return "n/a" if value is None else significant(value, digits)


def p_text(value: float | None) -> str:
    if value is None:
        return "n/a"
    return "< 0.001" if value < 0.001 else f"{value:.3g}"


def ends(on_edge: Mapping[str, str]) -> str:
    """E.g. "threads (high), nodes (low)"."""
    return ", ".join(f"{name} ({end})" for name, end in on_edge.items())
