"""Talking to the nodes of any Galera cluster (lab or external): connections, status counters,
health, and dynamic server variables set on every node with identifier-checked names and typed
values. Errors are split by what a trial should do with them: `GaleraError` is the cluster's
fault (the trial failed for infrastructure reasons and may be retried), `VariableError` is the
configuration's (retrying cannot help).
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import statistics
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

import pymysql
from pymysql.cursors import Cursor

log = logging.getLogger(__name__)

IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,63}$")

HEALTH_STATUS = (
    "wsrep_cluster_size",
    "wsrep_cluster_status",
    "wsrep_local_state_comment",
    "wsrep_ready",
)


# Server errors that mean "this variable or value cannot be set", not "the cluster is broken":
# unknown variable, session-only, wrong value, wrong type, read-only (two codes).
# The server refuses the variable or the value (unknown, read-only, wrong type or scope, not
# allowed); 1227: the account lacks the privilege, which no retry will give it.
# 1210: "Incorrect arguments to SET", what a provider option it refuses at run time gives.
_VARIABLE_ERRORS = frozenset({1193, 1210, 1227, 1228, 1231, 1232, 1238, 1621})
_BOOLEAN_WORDS = {"ON": 1, "TRUE": 1, "YES": 1, "OFF": 0, "FALSE": 0, "NO": 0}
_SIZE_VALUE = re.compile(r"^(\d+)([KMGT])$", re.IGNORECASE)

Value = int | float | str


class GaleraError(RuntimeError):
    """The cluster or its infrastructure failed; a trial on it may be retried."""


class VariableError(ValueError):
    """A server variable name or value that cannot be set; retrying cannot help."""


@dataclass(frozen=True)
class Node:
    """One server a client can reach."""

    name: str
    host: str
    port: int
    # The network namespace the node runs in (a lab site): commands that must reach it without
    # the site's forwarder run there. None: this machine's own.
    netns: str | None = None

    def local_command(self, argv: list[str]) -> list[str]:
        """`argv` run beside the node: in its namespace, where it reaches the node directly
        (`ip netns exec` execs the command, so its pid stays the command's own)."""
        return argv if self.netns is None else ["ip", "netns", "exec", self.netns, *argv]


@dataclass(frozen=True)
class Credentials:
    """A SQL account; its password never shows in repr, logs or tracebacks."""

    user: str
    password: str = field(default="", repr=False)


@dataclass(frozen=True)
class NodeHealth:
    """What a node says of itself and of its view of the cluster."""

    node: Node
    cluster_size: int
    cluster_status: str
    state: str
    ready: bool

    def ok(self, expected_size: int) -> bool:
        """Primary, Synced, ready, and seeing exactly `expected_size` nodes."""
        return not self.problem(expected_size)

    def problem(self, expected_size: int) -> str:
        """Why the node is not healthy in a cluster of `expected_size`, or '' when it is."""
        issues = []
        if self.cluster_status != "Primary":
            issues.append(f"cluster status {self.cluster_status}")
        if self.state != "Synced":
            issues.append(f"state {self.state}")
        if not self.ready:
            issues.append("not ready")
        if self.cluster_size != expected_size:
            issues.append(f"sees {self.cluster_size} nodes, expected {expected_size}")
        return ", ".join(issues)


def _where(node: Node) -> str:
    return f"node {node.name} ({node.host}:{node.port})"


def connect(node: Node, credentials: Credentials, *, timeout: float = 5.0) -> pymysql.Connection:
    """An autocommit connection to `node`; GaleraError naming the node when it does not answer."""
    try:
        return pymysql.connect(
            host=node.host,
            port=node.port,
            user=credentials.user,
            password=credentials.password,
            connect_timeout=timeout,
            read_timeout=timeout,
            write_timeout=timeout,
            autocommit=True,
            charset="utf8mb4",
        )
    except pymysql.MySQLError as error:
        raise GaleraError(f"{_where(node)} does not answer: {error}") from error


@contextlib.contextmanager
def _cursor(node: Node, credentials: Credentials, *, timeout: float = 5.0) -> Iterator[Cursor]:
    """A cursor on a fresh connection; SQL errors that escape become GaleraError naming the node."""
    with cursor_of(connect(node, credentials, timeout=timeout), _where(node)) as cursor:
        yield cursor


@contextlib.contextmanager
def cursor_of(connection: pymysql.Connection, where: str) -> Iterator[Cursor]:
    """A cursor that closes its connection; SQL errors become GaleraError saying where."""
    try:
        with connection.cursor() as cursor:
            yield cursor
    except pymysql.MySQLError as error:
        raise GaleraError(f"{where} failed: {error}") from error
    finally:
        connection.close()


PROBE_SCHEMA = "galera_doe_probe"


def commit_latency_ms(node: Node, credentials: Credentials, samples: int) -> float:
    """The median time, in ms, of `samples` single-row autocommit INSERTs on `node`: what a
    client waits for one commit, replication and certification across the cluster included."""
    table = f"{PROBE_SCHEMA}.commits"
    with _cursor(node, credentials) as cursor:
        cursor.execute(f"CREATE DATABASE IF NOT EXISTS {PROBE_SCHEMA}")
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {table}"
            " (id BIGINT AUTO_INCREMENT PRIMARY KEY, at DATETIME(6) NOT NULL)"
        )
        times = []
        for _ in range(samples):
            started = time.perf_counter()
            cursor.execute(f"INSERT INTO {table} (at) VALUES (NOW(6))")
            times.append((time.perf_counter() - started) * 1000)
        cursor.execute(f"DELETE FROM {table}")
    return statistics.median(times)


def global_status(node: Node, credentials: Credentials, names: Iterable[str]) -> dict[str, str]:
    """Global status counters by lower-case name; names the server does not know are left out."""
    return _show_global(node, credentials, "STATUS", names)


def _show_global(
    node: Node, credentials: Credentials, kind: str, names: Iterable[str]
) -> dict[str, str]:
    """SHOW GLOBAL STATUS or VARIABLES (`kind`) for these names, by lower-case name."""
    wanted = sorted({name.lower() for name in names})
    if not wanted:
        return {}
    placeholders = ", ".join(["%s"] * len(wanted))
    with _cursor(node, credentials) as cursor:
        cursor.execute(f"SHOW GLOBAL {kind} WHERE Variable_name IN ({placeholders})", wanted)
        return {str(name).lower(): str(value) for name, value in cursor.fetchall()}


def answers(node: Node, credentials: Credentials) -> bool:
    """Whether the node's server answers SQL (a node that is down, or still starting, does not)."""
    try:
        global_status(node, credentials, ["wsrep_ready"])
    except GaleraError:
        return False
    return True


def health_of(node: Node, status: Mapping[str, str]) -> NodeHealth:
    """A node's health from its wsrep status counters."""
    size = status.get("wsrep_cluster_size", "0")
    return NodeHealth(
        node=node,
        cluster_size=int(size) if size.isdigit() else 0,
        cluster_status=status.get("wsrep_cluster_status", "unknown"),
        state=status.get("wsrep_local_state_comment", "unknown"),
        ready=status.get("wsrep_ready") == "ON",
    )


def node_health(node: Node, credentials: Credentials) -> NodeHealth:
    """One node's health; GaleraError naming it when it does not answer."""
    return health_of(node, global_status(node, credentials, HEALTH_STATUS))


def cluster_health(nodes: Iterable[Node], credentials: Credentials) -> list[NodeHealth]:
    """Every node's health, in order; GaleraError naming the first node that does not answer."""
    return [node_health(node, credentials) for node in nodes]


def check_healthy(
    nodes: Iterable[Node], credentials: Credentials, *, expected_size: int | None = None
) -> None:
    """Raise GaleraError unless every node is Primary, Synced, ready and sees `expected_size`
    nodes (default: exactly these nodes; a larger cluster when only some of it takes load)."""
    nodes = list(nodes)
    if not nodes:
        raise GaleraError("a cluster of no nodes is not healthy")
    size = len(nodes) if expected_size is None else expected_size
    problems = [
        f"{health.node.name}: {health.problem(size)}"
        for health in cluster_health(nodes, credentials)
        if not health.ok(size)
    ]
    if problems:
        raise GaleraError(f"cluster of {size} is not healthy: {'; '.join(problems)}")


def dynamic_variables(node: Node, credentials: Credentials) -> frozenset[str]:
    """Names of the server variables `SET GLOBAL` can change on `node` (lower case)."""
    with _cursor(node, credentials) as cursor:
        cursor.execute(
            "SELECT LOWER(VARIABLE_NAME) FROM information_schema.SYSTEM_VARIABLES "
            "WHERE READ_ONLY = 'NO' AND VARIABLE_SCOPE <> 'SESSION ONLY'"
        )
        return frozenset(str(name) for (name,) in cursor.fetchall())


def configured_variables(node: Node, credentials: Credentials) -> dict[str, str]:
    """The global variables of `node` that are not at their compiled-in default (set by the
    configuration, the command line, SET GLOBAL or sized automatically), by lower-case name;
    every global variable where the server cannot tell (no information_schema.SYSTEM_VARIABLES:
    MySQL, Percona)."""
    with _cursor(node, credentials) as cursor:
        try:
            cursor.execute(
                "SELECT LOWER(VARIABLE_NAME), GLOBAL_VALUE FROM information_schema.SYSTEM_VARIABLES"
                " WHERE GLOBAL_VALUE_ORIGIN <> 'COMPILE-TIME' AND VARIABLE_SCOPE <> 'SESSION ONLY'"
            )
        except pymysql.MySQLError:
            cursor.execute("SHOW GLOBAL VARIABLES")
        return {str(name).lower(): "" if value is None else str(value) for name, value in cursor}


def global_variables(node: Node, credentials: Credentials, names: Iterable[str]) -> dict[str, str]:
    """Global variables by lower-case name; names the server does not know are left out."""
    return _show_global(node, credentials, "VARIABLES", names)


def wsrep_status(node: Node, credentials: Credentials) -> dict[str, str]:
    """Every wsrep_* status counter of `node`, by lower-case name."""
    with _cursor(node, credentials) as cursor:
        cursor.execute("SHOW GLOBAL STATUS LIKE 'wsrep%'")
        return {str(name).lower(): str(value) for name, value in cursor.fetchall()}


def _checked_name(name: object) -> str:
    """`name`, or VariableError when it cannot name a server variable."""
    if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
        raise VariableError(
            f"{name!r} is not a server variable name "
            "(a lower-case letter or _, then letters, digits or _, at most 64)"
        )
    return name


def _checked(name: object, value: object) -> Value:
    """The value to send for `name`, or VariableError when the pair can never be set."""
    _checked_name(name)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | str) or (isinstance(value, float) and math.isfinite(value)):
        return value
    raise VariableError(f"{name}: {value!r} is not an integer, a finite number or a string")


def _same(requested: Value, actual: object) -> bool:
    """Whether the value read back is the value set, as far as the server's form allows."""
    if isinstance(actual, bytes):
        actual = actual.decode()
    if actual is None:
        return requested == ""
    if isinstance(requested, str):
        word = requested.strip().upper()
        if isinstance(actual, int | Decimal | float) and word in _BOOLEAN_WORDS:
            return actual == _BOOLEAN_WORDS[word]
        # Flag lists (sql_mode, optimizer_switch) read back whole: each item set must be there.
        items = {item.strip().casefold() for item in str(actual).split(",")}
        return {item.strip().casefold() for item in requested.split(",")} <= items
    try:
        return math.isclose(float(actual), float(requested), rel_tol=1e-9, abs_tol=1e-12)
    except (TypeError, ValueError):
        # An enum set by its number reads back as its name: the server accepted the number.
        return True


def _read_global(cursor: Cursor, name: str) -> object:
    cursor.execute(f"SELECT @@GLOBAL.{name}")
    row = cursor.fetchone()
    return row[0] if row else None


def _set_global(cursor: Cursor, node: Node, name: str, value: Value) -> None:
    """Set one checked variable on one node and read it back."""
    try:
        cursor.execute(f"SET GLOBAL {name} = %s", (value,))
    except pymysql.MySQLError as error:
        if error.args and error.args[0] in _VARIABLE_ERRORS:
            raise VariableError(
                f"{name} = {value!r} refused by {node.name}: {error.args[1]}"
            ) from error
        raise
    actual = _read_global(cursor, name)
    if not _same(value, actual):
        raise VariableError(
            f"{name} = {value!r} reads back as {actual!r} on {node.name} "
            "(the server clamped or rounded it)"
        )


def _check_dynamic(node: Node, credentials: Credentials, names: Iterable[str]) -> None:
    """VariableError unless `node` lists every one of `names` as a dynamic global variable."""
    dynamic = dynamic_variables(node, credentials)
    for name in names:
        if name not in dynamic:
            raise VariableError(f"'{name}' is not a dynamic global variable of this server")


def read_globals(node: Node, credentials: Credentials, names: Iterable[str]) -> dict[str, Value]:
    """The global values of the dynamic variables `names` on `node`, in the form `SET GLOBAL`
    takes back (what to set them back to); VariableError, before any read, for a name that is
    not one."""
    checked = [_checked_name(name) for name in names]
    if not checked:
        return {}
    _check_dynamic(node, credentials, checked)
    with _cursor(node, credentials) as cursor:
        return {name: _as_value(_read_global(cursor, name)) for name in checked}


def set_globals(
    nodes: Iterable[Node], credentials: Credentials, variables: Mapping[str, Value]
) -> None:
    """`SET GLOBAL name = value` on every node, each checked first and read back after.

    Names must be identifiers the server lists as dynamic; ints and floats are sent as numbers,
    strings as quoted parameters. Nothing is sent before every name and value passed its checks.
    VariableError when a variable cannot be set or reads back different (clamped, rounded);
    the nodes already changed then get their previous values back, so the cluster stays uniform.
    """
    nodes = list(nodes)
    checked = {name: _checked(name, value) for name, value in variables.items()}
    if not nodes or not checked:
        return
    _check_dynamic(nodes[0], credentials, checked)
    previous: list[tuple[Node, dict[str, object]]] = []
    try:
        for node in nodes:
            with _cursor(node, credentials, timeout=30.0) as cursor:
                previous.append((node, {name: _read_global(cursor, name) for name in checked}))
                for name, value in checked.items():
                    _set_global(cursor, node, name, value)
    except VariableError:
        for node, values in previous:
            # Best effort: the VariableError is what the caller needs to see.
            with contextlib.suppress(GaleraError), _cursor(node, credentials) as cursor:
                for name, value in values.items():
                    with contextlib.suppress(pymysql.MySQLError):
                        cursor.execute(f"SET GLOBAL {name} = %s", (value,))
        raise


def provider_options(node: Node, credentials: Credentials) -> dict[str, str]:
    """The options the running provider reports on `node` (wsrep_provider_options), by name."""
    raw = global_variables(node, credentials, ["wsrep_provider_options"])
    return parse_provider_options(raw.get("wsrep_provider_options", ""))


def parse_provider_options(text: str) -> dict[str, str]:
    """'name = value; name = value' as a mapping."""
    pairs = (item.split("=", 1) for item in text.split(";") if "=" in item)
    return {name.strip(): value.strip() for name, value in pairs}


def set_provider_options(
    nodes: Iterable[Node], credentials: Credentials, options: Mapping[str, str]
) -> None:
    """`SET GLOBAL wsrep_provider_options = 'name=value;...'` on every node, read back after.

    `options` hold values already written as the provider takes them
    (experiments.galera.provider_options). VariableError when the running provider does not
    report an option, refuses it, or reads it back different; the nodes already changed then get
    their previous values back.
    """
    nodes = list(nodes)
    if not nodes or not options:
        return
    reported = provider_options(nodes[0], credentials)
    unknown = sorted(set(options) - set(reported))
    if unknown:
        raise VariableError(
            f"the running provider has no option {', '.join(unknown)} (it reports "
            f"{len(reported)} options; see SHOW GLOBAL VARIABLES LIKE 'wsrep_provider_options')"
        )
    previous: list[tuple[Node, dict[str, str]]] = []
    try:
        for node in nodes:
            before = reported if not previous else provider_options(node, credentials)
            previous.append((node, {name: before[name] for name in options}))
            _set_provider(node, credentials, options)
    except VariableError:
        for node, values in previous:
            # Best effort: the VariableError is what the caller needs to see.
            with contextlib.suppress(GaleraError):
                _set_provider(node, credentials, values)
        raise


def _set_provider(node: Node, credentials: Credentials, options: Mapping[str, str]) -> None:
    """Set the options one by one, in as many passes as it takes: some bound each other (the
    provider refuses evs.user_send_window above the running evs.send_window), so raising both
    needs one order and lowering both the other."""
    pending = dict(options)
    with _cursor(node, credentials, timeout=30.0) as cursor:
        while pending:
            refused: dict[str, str] = {}
            for name, value in pending.items():
                try:
                    cursor.execute("SET GLOBAL wsrep_provider_options = %s", (f"{name}={value}",))
                except pymysql.MySQLError as error:
                    if not (error.args and error.args[0] in _VARIABLE_ERRORS):
                        raise
                    refused[name] = f"{name}={value} refused by {node.name}: {error.args[1]}"
            if len(refused) == len(pending):
                raise VariableError("; ".join(refused.values()))
            pending = {name: pending[name] for name in refused}
        actual = parse_provider_options(str(_read_global(cursor, "wsrep_provider_options")))
    for name, value in options.items():
        if _option_value(actual.get(name, "")) != _option_value(value):
            raise VariableError(
                f"{name} = {value} reads back as {actual.get(name)!r} on {node.name}"
            )


def _option_value(text: str) -> object:
    """A provider option's value in one form, whichever way the provider or a user wrote it."""
    word = text.strip().upper()
    if word in _BOOLEAN_WORDS:
        return _BOOLEAN_WORDS[word]
    size = _SIZE_VALUE.match(word)
    if size:
        return int(size.group(1)) << {"K": 10, "M": 20, "G": 30, "T": 40}[size.group(2)]
    try:
        return round(float(word), 9)
    except ValueError:
        return word


def _as_value(raw: object) -> Value:
    """A value read from the server in the form `SET GLOBAL` takes back."""
    if isinstance(raw, bytes):
        return raw.decode()
    if isinstance(raw, Decimal):
        return int(raw) if raw == raw.to_integral_value() else float(raw)
    if isinstance(raw, int | float | str):
        return raw
    return "" if raw is None else str(raw)
