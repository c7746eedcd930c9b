"""Provider options, restart-only settings and two sites on the lab: real nodes, restarted one
at a time, some in two network namespaces joined by the delay proxy.

The suite's lab serves the module (`suite_lab_layout`, as in tests/worker/test_galera.py);
the trials run through `LabTarget` itself, as the worker runs them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import stopped_at_the_end
from worker.galera_sql import global_status, global_variables, provider_options
from worker.lab.cli import print_status
from worker.lab.layout import LabLayout
from worker.lab.supervisor import LabCluster
from worker.lab.wan.routes import Delay
from worker.lab.wan.sites import Wan
from worker.targets.base import InfeasibleError
from worker.targets.lab import LabTarget, settings_of

pytestmark = pytest.mark.integration

TRIAL = {
    "nodes": 2,
    "clients": 2,
    "threads_per_client": 8,
    "load_nodes": 1,
    "workload": "oltp_write_only",
    "runtime_s": 10,
}


@pytest.fixture(scope="module")
def layout(suite_lab_layout: LabLayout) -> Iterator[LabLayout]:
    """The suite's lab (tests/conftest.py), its cluster stopped after the module."""
    yield from stopped_at_the_end(suite_lab_layout)


def trial_settings(layout: LabLayout) -> dict[str, Any]:
    """The `lab` target settings that describe `layout`, with short, small trials."""
    return settings_of(layout) | {
        "warmup_s": 1,
        "tables": 2,
        "table_size": 1000,
        "commit_probes": 10,
    }


@pytest.fixture(scope="module")
def target(layout: LabLayout) -> Iterator[LabTarget]:
    lab = LabTarget("lab", trial_settings(layout))
    yield lab
    lab.close()


def namespaces(layout: LabLayout) -> list[str]:
    return [
        name
        for name in (layout.namespace(1), layout.namespace(2))
        if Path(f"/run/netns/{name}").exists()
    ]


def listeners(netns: str) -> list[tuple[str, int]]:
    """(local address, pid) of every listening TCP socket in `netns`."""
    done = subprocess.run(
        ["ip", "netns", "exec", netns, "ss", "-Htlnp"], capture_output=True, text=True, check=True
    )
    found = []
    for line in done.stdout.splitlines():
        fields = line.split()
        pid = int(fields[-1].split("pid=")[1].split(",")[0])
        found.append((fields[3], pid))
    return found


def test_provider_options_read_back_on_every_node_and_are_set_back_after(target: LabTarget):
    # Raising both windows needs evs.send_window first, lowering them the other order.
    wide = {"evs.user_send_window": 512, "evs.send_window": 512, "gcs.fc_limit": 256}
    result = target.run(TRIAL | {"sites": 1, "nodes": 2, **wide}, run_key=5)
    for node in target.cluster.nodes():
        options = provider_options(node, target.credentials)
        assert {name: options[name] for name in wide} == {n: str(v) for n, v in wide.items()}
    assert result.record is not None
    assert result.record["plan"]["provider_options"] == {n: str(v) for n, v in wide.items()}
    target.run(TRIAL | {"sites": 1, "nodes": 2}, run_key=6)
    defaults = {"evs.user_send_window": "2", "evs.send_window": "4", "gcs.fc_limit": "16"}
    for node in target.cluster.nodes():
        options = provider_options(node, target.credentials)
        assert {name: options[name] for name in wide} == defaults


def test_a_provider_option_the_running_provider_refuses_is_infeasible(target: LabTarget):
    with pytest.raises(InfeasibleError, match=r"evs\.user_send_window=8 refused by node1"):
        target.run(TRIAL | {"sites": 1, "nodes": 2, "evs.user_send_window": 8}, run_key=7)


def test_a_restart_only_setting_restarts_the_nodes_only_when_it_changes(target: LabTarget):
    def settings_everywhere() -> set[tuple[str, str]]:
        found = set()
        for node in target.cluster.nodes():
            options = provider_options(node, target.credentials)
            log_buffer = global_variables(node, target.credentials, ["innodb_log_buffer_size"])
            found.add(
                (options["gcs.fc_single_primary"].lower(), log_buffer["innodb_log_buffer_size"])
            )
        return found

    first = {"gcs.fc_single_primary": "yes", "innodb_log_buffer_size": str(8 << 20)}
    assert target.cluster.configure(first) > 0
    assert settings_everywhere() == {("yes", str(8 << 20))}
    # The same settings again: nothing to restart.
    assert target.cluster.configure(first) == 0
    second = {"gcs.fc_single_primary": "no", "innodb_log_buffer_size": 16 << 20}
    changed = target.run(TRIAL | {"sites": 1, **second}, run_key=11)
    assert changed.responses["restart_s"] > 0
    assert settings_everywhere() == {("no", str(16 << 20))}
    # Primary and whole after each: every trial checks health before and after its run.
    assert changed.record is not None
    assert changed.record["plan"]["restart_settings"] == {
        "gcs.fc_single_primary": "no",
        "innodb_log_buffer_size": str(16 << 20),
    }
    # Without the factors the nodes go back to the lab's own configuration.
    assert target.cluster.configure({}) > 0
    assert {fc for fc, _ in settings_everywhere()} == {"no"}


def test_a_restart_only_value_the_server_refuses_is_infeasible(target: LabTarget):
    with pytest.raises(InfeasibleError, match="does not start with innodb_flush_method=no_such"):
        target.run(TRIAL | {"sites": 1, "innodb_flush_method": "no_such"}, run_key=13)
    target.recover()  # what the worker does after any failed trial


def test_two_sites_100_ms_apart_commit_in_one_round_trip_and_run_slower(
    target: LabTarget, layout: LabLayout, capsys: pytest.CaptureFixture[str]
):
    local = target.run(TRIAL | {"sites": 1}, run_key=2)
    assert local.responses["commit_latency_ms"] < 20
    assert local.record is not None and local.record["plan"]["sites"] == 1
    wan = target.run(TRIAL | {"sites": 2, "wan_rtt_ms": 100}, run_key=3)
    print(
        f"commit latency {wan.responses['commit_latency_ms']:.1f} ms; tps one site "
        f"{local.responses['tps']:.0f}, two sites {wan.responses['tps']:.0f}"
    )
    assert 100 <= wan.responses["commit_latency_ms"] < 130, wan.responses
    # The study's fact: the round trip caps what the same clients can commit.
    assert wan.responses["tps"] < 0.5 * local.responses["tps"], (wan, local)
    # Every node is in its site's namespace and sees the whole cluster in two segments.
    nodes = target.cluster.nodes()
    assert [n.netns for n in nodes] == [layout.namespace(1), layout.namespace(2)]
    for node in nodes:
        status = global_status(node, target.credentials, ["wsrep_cluster_size"])
        assert status["wsrep_cluster_size"] == "2"
    # In site 2, node 1's Galera ports are served by the proxy alone: nothing bypasses it.
    proxy = Wan(target.cluster.layout).state()
    assert proxy is not None and proxy["rtt_ms"] == 100
    print_status(target.cluster.status())
    assert "two sites (odd nodes in site 1, even in site 2), 100 ms round trip" in (
        capsys.readouterr().out
    )
    node1 = target.cluster.layout.address(1)
    serving = {pid for address, pid in listeners(layout.namespace(2)) if address.startswith(node1)}
    assert node1 != "127.0.0.1"
    assert serving == {proxy["pid"]}


def test_a_new_round_trip_applies_without_moving_the_nodes(target: LabTarget):
    def pids() -> list[int]:
        return [node["pid"] for node in target.cluster.status()["nodes"]]

    before = pids()
    nearer = target.run(TRIAL | {"sites": 2, "wan_rtt_ms": 0}, run_key=4)
    assert nearer.responses["commit_latency_ms"] < 20
    assert pids() == before


def test_leaving_two_sites_the_last_node_leaves_cleanly_and_the_cluster_comes_back(
    target: LabTarget,
):
    target.cluster.place(1, Delay())
    # Each node waited for the others to see the previous one leave: node 1 knew it was last.
    grastate = (target.cluster.layout.datadir(1) / "grastate.dat").read_text()
    assert "safe_to_bootstrap: 1" in grastate
    assert target.run(TRIAL | {"sites": 1}, run_key=8).responses["commit_latency_ms"] < 20


def test_lab_down_removes_nodes_proxy_and_namespaces_after_the_worker_was_killed(
    layout: LabLayout, target: LabTarget, tmp_path: Path
):
    target.close()
    assert not namespaces(layout)
    # A worker that put the nodes on two sites dies without a word.
    script = (
        "import sys; from worker.lab.supervisor import LabCluster; "
        "from worker.targets.lab import layout_from; from worker.lab.wan.routes import Delay; "
        "import json; lab = LabCluster(layout_from(json.loads(sys.argv[1]))); "
        "lab.place(2, Delay(rtt_ms=20)); lab.resize(2); print('up', flush=True); "
        "import time; time.sleep(600)"
    )
    worker = subprocess.Popen(
        [sys.executable, "-c", script, json.dumps(trial_settings(layout))],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout is not None and worker.stdout.readline().strip() == "up"
        state = Wan(LabCluster(layout).layout).state()
        assert state is not None and len(namespaces(layout)) == 2
        nodes = json.loads((layout.base_dir / "lab.json").read_text())["nodes"]
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
    targets = tmp_path / "targets.yaml"
    targets.write_text(
        yaml.safe_dump(
            {"targets": [{"name": "lab", "kind": "lab", "settings": trial_settings(layout)}]}
        )
    )
    down = subprocess.run(
        [sys.executable, "-m", "worker.lab", "down"],
        env=os.environ | {"GALERA_DOE_TARGETS_FILE": str(targets)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert down.returncode == 0, down.stderr
    deadline = time.monotonic() + 10
    pids = [state["pid"], *(node["pid"] for node in nodes)]
    while any(Path(f"/proc/{pid}").exists() for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    assert not namespaces(layout)
    assert not (layout.base_dir / "wan.json").exists()
