"""The file of the values to set back (`worker.targets.restore`); on real clusters, with a
killed worker, in tests/integration/test_lab.py."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from worker.targets import restore
from worker.targets.base import TargetError
from worker.targets.external import ExternalTarget

SAVED = restore.Originals(
    {"max_connect_errors": 100, "long_query_time": 10.0}, {"gcs.fc_limit": "16"}
)


def test_what_is_saved_is_loaded_back_by_another_reader(tmp_path: Path):
    path = tmp_path / "state" / "restore" / "t.json"
    assert restore.load(path) == restore.Originals()
    restore.save(path, SAVED)
    assert restore.load(path) == SAVED
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # Written beside it and renamed over it: no temporary file is left.
    assert [p.name for p in path.parent.iterdir()] == ["t.json"]


def test_nothing_left_to_set_back_removes_the_file(tmp_path: Path):
    path = tmp_path / "t.json"
    restore.save(path, SAVED)
    kept = SAVED.only(["max_connect_errors"], [])
    assert kept == restore.Originals({"max_connect_errors": 100}, {})
    restore.save(path, kept)
    assert restore.load(path) == kept
    restore.save(path, SAVED.only([], []))
    assert not path.exists()
    restore.save(path, restore.Originals())  # and again: nothing to remove


@pytest.mark.parametrize("text", ["{not json", '{"variables": {}}', "[]"])
def test_an_unreadable_file_is_an_error_not_nothing_to_set_back(tmp_path: Path, text: str):
    path = tmp_path / "t.json"
    path.write_text(text)
    with pytest.raises(TargetError, match="cannot read the settings to set back"):
        restore.load(path)


def test_an_external_targets_file_is_in_its_state_dir_under_its_name(tmp_path: Path):
    odd = restore.external_file(tmp_path, "../prod cluster/1")
    assert odd.parent == tmp_path / "restore" and odd.name == "..%2Fprod%20cluster%2F1.json"
    settings = {"nodes": [{"host": "db1"}], "state_dir": str(tmp_path)}
    assert ExternalTarget("dc", settings).restore_file == tmp_path / "restore" / "dc.json"
    default = ExternalTarget("dc", {"nodes": [{"host": "db1"}]}).restore_file
    assert default == restore.DEFAULT_STATE_DIR / "restore" / "dc.json"


def test_a_password_sysbench_cannot_read_is_refused_when_the_target_is_built(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("GALERA_DOE_ODD_PASSWORD", "two\nlines")
    settings = {"nodes": [{"host": "db1"}], "password_env": "GALERA_DOE_ODD_PASSWORD"}
    with pytest.raises(TargetError, match=r"GALERA_DOE_ODD_PASSWORD: password: .*line break"):
        ExternalTarget("dc", settings)
