"""The import rules of DESIGN.md, checked with import-linter (contracts in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_import_rules_hold(repo_root: Path):
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=repo_root, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "9 kept, 0 broken" in result.stdout, result.stdout
