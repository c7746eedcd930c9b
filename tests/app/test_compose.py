"""docker-compose.yml against the code it runs: services, `galera-doe` commands and their options,
the settings the API and the workers read, the targets file, credentials, and the Galera nodes.

No Docker engine is needed: the file is parsed, interpolated with a distinct placeholder per
variable (so a URL that names the wrong variable shows), and checked against the click group of
the CLI, `app.config.Settings`, `app.target_specs.load_targets` and the worker's target classes.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import socket
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import typer
import yaml
from sqlalchemy.engine import make_url

from app.config import Settings
from app.target_specs import load_targets
from client.cli import cli
from experiments.galera.target_spec import TargetSpec
from worker.galera_sql import PROBE_SCHEMA
from worker.targets import build_target

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / "deploy" / "env.example"
DOCKERFILE = ROOT / "Dockerfile"
GALERA_NODES = ("galera-1", "galera-2", "galera-3")
PREFIX = str(Settings.model_config["env_prefix"])
CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}
# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error}, and $$ for a `$`.
VARIABLE = re.compile(r"\$\$|\$\{(?P<name>[A-Za-z_]\w*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")
GRANTEE = re.compile(r"\bTO\s+'(?P<user>[^']+)'@'%'", re.IGNORECASE)


# Reading the compose file ------------------------------------------------------------------------


def interpolate(text: str, values: Mapping[str, str]) -> str:
    """Compose's variable interpolation of one string; KeyError for a required variable unset."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, op, arg = match.group("name", "op", "arg")
        if name in values:
            return values[name]
        if op is None:
            return ""  # compose warns and uses an empty string
        if op.endswith("-"):
            return arg
        raise KeyError(f"{name} is required: {arg}")

    return VARIABLE.sub(replace, text)


def interpolated(node: Any, values: Mapping[str, str]) -> Any:
    """A parsed YAML document with every string interpolated."""
    if isinstance(node, str):
        return interpolate(node, values)
    if isinstance(node, list):
        return [interpolated(item, values) for item in node]
    if isinstance(node, dict):
        return {key: interpolated(value, values) for key, value in node.items()}
    return node


def required_variables(text: str) -> set[str]:
    """Names of the variables the file uses without a default."""
    return {
        match["name"]
        for match in VARIABLE.finditer(text)
        if match["name"] and not (match["op"] or "").endswith("-")
    }


def environment(service: Mapping[str, Any]) -> dict[str, str]:
    """A service's environment, from the mapping or the list form."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(key): "" if value is None else str(value) for key, value in env.items()}


def command(service: Mapping[str, Any]) -> list[str]:
    """A service's command as an argument list."""
    value = service.get("command") or []
    return shlex.split(value) if isinstance(value, str) else [str(part) for part in value]


def mounts(service: Mapping[str, Any]) -> dict[str, tuple[str, bool]]:
    """Container path -> (host path or volume name, read only), from both volume syntaxes."""
    found = {}
    for volume in service.get("volumes") or []:
        if isinstance(volume, str):
            source, target, *mode = volume.split(":")
            read_only = "ro" in (mode[0].split(",") if mode else [])
        else:
            source, target = volume["source"], volume["target"]
            read_only = bool(volume.get("read_only"))
        found[target] = (source, read_only)
    return found


def host_file(service: Mapping[str, Any], container_path: str) -> Path:
    """The file of the repository that a bind mount of `service` shows at `container_path`."""
    for target, (source, _) in mounts(service).items():
        inside = Path(container_path)
        if inside == Path(target) or Path(target) in inside.parents:
            assert source.startswith(("./", "../")), f"{target} is not a bind mount of the repo"
            return (ROOT / source / inside.relative_to(target)).resolve()
    raise AssertionError(f"nothing is mounted at {container_path}")


def depends_on(service: Mapping[str, Any]) -> dict[str, str]:
    """Dependency name -> condition, from the list or the mapping form."""
    value = service.get("depends_on") or {}
    if isinstance(value, list):
        return dict.fromkeys(value, "service_started")
    return {name: (spec or {}).get("condition", "service_started") for name, spec in value.items()}


def running(services: Mapping[str, Any], subcommand: str) -> dict[str, Any]:
    """The services that run `galera-doe <subcommand>`."""
    return {
        name: service
        for name, service in services.items()
        if command(service)[:2] == ["galera-doe", subcommand]
    }


def placeholders(text: str) -> dict[str, str]:
    """A distinct, URL-safe value for every variable the file uses."""
    names = {match["name"] for match in VARIABLE.finditer(text) if match["name"]}
    return {name: f"{name.lower()}-value" for name in names}


@pytest.fixture(scope="module")
def text() -> str:
    return COMPOSE_FILE.read_text()


@pytest.fixture(scope="module")
def services(text: str) -> dict[str, Any]:
    document = yaml.safe_load(text)
    assert isinstance(document, dict) and isinstance(document.get("services"), dict)
    return interpolated(document["services"], placeholders(text))


@pytest.fixture(scope="module")
def api(services: dict[str, Any]) -> dict[str, Any]:
    found = running(services, "serve")
    assert len(found) == 1, f"one API service, found {sorted(found)}"
    return next(iter(found.values()))


@pytest.fixture(scope="module")
def workers(services: dict[str, Any]) -> dict[str, Any]:
    return running(services, "worker")


# The command line -------------------------------------------------------------------------------


class RefusedError(Exception):
    """The CLI would refuse the command line (a usage error, exit code 2)."""


def cli_context(argv: list[str]) -> Any:
    """The click context `galera-doe` would run `argv` in, parsed and converted but not run;
    RefusedError when the CLI would refuse it."""
    group = typer.main.get_command(cli)
    assert argv[:1] == ["galera-doe"], f"{argv} does not run galera-doe"
    name, *rest = argv[1:]
    sub = group.commands.get(name)  # type: ignore[attr-defined]
    if sub is None:
        raise RefusedError(f"galera-doe has no command {name!r}")
    try:
        return sub.make_context(name, rest)
    except Exception as error:
        # Typer vendors click: its usage errors are recognized by their exit code, not class.
        if getattr(error, "exit_code", None) == 2:
            raise RefusedError(error.format_message()) from error  # type: ignore[attr-defined]
        raise


@pytest.mark.parametrize(
    "argv",
    [
        ["galera-doe", "serve", "--no-such-option"],
        ["galera-doe", "serve", "--port", "eight-thousand"],
        ["galera-doe", "serve-api"],
        ["galera-doe", "worker", "extra-argument"],
    ],
)
def test_a_command_the_cli_refuses_is_caught(argv: list[str]):
    with pytest.raises(RefusedError):
        cli_context(argv)


def test_every_galera_doe_command_is_one_the_cli_accepts(services: dict[str, Any]):
    dockerfile_cmd = re.search(r"^CMD\s+(\[.*\])\s*$", DOCKERFILE.read_text(), re.MULTILINE)
    assert dockerfile_cmd, "the Dockerfile has an exec-form CMD"
    argvs = {"Dockerfile CMD": json.loads(dockerfile_cmd.group(1))}
    argvs |= {name: command(s) for name, s in services.items() if command(s)[:1] == ["galera-doe"]}
    assert len(argvs) >= 4
    for where, argv in argvs.items():
        try:
            cli_context(argv)
        except RefusedError as error:
            pytest.fail(f"{where}: `{shlex.join(argv)}` is refused by the CLI: {error}")


def test_the_api_listens_where_it_is_published_and_checked(api: dict[str, Any]):
    params = cli_context(command(api)).params
    assert params["host"] == "0.0.0.0", "the API must listen beyond the container's loopback"
    published = [str(port).rsplit(":", 1)[-1] for port in api.get("ports", [])]
    assert str(params["port"]) in published
    assert f":{params['port']}/health" in " ".join(api["healthcheck"]["test"])


# Services and settings ---------------------------------------------------------------------------


def test_the_services_of_the_production_shape(services: dict[str, Any], workers: dict[str, Any]):
    images = {name: str(service.get("image", "")) for name, service in services.items()}
    assert set(GALERA_NODES) <= set(services)
    assert all(images[node].startswith("mariadb:") for node in GALERA_NODES)
    assert len({images[node] for node in GALERA_NODES}) == 1, "one server version on every node"
    assert [name for name, image in images.items() if image.startswith("redis:")]
    metadata = [n for n, i in images.items() if i.startswith("mariadb:") and n not in GALERA_NODES]
    assert len(metadata) == 1, "one metadata database, apart from the benchmarked nodes"
    assert len(workers) >= 2
    assert {(s.get("build"), s.get("image")) for s in running(services, "serve").values()} == {
        (s.get("build"), s.get("image")) for s in workers.values()
    }, "the API and the workers run the same image"


def test_galera_doe_variables_are_settings_the_code_reads(services: dict[str, Any]):
    fields = {f"{PREFIX}{name}".upper() for name in Settings.model_fields}
    for name, service in services.items():
        ours = {k: v for k, v in environment(service).items() if k.upper().startswith(PREFIX)}
        unknown = set(ours) - fields
        assert not unknown, f"{name} sets {sorted(unknown)}, which no Settings field reads"
        # The values must pass the settings' own validation (types, bounds).
        Settings(**{key[len(PREFIX) :].lower(): value for key, value in ours.items()})


def test_api_and_workers_share_the_metadata_database_and_the_broker(
    services: dict[str, Any], api: dict[str, Any], workers: dict[str, Any]
):
    runners = [api, *workers.values()]
    for variable in (f"{PREFIX}DATABASE_URL", f"{PREFIX}BROKER_URL", f"{PREFIX}TARGETS_FILE"):
        values = {environment(service).get(variable) for service in runners}
        assert len(values) == 1 and None not in values, f"{variable} differs or is missing"

    url = make_url(environment(api)[f"{PREFIX}DATABASE_URL"])
    assert url.drivername == "mysql+asyncmy"
    assert url.host in services and url.host not in GALERA_NODES
    database = services[url.host]
    assert str(database["image"]).startswith("mariadb:")
    assert (url.port or 3306) == 3306
    db_env = environment(database)
    assert url.database == db_env["MARIADB_DATABASE"]
    assert url.username == db_env["MARIADB_USER"]
    assert url.password == db_env["MARIADB_PASSWORD"], "the URL names another password variable"
    assert url.query.get("charset") == "utf8mb4"

    broker = urlsplit(environment(api)[f"{PREFIX}BROKER_URL"])
    assert broker.scheme == "redis"
    assert broker.hostname in services
    assert str(services[broker.hostname]["image"]).startswith("redis:")
    assert (broker.port or 6379) == 6379


def test_every_required_variable_is_in_the_env_example(text: str):
    example = dict(
        line.split("=", 1)
        for line in ENV_EXAMPLE.read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    )
    required = required_variables(text)
    assert required, "the secrets come from variables, not from the compose file"
    assert required == set(example), "deploy/env.example lists exactly the variables to set"
    for value in example.values():
        # The metadata password is part of a URL: the example must not teach breaking it.
        assert re.fullmatch(r"[A-Za-z0-9._~-]+", value)


def test_depends_on_names_services_and_conditions_they_can_meet(services: dict[str, Any]):
    for name, service in services.items():
        for dependency, condition in depends_on(service).items():
            assert dependency in services, f"{name} depends on unknown service {dependency}"
            assert condition in CONDITIONS, f"{name}: unknown condition {condition}"
            if condition == "service_healthy":
                assert services[dependency].get("healthcheck", {}).get("test"), (
                    f"{name} waits for {dependency} to be healthy, which has no healthcheck"
                )
    order: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, f"dependency cycle: {' -> '.join((*path, name))}"
        if name not in order:
            for dependency in depends_on(services[name]):
                visit(dependency, (*path, name))
            order.append(name)

    for name in services:
        visit(name, ())


def test_workers_start_after_the_api_and_the_whole_cluster(workers: dict[str, Any]):
    for name, worker in workers.items():
        needs = depends_on(worker)
        assert needs.get("api") == "service_healthy", f"{name} may record before the schema"
        for node in GALERA_NODES:
            assert needs.get(node) == "service_healthy", f"{name} may start before {node}"


# The targets file and the credentials -----------------------------------------------------------


def targets_of(service: Mapping[str, Any]) -> tuple[Path, dict[str, TargetSpec]]:
    """The host file a service reads as its targets file, and the targets in it."""
    inside = environment(service)[f"{PREFIX}TARGETS_FILE"]
    path = host_file(service, inside)
    assert mounts(service)[inside][1], f"{inside} should be mounted read-only"
    return path, load_targets(path)


def credential_names(spec: TargetSpec) -> set[str]:
    """Environment variable names a target's settings refer to (`password_env` and the like)."""
    return {str(value) for key, value in spec.settings.items() if key.endswith("_env")}


def test_api_and_workers_read_one_targets_file(api: dict[str, Any], workers: dict[str, Any]):
    api_path, targets = targets_of(api)
    for name, worker in workers.items():
        path, _ = targets_of(worker)
        assert path == api_path, f"{name} reads {path}, the API {api_path}"
    assert "lab" not in {spec.kind for spec in targets.values()}, "the image has no mariadbd"
    assert [spec for spec in targets.values() if spec.kind == "external"]


def test_the_external_target_is_the_galera_services(
    services: dict[str, Any], workers: dict[str, Any]
):
    _, targets = targets_of(next(iter(workers.values())))
    (cluster,) = [spec for spec in targets.values() if spec.kind == "external"]
    nodes = cluster.settings["nodes"]
    assert [node["host"] for node in nodes] == list(GALERA_NODES)
    for node in nodes:
        flags = [arg for arg in command(services[node["host"]]) if arg.startswith("--port=")]
        sql_port = int(flags[-1].split("=", 1)[1]) if flags else 3306
        assert int(node.get("port", 3306)) == sql_port


def consumed(worker: Mapping[str, Any], targets: Mapping[str, TargetSpec]) -> set[str]:
    """The targets whose queues a worker consumes: its `--target` options, else every runnable
    target of its file."""
    chosen = cli_context(command(worker)).params["target"]
    return set(chosen) if chosen else {name for name, spec in targets.items() if spec.runnable}


def test_credentials_reach_only_the_workers_that_use_them_and_only_by_name(
    services: dict[str, Any], api: dict[str, Any], workers: dict[str, Any]
):
    _, targets = targets_of(api)
    cluster = next(spec for spec in targets.values() if spec.kind == "external")
    names = credential_names(cluster)
    assert names == {cluster.settings["password_env"]}
    assert not {"password", "passwd", "secret"} & set(cluster.settings), "credential inlined"
    assert not names & set(environment(api)), "the API connects to no cluster: no credential"
    cluster_workers = []
    for worker_name, worker in workers.items():
        _, targets = targets_of(worker)
        uses = consumed(worker, targets)
        needed = {name for target in uses for name in credential_names(targets[target])}
        given = {name for name in names if environment(worker).get(name)}
        assert given == needed, f"{worker_name} runs {sorted(uses)}: gets {given}, needs {needed}"
        if cluster.name in uses:
            cluster_workers.append(worker)
    assert cluster_workers, f"no worker consumes the queue of {cluster.name}"
    # The workers log in with the password the nodes created the account with.
    password = environment(cluster_workers[0])[cluster.settings["password_env"]]
    for node in GALERA_NODES:
        assert environment(services[node])["MARIADB_USER"] == cluster.settings["user"]
        assert environment(services[node])["MARIADB_PASSWORD"] == password


def test_every_worker_can_build_every_target_it_runs(
    workers: dict[str, Any], monkeypatch: pytest.MonkeyPatch
):
    for worker in workers.values():
        env = environment(worker)
        _, targets = targets_of(worker)
        for name in consumed(worker, targets):
            for variable in credential_names(targets[name]):
                monkeypatch.setenv(variable, env[variable])
            build_target(targets[name]).close()


def test_the_benchmark_user_gets_its_grants_on_the_bootstrap_node(
    services: dict[str, Any], api: dict[str, Any]
):
    _, targets = targets_of(api)
    user = next(spec for spec in targets.values() if spec.kind == "external").settings["user"]
    initdb = host_file(services["galera-1"], "/docker-entrypoint-initdb.d")
    scripts = sorted(initdb.glob("*.sql"))
    assert scripts, f"no init SQL in {initdb}"
    sql = "\n".join(script.read_text() for script in scripts)
    grantees = {match["user"] for match in GRANTEE.finditer(sql)}
    assert grantees == {user}
    assert re.search(r"GRANT\s+ALL PRIVILEGES ON\s+`sbtest%`\.\*", sql), "sysbench schemas"
    assert re.search(r"GRANT\s+SUPER\b", sql), "SET GLOBAL of the factors"
    probe = re.escape(PROBE_SCHEMA)
    assert re.search(rf"GRANT\s+ALL PRIVILEGES ON\s+`{probe}`\.\*", sql), "the commit probe"
    assert "IDENTIFIED" not in sql.upper(), "the password comes from MARIADB_PASSWORD"


# The Galera nodes --------------------------------------------------------------------------------


def galera_config(service: Mapping[str, Any]) -> configparser.ConfigParser:
    """The option files a node mounts into the image's /etc/mysql/conf.d."""
    parser = configparser.ConfigParser(allow_no_value=True, interpolation=None)
    files = [host_file(service, t) for t in mounts(service) if t.startswith("/etc/mysql/conf.d/")]
    assert files, "no option file mounted in /etc/mysql/conf.d"
    for path in files:
        parser.read_string(path.read_text(), source=str(path))
    return parser


def flag(argv: list[str], name: str) -> str | None:
    """The value of `--name=value` in argv (dashes and underscores alike)."""
    for arg in argv:
        key, _, value = arg.partition("=")
        if key.replace("_", "-") == f"--{name}":
            return value
    return None


def test_the_nodes_form_one_galera_cluster(services: dict[str, Any]):
    for node in GALERA_NODES:
        service = services[node]
        config = galera_config(service)
        options = {k.replace("-", "_"): v for k, v in config["mysqld"].items()}
        assert options["wsrep_on"].upper() == "ON"
        assert options["wsrep_provider"] == "/usr/lib/galera/libgalera_smm.so"
        assert options["binlog_format"].upper() == "ROW"
        assert options["innodb_autoinc_lock_mode"] == "2"
        address = options["wsrep_cluster_address"]
        assert address.startswith("gcomm://")
        assert address.removeprefix("gcomm://").split(",") == list(GALERA_NODES)
        assert flag(command(service), "wsrep-node-name") == node
        assert command(service)[0] == "mariadbd"
        assert "--galera_online" in service["healthcheck"]["test"]
        if options["wsrep_sst_method"] == "mariabackup":
            # The donor's mariadb-backup logs in as the unix user over the socket.
            assert options["wsrep_sst_auth"] == "mysql:"
            env = environment(service)
            assert env["MARIADB_MYSQL_LOCALHOST_USER"] == "1"
            granted = {g.strip() for g in env["MARIADB_MYSQL_LOCALHOST_GRANTS"].split(",")}
            assert {"RELOAD", "PROCESS", "LOCK TABLES"} <= granted
    names = {galera_config(services[node])["mysqld"]["wsrep_cluster_name"] for node in GALERA_NODES}
    assert len(names) == 1


def test_only_the_first_node_may_bootstrap_and_the_others_join_it(services: dict[str, Any]):
    first = services["galera-1"]
    script = first["entrypoint"][-1]
    assert host_file(first, script) == ROOT / "deploy" / "galera" / "bootstrap-or-join.sh"
    assert environment(first)["GALERA_PEERS"].split() == list(GALERA_NODES[1:])
    for node in GALERA_NODES[1:]:
        service = services[node]
        assert "entrypoint" not in service, f"{node} must always join, never bootstrap"
        assert "--wsrep-new-cluster" not in command(service)
        assert depends_on(service).get("galera-1") == "service_healthy"
    assert depends_on(services["galera-3"]).get("galera-2") == "service_healthy"


@pytest.fixture
def fake_entrypoint(tmp_path: Path) -> Iterator[dict[str, str]]:
    """An environment where `docker-entrypoint.sh` prints the arguments it was given."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "docker-entrypoint.sh"
    stub.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    stub.chmod(0o755)
    datadir = tmp_path / "data"
    datadir.mkdir()
    yield {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "GALERA_DATADIR": str(datadir)}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("grastate", "peer_up", "bootstraps"),
    [
        (None, False, True),  # a new cluster
        ("safe_to_bootstrap: 1", False, True),  # the last node of a clean full stop
        ("safe_to_bootstrap: 0", False, False),  # not the last to leave: join
        ("safe_to_bootstrap: 1", True, False),  # the others run: never a second cluster
        (None, True, False),  # a lost volume while the others run
    ],
)
def test_the_bootstrap_script_starts_a_new_cluster_only_when_safe(
    fake_entrypoint: dict[str, str], grastate: str | None, peer_up: bool, bootstraps: bool
):
    if grastate is not None:
        state = f"# GALERA saved state\nversion: 2.1\nuuid: 1-2-3\nseqno: 42\n{grastate}\n"
        (Path(fake_entrypoint["GALERA_DATADIR"]) / "grastate.dat").write_text(state)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        if peer_up:
            listener.listen()
        peer = f"127.0.0.1:{listener.getsockname()[1] if peer_up else free_port()}"
        done = subprocess.run(
            ["bash", str(ROOT / "deploy" / "galera" / "bootstrap-or-join.sh"), "mariadbd", "-x"],
            env={**fake_entrypoint, "GALERA_PEERS": f"{peer} 127.0.0.1:{free_port()}"},
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    expected = ["mariadbd", "-x", *(["--wsrep-new-cluster"] if bootstraps else [])]
    assert done.stdout.splitlines() == expected, done.stderr


def test_the_image_can_run_sysbench_for_external_targets():
    installs = re.findall(r"apt-get install[^\n]*(?:\\\n[^\n]*)*", DOCKERFILE.read_text())
    assert any(re.search(r"\bsysbench\b", command) for command in installs)
