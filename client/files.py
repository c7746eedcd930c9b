"""The files the command line reads and writes besides experiment specs: measurements to import
(CSV or JSON) and the results of an experiment as CSV, one column per factor and response."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

# Columns of an imported file that say where a run belongs rather than what it measured.
LAYOUT_COLUMNS = ("block", "whole_plot")
# Columns of an imported file that are neither factors nor responses (labels, notes).
IGNORED_COLUMNS = ("test", "trial", "id", "run", "note", "notes")
RESULT_COLUMNS = ("trial", "run_order", "block", "whole_plot", "point_type", "source", "status")


class ObservationFileError(ValueError):
    """A measurements file that cannot be read; the message names the line and the column."""


def read_observations(
    path: Path, factors: Sequence[str], responses: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Observations (config, responses, block, whole_plot) from a CSV file with one column per
    factor and per response (as the published study's files), or from a JSON list of
    observations as the API takes them. The response columns are `responses`, or else every
    column that is not a factor, a block or whole plot, or a label (test, id, note); an empty
    cell leaves that response out of its row."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ObservationFileError(f"cannot read {path}: {error.strerror or error}") from None
    if path.suffix.lower() == ".json":
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as error:
            raise ObservationFileError(f"{path}: not JSON ({error})") from None
        if not isinstance(rows, list):
            raise ObservationFileError(f"{path}: a JSON file holds a list of observations")
        return rows
    return _from_csv(path, text, factors, responses)


def _from_csv(
    path: Path, text: str, factors: Sequence[str], chosen: Sequence[str]
) -> list[dict[str, Any]]:
    reader = csv.DictReader(io.StringIO(text))
    columns = reader.fieldnames or []
    missing = [name for name in (*factors, *chosen) if name not in columns]
    if missing:
        raise ObservationFileError(
            f"{path}: no column {', '.join(missing)}; columns: {', '.join(columns)}"
        )
    responses = list(chosen) or [
        c for c in columns if c not in factors and c not in (*LAYOUT_COLUMNS, *IGNORED_COLUMNS)
    ]
    if not responses:
        raise ObservationFileError(f"{path}: no response column besides the factors")
    observations = []
    for line, row in enumerate(reader, start=2):
        observation: dict[str, Any] = {
            "config": {name: _value(row[name]) for name in factors},
            "responses": {
                name: _number(path, line, name, row[name]) for name in responses if row[name]
            },
        }
        for name in LAYOUT_COLUMNS:
            if row.get(name):
                observation[name] = int(_number(path, line, name, row[name]))
        observations.append(observation)
    if not observations:
        raise ObservationFileError(f"{path}: no rows under the header")
    return observations


def _value(text: str) -> Any:
    """A factor setting: a whole number, a number, or a level's name."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def _number(path: Path, line: int, column: str, text: str) -> float:
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise ObservationFileError(f"{path}, line {line}: {column} {text!r} is not a number")
    return number


def results_csv(factors: Sequence[str], trials: Iterable[Mapping[str, Any]]) -> str:
    """The trials as CSV: where each sits in the run table, its status, one column per factor,
    one per response it measured, and its error."""
    trials = list(trials)
    responses = sorted({name for t in trials for name in (t.get("responses") or {})})
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*RESULT_COLUMNS, *factors, *responses, "error"])
    for trial in trials:
        measured = trial.get("responses") or {}
        writer.writerow(
            [
                trial["id"],
                trial["run_order"],
                trial["block"],
                "" if trial.get("whole_plot") is None else trial["whole_plot"],
                trial["point_type"],
                trial["source"],
                trial["status"],
                *(trial["config"].get(name, "") for name in factors),
                *("" if measured.get(name) is None else measured[name] for name in responses),
                trial.get("error") or "",
            ]
        )
    return out.getvalue()
