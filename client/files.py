"""The files the command line reads and writes besides experiment specs: measurements to import
(CSV or JSON) and the results of an experiment as CSV, one column per factor and response."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Columns of an imported file that say where a run belongs rather than what it measured.
LAYOUT_COLUMNS = ("block", "whole_plot")
# Columns of an imported file that are neither factors nor responses (labels, notes).
IGNORED_COLUMNS = ("test", "trial", "id", "run", "note", "notes")
RESULT_COLUMNS = ("trial", "run_order", "block", "whole_plot", "point_type", "source", "status")


class ObservationFileError(ValueError):
    """A measurements file that cannot be read; the message names the line and the column."""


@dataclass(frozen=True)
class ObservationFile:
    """The observations of a file, and for a CSV file the line each came from (1-based, the
    header is line 1), so that the API's refusal of one names its place in the file."""

    path: Path
    observations: list[dict[str, Any]]
    lines: tuple[int, ...] = ()

    def where(self, field: str) -> str | None:
        """The place in the file of a field the API names: "observations.3.responses.tpz" ->
        "runs.csv, line 5, column tpz"; None for a field of no one row (or of a JSON file)."""
        parts = field.removeprefix("observations.").split(".")
        if not self.lines or not parts[0].isdigit() or int(parts[0]) >= len(self.lines):
            return None
        place = f"{self.path}, line {self.lines[int(parts[0])]}"
        if len(parts) > 2 and parts[1] in ("config", "responses"):
            return f"{place}, column {'.'.join(parts[2:])}"
        if len(parts) > 1 and parts[1] in LAYOUT_COLUMNS:
            return f"{place}, column {parts[1]}"
        return place

    def explain(self, fields: Sequence[tuple[str, str]]) -> str | None:
        """The API's field errors said at their lines and columns; None when none is a row's."""
        placed = [(self.where(field), field, rule) for field, rule in fields]
        if not any(where for where, _, _ in placed):
            return None
        said = []
        for where, field, rule in placed:
            text = f"{where or field}: {rule}"
            if where and ".responses." in field:
                column = field.split(".responses.", 1)[1]
                text += f" (leave the column out with --ignore-columns {column})"
            said.append(text)
        return "; ".join(said)


def read_observations(
    path: Path,
    factors: Sequence[str],
    responses: Sequence[str] = (),
    ignored: Sequence[str] = (),
) -> ObservationFile:
    """Observations (config, responses, block, whole_plot) from a CSV file with one column per
    factor and per response (as the published study's files), or from a JSON list of
    observations as the API takes them.

    Every CSV column is a factor, a response, a block or whole plot, a label (test, id, note),
    or one of `ignored`: the responses are `responses`, or else every other column (the API
    refuses a name the experiment cannot use), and with `responses` given any other column is
    an error naming it. An empty response cell leaves that response out of its row."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ObservationFileError(f"cannot read {path}: {_reason(error)}") from None
    if path.suffix.lower() == ".json":
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as error:
            raise ObservationFileError(f"{path}: not JSON ({error})") from None
        if not isinstance(rows, list):
            raise ObservationFileError(f"{path}: a JSON file holds a list of observations")
        return ObservationFile(path, rows)
    return _from_csv(path, text, factors, responses, ignored)


def _reason(error: OSError | UnicodeDecodeError) -> str:
    if isinstance(error, UnicodeDecodeError):
        return "not UTF-8 text"
    return str(error.strerror or error)


def _from_csv(
    path: Path,
    text: str,
    factors: Sequence[str],
    chosen: Sequence[str],
    ignored: Sequence[str],
) -> ObservationFile:
    reader = csv.reader(io.StringIO(text))
    try:
        columns = next(reader, [])
        responses = _response_columns(path, columns, factors, chosen, ignored)
        observations, lines = [], []
        for row in reader:
            if not row:
                continue  # a blank line, as csv.DictReader skips it
            observations.append(
                _observation(path, reader.line_num, columns, row, factors, responses)
            )
            lines.append(reader.line_num)
    except csv.Error as error:
        raise ObservationFileError(f"{path}, line {reader.line_num}: {error}") from None
    if not observations:
        raise ObservationFileError(f"{path}: no rows under the header")
    return ObservationFile(path, observations, tuple(lines))


def _response_columns(
    path: Path,
    columns: Sequence[str],
    factors: Sequence[str],
    chosen: Sequence[str],
    ignored: Sequence[str],
) -> list[str]:
    """The header's response columns; ObservationFileError naming line 1 for a column that
    repeats, is missing, or is none of factor, response, layout, label or ignored."""
    if not columns:
        raise ObservationFileError(f"{path}, line 1: no header (one column name per field)")
    repeated = sorted({c for c in columns if columns.count(c) > 1})
    if repeated:
        raise ObservationFileError(f"{path}, line 1: column {', '.join(repeated)} appears twice")
    missing = [name for name in (*factors, *chosen, *ignored) if name not in columns]
    if missing:
        raise ObservationFileError(
            f"{path}, line 1: no column {', '.join(missing)}; columns: {', '.join(columns)}"
        )
    known = (*factors, *LAYOUT_COLUMNS, *IGNORED_COLUMNS, *ignored)
    rest = [c for c in columns if c not in known]
    extra = [c for c in rest if c not in chosen]
    if chosen and extra:
        raise ObservationFileError(
            f"{path}, line 1: column {extra[0]!r} is neither a factor, a response (--response),"
            f" {' nor '.join(LAYOUT_COLUMNS)} nor a label ({', '.join(IGNORED_COLUMNS)}):"
            f" import it with --response {extra[0]} or leave it out with --ignore-columns"
            f" {extra[0]}"
        )
    if not rest:
        raise ObservationFileError(f"{path}: no response column besides the factors")
    return rest


def _observation(
    path: Path,
    line: int,
    columns: Sequence[str],
    values: Sequence[str],
    factors: Sequence[str],
    responses: Sequence[str],
) -> dict[str, Any]:
    if len(values) != len(columns):
        raise ObservationFileError(
            f"{path}, line {line}: {len(values)} values for {len(columns)} columns"
        )
    row = dict(zip(columns, values, strict=True))
    for name in factors:
        if not row[name].strip():
            raise ObservationFileError(
                f"{path}, line {line}, column {name}: empty; every row needs each factor's value"
            )
    observation: dict[str, Any] = {
        "config": {name: _value(row[name]) for name in factors},
        "responses": {
            name: _number(path, line, name, row[name]) for name in responses if row[name]
        },
    }
    if not observation["responses"]:
        raise ObservationFileError(
            f"{path}, line {line}: no response value (every cell of {', '.join(responses)} is"
            " empty)"
        )
    for name in LAYOUT_COLUMNS:
        if row.get(name):
            observation[name] = _whole(path, line, name, row[name])
    return observation


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


def _whole(path: Path, line: int, column: str, text: str) -> int:
    number = _number(path, line, column, text)
    if not number.is_integer():
        raise ObservationFileError(f"{path}, line {line}: {column} {text!r} is not a whole number")
    return int(number)


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
