"""The values a trial's settings replaced on a cluster, kept on disk until they are set back.

A trial sets server variables and provider options with `SET GLOBAL`; a later trial that does
not set them gets back what they were before the first change. Those values live in a file, not
in the worker's memory: written (temporary file, fsync, rename, fsync of the directory) before
the first `SET`, so that after a worker is killed at any point the next trial, by whichever
worker finds the file, sets them back. The lab keeps its file beside its datadirs (the state of
one cluster, whatever target or process drives it); an external target in the worker's state
directory, under the target's name.

Not the metadata database: targets know nothing of it (the import contract), and the file must
be written synchronously, between reading a value and changing it, by the target itself.
"""

from __future__ import annotations

import json
import os
from collections.abc import Container
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from worker.galera_sql import Value
from worker.targets.base import TargetError

# Where an external target keeps its file unless its settings name a directory (state_dir).
DEFAULT_STATE_DIR = (
    Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "galera-doe"
)


@dataclass(frozen=True)
class Originals:
    """What each changed setting was before the first trial changed it, by name."""

    variables: dict[str, Value] = field(default_factory=dict)
    provider_options: dict[str, str] = field(default_factory=dict)

    def only(self, variables: Container[str], provider_options: Container[str]) -> Originals:
        """The originals of the settings named in `variables` and `provider_options` (what
        must still be set back once every other one went back)."""
        return Originals(
            {name: v for name, v in self.variables.items() if name in variables},
            {name: v for name, v in self.provider_options.items() if name in provider_options},
        )


def external_file(state_dir: Path, target: str) -> Path:
    """The file of the external target named `target` (any name, quoted into a file name)."""
    return state_dir / "restore" / f"{quote(target, safe='')}.json"


def load(path: Path) -> Originals:
    """The values to set back that `path` holds, none without a file; TargetError when it
    cannot be read (it may be all that knows of a leaked setting: never ignored)."""
    try:
        data = json.loads(path.read_text())
        return Originals(dict(data["variables"]), dict(data["provider_options"]))
    except FileNotFoundError:
        return Originals()
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise TargetError(f"cannot read the settings to set back from {path}: {error}") from error


def save(path: Path, originals: Originals) -> None:
    """Keep `originals` in `path` atomically and durably; remove the file when nothing is left
    to set back. TargetError when the disk refuses."""
    try:
        if not (originals.variables or originals.provider_options):
            if path.exists():
                path.unlink()
                _sync_directory(path.parent)
            return
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            json.dump(
                {"variables": originals.variables, "provider_options": originals.provider_options},
                handle,
                sort_keys=True,
            )
            handle.flush()
            os.fsync(handle.fileno())
        temporary.replace(path)
        _sync_directory(path.parent)
    except OSError as error:
        raise TargetError(f"cannot keep the settings to set back in {path}: {error}") from error


def _sync_directory(directory: Path) -> None:
    """fsync a directory, so that a rename or unlink in it survives a crash of the machine."""
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
