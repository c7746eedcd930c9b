"""Real trials: the API and a Celery worker run sysbench on a real local Galera cluster.

The lab cluster is the suite's (`suite_lab_layout`: a directory and ports of its own, so it
never meets a lab the developer runs); the same cluster is also declared as an `external` target.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.config import Settings
from client.http import Client
from client.processes import running_service
from experiments.galera.kinds import MIN_RUNTIME_S
from experiments.galera.responses import MEASURED_RESPONSES
from experiments.galera.variable_policy import SETTINGS_KEY
from tests.conftest import clear_trial_queues, stopped_at_the_end
from tests.integration.test_end_to_end import run_to_completion
from tests.integration.test_optimization_loop import wait_for_loop
from worker import galera_sql, sysbench, sysbench_output
from worker.lab import layout as lab_layout
from worker.lab import supervisor as lab_supervisor
from worker.lab.cli import print_status
from worker.targets.base import InfeasibleError, TargetError, TrialResult
from worker.targets.external import ExternalTarget
from worker.targets.lab import LabTarget, settings_of

pytestmark = pytest.mark.integration

# These tests check that trials run and what they record, not how long or how steady: the
# shortest trials the targets accept, with no warm-up.
RUNTIME_S = MIN_RUNTIME_S
TRIAL_SETTINGS = {
    "warmup_s": 0,
    "tables": 2,
    "table_size": 1000,
    "defaults": {"runtime_s": RUNTIME_S},
}
PASSWORD_ENV = "GALERA_DOE_IT_PASSWORD"
# Not in the catalogue of server variables, and read-only on the server.
READ_ONLY = "innodb_page_size"


@pytest.fixture(scope="module")
def layout(suite_lab_layout: lab_layout.LabLayout) -> Iterator[lab_layout.LabLayout]:
    """The suite's lab (tests/conftest.py), its cluster stopped after the module."""
    yield from stopped_at_the_end(suite_lab_layout)


@pytest.fixture(scope="module")
def cluster(layout: lab_layout.LabLayout) -> Iterator[lab_supervisor.LabCluster]:
    """A two-node cluster brought up here, so its credentials are known to the external target."""
    lab = lab_supervisor.LabCluster(layout)
    lab.resize(2)
    yield lab
    lab.stop()


@pytest.fixture(scope="module")
def settings(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The lab is what is under test here, not the metadata database: one SQLite file."""
    path = tmp_path_factory.mktemp("lab-db") / "lab.sqlite3"
    return Settings(database_url=f"sqlite+aiosqlite:///{path}", broker_url=redis_url)


@pytest.fixture(scope="module")
def service_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the service's targets file and its API and worker logs are."""
    return tmp_path_factory.mktemp("lab-service")


@pytest.fixture(scope="module")
def service(
    settings: Settings,
    layout: lab_layout.LabLayout,
    cluster: lab_supervisor.LabCluster,
    service_dir: Path,
) -> Iterator[Client]:
    """API and worker whose targets are the lab (adopting the running cluster) and the same
    nodes declared as an external cluster."""
    directory = service_dir
    # The operator widens the catalogue by a read-only variable, which the server then refuses.
    lab_settings = settings_of(layout) | TRIAL_SETTINGS | {SETTINGS_KEY: {"allow": [READ_ONLY]}}
    external_nodes = [{"host": n.host, "port": n.port} for n in cluster.nodes()]
    targets = {
        "targets": [
            {"name": "lab-it", "kind": "lab", "settings": lab_settings},
            {
                "name": "external-it",
                "kind": "external",
                "settings": {
                    "nodes": external_nodes,
                    "user": cluster.credentials.user,
                    "password_env": PASSWORD_ENV,
                    "state_dir": str(directory / "state"),
                    **TRIAL_SETTINGS,
                },
            },
        ]
    }
    targets_file = directory / "targets.yaml"
    targets_file.write_text(yaml.safe_dump(targets))
    clear_trial_queues(settings.broker_url)
    env = os.environ | {
        "GALERA_DOE_DATABASE_URL": settings.database_url,
        "GALERA_DOE_BROKER_URL": settings.broker_url,
        "GALERA_DOE_TARGETS_FILE": str(targets_file),
        PASSWORD_ENV: cluster.credentials.password,
    }
    with running_service(env, directory, stop_timeout=90) as running:
        yield running.client


def test_real_trials_resize_the_cluster_and_set_variables(
    service: Client, cluster: lab_supervisor.LabCluster
):
    spec = {
        "name": "lab: nodes x applier threads",
        "target": "lab-it",
        "factors": [
            {"name": "nodes", "kind": "integer", "levels": [2, 3], "hard_to_change": True},
            {"name": "wsrep_slave_threads", "kind": "integer", "levels": [1, 4]},
        ],
        "design": {"kind": "full_factorial", "seed": 4},
        "objective": {"response": "tps"},
    }
    created, done = run_to_completion(service, spec, timeout=600)
    trials = sorted(service.trials(created["id"]), key=lambda t: t["run_order"])
    assert done["progress"]["succeeded"] == len(trials) == 4, [t["error"] for t in trials]
    for trial in trials:
        responses = trial["responses"]
        assert set(responses) == set(MEASURED_RESPONSES)
        assert responses["tps"] > 0 and responses["qps"] > responses["tps"]
        assert 0 < responses["latency_avg_ms"] <= responses["latency_p95_ms"]
        assert responses["tps_se"] >= 0 and responses["tps_steady"] > 0
        assert 0 <= responses["abort_rate"] < 0.5
        detail = service.trial(trial["id"])
        assert "SQL statistics" in detail["raw_output"]
        kept = detail["record"]
        assert kept["plan"]["variables"] == {
            "wsrep_slave_threads": trial["config"]["wsrep_slave_threads"]
        }
        assert len(kept["nodes"]) == trial["config"]["nodes"]
        for node in kept["nodes"]:
            assert node["variables"]["wsrep_slave_threads"] == str(
                trial["config"]["wsrep_slave_threads"]
            )
            assert "gcache.size" in node["variables"]["wsrep_provider_options"]
            before = int(node["wsrep_status_before"]["wsrep_last_committed"])
            assert int(node["wsrep_status_after"]["wsrep_last_committed"]) > before
        assert kept["versions"]["server"].startswith("1") and kept["versions"]["galera"]
        assert kept["versions"]["sysbench"].startswith("sysbench 1.0")
        # The password reaches sysbench in its --config-file, never on the command line.
        for command in kept["commands"]:
            assert "--config-file=" in command and "--mysql-password" not in command
    # Whole plots: the node count changed once, so the cluster was resized once more.
    nodes = [t["config"]["nodes"] for t in trials]
    assert sum(a != b for a, b in itertools.pairwise(nodes)) == 1
    last = trials[-1]["config"]
    running = lab_supervisor.LabCluster(cluster.layout).nodes()
    assert len(running) == last["nodes"]
    for node in running:
        status = galera_sql.global_status(node, cluster.credentials, ["wsrep_cluster_size"])
        assert int(status["wsrep_cluster_size"]) == last["nodes"]
        with galera_sql.connect(node, cluster.credentials) as connection:
            cursor = connection.cursor()
            cursor.execute("SELECT @@GLOBAL.wsrep_slave_threads")
            assert cursor.fetchone()[0] == last["wsrep_slave_threads"]
    # The service measures what sysbench measures directly, on the cluster as it was left.
    direct = direct_tps(cluster, running[0])
    # Same configuration, same cluster: within a factor of two on this noisy 2-core machine.
    assert direct / 2 < trials[-1]["responses"]["tps"] < direct * 2, (trials[-1], direct)


def direct_tps(cluster: lab_supervisor.LabCluster, node: galera_sql.Node) -> float:
    """tps of sysbench run by hand against `node` as the targets run it (one client, 4 threads,
    the default)."""
    with sysbench.password_file(cluster.credentials.password) as secret:
        connection = sysbench.Connection(
            host=node.host,
            port=node.port,
            user=cluster.credentials.user,
            database="sbtest1",
            password_file=secret,
        )
        argv = sysbench.run_command(
            connection,
            workload="oltp_read_write",
            threads=4,
            time_s=RUNTIME_S,
            warmup_s=TRIAL_SETTINGS["warmup_s"],
            tables=TRIAL_SETTINGS["tables"],
            table_size=TRIAL_SETTINGS["table_size"],
        )
        done = subprocess.run(
            argv, capture_output=True, text=True, pass_fds=sysbench.inherited(secret)
        )
    return sysbench_output.parse(done.stdout).tps


def test_the_external_target_runs_on_a_declared_cluster(service: Client):
    spec = {
        "name": "external: load on 1 or 2 of the declared nodes",
        "target": "external-it",
        "factors": [{"name": "nodes", "kind": "integer", "levels": [1, 2]}],
        "design": {"kind": "full_factorial", "randomize": False},
        "objective": {"response": "tps"},
    }
    created, done = run_to_completion(service, spec, timeout=300)
    trials = service.trials(created["id"])
    assert done["progress"]["succeeded"] == 2, [t["error"] for t in trials]
    assert all(t["responses"]["tps"] > 0 for t in trials)
    assert all(PASSWORD_ENV not in (service.trial(t["id"])["raw_output"] or "") for t in trials)


def test_a_server_variable_the_server_refuses_is_infeasible_and_not_retried(service: Client):
    spec = {
        "name": "lab: a read-only variable",
        "target": "lab-it",
        "factors": [{"name": READ_ONLY, "kind": "integer", "levels": [16384]}],
        "design": {"kind": "full_factorial"},
        "objective": {"response": "tps"},
    }
    created, _ = run_to_completion(service, spec, timeout=300)
    (trial,) = service.trials(created["id"])
    assert trial["status"] == "failed" and trial["failure"] == "infeasible"
    assert trial["attempts"] == 1 and READ_ONLY in trial["error"]


def test_a_closed_loop_runs_on_a_real_cluster(service: Client):
    # On the lab only: the loop plans rounds the same way whatever runs its trials, and the
    # external target's trials are tested below.
    spec = {
        "name": "closed loop on the lab",
        "target": "lab-it",
        "factors": [
            {"name": "threads_per_client", "kind": "integer", "low": 1, "high": 8, "scale": "log2"}
        ],
        "design": None,
        "objective": {"response": "tps"},
    }
    created = service.create_experiment(spec)
    service.optimize(created["id"], budget=5, strategy="bayes")
    done = wait_for_loop(service, created["id"], timeout=600)
    loop = done["optimization"]
    assert loop["status"] == "stopped" and loop["trials_used"] == 5, loop
    assert loop["stage"] == "bayes" and loop["rounds"] >= 2
    trials = service.trials(created["id"])
    assert all(t["status"] == "succeeded" for t in trials), [t["error"] for t in trials]
    kinds = [t["point_type"] for t in sorted(trials, key=lambda t: t["run_order"])]
    assert kinds[:4] == ["space_filling"] * 4 and kinds[4] in ("bayes", "replicate")


def test_a_variable_one_experiment_set_is_set_back_for_the_next(
    service: Client, cluster: lab_supervisor.LabCluster
):
    def max_connect_errors() -> set[int]:
        values = set()
        for node in lab_supervisor.LabCluster(cluster.layout).nodes():
            with galera_sql.connect(node, cluster.credentials) as connection:
                cursor = connection.cursor()
                cursor.execute("SELECT @@GLOBAL.max_connect_errors")
                values.add(int(cursor.fetchone()[0]))
        return values

    (original,) = max_connect_errors()
    one_run = {"design": {"kind": "full_factorial"}, "objective": {"response": "tps"}}
    setting = {"name": "lab: sets a variable", "target": "lab-it", **one_run, "factors": [
        {"name": "max_connect_errors", "kind": "integer", "levels": [original + 77]}]}  # fmt: skip
    _, done = run_to_completion(service, setting, timeout=300)
    assert done["progress"]["succeeded"] == 1
    assert max_connect_errors() == {original + 77}
    other = {"name": "lab: does not set it", "target": "lab-it", **one_run, "factors": [
        {"name": "threads_per_client", "kind": "integer", "levels": [4]}]}  # fmt: skip
    _, done = run_to_completion(service, other, timeout=300)
    assert done["progress"]["succeeded"] == 1
    assert max_connect_errors() == {original}


def test_the_cluster_password_never_reaches_the_api_the_logs_or_the_raw_output(
    service: Client, cluster: lab_supervisor.LabCluster, service_dir: Path
):
    # The experiments the earlier tests ran on the external target: the logs hold them all.
    ran = service.experiments(target="external-it")
    assert ran, "the external target's tests run before this one"
    trial = service.trials(ran[0]["id"])[0]
    answers = [service.targets(), service.experiment(ran[0]["id"]), service.trial(trial["id"])]
    assert "SQL statistics" in answers[2]["raw_output"]
    password = cluster.credentials.password
    assert len(password) >= 12
    for answer in answers:
        assert password not in json.dumps(answer)
    for log in ("api.log", "worker.log"):
        assert password not in (service_dir / log).read_text(errors="replace"), log


def test_lab_status_is_a_table_of_the_nodes(
    cluster: lab_supervisor.LabCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    state = cluster.status()
    print_status(state)
    out = capsys.readouterr().out
    assert f"lab cluster {state['cluster_name']}" in out
    for node in state["nodes"]:
        row = next(line for line in out.splitlines() if f" {node['name']} " in line)
        assert str(node["pid"]) in row and str(node["client_port"]) in row
        assert "Synced" in row
    assert out.rstrip().endswith(f"{state['size']} node(s), healthy")


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The state directory of the external targets run in this process (not the user's)."""
    return tmp_path_factory.mktemp("worker-state")


def external_settings(cluster: lab_supervisor.LabCluster, state_dir: Path) -> dict[str, Any]:
    """The running lab nodes declared as an external cluster, with the module's trial settings."""
    return {
        "nodes": [{"host": n.host, "port": n.port} for n in cluster.nodes()],
        "user": cluster.credentials.user,
        "password_env": PASSWORD_ENV,
        "state_dir": str(state_dir),
        **TRIAL_SETTINGS,
    }


@pytest.fixture(scope="module")
def external_target(
    cluster: lab_supervisor.LabCluster, state_dir: Path
) -> Iterator[ExternalTarget]:
    """The lab nodes (as the earlier tests left the cluster) declared as an external cluster,
    run in this process."""
    os.environ[PASSWORD_ENV] = cluster.credentials.password
    target = ExternalTarget("external-direct", external_settings(cluster, state_dir))
    yield target
    target.close()
    del os.environ[PASSWORD_ENV]


@pytest.mark.parametrize(
    "workload", ["oltp_point_select", "oltp_update_non_index", "oltp_insert", "oltp_delete"]
)
def test_every_sysbench_workload_prepares_and_runs(
    external_target: ExternalTarget, workload: str
) -> None:
    result = external_target.run(
        {"workload": workload, "clients": 1, "threads_per_client": 2, "runtime_s": RUNTIME_S},
        run_key=1,
    )
    assert result.responses["tps"] > 0 and result.responses["latency_p95_ms"] > 0
    assert result.responses["cert_deps_distance"] >= 0


def test_load_on_one_node_leaves_the_other_to_replicate(
    external_target: ExternalTarget, cluster: lab_supervisor.LabCluster
) -> None:
    nodes = cluster.nodes()

    def questions() -> list[int]:
        return [
            int(galera_sql.global_status(n, cluster.credentials, ["questions"])["questions"])
            for n in nodes
        ]

    before = questions()
    result = external_target.run(
        {"workload": "oltp_read_write", "clients": 2, "threads_per_client": 2,
         "runtime_s": RUNTIME_S, "load_nodes": 1},
        run_key=2,
    )  # fmt: skip
    after = questions()
    loaded, *replicas = (a - b for a, b in zip(after, before, strict=True))
    # Both clients on node 1: the other nodes answer only the target's status queries.
    assert result.responses["tps"] > 0
    assert loaded > 10_000 and all(r < 200 for r in replicas), (loaded, replicas)
    with pytest.raises(InfeasibleError, match=r"load_nodes \(3\) cannot exceed nodes \(2\)"):
        external_target.run({"nodes": 2, "load_nodes": 3, "runtime_s": RUNTIME_S}, run_key=3)


def test_rw_mix_writers_on_two_nodes_abort_more_than_on_one(
    external_target: ExternalTarget,
) -> None:
    # The read/write ratio study's fact: certification conflicts come with several masters.
    config = {"workload": "rw_mix", "clients": 2, "threads_per_client": 4, "runtime_s": RUNTIME_S,
              "write_share": 1.0, "statements_per_trx": 4, "hot_rows": 20}  # fmt: skip
    one = external_target.run({**config, "load_nodes": 1}, run_key=4).responses
    two = external_target.run({**config, "load_nodes": 2}, run_key=5).responses
    assert two["abort_rate"] > one["abort_rate"], (one["abort_rate"], two["abort_rate"])
    assert two["cert_failures"] > one["cert_failures"]
    assert one["tps"] > 0 and two["tps"] > 0


def test_tpcc_reports_notpm_and_rolls_back_about_one_new_order_in_a_hundred(
    external_target: ExternalTarget,
) -> None:
    result = external_target.run(
        {"workload": "tpcc", "warehouses": 1, "clients": 1, "threads_per_client": 4,
         "runtime_s": RUNTIME_S, "load_nodes": 1},
        run_key=6,
    )  # fmt: skip
    responses = result.responses
    assert responses["notpm"] > 1000 and responses["tpmc"] == responses["notpm"]
    assert 0.002 < responses["rollback_rate"] < 0.025, responses["rollback_rate"]
    assert responses["new_order_latency_p95_ms"] > 0
    assert "tpcc-counts: new_order=" in result.raw_output
    assert result.record is not None and "--warehouses=1" in result.record["commands"][0]


def test_a_script_error_fails_the_trial_with_the_scripts_message(
    external_target: ExternalTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "rw_mix.lua"
    broken.write_text(
        'require("oltp_common")\n'
        'sysbench.cmdline.options.write_share = {"share", 0.5}\n'
        "function thread_init() end\n"
        'function event()\n  error("hot set exhausted: 42")\nend\n'
    )
    monkeypatch.setattr(sysbench, "SCRIPTS", tmp_path)
    started = time.monotonic()
    with pytest.raises(TargetError, match="hot set exhausted: 42"):
        external_target.run(
            {"workload": "rw_mix", "clients": 1, "runtime_s": RUNTIME_S, "write_share": 0.5},
            run_key=7,
        )
    assert time.monotonic() - started < 30


def test_the_external_target_restarts_node_by_node_with_the_operators_command(
    cluster: lab_supervisor.LabCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    calls = tmp_path / "restarts.log"
    # The operator's command: this one records its arguments; a real one writes them where
    # the server reads its configuration and restarts it.
    record = ["sh", "-c", f'echo "$0 $*" >> {calls}']
    nodes = [
        {"host": n.host, "port": n.port, "restart": [*record, f"node{i}"]}
        for i, n in enumerate(cluster.nodes(), start=1)
    ]
    monkeypatch.setenv(PASSWORD_ENV, cluster.credentials.password)
    settings = {"nodes": nodes, "user": cluster.credentials.user, "password_env": PASSWORD_ENV}
    target = ExternalTarget("external-restart", settings)
    assert target.restart_with({}) == 0
    wanted = {"gcache.size": "64M", "innodb_flush_method": "O_DIRECT"}
    assert target.restart_with(wanted) > 0
    names = [f"node{i}" for i in range(1, len(nodes) + 1)]
    once = [f"{name} gcache.size=64M innodb_flush_method=O_DIRECT" for name in names]
    assert calls.read_text().splitlines() == once
    assert target.restart_with(wanted) == 0
    assert target.restart_with(wanted, every_node=True) > 0  # a fresh cluster state
    assert calls.read_text().splitlines() == once + once
    without = dict(settings, nodes=[{k: v for k, v in n.items() if k != "restart"} for n in nodes])
    with pytest.raises(InfeasibleError, match=f"{', '.join(names)} of target 'bare' have no"):
        ExternalTarget("bare", without).restart_with(wanted)
    with pytest.raises(InfeasibleError, match="a fresh cluster state needs a restart"):
        ExternalTarget("bare", without).restart_with({}, every_node=True)


def test_a_fresh_trial_restarts_every_node_before_it_runs(
    layout: lab_layout.LabLayout, cluster: lab_supervisor.LabCluster
):
    # A target of its own on the same lab (it adopts the running nodes); not closed, since
    # closing a lab target stops its nodes.
    target = LabTarget("lab-fresh", settings_of(layout) | TRIAL_SETTINGS)
    config = {"nodes": 2, "clients": 2, "threads_per_client": 2, "runtime_s": RUNTIME_S}

    def uptimes() -> list[int]:
        return [
            int(galera_sql.global_status(node, cluster.credentials, ["uptime"])["uptime"])
            for node in target.cluster.nodes()
        ]

    assert target.run(config, run_key=1).responses["restart_s"] == 0
    assert min(uptimes()) >= RUNTIME_S
    started = time.monotonic()
    fresh = target.run(config, run_key=2, fresh=True)
    elapsed = time.monotonic() - started
    assert fresh.responses["restart_s"] > 0 and fresh.responses["tps"] > 0
    # Both nodes started during the trial, before its benchmark ran.
    assert len(uptimes()) == 2 and max(uptimes()) <= elapsed + 1
    assert max(uptimes()) >= RUNTIME_S


# A worker in a process of its own: it builds the target and runs one trial, and is killed.
WORKER = """
import json, sys
from worker.targets import build_target
from experiments.galera.target_spec import TargetSpec
kind, name, settings, config = json.loads(sys.argv[1])
build_target(TargetSpec(name=name, kind=kind, settings=settings)).run(config, run_key=1)
"""


def read_settings(cluster: lab_supervisor.LabCluster) -> list[tuple[int, str]]:
    """max_connect_errors and gcs.fc_limit on every running node."""
    found = []
    for node in lab_supervisor.LabCluster(cluster.layout).nodes():
        value = galera_sql.read_globals(node, cluster.credentials, ["max_connect_errors"])
        options = galera_sql.provider_options(node, cluster.credentials)
        found.append((int(value["max_connect_errors"]), options["gcs.fc_limit"]))
    return found


@pytest.mark.parametrize("kind", ["lab", "external"])
def test_a_setting_left_by_a_killed_worker_is_set_back_by_the_next_trial(
    kind: str,
    layout: lab_layout.LabLayout,
    cluster: lab_supervisor.LabCluster,
    state_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, cluster.credentials.password)
    cluster.resize(2)
    settings = (
        settings_of(layout) | TRIAL_SETTINGS
        if kind == "lab"
        else external_settings(cluster, state_dir)
    )
    name = f"{kind}-killed"
    originals = read_settings(cluster)
    assert len(set(originals)) == 1, originals
    ((errors, fc_limit),) = set(originals)
    changed = {"max_connect_errors": errors + 123, "gcs.fc_limit": int(fc_limit) + 7}
    trial = {"nodes": 2, "runtime_s": RUNTIME_S}
    argument = json.dumps([kind, name, settings, trial | changed])
    # A session of its own: the kill takes the worker and its sysbench processes at once, as
    # the machine's OOM killer or a power cut would.
    worker = subprocess.Popen([sys.executable, "-c", WORKER, argument], start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        wanted = [(changed["max_connect_errors"], str(changed["gcs.fc_limit"]))] * 2
        while read_settings(cluster) != wanted:
            assert worker.poll() is None and time.monotonic() < deadline, read_settings(cluster)
            time.sleep(0.2)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    assert read_settings(cluster) == wanted  # what the killed worker left
    # The next worker: a target of the same name, in this process, runs a trial without them.
    target = LabTarget(name, settings) if kind == "lab" else ExternalTarget(name, settings)
    assert target.restore_file.exists()
    target.run(trial, run_key=2)
    assert read_settings(cluster) == originals
    assert not target.restore_file.exists()


def sysbench_children() -> dict[int, bytes]:
    """The raw command line (/proc/<pid>/cmdline) of every sysbench this process runs now."""
    found = {}
    for children in Path(f"/proc/{os.getpid()}/task").glob("*/children"):
        for pid in map(int, children.read_text().split()):
            with contextlib.suppress(OSError):
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                if cmdline.startswith(b"sysbench\0"):
                    found[pid] = cmdline
    return found


def test_sysbench_never_has_the_password_on_its_command_line(
    external_target: ExternalTarget, cluster: lab_supervisor.LabCluster
) -> None:
    password = cluster.credentials.password.encode()
    seen: dict[int, bytes] = {}
    results: list[TrialResult] = []
    # Prepared again, so that the prepare's sysbench is seen too.
    external_target.reprepare = True
    trial = threading.Thread(
        target=lambda: results.append(
            external_target.run({"nodes": 2, "runtime_s": RUNTIME_S}, run_key=8)
        )
    )
    try:
        trial.start()
        while trial.is_alive():
            for pid, cmdline in sysbench_children().items():
                arguments = cmdline.rstrip(b"\0").split(b"\0")
                if pid not in seen and arguments[-1] in (b"prepare", b"run"):
                    seen[pid] = cmdline
                    (option,) = [a for a in arguments if a.startswith(b"--config-file=")]
                    # The file it reads: one in memory that it inherited, on no disk.
                    own = option.decode().split("=", 1)[1].replace("self", str(pid))
                    assert os.readlink(own) == "/memfd:galera-doe-sysbench-password (deleted)"
            time.sleep(0.01)
        trial.join()
    finally:
        external_target.reprepare = False
    assert results and results[0].responses["tps"] > 0
    commands = [cmdline.rstrip(b"\0").rsplit(b"\0", 1)[-1] for cmdline in seen.values()]
    assert sorted(commands) == [b"prepare", b"run"], seen
    for cmdline in seen.values():
        assert password not in cmdline and b"--mysql-password" not in cmdline


def dense_rows(node: galera_sql.Node, credentials: galera_sql.Credentials) -> list[tuple]:
    """(rows, smallest id, largest id) of each table of sbtest1."""
    with galera_sql.connect(node, credentials) as connection, connection.cursor() as cursor:
        found = []
        for table in range(1, TRIAL_SETTINGS["tables"] + 1):
            cursor.execute(f"SELECT COUNT(*), MIN(id), MAX(id) FROM sbtest1.sbtest{table}")
            found.append(cursor.fetchone())
        return found


def test_a_schema_is_prepared_once_and_again_only_after_it_drifted(
    cluster: lab_supervisor.LabCluster, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, cluster.credentials.password)
    cluster.resize(2)
    settings = external_settings(cluster, state_dir)
    node, credentials = cluster.nodes()[0], cluster.credentials
    with galera_sql.connect(node, credentials) as connection, connection.cursor() as cursor:
        cursor.execute("DROP DATABASE IF EXISTS sbtest1")

    def prepares(target: ExternalTarget, config: dict[str, Any]) -> list[str]:
        with sysbench.password_file(credentials.password) as secret:
            return target.prepare_schemas(node, target.plan(config), secret=secret)

    read_write = {"nodes": 2, "runtime_s": RUNTIME_S}
    assert prepares(ExternalTarget("schema-1", settings), read_write) == ["sbtest1"]
    # Ids 1..table_size on a 2-node cluster, whose auto-increment step is 2.
    size = TRIAL_SETTINGS["table_size"]
    assert dense_rows(node, credentials) == [(size, 1, size)] * TRIAL_SETTINGS["tables"]
    # Another worker finds it complete: it checks in well under the second a prepare takes.
    started = time.monotonic()
    assert prepares(ExternalTarget("schema-2", settings), read_write) == []
    assert time.monotonic() - started < 0.5
    # oltp_read_write deletes and inserts the same ids: the schema keeps its rows.
    second = ExternalTarget("schema-2", settings)
    second.run(read_write, run_key=9)
    assert dense_rows(node, credentials) == [(size, 1, size)] * TRIAL_SETTINGS["tables"]
    assert prepares(ExternalTarget("schema-3", settings), read_write) == []
    # oltp_insert adds rows: past the bound (5 %) the next trial prepares the schema again.
    second.run(read_write | {"workload": "oltp_insert"}, run_key=10)
    grown = sum(rows for rows, _, _ in dense_rows(node, credentials))
    assert grown > 1.05 * size * TRIAL_SETTINGS["tables"]
    assert prepares(second, read_write) == ["sbtest1"]
    assert dense_rows(node, credentials) == [(size, 1, size)] * TRIAL_SETTINGS["tables"]
