"""README.md's quick start works exactly as written: its code block runs line by line in one
shell, in a temporary directory that holds the clone's files, on the suite's SQLite database and
Redis database, and must leave the plot it promises. Only two things differ from a new user's
shell: `make` lines are dry runs (the suite runs after `make setup`, and setting up again would
change the shared .venv), so the test migrates the new database as setup does, and the API
listens on a free port instead of 8000."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from pathlib import Path

from app.db.migrate import upgrade_to_head
from client.processes import free_port
from tests.conftest import clear_trial_queues

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SERVE = "galera-doe serve"
DEFAULT_ADDRESS = "127.0.0.1/8000"  # where the API listens, as bash's /dev/tcp names it
PIDS = ".quickstart-pids"


def quickstart_lines() -> list[str]:
    """The commands of the first `sh` block under the README's "Quick start" heading."""
    text = README.read_text()
    section = re.search(r"^## Quick start\n(.*?)(?=^## )", text, re.M | re.S)
    assert section, "README.md has no '## Quick start' section"
    block = re.search(r"^```sh\n(.*?)^```", section.group(1), re.M | re.S)
    assert block, "the quick start has no ```sh code block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def script_of(lines: list[str], port: int) -> str:
    """The lines as one bash script that stops at the first failing command (a pipeline fails
    with any of its commands) and names it, and records the pid of every process it starts in
    the background."""
    body = []
    for line in lines:
        if line.startswith("make "):
            body.append(f"make -n -C {ROOT} {line.removeprefix('make ')} > /dev/null")
            continue
        if SERVE in line:
            line = line.replace(SERVE, f"{SERVE} --port {port}", 1)
        line = line.replace(DEFAULT_ADDRESS, f"127.0.0.1/{port}")
        body.append(line)
        if re.search(r"&\s*(#.*)?$", line):
            body.append(f"echo $! >> {PIDS}")
    trap = "trap 'echo \"quick start line failed: $BASH_COMMAND\" >&2' ERR"
    return "\n".join(["set -eE -o pipefail", trap, *body, ""])


def linked_clone(directory: Path) -> None:
    """Make `directory` look like the clone after `make setup`: its tracked top-level entries
    and .venv, as symbolic links."""
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    for name in {path.split("/", 1)[0] for path in tracked} | {".venv"}:
        (directory / name).symlink_to(ROOT / name)


def database_url(directory: Path) -> str:
    """The quick start's own SQLite database."""
    return f"sqlite+aiosqlite:///{directory / 'quickstart.sqlite3'}"


def quickstart_env(directory: Path, redis_url: str, port: int) -> dict[str, str]:
    """A new user's environment on the test database and broker: no GALERA_DOE_* setting of
    the caller's, and no .venv on PATH (the quick start activates it)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GALERA_DOE_")}
    env.pop("VIRTUAL_ENV", None)
    path = [part for part in env.get("PATH", "").split(os.pathsep) if ".venv" not in part]
    env["PATH"] = os.pathsep.join(path)
    env["GALERA_DOE_DATABASE_URL"] = database_url(directory)
    env["GALERA_DOE_BROKER_URL"] = redis_url
    env["GALERA_DOE_URL"] = f"http://127.0.0.1:{port}"
    return env


def alive(pid: int) -> bool:
    """Whether a process with this pid still exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop_leftovers(pid_file: Path) -> None:
    """Stop, by pid, what the quick start started and did not stop itself."""
    pids = [int(pid) for pid in pid_file.read_text().split()] if pid_file.exists() else []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for pid in pids:
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_the_quickstart_block_is_short_and_on_the_simulated_target():
    lines = quickstart_lines()
    assert len(lines) <= 10, lines
    assert any(SERVE in line for line in lines), "the quick start starts no API"
    assert any("--target simulated" in line for line in lines)
    assert any("keys create" in line for line in lines), "the quick start makes no API key"


def test_the_quickstart_runs_as_written_and_draws_the_plot(tmp_path: Path, redis_url: str):
    lines = quickstart_lines()
    plots = {match for line in lines for match in re.findall(r"-o\s+(\S+\.png)", line)}
    assert plots, "the quick start writes no plot"
    port = free_port()
    linked_clone(tmp_path)
    upgrade_to_head(database_url(tmp_path))  # what `make setup` does to the default database
    clear_trial_queues(redis_url)
    try:
        ran = subprocess.run(
            ["bash", "-c", script_of(lines, port)],
            cwd=tmp_path,
            env=quickstart_env(tmp_path, redis_url, port),
            capture_output=True,
            text=True,
            timeout=150,
            check=False,
        )
    finally:
        stop_leftovers(tmp_path / PIDS)
    logs = "".join(f"\n--- {log.name}\n{log.read_text()[-2000:]}" for log in tmp_path.glob("*.log"))
    assert ran.returncode == 0, f"{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}{logs}"
    for plot in plots:
        image = tmp_path / plot
        assert image.is_file() and image.read_bytes().startswith(b"\x89PNG"), plot
