"""The `ssh` target's client hosts and the operator's own workload, on emulated hosts
(`tests.ssh_hosts`): each client's sysbench runs over SSH in its own host's network namespace,
the outputs merged into one set of responses. One set of hosts and one single-node cluster for
the module; the tests run in file order (the close last)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ssh_hosts import PASSWORD_ENV, SQL_PASSWORD, Emulation, emulation, password  # noqa: F401
from worker.targets.base import TargetError, TrialCancelledError, TrialResult
from worker.targets.ssh.clients import ClientLoad
from worker.targets.ssh.target import SshTarget

pytestmark = pytest.mark.integration

NAME = "ssh-clients"
SHORT = {"nodes": 1, "threads_per_client": 1, "runtime_s": 10}
# The operator's workload: `rows_per_trx` point selects per transaction, between BEGIN and
# COMMIT, so sysbench counts rows_per_trx + 2 queries per transaction.
ROWS_LUA = """
sysbench.cmdline.options = {
  rows_per_trx = {"Point selects per transaction", 1},
  tables = {"Tables", 1},
  table_size = {"Rows per table", 10000},
}
function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end
function thread_done()
  con:disconnect()
end
function event()
  con:query("BEGIN")
  for i = 1, sysbench.opt.rows_per_trx do
    local id = sysbench.rand.uniform(1, sysbench.opt.table_size)
    con:query("SELECT c FROM sbtest1 WHERE id = " .. id)
  end
  con:query("COMMIT")
end
"""
ROWS = {"script": "", "options": {"rows_per_trx": {"kind": "integer", "range": [1, 10]}}}


@pytest.fixture(scope="module")
def rows_script(emulation: Emulation) -> Path:  # noqa: F811
    script = emulation.root / "rows.lua"
    script.write_text(ROWS_LUA)
    return script


@pytest.fixture(scope="module")
def target(emulation: Emulation, password: None, rows_script: Path) -> Iterator[SshTarget]:  # noqa: F811
    workloads = {"rows": ROWS | {"script": str(rows_script)}}
    made = SshTarget(NAME, emulation.settings(stop_at_close=True, workloads=workloads))
    yield made
    made.close()


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _client_sysbench(emulation: Emulation) -> list[int]:  # noqa: F811
    return [
        pid
        for host in emulation.clients
        for pid in emulation.processes(host.name)
        if _cmdline(pid)[:1] == ["sysbench"]
    ]


def _sysbench_seen(emulation: Emulation, done: threading.Event) -> dict[str, dict[str, Any]]:  # noqa: F811
    """Each client host's sysbench processes while the trial runs: pid, network namespace,
    command line."""
    seen: dict[str, dict[str, Any]] = {}
    while not done.wait(0.2):
        for host in emulation.clients:
            for pid in emulation.processes(host.name):
                argv = _cmdline(pid)
                if argv[:1] == ["sysbench"] and argv[-1:] == ["run"] and host.name not in seen:
                    netns = os.readlink(f"/proc/{pid}/ns/net")
                    seen[host.name] = {"pid": pid, "netns": netns, "argv": argv}
    return seen


def _service_dirs() -> list[Path]:
    return sorted(Path("/tmp").glob(f"galera-doe-{NAME}.*"))


def _run(target: SshTarget, config: dict[str, Any]) -> tuple[TrialResult, float]:
    started = time.monotonic()
    result = target.run(SHORT | config, run_key=1)
    return result, time.monotonic() - started


def test_a_script_that_does_not_load_fails_naming_the_field(
    emulation: Emulation,  # noqa: F811
    password: None,  # noqa: F811
) -> None:
    broken = emulation.root / "broken.lua"
    broken.write_text("function event(\n")
    workloads = {"broken": {"script": str(broken), "options": {}}}
    target = SshTarget("ssh-broken", emulation.settings(workloads=workloads))
    try:
        with pytest.raises(
            TargetError, match=r"settings\.workloads\.broken\.script: .*does not load in sysbench"
        ):
            target.run(SHORT | {"workload": "broken", "clients": 1}, run_key=1)
    finally:
        target.close()


def test_two_client_hosts_run_sysbench_in_their_own_namespaces(
    target: SshTarget,
    emulation: Emulation,  # noqa: F811
) -> None:
    target.nodes_for(1)  # the cluster bootstrapped before the trial is timed
    done = threading.Event()
    seen: dict[str, dict[str, Any]] = {}
    watcher = threading.Thread(target=lambda: seen.update(_sysbench_seen(emulation, done)))
    watcher.start()
    try:
        result, wall_s = _run(target, {"clients": 2, "workload": "oltp_read_only"})
    finally:
        done.set()
        watcher.join()
    ours = os.readlink("/proc/self/ns/net")
    assert set(seen) == {"client1", "client2"}
    assert len({seen["client1"]["netns"], seen["client2"]["netns"], ours}) == 3
    for process in seen.values():
        assert not any(SQL_PASSWORD in part for part in process["argv"])
        assert "--config-file=/proc/self/fd/3" in process["argv"]

    record = result.record or {}
    clients = record["clients"]
    assert clients["hosts"] == ["client1", "client2"]
    assert result.raw_output.count("SQL statistics:") == 2  # both outputs, merged below
    assert result.responses["tps"] > 0
    assert 0 <= result.responses["client_cpu_busy"] <= 1
    assert result.responses["client_cpu_busy"] == max(clients["cpu_busy"].values())
    assert record["clients_saturated"] == bool(record["saturated_clients"])
    assert clients["start_skew_ms"] < 100
    assert SQL_PASSWORD not in repr(record) and SQL_PASSWORD not in result.raw_output
    # The password file went as the commands started; the scripts stay until the close.
    for directory in _service_dirs():
        assert sorted(p.name for p in directory.iterdir()) == ["rows.lua", "rw_mix.lua", "tpcc.lua"]
    print(
        f"two client hosts: start skew {clients['start_skew_ms']:.1f} ms, client_cpu_busy"
        f" {result.responses['client_cpu_busy']:.2f}, a 10 s trial took {wall_s:.1f} s"
    )


def test_the_operators_workload_runs_with_its_option(target: SshTarget) -> None:
    result, wall_s = _run(target, {"clients": 2, "workload": "rows", "rows_per_trx": 3})
    plan = (result.record or {})["plan"]
    assert plan["workload"] == "rows" and plan["options"] == {"rows_per_trx": 3}
    assert plan["variables"] == {}  # the option is the script's, not a server variable
    assert all("--rows_per_trx=3" in command for command in result.record["commands"])
    # BEGIN, 3 selects, COMMIT: the value reached the script.
    assert result.responses["qps"] / result.responses["tps"] == pytest.approx(5, rel=0.02)
    print(f"the operator's workload on two client hosts: a 10 s trial took {wall_s:.1f} s")


def test_a_cancelled_trial_stops_sysbench_on_the_client_hosts(
    target: SshTarget,
    emulation: Emulation,  # noqa: F811
) -> None:
    cancel = threading.Event()
    threading.Timer(3.0, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(TrialCancelledError):
        target.run(SHORT | {"clients": 2, "runtime_s": 60}, run_key=2, cancel=cancel)
    assert time.monotonic() - started < 20
    deadline = time.monotonic() + 5
    while running := _client_sysbench(emulation):
        assert time.monotonic() < deadline, f"sysbench left running: {running}"
        time.sleep(0.1)
    assert not list(Path("/tmp").glob(f"galera-doe-{NAME}.*/password-*"))


# A worker's trial in a process of its own: the target built from the settings on stdin runs
# two clients for a minute, until the test SIGKILLs it.
_WORKER = """
import json, sys
from worker.targets.ssh.target import SshTarget
target = SshTarget("ssh-killed", json.loads(sys.stdin.read()))
target.run({"nodes": 1, "clients": 2, "threads_per_client": 1, "runtime_s": 60}, run_key=9)
"""


def test_a_killed_worker_leaves_no_sysbench_on_the_client_hosts(
    emulation: Emulation,  # noqa: F811
    password: None,  # noqa: F811
) -> None:
    worker = subprocess.Popen(
        [sys.executable, "-c", _WORKER], stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert worker.stdin is not None
        worker.stdin.write(json.dumps(emulation.settings(), default=str))
        worker.stdin.close()
        deadline = time.monotonic() + 60
        while len([p for p in _client_sysbench(emulation) if _cmdline(p)[-1:] == ["run"]]) < 2:
            if worker.poll() is not None:
                pytest.fail(f"the worker exited: {worker.stderr.read()}")  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "no sysbench started on the client hosts"
            time.sleep(0.2)
        worker.send_signal(signal.SIGKILL)  # as a worker killed mid-trial
        worker.wait()
        deadline = time.monotonic() + 10  # each watchdog sees its channel close
        while running := _client_sysbench(emulation):
            assert time.monotonic() < deadline, f"sysbench left running: {running}"
            time.sleep(0.1)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        # What a killed worker leaves on its client hosts: the directory of its scripts.
        for directory in Path("/tmp").glob("galera-doe-ssh-killed.*"):
            shutil.rmtree(directory, ignore_errors=True)


def test_a_saturated_client_host_is_flagged_by_name() -> None:
    load = ClientLoad(["client1", "client2"], [0.42, 0.97], start_skew_s=0.0042)
    record = load.record()
    assert record["clients_saturated"] is True
    assert record["saturated_clients"] == ["client2"]
    assert record["clients"]["start_skew_ms"] == 4.2
    assert load.responses() == {"client_cpu_busy": 0.97}
    assert ClientLoad(["worker"], [0.5]).record()["clients_saturated"] is False


def test_without_client_hosts_sysbench_runs_on_the_worker(
    emulation: Emulation,  # noqa: F811
    password: None,  # noqa: F811
    rows_script: Path,
) -> None:
    workloads = {"rows": ROWS | {"script": str(rows_script)}}
    local = SshTarget("ssh-local", emulation.settings(clients=[], workloads=workloads))
    try:
        result, wall_s = _run(local, {"clients": 2, "workload": "rows", "rows_per_trx": 2})
    finally:
        local.close()
    record = result.record or {}
    assert record["clients"]["hosts"] == ["worker"]
    assert all(str(rows_script) in command for command in record["commands"])
    assert result.responses["qps"] / result.responses["tps"] == pytest.approx(4, rel=0.02)
    assert 0 <= result.responses["client_cpu_busy"] <= 1
    print(f"clients on the worker: a 10 s trial took {wall_s:.1f} s")


def test_closing_leaves_nothing_on_the_client_hosts(
    target: SshTarget,
    emulation: Emulation,  # noqa: F811
) -> None:
    assert _service_dirs()
    target.close()
    deadline = time.monotonic() + 10
    while left := [p for h in emulation.clients for p in emulation.processes(h.name)]:
        assert time.monotonic() < deadline, f"left on the client hosts: {left}"
        time.sleep(0.2)
    assert not _service_dirs()
    assert not list(Path("/tmp").glob("galera-doe-*/password-*"))
