"""What sysbench 1.0/1.1 printed: its reports parsed, the steady state of its interval series
(the statistics are `experiments.intervals`), and the outputs of several client processes that
ran at the same time combined.

`parse` reads what sysbench printed, `steady_state` estimates the steady-state throughput and p95
latency from the per-interval reports, `combine` merges the outputs of the clients of one trial,
and `tpcc_counts` reads what the TPC-C-like workload adds.

Formats follow sysbench's source (src/sysbench.c, src/db_driver.c, src/sb_histogram.c): the
interval line of `db_report_intermediate`, the cumulative block of `db_report_cumulative`, and
the histogram of `sb_histogram_print` (1024 log-spaced buckets from 0.001 ms to 100 s, each line
the bucket's value in ms with 3 decimals and its count). The final report after a warm-up
checkpoint covers the measurement only (`worker.sysbench`, Warm-up): `parse` keeps it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from experiments import intervals as intervals_statistics
from experiments.intervals import (
    PERCENTILE,
    SteadyState,
    SteadyStateError,
    histogram_percentile,
    merge_histograms,
)

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
