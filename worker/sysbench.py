"""sysbench 1.0/1.1 for Galera trials: argument lists and output parsing (the statistics of the
per-interval series are `experiments.intervals`).

Nothing here starts a process: `prepare_command` and `run_command` return argument lists for
`subprocess.run` (never a shell), without the password (argv is readable by every local user in
`ps` and /proc/<pid>/cmdline): `password_file` hands it to sysbench as its `--config-file`, an
anonymous file in memory the process inherits. `parse` reads what sysbench printed,
`steady_state` estimates the steady-state throughput and p95 latency from the per-interval
reports, and `combine` merges the outputs of several client processes that ran at the same time.

Formats follow sysbench's source (src/sysbench.c, src/db_driver.c, src/sb_histogram.c): the
interval line of `db_report_intermediate`, the cumulative block of `db_report_cumulative`, and
the histogram of `sb_histogram_print` (1024 log-spaced buckets from 0.001 ms to 100 s, each line
the bucket's value in ms with 3 decimals and its count).

Warm-up. sysbench 1.0.x, the release Debian and Ubuntu ship, has no `--warmup-time` (it came with
1.1: akopytov/sysbench#227, #466). By default the run lasts warm-up + measurement and
`--report-checkpoints=<warm-up>` makes sysbench print a full report at the end of the warm-up and
reset every counter and the latency histogram; the final report then covers the measurement only,
and `parse` keeps it. With sysbench >= 1.1 pass `native_warmup=True` to use `--warmup-time`.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from experiments import intervals as intervals_statistics
from experiments.factors import Value
from experiments.galera.workloads import WORKLOADS
from experiments.intervals import (
    PERCENTILE,
    SteadyState,
    SteadyStateError,
    histogram_percentile,
    merge_histograms,
)

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

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|inf|nan)"
_INTERVAL_START = re.compile(r"^\[ (\d+(?:\.\d+)?)s \] thds: ")
# The Lua report hook of sysbench.lua prints "err/s" without the colon that the C one has.
_INTERVAL = re.compile(
    rf"^\[ (?P<time>\d+(?:\.\d+)?)s \] thds: (?P<threads>\d+) tps: (?P<tps>{_NUM}) "
    rf"qps: (?P<qps>{_NUM}) \(r/w/o: {_NUM}/{_NUM}/{_NUM}\) "
    rf"lat \(ms,(?P<pct>\d+)%\): (?P<lat>{_NUM}) err/s:? (?P<err>{_NUM}) "
    rf"reconn/s: (?P<reconn>{_NUM})$"
)
_CHECKPOINT = re.compile(r"^\[ (\d+(?:\.\d+)?)s \] Checkpoint report:$")
_HISTOGRAM_LINE = re.compile(r"^\s*(\d+\.\d+) \|\**\s* (\d+)$")
_FIELDS: dict[str, re.Pattern[str]] = {
    "transactions": re.compile(rf"^\s+transactions:\s+(\d+)\s+\(({_NUM}) per sec\.\)$"),
    "queries": re.compile(rf"^\s+queries:\s+(\d+)\s+\(({_NUM}) per sec\.\)$"),
    "ignored_errors": re.compile(rf"^\s+ignored errors:\s+(\d+)\s+\(({_NUM}) per sec\.\)$"),
    "reconnects": re.compile(rf"^\s+reconnects:\s+(\d+)\s+\(({_NUM}) per sec\.\)$"),
    "total_time": re.compile(rf"^\s+total time:\s+({_NUM})s$"),
    "events": re.compile(r"^\s+total number of events:\s+(\d+)$"),
    "min": re.compile(rf"^\s+min:\s+({_NUM})$"),
    "avg": re.compile(rf"^\s+avg:\s+({_NUM})$"),
    "max": re.compile(rf"^\s+max:\s+({_NUM})$"),
    "percentile": re.compile(rf"^\s+(\d+)th percentile:\s+({_NUM})$"),
}


class SysbenchOutputError(ValueError):
    """sysbench printed no usable statistics; the message ends with the tail of its output."""


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
    if warmup_s < 0:
        raise ValueError(f"warmup_s: must not be negative, got {warmup_s}")
    if not _IGNORE.match(ignore_errors):
        raise ValueError(f"ignore_errors: {ignore_errors!r} is not 'all', 'none' or codes a,b,c")
    if native_warmup:
        timing = [f"--time={time_s}", f"--warmup-time={warmup_s}"]
    elif warmup_s == 0:
        timing = [f"--time={time_s}"]
    else:
        if warmup_s % report_interval:
            raise ValueError(
                f"warmup_s: {warmup_s} must be a multiple of report_interval ({report_interval})"
            )
        timing = [f"--time={time_s + warmup_s}", f"--report-checkpoints={warmup_s}"]
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


@dataclass(frozen=True)
class Interval:
    """One --report-interval line: rates over the interval that ends at `time_s`."""

    time_s: float
    threads: int
    tps: float
    qps: float
    latency_p95_ms: float
    errors_per_s: float
    reconnects_per_s: float


@dataclass(frozen=True)
class RunResult:
    """The final report of one run (the measurement window, after any warm-up checkpoint).

    `total_time_s` is sysbench's own "total time", which counts a checkpoint warm-up too; the
    rates are over the measurement window. `histogram` is (bucket value ms, count) of the final
    report, empty without --histogram. `intervals` are the interval reports of the measurement
    window, `warmup_intervals` those up to the warm-up checkpoint.
    """

    transactions: int
    tps: float
    queries: int
    qps: float
    ignored_errors: int
    errors_per_s: float
    reconnects: int
    reconnects_per_s: float
    latency_min_ms: float
    latency_avg_ms: float
    latency_max_ms: float
    latency_p95_ms: float
    total_time_s: float
    events: int
    histogram: tuple[tuple[float, int], ...]
    intervals: tuple[Interval, ...]
    warmup_intervals: tuple[Interval, ...] = ()


def _tail(output: str, lines: int = 20) -> str:
    return "\n".join(output.rstrip().splitlines()[-lines:])


def _failure(reason: str, output: str) -> SysbenchOutputError:
    fatal = next((line for line in output.splitlines() if line.startswith("FATAL:")), None)
    head = f"{reason} ({fatal})" if fatal else reason
    return SysbenchOutputError(f"{head}; last lines of the output:\n{_tail(output)}")


def _parse_interval(line: str) -> Interval:
    match = _INTERVAL.match(line)
    if match is None:
        raise SysbenchOutputError(f"unrecognised interval report: {line!r}")
    if int(match["pct"]) != PERCENTILE:
        raise SysbenchOutputError(f"interval reports the {match['pct']}th percentile, not the 95th")
    return Interval(
        time_s=float(match["time"]),
        threads=int(match["threads"]),
        tps=float(match["tps"]),
        qps=float(match["qps"]),
        latency_p95_ms=float(match["lat"]),
        errors_per_s=float(match["err"]),
        reconnects_per_s=float(match["reconn"]),
    )


def _parse_block(lines: list[str], output: str) -> dict[str, tuple[str, ...]]:
    """Field name -> captured groups of one cumulative report block."""
    found: dict[str, tuple[str, ...]] = {}
    for line in lines:
        for name, pattern in _FIELDS.items():
            match = pattern.match(line)
            if match is not None and name not in found:
                found[name] = match.groups()
                break
    missing = sorted(set(_FIELDS) - set(found))
    if missing:
        raise _failure(f"incomplete sysbench report (no {', '.join(missing)})", output)
    percentile = found["percentile"][0]
    if int(percentile) != PERCENTILE:
        raise _failure(f"report has the {percentile}th percentile, not the 95th", output)
    return found


def parse(output: str) -> RunResult:
    """Parse the stdout of `sysbench ... run`; SysbenchOutputError if it has no final report."""
    lines = output.splitlines()
    intervals: list[Interval] = []
    histogram: list[tuple[float, int]] = []
    blocks: list[tuple[bool, list[str]]] = []  # (is a checkpoint report, its lines)
    checkpoint_s: float | None = None
    pending_checkpoint = False
    in_histogram = False
    for line in lines:
        if in_histogram:
            match = _HISTOGRAM_LINE.match(line)
            if match is not None:
                histogram.append((float(match[1]), int(match[2])))
                continue
            if line.lstrip().startswith("value"):
                continue
            in_histogram = False
        if _INTERVAL_START.match(line):
            intervals.append(_parse_interval(line))
        elif match := _CHECKPOINT.match(line):
            checkpoint_s = float(match[1])
            pending_checkpoint = True
        elif line.startswith("Latency histogram"):
            # Only the final report prints a histogram: counts since the last checkpoint.
            histogram = []
            in_histogram = True
        elif line.startswith("SQL statistics:"):
            blocks.append((pending_checkpoint, []))
            pending_checkpoint = False
        elif blocks:
            blocks[-1][1].append(line)
    finals = [block for is_checkpoint, block in blocks if not is_checkpoint]
    if not finals:
        raise _failure("sysbench printed no final statistics", output)
    if len(finals) > 1:
        raise _failure("sysbench printed more than one final report", output)
    fields = _parse_block(finals[0], output)
    warmup = [i for i in intervals if checkpoint_s is not None and i.time_s <= checkpoint_s]
    return RunResult(
        transactions=int(fields["transactions"][0]),
        tps=float(fields["transactions"][1]),
        queries=int(fields["queries"][0]),
        qps=float(fields["queries"][1]),
        ignored_errors=int(fields["ignored_errors"][0]),
        errors_per_s=float(fields["ignored_errors"][1]),
        reconnects=int(fields["reconnects"][0]),
        reconnects_per_s=float(fields["reconnects"][1]),
        latency_min_ms=float(fields["min"][0]),
        latency_avg_ms=float(fields["avg"][0]),
        latency_max_ms=float(fields["max"][0]),
        latency_p95_ms=float(fields["percentile"][1]),
        total_time_s=float(fields["total_time"][0]),
        events=int(fields["events"][0]),
        histogram=tuple(histogram),
        intervals=tuple(intervals[len(warmup) :]),
        warmup_intervals=tuple(warmup),
    )


def steady_state(intervals: Sequence[Interval]) -> SteadyState:
    """The steady state of a run's interval reports (`experiments.intervals.steady_state` on the
    tps and p95 series)."""
    try:
        return intervals_statistics.steady_state(
            [interval.tps for interval in intervals],
            [interval.latency_p95_ms for interval in intervals],
        )
    except SteadyStateError as error:
        raise SysbenchOutputError(str(error)) from None


@dataclass(frozen=True)
class Combined:
    """The responses of several client processes that ran at the same time.

    tps, qps, error and reconnect rates and counts add; latency_avg_ms is the event-weighted
    mean; latency_p95_ms comes from the merged histograms. `intervals` is the summed interval
    series (same report times in every process); its p95 is the largest of the processes', an
    upper bound of the combined p95 (a mixture's quantile never exceeds its components' largest).
    """

    tps: float
    qps: float
    latency_avg_ms: float
    latency_p95_ms: float
    errors_per_s: float
    reconnects_per_s: float
    ignored_errors: int
    transactions: int
    steady: SteadyState
    histogram: tuple[tuple[float, int], ...]
    intervals: tuple[Interval, ...]


def sum_intervals(series: Sequence[Sequence[Interval]]) -> tuple[Interval, ...]:
    """Interval reports of concurrent processes added up by report time (times all of them have)."""
    by_time = [{interval.time_s: interval for interval in intervals} for intervals in series]
    common = sorted(set.intersection(*(set(times) for times in by_time)))
    return tuple(
        Interval(
            time_s=time_s,
            threads=sum(times[time_s].threads for times in by_time),
            tps=sum(times[time_s].tps for times in by_time),
            qps=sum(times[time_s].qps for times in by_time),
            latency_p95_ms=max(times[time_s].latency_p95_ms for times in by_time),
            errors_per_s=sum(times[time_s].errors_per_s for times in by_time),
            reconnects_per_s=sum(times[time_s].reconnects_per_s for times in by_time),
        )
        for time_s in common
    )


def combine(results: Sequence[RunResult]) -> Combined:
    """Combine the runs of client processes that loaded the cluster at the same time."""
    if not results:
        raise ValueError("results: need at least one run")
    if any(not result.histogram for result in results):
        raise SysbenchOutputError("combine needs every run's latency histogram (--histogram=on)")
    events = sum(result.events for result in results)
    if events == 0:
        raise SysbenchOutputError("no events in any run")
    histogram = merge_histograms([result.histogram for result in results])
    intervals = sum_intervals([result.intervals for result in results])
    return Combined(
        tps=sum(result.tps for result in results),
        qps=sum(result.qps for result in results),
        latency_avg_ms=sum(result.latency_avg_ms * result.events for result in results) / events,
        latency_p95_ms=histogram_percentile(histogram),
        errors_per_s=sum(result.errors_per_s for result in results),
        reconnects_per_s=sum(result.reconnects_per_s for result in results),
        ignored_errors=sum(result.ignored_errors for result in results),
        transactions=sum(result.transactions for result in results),
        steady=steady_state(intervals),
        histogram=histogram,
        intervals=intervals,
    )


_TPCC = re.compile(r"^tpcc-counts: (.*)$", re.MULTILINE)
# tpcc.lua's latency bucket b holds latencies in [TPCC_BUCKET_RATIO^(b-1), ^b) microseconds.
TPCC_BUCKET_RATIO = 1.02


@dataclass(frozen=True)
class TpccCounts:
    """What the TPC-C-like script's threads counted after its warm-up, summed over threads
    and client processes: committed and rolled-back new orders, the measured seconds (the mean
    of the threads'), and new-order latencies as (upper edge in ms, count) buckets."""

    new_orders: int
    rolled_back: int
    seconds: float
    latency: list[tuple[float, int]]

    @property
    def notpm(self) -> float:
        """New-order transactions per minute."""
        return 60.0 * self.new_orders / self.seconds if self.seconds > 0 else 0.0

    @property
    def rollback_rate(self) -> float:
        """The share of new orders rolled back."""
        total = self.new_orders + self.rolled_back
        return self.rolled_back / total if total else 0.0

    @property
    def latency_p95_ms(self) -> float:
        """The new-order latency 95 % of them stayed under (a bucket's upper edge)."""
        return histogram_percentile(self.latency) if self.latency else 0.0


def tpcc_counts(outputs: Sequence[str]) -> TpccCounts:
    """The tpcc-counts lines of every output, summed; SysbenchOutputError when there are none
    (the script failed before its threads ended)."""
    fields = [
        dict(part.split("=", 1) for part in match.split())
        for output in outputs
        for match in _TPCC.findall(output)
    ]
    if not fields:
        raise SysbenchOutputError("the tpcc script printed no counts: it did not finish")
    buckets: dict[int, int] = {}
    for line in fields:
        for pair in filter(None, line["latency_buckets"].split(",")):
            bucket, count = (int(v) for v in pair.split(":"))
            buckets[bucket] = buckets.get(bucket, 0) + count
    return TpccCounts(
        new_orders=sum(int(line["new_order"]) for line in fields),
        rolled_back=sum(int(line["rolled_back"]) for line in fields),
        seconds=sum(float(line["elapsed"]) for line in fields) / len(fields),
        latency=[(TPCC_BUCKET_RATIO**b / 1000.0, n) for b, n in sorted(buckets.items())],
    )
