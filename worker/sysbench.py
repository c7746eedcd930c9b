"""sysbench 1.0/1.1 for Galera trials: argument lists (its output is read by
`worker.sysbench_output`).

Nothing here starts a process: `prepare_command` and `run_command` return argument lists for
`subprocess.run` (never a shell), without the password (argv is readable by every local user in
`ps` and /proc/<pid>/cmdline): `password_file` hands it to sysbench as its `--config-file`, an
anonymous file in memory the process inherits.

Warm-up. sysbench 1.0.x, the release Debian and Ubuntu ship, has no `--warmup-time` (it came with
1.1: akopytov/sysbench#227, #466). By default the run lasts warm-up + measurement and
`--report-checkpoints=<warm-up>` makes sysbench print a full report at the end of the warm-up and
reset every counter and the latency histogram; the final report then covers the measurement only,
and `worker.sysbench_output.parse` keeps it. With sysbench >= 1.1 pass `native_warmup=True` to
use `--warmup-time`.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from experiments.factors import Value
from experiments.galera.workloads import WORKLOADS
from experiments.intervals import PERCENTILE

# Errors that abort one transaction, which sysbench then counts as an ignored error and retries,
# instead of stopping the run. MariaDB's wsrep layer (wsrep_override_error) reports a
# certification failure or a brute-force abort as 1213 ER_LOCK_DEADLOCK, a BF-aborted statement
# as 1317 ER_QUERY_INTERRUPTED (PXC does so for prepared statements, see akopytov/sysbench#122) and
# a wsrep timeout as 1205; 1020 is in sysbench's own default list. 1180 ER_ERROR_DURING_COMMIT is
# left out on purpose: wsrep raises it for a writeset over wsrep_max_ws_size or a failed
# streaming-replication fragment, configuration faults that must fail the trial, not conflicts.
DEFAULT_IGNORE_ERRORS = "1213,1020,1205,1317"

_HOST = re.compile(r"[A-Za-z0-9._:-]{1,255}\Z")
_DATABASE = re.compile(r"[A-Za-z0-9_]{1,64}\Z")
_IGNORE = re.compile(r"(all|none|\d{1,5}(,\d{1,5})*)\Z")
_VERSION = re.compile(r"sysbench (\d+)\.(\d+)\.(\d+)")
_OPTION = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
# The project's own workload scripts, beside sysbench's.
SCRIPTS = Path(__file__).parent / "workloads"
_PASSWORD_ARG = re.compile(r"(--mysql-password=)[^\s'\"]*")
# sysbench 1.0 reads its --config-file with fgets into 256 bytes: lines of at most 255
# characters, so `mysql-password="..."` and its newline leave 237 for the password.
_PASSWORD_MAX = 255 - len('mysql-password=""\n')


@dataclass(frozen=True)
class PasswordFile:
    """sysbench's --config-file with the password: an anonymous file in memory (memfd_create),
    on no disk, freed with the last process that holds it (a worker killed by SIGKILL leaves no
    copy). A sysbench process reads it as `path` once it inherits `fd` (`pass_fds`)."""

    fd: int

    @property
    def path(self) -> str:
        """The file as the process that inherited `fd` opens it."""
        return f"/proc/self/fd/{self.fd}"


@dataclass(frozen=True)
class Connection:
    """Where one sysbench client connects; the password is in `password_file` (from
    `password_file()`; None: an account without a password)."""

    host: str
    port: int
    user: str
    database: str
    password_file: PasswordFile | None = None

    def __post_init__(self) -> None:
        # sysbench reads --mysql-host and --mysql-port as comma-separated lists and would
        # silently spread the load over several servers.
        if not _HOST.match(self.host):
            raise ValueError(f"host: {self.host!r} is not a host name or address")
        if not 1 <= self.port <= 65535:
            raise ValueError(f"port: {self.port} is not in 1..65535")
        if not self.user:
            raise ValueError("user: must not be empty")
        if not _DATABASE.match(self.database):
            raise ValueError(f"database: {self.database!r} must match {_DATABASE.pattern}")


def _connection_args(connection: Connection) -> list[str]:
    secret = connection.password_file
    return [
        "--db-driver=mysql",
        f"--mysql-host={connection.host}",
        f"--mysql-port={connection.port}",
        f"--mysql-user={connection.user}",
        *([f"--config-file={secret.path}"] if secret is not None else []),
        f"--mysql-db={connection.database}",
    ]


def _password_line(password: str) -> str:
    """The --config-file line that sets `password`; ValueError when sysbench 1.0 cannot read it
    back. Its reader (src/sb_options.c, read_config) takes `name=value` lines, a value in single
    or double quotes verbatim up to the next quote of its kind, no escapes."""
    if any(character in password for character in "\n\r\0"):
        raise ValueError("password: sysbench cannot read a password with a line break or NUL")
    if '"' in password and "'" in password:
        raise ValueError("password: sysbench cannot read a password with both ' and \"")
    if len(password) > _PASSWORD_MAX:
        raise ValueError(f"password: sysbench reads at most {_PASSWORD_MAX} characters of it")
    quote = "'" if '"' in password else '"'
    return f"mysql-password={quote}{password}{quote}\n"


def check_password(password: str) -> None:
    """ValueError naming the rule when sysbench could not be given `password` by
    `password_file` (a line break or NUL, both kinds of quote, too long for its line)."""
    if password:
        _password_line(password)


@contextlib.contextmanager
def password_file(password: str) -> Iterator[PasswordFile | None]:
    """The `PasswordFile` that holds `password` (for `Connection.password_file`), closed on exit;
    None without a password. Not a file in a directory: one there outlives a worker killed while
    sysbench runs, and sysbench reads its --config-file as it starts, so it cannot go earlier.
    Close-on-exec: only the processes it is passed to inherit it."""
    if not password:
        yield None
        return
    line = _password_line(password).encode()
    descriptor = os.memfd_create("galera-doe-sysbench-password", os.MFD_CLOEXEC)
    try:
        os.write(descriptor, line)
        yield PasswordFile(descriptor)
    finally:
        os.close(descriptor)


def inherited(secret: PasswordFile | None) -> tuple[int, ...]:
    """The descriptors a sysbench process given `secret` must inherit (`pass_fds`)."""
    return () if secret is None else (secret.fd,)


def _check_positive(**values: int) -> None:
    for name, value in values.items():
        if value < 1:
            raise ValueError(f"{name}: must be at least 1, got {value}")


def _check_workload(workload: str) -> None:
    if workload not in WORKLOADS:
        raise ValueError(f"workload: {workload!r} is not one of {', '.join(WORKLOADS)}")


def script(workload: str) -> str:
    """What sysbench is told to run: the name of a script it ships, or the path of ours."""
    ours = SCRIPTS / f"{workload}.lua"
    return str(ours) if ours.exists() else workload


def _options(options: Mapping[str, Value]) -> list[str]:
    """A script's own options as arguments; names and values are checked, not quoted."""
    arguments = []
    for name, value in options.items():
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not _OPTION.fullmatch(name) or not number:
            raise ValueError(f"{name}: a script option is a name and a number")
        arguments.append(f"--{name}={value:g}" if isinstance(value, float) else f"--{name}={value}")
    return arguments


def prepare_command(
    connection: Connection,
    *,
    workload: str,
    tables: int,
    table_size: int,
    binary: str = "sysbench",
    options: Mapping[str, Value] | None = None,
    auto_inc: bool = True,
) -> list[str]:
    """The argument list that creates and fills the workload's tables in `connection.database`
    (`options`: the script's own, e.g. tpcc's warehouses and tpcc_scale). Without `auto_inc`
    an oltp table's ids are written 1..table_size, not taken from auto-increment (whose step
    on Galera is the cluster size), and its id column has no AUTO_INCREMENT."""
    _check_workload(workload)
    _check_positive(tables=tables, table_size=table_size)
    return [
        binary,
        script(workload),
        *_connection_args(connection),
        f"--tables={tables}",
        f"--table_size={table_size}",
        *_options(options or {}),
        *([] if auto_inc else ["--auto_inc=off"]),
        "prepare",
    ]


def run_command(
    connection: Connection,
    *,
    workload: str,
    threads: int,
    time_s: int,
    warmup_s: int,
    report_interval: int = 1,
    tables: int,
    table_size: int,
    ignore_errors: str = DEFAULT_IGNORE_ERRORS,
    native_warmup: bool = False,
    binary: str = "sysbench",
    options: Mapping[str, Value] | None = None,
) -> list[str]:
    """The argument list of one measured run: `time_s` of measurement after `warmup_s` of warm-up.

    Latency histogram on, 95th percentile, prepared statements off (a BF-aborted statement then
    comes back as 1213 like any conflict). Without `native_warmup` (sysbench 1.0.x) the warm-up
    is a report checkpoint, so `warmup_s` must be a multiple of `report_interval` for no interval
    report to straddle the end of the warm-up. `options` are the script's own (rw_mix's
    statements_per_trx, write_share, hot_rows).
    """
    _check_workload(workload)
    _check_positive(
        threads=threads,
        time_s=time_s,
        report_interval=report_interval,
        tables=tables,
        table_size=table_size,
    )
    if not _IGNORE.match(ignore_errors):
        raise ValueError(f"ignore_errors: {ignore_errors!r} is not 'all', 'none' or codes a,b,c")
    timing = _timing(time_s, warmup_s, report_interval, native_warmup=native_warmup)
    return [
        binary,
        script(workload),
        *_connection_args(connection),
        f"--tables={tables}",
        f"--table_size={table_size}",
        *_options(options or {}),
        f"--threads={threads}",
        *timing,
        f"--report-interval={report_interval}",
        "--histogram=on",
        f"--percentile={PERCENTILE}",
        "--db-ps-mode=disable",
        f"--mysql-ignore-errors={ignore_errors}",
        "run",
    ]


def _timing(time_s: int, warmup_s: int, report_interval: int, *, native_warmup: bool) -> list[str]:
    """How long the run lasts and where its warm-up ends (module docstring: Warm-up)."""
    if warmup_s < 0:
        raise ValueError(f"warmup_s: must not be negative, got {warmup_s}")
    if native_warmup:
        return [f"--time={time_s}", f"--warmup-time={warmup_s}"]
    if warmup_s == 0:
        return [f"--time={time_s}"]
    if warmup_s % report_interval:
        raise ValueError(
            f"warmup_s: {warmup_s} must be a multiple of report_interval ({report_interval})"
        )
    return [f"--time={time_s + warmup_s}", f"--report-checkpoints={warmup_s}"]


def supports_native_warmup(version_output: str) -> bool:
    """Whether the sysbench that printed `version_output` (its --version) has --warmup-time."""
    match = _VERSION.search(version_output)
    if match is None:
        raise ValueError(f"not a sysbench version: {version_output.strip()[:80]!r}")
    return (int(match[1]), int(match[2])) >= (1, 1)


def redact(text: str, password: str) -> str:
    """`text` with the password and any --mysql-password=... argument masked."""
    # The known password first: it may hold spaces or quotes, which end the argument pattern.
    masked = text.replace(password, "***") if password else text
    return _PASSWORD_ARG.sub(r"\1***", masked)
