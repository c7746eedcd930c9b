"""What the targets on an operator's own cluster (`external`, `ssh`) share: the SQL account,
its password read from the environment variable the targets file names (never the password
itself), and the file in the worker's state directory that keeps the values the trials'
settings replaced until they are set back (`worker.targets.restore`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from worker import galera_sql, sysbench
from worker.targets import restore
from worker.targets.base import TargetError


class OperatorAccount:
    """`credentials` and `restore_file` of a target on the operator's cluster: a mixin listed
    before the target's ClusterTarget base, filled by `read_account` in its __init__."""

    _credentials: galera_sql.Credentials
    _restore_file: Path

    def read_account(self, name: str, settings: Mapping[str, Any]) -> None:
        """Read the SQL user, its password (`password_env`) and the state directory
        (`state_dir`, by default ~/.local/state/galera-doe); TargetError naming what is wrong."""
        password_env = settings.get("password_env")
        if password_env and password_env not in os.environ:
            raise TargetError(f"target '{name}': environment variable {password_env} is not set")
        password = os.environ.get(str(password_env), "") if password_env else ""
        try:
            sysbench.check_password(password)
        except ValueError as error:
            raise TargetError(f"target '{name}': the password in {password_env}: {error}") from None
        self._credentials = galera_sql.Credentials(
            user=str(settings.get("user", "root")), password=password
        )
        state_dir = Path(settings.get("state_dir") or restore.DEFAULT_STATE_DIR).expanduser()
        self._restore_file = restore.external_file(state_dir, name)

    @property
    def credentials(self) -> galera_sql.Credentials:
        """The operator's user, with the password read from the environment."""
        return self._credentials

    @property
    def restore_file(self) -> Path:
        """In the worker's state directory, under the target's name."""
        return self._restore_file
