"""`galera-doe` commands against a real API: the app served by uvicorn in a thread on a free
loopback port (a SQLite database and a Redis database of the module's own), and, for the runs, a
real Celery worker process on the simulated target."""

from __future__ import annotations

import copy
import csv
import io
import json
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import pytest
import redis
import uvicorn
import yaml
from PIL import Image
from typer.main import get_command
from typer.testing import CliRunner, Result

from app.config import Settings
from app.main import create_app
from app.services.api_keys import create_key
from client.cli import cli
from client.http import ApiError, Client
from client.processes import ChildProcess, free_port, wait_until, worker_command
from tests.app.test_api import MANUAL

QUICKSTART = Path(__file__).resolve().parents[2] / "experiments" / "catalog" / "quickstart.yaml"
CLI_REDIS_DB = 12  # the module's own: its worker takes no other test's trial ids
LOOP = {
    "name": "closed loop",
    "target": "simulated",
    "factors": [
        {"name": "nodes", "kind": "integer", "low": 1, "high": 9},
        {"name": "threads_per_client", "kind": "integer", "low": 4, "high": 64, "scale": "log2"},
    ],
    "design": None,
    "objective": {"response": "tps"},
}
PUBLISHED_ROWS = [(1, 8, 596.3), (3, 8, 531.9), (9, 8, 429.2), (9, 40, 1196.0), (3, 48, 1428.9),
                  (9, 160, 1095.7), (5, 40, 1278.6), (4, 40, 1374.1), (1, 160, 800.0),
                  (5, 160, 1150.0)]  # fmt: skip


@dataclass
class Api:
    """The running API: its URL and the Authorization header of every request it received."""

    url: str
    key: str
    authorizations: list[str | None] = field(default_factory=list)


@pytest.fixture(scope="module")
def cli_settings(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """A fresh SQLite file (the API migrates it at start) and a flushed Redis database."""
    broker_url = redis_url.rsplit("/", 1)[0] + f"/{CLI_REDIS_DB}"
    broker = redis.Redis.from_url(broker_url)
    broker.flushdb()
    path = tmp_path_factory.mktemp("cli") / "cli.sqlite3"
    yield Settings(database_url=f"sqlite+aiosqlite:///{path}", broker_url=broker_url)
    broker.flushdb()
    broker.close()


@pytest.fixture(scope="module")
def api(cli_settings: Settings) -> Iterator[Api]:
    """The real app under uvicorn in a background thread, stopped at the end of the module."""
    app = create_app(cli_settings)
    running = Api(url="", key=create_key(cli_settings.database_url, "cli").token)

    async def recording(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            value = dict(scope["headers"]).get(b"authorization")
            running.authorizations.append(value.decode() if value is not None else None)
        await app(scope, receive, send)

    port = free_port()
    config = uvicorn.Config(recording, host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="cli-test-api", daemon=True)
    thread.start()
    assert wait_until(lambda: server.started or not thread.is_alive(), timeout=30)
    assert server.started, "uvicorn did not start"
    running.url = f"http://127.0.0.1:{port}"
    yield running
    server.should_exit = True
    thread.join(timeout=15)


@pytest.fixture(scope="module")
def worker(
    api: Api, cli_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ChildProcess]:
    """One real Celery worker process on the module's database and broker."""
    env = os.environ | {
        "GALERA_DOE_DATABASE_URL": cli_settings.database_url,
        "GALERA_DOE_BROKER_URL": cli_settings.broker_url,
    }
    child = ChildProcess(
        "worker", worker_command("WARNING"), env=env, log_dir=tmp_path_factory.mktemp("worker")
    )
    yield child
    child.stop(timeout=15)


def run(*args: str, api: Api | None = None, env: dict[str, str] | None = None) -> Result:
    """Invoke the CLI in process, wide enough that tables do not wrap; with `api`, against it
    with its key (from the environment, as users set it)."""
    argv, base = list(args), {"COLUMNS": "220"}
    if api is not None:
        argv, base = ["--url", api.url, *args], base | {"GALERA_DOE_API_KEY": api.key}
    return CliRunner().invoke(cli, argv, env=base | (env or {}))


def ok(result: Result) -> str:
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.output}\n{result.exception!r}"
    return result.stdout


def write_yaml(path: Path, spec: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def submitted_id(output: str) -> int:
    found = re.search(r"^experiment (\d+) ", output, re.MULTILINE)
    assert found, output
    return int(found.group(1))


def table_rows(output: str, first_cell: str) -> list[list[str]]:
    """The cells of the table rows of `output` whose first cell matches `first_cell`."""
    rows = []
    for line in output.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]
        if cells and re.fullmatch(first_cell, cells[0]):
            rows.append(cells)
    return rows


# --help

HELP = [
    ([], ["--url", "GALERA_DOE_URL", "--api-key", "GALERA_DOE_API_KEY", "submit", "status",
          "trials", "analysis", "suggest", "optimize", "design", "export", "plot", "serve",
          "worker", "lab", "demo", "start", "cancel", "list", "show-trial", "accept", "observe",
          "report"]),
    (["submit"], ["FILE.yaml", "--wait", "--no-start", "--timeout", "--target", "--model",
                  "--restart-replicates"]),
    (["start"], ["ID", "--wait", "--timeout", "--model", "--restart-replicates"]),
    (["cancel"], ["ID"]),
    (["status"], ["ID"]),
    (["trials"], ["ID"]),
    (["analysis"], ["ID", "--response", "--model"]),
    (["suggest"], ["ID", "--strategy", "--count"]),
    (["strategies"], ["strategies"]),
    (["optimize"], ["ID", "--budget", "--strategy", "--batch-size", "--stop-below",
                    "--restart-replicates", "--wait", "--timeout"]),
    (["design"], ["preview"]),
    (["design", "preview"], ["FILE.yaml"]),
    (["export"], ["ID", "--format", "csv", "plan", "json", "--output"]),
    (["list"], ["--status", "--target", "--limit"]),
    (["show-trial"], ["TRIAL_ID"]),
    (["accept"], ["ID", "SUGGESTION_ID"]),
    (["observe"], ["ID", "FILE.csv|FILE.json"]),
    (["report"], ["ID", "--output", "--format", "markdown", "html"]),
    (["plot"], ["ID", "KIND", "contour", "--output", "--x", "--y", "--response", "--model",
                "--width", "--height"]),
    (["serve"], ["--host", "--port"]),
    (["worker"], ["--loglevel"]),
    (["demo"], ["FILE.yaml", "--timeout", "--model", "--target"]),
    (["lab"], ["up, down or status", "--nodes"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("command", "words"), HELP, ids=[" ".join(c) or "galera-doe" for c, _ in HELP]
)
def test_every_command_has_help_naming_its_options(command: list[str], words: list[str]):
    result = run(*command, "--help")
    out = ok(result)
    for word in words:
        assert word in out, f"{word!r} not in the help of {command}:\n{out}"


def test_every_command_and_parameter_has_help_text():
    def walk(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
        yield path, command
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, f"{path} {name}")

    commands = list(walk(get_command(cli), "galera-doe"))
    assert len(commands) >= 16
    for path, command in commands:
        assert command.help and len(command.help) > 20, f"{path} has no help"
        for param in command.params:
            if param.name != "help" and not param.hidden:
                assert getattr(param, "help", None), f"{path}: {param.name} has no help"


# Submitting and reading experiments


def test_submit_without_start_then_status_trials_export_start_and_cancel(api: Api, tmp_path: Path):
    spec = write_yaml(tmp_path / "quickstart.yaml", yaml.safe_load(QUICKSTART.read_text()))
    out = ok(run("submit", str(spec), "--no-start", "--target", "simulated", api=api))
    assert "'quickstart - nodes and threads' on target 'simulated': 9 planned trials" in out
    assert "not started" in out
    experiment_id = submitted_id(out)

    status = ok(run("status", str(experiment_id), api=api))
    assert f"Experiment {experiment_id} 'quickstart - nodes and threads': planned" in status
    assert "target simulated, maximize tps" in status
    # pending queued running succeeded failed cancelled total
    assert table_rows(status, r"9") == [["9", "0", "0", "0", "0", "0", "9"]], status
    assert "best so far: none yet" in status

    listed = ok(run("trials", str(experiment_id), api=api))
    rows = table_rows(listed, r"\d+")
    assert [int(r[1]) for r in rows] == list(range(1, 10)), listed  # run order
    assert {r[2] for r in rows} == {"pending"}
    assert all(re.fullmatch(r"nodes=[123] threads_per_client=[248]", r[3]) for r in rows), rows
    assert {r[4] for r in rows} == {"n/a"} and {r[5] for r in rows} == {"0"}

    csv_text = ok(run("export", str(experiment_id), "--format", "plan", api=api))
    lines = csv_text.splitlines()
    assert lines[0].startswith("run_order,std_order,block,whole_plot") and len(lines) == 10
    assert "nodes" in lines[0] and "threads_per_client" in lines[0]
    results = ok(run("export", str(experiment_id), api=api)).splitlines()
    assert results[0] == (
        "trial,run_order,block,whole_plot,point_type,source,status,nodes,threads_per_client,error"
    )
    assert len(results) == 10 and all(",pending," in line for line in results[1:])

    output = tmp_path / "trials.json"
    result = run("export", str(experiment_id), "--format", "json", "-o", str(output), api=api)
    ok(result)
    assert result.stdout == "" and f"wrote {output}" in result.stderr
    exported = json.loads(output.read_text())
    assert [t["run_order"] for t in exported] == list(range(1, 10))
    assert {t["experiment_id"] for t in exported} == {experiment_id}

    # No worker runs here: the queued trials wait (and are cancelled, so no worker runs them).
    assert "started: 9 trials queued" in ok(run("start", str(experiment_id), api=api))
    queued = ok(run("status", str(experiment_id), api=api))
    assert table_rows(queued, r"0") == [["0", "9", "0", "0", "0", "0", "9"]], queued
    cancelled = ok(run("cancel", str(experiment_id), api=api))
    assert f"Experiment {experiment_id} 'quickstart - nodes and threads': cancelled" in cancelled
    assert table_rows(cancelled, r"0") == [["0", "0", "0", "0", "0", "9", "9"]], cancelled


def test_start_restart_replicates_marks_the_repeated_configurations(api: Api, tmp_path: Path):
    design = {"kind": "full_factorial", "levels": 2, "centre_points": 3, "seed": 1}
    spec = write_yaml(tmp_path / "centre.yaml", LOOP | {"design": design})
    experiment_id = submitted_id(ok(run("submit", str(spec), "--no-start", api=api)))
    ok(run("start", str(experiment_id), "--restart-replicates", api=api))
    with Client(api.url, api_key=api.key) as client:
        trials = client.trials(experiment_id)
        client.cancel(experiment_id)  # no worker runs them here
    centre = [t["restart_first"] for t in trials if t["point_type"] == "centre"]
    assert centre == [False, True, True]
    assert not any(t["restart_first"] for t in trials if t["point_type"] != "centre")


def test_a_manual_experiment_is_not_started_then_analysed_and_suggested(api: Api, tmp_path: Path):
    spec = write_yaml(tmp_path / "manual.yaml", MANUAL)
    out = ok(run("submit", str(spec), "--wait", api=api))
    assert "on target 'manual': 0 planned trials" in out
    assert "await their observations" in out and "started:" not in out
    experiment_id = submitted_id(out)

    observations = [
        {"config": {"galera_nodes": n, "total_connections": c}, "responses": {"tps": tps}}
        for n, c, tps in PUBLISHED_ROWS
    ]
    with Client(api.url, api_key=api.key) as client:
        client.record_observations(experiment_id, observations)

    status = ok(run("status", str(experiment_id), api=api))
    assert "completed" in status and "best so far: trial" in status and "tps 1428.9" in status

    report = ok(run("analysis", str(experiment_id), "--model", "quadratic", api=api))
    assert "tps ~ quadratic: galera_nodes + total_connections" in report
    assert "from 10 trials (0 failed" in report
    for title in ("Fit", "Coefficients (coded units)", "Factors ranked by effect on tps",
                  "The model's predicted optimum", "(maximize tps)"):  # fmt: skip
        assert title in report, report
    # The answer to deploy comes first; the model's optimum is labelled as what it is.
    assert report.index("Deploy ") < report.index("The model's predicted optimum"), report
    assert "not the configuration" in report, report
    terms = [row[0] for row in table_rows(report, r"Intercept|galera_nodes.*|total_conn.*")]
    assert "Intercept" in terms and "galera_nodes:total_connections" in terms, report
    assert "total_connections^2" in terms
    assert re.search(r"predicted tps \d+\.\d  95% CI \[\d+\.\d, \d+\.\d\]  95% PI \[", report)
    assert re.search(r"R²\s+│\s+0\.\d{4}", report), report

    linear = ok(run("analysis", str(experiment_id), "--model", "linear", api=api))
    assert "tps ~ linear: galera_nodes + total_connections;" in linear
    assert "galera_nodes^2" not in linear

    picture = tmp_path / "contour.png"
    drawn = run("plot", str(experiment_id), "contour", "-o", str(picture), "--width", "640",
                "--height", "480", api=api)  # fmt: skip
    ok(drawn)
    assert f"wrote {picture} (640 x 480)" in drawn.stderr
    assert Image.open(picture).size == (640, 480)
    assert one_error_line(
        run("plot", str(experiment_id), "half_normal", "-o", str(picture), api=api), 1
    ).startswith("error: HTTP 422: kind: the half-normal plot applies")

    plan = ok(run("suggest", str(experiment_id), "--strategy", "bayes", "--count", "2", api=api))
    assert "strategy bayes, stage" in plan and "Suggestions (" in plan, plan
    suggestions = table_rows(plan, r"\d+")
    assert 1 <= len(suggestions) <= 2, plan
    for row in suggestions:
        assert re.fullmatch(r"galera_nodes=\d+ total_connections=\d+", row[2]), row
        assert re.fullmatch(r"\d+\.\d", row[3]) and re.fullmatch(r"\d+\.\d", row[4]), row
        assert row[6], row  # the reason


def test_strategies_lists_the_servers_registry(api: Api):
    out = ok(run("strategies", api=api))
    rows = {row[0]: row for row in table_rows(out, "auto")}
    for name in ("auto", "augment", "steepest_ascent", "bayes", "replicate"):
        assert name in out
    assert rows["auto"][-1] == "yes"


def test_design_preview_prints_the_run_table_and_its_quality(api: Api):
    out = ok(run("design", "preview", str(QUICKSTART), api=api))
    assert "Design: full_factorial, 9 runs" in out
    runs = table_rows(out, r"[1-9]")
    configs = {(r[-3], r[-2]) for r in runs if len(r) >= 5}
    assert configs == {(n, t) for n in "123" for t in "248"}, out
    assert "Quality for the interaction model" in out
    assert re.search(r"D-efficiency\s+│\s+66\.7", out), out
    assert "split-plot run order" in out  # nodes is hard to change


def test_the_api_key_is_sent_as_a_bearer_token_and_the_option_wins(api: Api):
    before = len(api.authorizations)
    ok(run("--api-key", api.key, "design", "preview", str(QUICKSTART), api=api,
           env={"GALERA_DOE_API_KEY": "gdoe_wrong"}))  # fmt: skip
    ok(run("design", "preview", str(QUICKSTART), api=api))
    refused = run("design", "preview", str(QUICKSTART), api=api, env={"GALERA_DOE_API_KEY": ""})
    assert refused.exit_code == 1 and "an API key is required" in refused.stderr
    refused = run("--api-key", "gdoe_wrong", "design", "preview", str(QUICKSTART), api=api)
    assert refused.exit_code == 1 and "not valid or was revoked" in refused.stderr
    bearer = f"Bearer {api.key}"
    assert api.authorizations[before:] == [bearer, bearer, None, "Bearer gdoe_wrong"]


def test_keys_create_list_revoke_on_the_database(api: Api, cli_settings: Settings):
    env = {"GALERA_DOE_DATABASE_URL": cli_settings.database_url}
    made = run("keys", "create", "grace", env=env)
    token = ok(made).strip()
    assert token.startswith("gdoe_") and "\n" not in token
    assert "cannot be shown again" in made.stderr
    listed = ok(run("keys", "list", env=env))
    assert "grace" in listed and token[:13] in listed and token not in listed
    with Client(api.url, api_key=token) as client:
        assert client.targets()
        ok(run("keys", "revoke", token[:13], env=env))
        with pytest.raises(ApiError, match="401"):
            client.targets()
    row = next(line for line in ok(run("keys", "list", env=env)).splitlines() if "grace" in line)
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d\s+│\s+\d{4}-\d\d-\d\d", row), row
    ok(run("keys", "create", "root", "--admin", env=env))
    rows = [line.split("│") for line in ok(run("keys", "list", env=env)).splitlines()]
    roles = {row[2].strip(): row[3].strip() for row in rows if len(row) > 6}
    assert roles["grace"] == "user" and roles["root"] == "admin", roles
    line = one_error_line(run("keys", "create", "bad owner!", env=env), 1)
    assert line.startswith("error: owner: must be 1 to 100 letters"), line
    line = one_error_line(run("keys", "revoke", "gdoe_nothing", env=env), 1)
    assert line == "error: API key gdoe_nothing not found"


def test_the_url_comes_from_the_environment(api: Api):
    env = {"GALERA_DOE_URL": api.url, "GALERA_DOE_API_KEY": api.key}
    out = ok(run("design", "preview", str(QUICKSTART), env=env))
    assert "Design: full_factorial, 9 runs" in out


# Errors: one line on stderr, no traceback


def one_error_line(result: Result, code: int) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_an_api_validation_error_is_one_line_and_exit_1(api: Api, tmp_path: Path):
    spec = yaml.safe_load(QUICKSTART.read_text())
    spec["factors"][1] = {"name": "threads_per_client", "kind": "integer", "low": 8, "high": 2}
    line = one_error_line(run("submit", str(write_yaml(tmp_path / "bad.yaml", spec)),
                              api=api), 1)  # fmt: skip
    assert line.startswith("error: HTTP 422: factors.1.high: "), line
    assert "greater than low" in line

    bad = copy.deepcopy(MANUAL) | {"colour": "red", "target": "nowhere"}
    line = one_error_line(run("submit", str(write_yaml(tmp_path / "worse.yaml", bad)), api=api), 1)
    assert line.startswith("error: HTTP 422: ") and "colour: Extra inputs" in line, line

    line = one_error_line(run("status", "999999", api=api), 1)
    assert line.startswith("error: HTTP 404: ") and "999999" in line, line
    line = one_error_line(run("suggest", "1", "--strategy", "magic", api=api), 1)
    assert line.startswith("error: HTTP 422: strategy: "), line


def test_an_unreachable_api_is_one_line_and_exit_1(tmp_path: Path):
    url = f"http://127.0.0.1:{free_port()}"
    expected = f"error: cannot reach the API at {url} (is `galera-doe serve` running?)"
    assert one_error_line(run("--url", url, "status", "1"), 1) == expected
    assert one_error_line(run("--url", url, "design", "preview", str(QUICKSTART)), 1) == expected
    assert one_error_line(run("export", "1", env={"GALERA_DOE_URL": url}), 1) == expected
    line = one_error_line(run("--url", "ftp://example.org", "status", "1"), 2)
    assert line.startswith("error: invalid API URL 'ftp://example.org'"), line


def test_a_worker_takes_the_queues_of_the_targets_it_is_given(tmp_path: Path):
    argv = worker_command("INFO", ["lab", "galera"])
    assert argv[argv.index("-Q") + 1] == "trials.lab,trials.galera"
    assert "-Q" not in worker_command("INFO")  # every runnable target of its targets file
    line = one_error_line(run("worker", "--target", "manual", "--target", "nowhere"), 2)
    assert line.startswith("error: --target manual, nowhere: not a runnable target"), line
    assert "runnable: lab, simulated" in line


def test_a_missing_or_invalid_yaml_file_is_one_line_and_exit_2(tmp_path: Path):
    url = f"http://127.0.0.1:{free_port()}"  # the file is read before the API is called
    missing = tmp_path / "missing.yaml"
    line = one_error_line(run("--url", url, "submit", str(missing)), 2)
    assert line == f"error: cannot read {missing}: No such file or directory"
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: x\nfactors: [unclosed\n")
    line = one_error_line(run("--url", url, "design", "preview", str(broken)), 2)
    assert line.startswith(f"error: {broken} is not valid YAML: ") and "line" in line, line
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n")
    line = one_error_line(run("--url", url, "submit", str(listed)), 2)
    assert "does not hold a YAML mapping" in line
    line = one_error_line(run("demo", str(tmp_path)), 2)
    assert line.startswith(f"error: cannot read {tmp_path}: "), line


# Runs through a real worker


@pytest.mark.integration
def test_submit_wait_runs_on_the_simulated_target_and_every_command_reads_it(
    api: Api, worker: ChildProcess
):
    out = ok(
        run("submit", str(QUICKSTART), "--target", "simulated", "--wait", "--timeout", "120",
            api=api)
    )  # fmt: skip
    experiment_id = submitted_id(out)
    assert "started: 9 trials queued" in out
    assert re.search(r"9/9 running 0\s+failed 0\s+best tps \d+\.\d", out), out
    assert f"experiment {experiment_id} completed" in out
    assert "Factors ranked by effect on tps" in out
    # One answer to deploy, first, with its evidence; no second, unlabelled optimum.
    assert re.search(r"^Deploy nodes=\d, threads_per_client=\d+ threads: ", out, re.M), out
    assert "the model predicts tps" in " ".join(out.split()) and "Predicted optimum" not in out

    status = ok(run("status", str(experiment_id), api=api))
    assert "completed" in status and re.search(r"best so far: trial \d+, tps \d+\.\d", status)
    assert table_rows(status, r"0") == [["0", "0", "0", "9", "0", "0", "9"]], status

    rows = table_rows(ok(run("trials", str(experiment_id), api=api)), r"\d+")
    assert len(rows) == 9 and {r[2] for r in rows} == {"succeeded"}
    assert all(re.fullmatch(r"\d+\.\d", r[4]) and r[5] == "1" and r[6] == "" for r in rows), rows

    report = ok(run("analysis", str(experiment_id), api=api))
    assert "tps ~ auto (selected from the quadratic model by AICc): " in report
    assert "from 9 trials" in report
    assert "nodes^2" in report and "threads_per_client^2" in report

    plan = ok(run("suggest", str(experiment_id), api=api))
    assert "strategy auto, stage" in plan

    exported = list(csv.DictReader(io.StringIO(ok(run("export", str(experiment_id), api=api)))))
    assert len(exported) == 9 and {row["status"] for row in exported} == {"succeeded"}
    trials_by_id = {t["id"]: t for t in Client(api.url, api_key=api.key).trials(experiment_id)}
    for row in exported:
        measured = trials_by_id[int(row["trial"])]["responses"]
        assert float(row["tps"]) == measured["tps"]
        assert int(row["nodes"]) == trials_by_id[int(row["trial"])]["config"]["nodes"]


@pytest.mark.integration
def test_optimize_wait_follows_the_loop_until_it_stops(
    api: Api, worker: ChildProcess, tmp_path: Path
):
    spec = write_yaml(tmp_path / "loop.yaml", LOOP)
    experiment_id = submitted_id(ok(run("submit", str(spec), api=api)))
    loop = ok(
        run("optimize", str(experiment_id), "--budget", "3", "--batch-size", "2", "--wait",
            "--restart-replicates", "--budget-seconds", "3600", "--timeout", "120", api=api)
    )  # fmt: skip
    assert re.search(
        r"optimization loop \d+ running: auto, budget 3 trials or 3600 s of trial time, 2 per"
        r" round",
        loop,
    ), loop
    assert "loop stopped: the budget of trials is used up" in loop, loop
    assert re.search(r"trials used\s+│\s+3 of 3 \(batch 2\)", loop), loop
    assert re.search(r"trial time used\s+│\s+[\d.]+ of 3600 s", loop), loop
    assert re.search(r"replicates\s+│\s+nodes restarted first", loop), loop
    # Three runs of two factors support no model yet: the loop says so instead of an optimum.
    assert "no analysis: HTTP 422: model: needs at least 4 successful runs" in loop, loop
    after = ok(run("status", str(experiment_id), api=api))
    assert re.search(r"Optimization loop \d+", after) and "stopped" in after, after
    assert table_rows(after, r"0") == [["0", "0", "0", "3", "0", "0", "3"]], after
    rows = table_rows(ok(run("trials", str(experiment_id), api=api)), r"\d+")
    assert [r[2] for r in rows] == ["succeeded"] * 3, rows


STUDY_FILE = Path(__file__).resolve().parents[2] / "data" / "galera_nodes_connections_mariadb11.csv"


def test_observe_list_show_trial_accept_export_and_report(api: Api, tmp_path: Path):
    spec = write_yaml(tmp_path / "study.yaml", {**MANUAL, "name": "imported study"})
    experiment_id = submitted_id(ok(run("submit", str(spec), api=api)))

    observed = ok(
        run("observe", str(experiment_id), str(STUDY_FILE), "--response", "tps",
            "--ignore-columns", "client_nodes,threads_per_client", "--ignore-columns",
            "wsrep_slave_threads,runtime_s", api=api)
    )  # fmt: skip
    rows = list(csv.DictReader(STUDY_FILE.open()))
    assert f"recorded {len(rows)} observations in experiment {experiment_id}" in observed
    bad = tmp_path / "bad.csv"
    bad.write_text("galera_nodes,total_connections,tps\n3,40,fast\n")
    assert one_error_line(run("observe", str(experiment_id), str(bad), api=api), 1) == (
        f"error: {bad}, line 2: tps 'fast' is not a number"
    )

    listed = ok(run("list", "--status", "completed", api=api))
    mine = [r for r in table_rows(listed, r"\d+") if int(r[0]) == experiment_id]
    assert mine and mine[0][1:5] == [
        "imported study",
        "manual",
        "completed",
        f"{len(rows)}/{len(rows)}",
    ]
    best = max(float(r["tps"]) for r in rows)
    assert mine[0][5] == f"tps {best:g}"
    assert all(
        r[3] == "planned"
        for r in table_rows(ok(run("list", "--status", "planned", api=api)), r"\d+")
    )

    with Client(api.url, api_key=api.key) as client:
        trial = client.trials(experiment_id)[0]
    shown = ok(run("show-trial", str(trial["id"]), api=api))
    assert f"Trial {trial['id']} of experiment {experiment_id}" in shown
    assert "observation" in shown and "raw output: none stored" in shown
    assert table_rows(shown, r"tps") == [["tps", f"{trial['responses']['tps']:g}"]]

    with Client(api.url, api_key=api.key) as client:
        suggestion = client.suggest(experiment_id, strategy="bayes", count=1)["suggestions"][0]
    accepted = ok(run("accept", str(experiment_id), str(suggestion["id"]), api=api))
    assert re.match(r"trial \d+ \(pending\) runs galera_nodes=\d+, total_connections=\d+", accepted)

    exported = list(csv.DictReader(io.StringIO(ok(run("export", str(experiment_id), api=api)))))
    measured = [row for row in exported if row["status"] == "succeeded"]
    assert sorted(float(row["tps"]) for row in measured) == sorted(float(r["tps"]) for r in rows)
    assert [row["status"] for row in exported if row["source"] == "suggestion"] == ["pending"]

    markdown = tmp_path / "report.md"
    written = run("report", str(experiment_id), "-o", str(markdown), api=api)
    ok(written)
    text = markdown.read_text()
    for heading in (
        "## Run table",
        "## Model",
        "## ANOVA (type II)",
        "## What to deploy",
        "## Best measured run",
        "## The model's predicted optimum",
        "## Explanation",
    ):
        assert heading in text, text
    assert "tps ~ auto (selected from the quadratic model by AICc)" in text
    assert "![contour](report_files/contour.png)" in text
    assert Image.open(tmp_path / "report_files" / "contour.png").size == (800, 560)
    page = tmp_path / "report.html"
    ok(run("report", str(experiment_id), "-o", str(page), "--format", "html", api=api))
    html_text = page.read_text()
    assert html_text.count('src="data:image/png;base64,') >= 3
    assert re.search(r'(src|href)="(https?:)?//', html_text) is None


# --- observations files and design notes (issue 54, items 5 and 6) ---------------------------


def test_observe_accounts_for_every_column_and_names_the_line_of_a_refused_row(
    api: Api, tmp_path: Path
):
    spec = write_yaml(tmp_path / "lines.yaml", {**MANUAL, "name": "line numbers"})
    experiment_id = submitted_id(ok(run("submit", str(spec), api=api)))
    observe = ("observe", str(experiment_id))
    # Columns of the published file that are neither factors nor tps were dropped silently.
    assert one_error_line(run(*observe, str(STUDY_FILE), "--response", "tps", api=api), 1) == (
        f"error: {STUDY_FILE}, line 1: column 'client_nodes' is neither a factor, a response"
        " (--response), block nor whole_plot nor a label (test, trial, id, run, note, notes):"
        " import it with --response client_nodes or leave it out with --ignore-columns"
        " client_nodes"
    )
    # A typo of a response reached the API as a response of its own and was stored.
    typo = tmp_path / "typo.csv"
    typo.write_text("galera_nodes,total_connections,tps,tpz\n3,40,1300,\n\n5,80,1240,1250\n")
    line = one_error_line(run(*observe, str(typo), api=api), 1)
    assert line.startswith(
        f"error: nothing recorded: {typo}, line 4, column tpz: 'tpz' is not a response of this"
        " experiment; on manual target 'manual' an observation reports the objective's responses"
    ), line
    assert line.endswith("(leave the column out with --ignore-columns tpz)"), line
    # The API's errors name the row by its line (1-based, the header is line 1), not its index.
    outside = tmp_path / "outside.csv"
    outside.write_text("galera_nodes,total_connections,tps\n3,40,1300\n30,40,1250\n")
    assert one_error_line(run(*observe, str(outside), api=api), 1) == (
        f"error: nothing recorded: {outside}, line 3, column galera_nodes: must lie between 1 and 9"
    )
    for text, error in [
        ("galera_nodes,total_connections,tps,whole_plot\n3,40,1300,2.5\n",
         "line 2: whole_plot '2.5' is not a whole number"),
        ("galera_nodes,total_connections,tps\n3,40,1300\n5,80\n", "line 3: 2 values for 3 columns"),
        ("galera_nodes,total_connections,tps\n,40,1300\n",
         "line 2, column galera_nodes: empty; every row needs each factor's value"),
        ("galera_nodes,total_connections,tps\n3,40,\n",
         "line 2: no response value (every cell of tps is empty)"),
        ("galera_nodes,total_connections,tps,tps\n3,40,1,2\n", "line 1: column tps appears twice"),
    ]:  # fmt: skip
        bad = tmp_path / "bad.csv"
        bad.write_text(text)
        assert one_error_line(run(*observe, str(bad), api=api), 1) == f"error: {bad}, {error}"
    with Client(api.url, api_key=api.key) as client:
        assert client.trials(experiment_id) == []
    imported = ok(run(*observe, str(typo), "--ignore-columns", "tpz", api=api))
    assert f"recorded 2 observations in experiment {experiment_id}" in imported


def test_submit_prints_the_design_notes(api: Api, tmp_path: Path):
    spec = {
        **MANUAL,
        "name": "ccd notes",
        "design": {"kind": "ccd", "seed": 1},
    }
    out = ok(run("submit", str(write_yaml(tmp_path / "ccd.yaml", spec)), api=api))
    said = " ".join(out.split())
    assert (
        "design: face-centred central composite design (alpha = 1), chosen because the"
        " circumscribed design's axial points, at the rotatable alpha 1.41, would plan"
        " galera_nodes = -1 and 11 (galera_nodes is an integer factor bounded 1..9)"
    ) in said, out
