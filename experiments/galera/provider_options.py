"""The Galera 4 provider options (the keys of `wsrep_provider_options`) that a factor may name.

The catalogue describes galera-4 26.4.23 as Debian 12 ships it. Kinds, bounds and which options
`SET GLOBAL wsrep_provider_options` can change were read from the Galera 4 source (the 26.4.18
tree, checked against the strings of the installed 26.4.23 library and the release notes of
26.4.19 to 26.4.23): the option registrations (`register_params`, `gcs_params_register`) and the
run-time setters (`ReplicatorSMM::set_param`, `gcs_param_set`, `GCache::param_set`,
`Certification::param_set`, the gcomm `set_param` of evs, pc and gmcast). Where Codership's
parameter table says otherwise, the source won, and the entry says so.

Standard library only: the API checks factors with it at submission, the worker when it applies
them.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType
from typing import Literal

ProviderValue = int | float | str | bool

Kind = Literal["integer", "number", "boolean", "duration", "size", "text"]


@dataclass(frozen=True)
class ProviderOption:
    """One Galera provider option: how its value is written and whether it changes at run time."""

    name: str
    kind: Kind
    # True: SET GLOBAL wsrep_provider_options may change it at run time; False: restart needed.
    dynamic: bool
    # Bounds the documentation or the source enforces: plain numbers for integer and number kinds,
    # seconds for durations, bytes for sizes.
    low: float | None = None
    high: float | None = None
    # A deprecated alias names the option's current name here.
    alias_of: str | None = None
    # False: known, but not something a benchmark may set (see provider_value).
    tunable: bool = True


# gcs and evs hold these limits in C long and int64 (seqno_t); amd64 makes both 64 bits wide.
_LONG_MAX = 2**63 - 1
_INT_MAX = 2**31 - 1
# gcs keeps these fractions strictly below 1 and checks them against 1 - 1e-9 at start.
_BELOW_ONE = 1 - 1e-9

_TUNABLE: tuple[ProviderOption, ...] = (
    ProviderOption("cert.optimistic_pa", "boolean", dynamic=True),
    # Source over docs: the evs entries marked "docs: No" all have a case in
    # evs::Proto::set_param, so SET GLOBAL changes them on a running node. Its range checks
    # exclude their upper end, hence the "- 1" maxima.
    ProviderOption("evs.causal_keepalive_period", "duration", dynamic=True, low=0),  # docs: No
    ProviderOption("evs.delay_margin", "duration", dynamic=True),  # docs: No
    ProviderOption("evs.delayed_keep_period", "duration", dynamic=True),  # docs: No
    # evs::Proto::set_param refuses it with EPERM, as it does evs.view_forget_timeout.
    ProviderOption("evs.inactive_check_period", "duration", dynamic=False),
    ProviderOption("evs.inactive_timeout", "duration", dynamic=True, low=0.1),  # docs: No
    # Also bounded by the other timeouts: at least twice evs.keepalive_period, at most
    # evs.inactive_timeout; the provider checks that against its current values.
    ProviderOption("evs.install_timeout", "duration", dynamic=True),
    ProviderOption("evs.join_retrans_period", "duration", dynamic=True, low=0.1),
    ProviderOption("evs.keepalive_period", "duration", dynamic=True, low=0.1),  # docs: No
    ProviderOption(  # docs: No
        "evs.max_install_timeouts", "integer", dynamic=True, low=0, high=_INT_MAX - 1
    ),
    # Never below the running evs.user_send_window, which the provider checks on SET.
    ProviderOption("evs.send_window", "integer", dynamic=True, low=1, high=_LONG_MAX - 1),
    ProviderOption("evs.suspect_timeout", "duration", dynamic=True, low=0.1),  # docs: No
    ProviderOption("evs.use_aggregate", "boolean", dynamic=True),  # docs: No
    # Never above the running evs.send_window, which the provider checks on SET.
    ProviderOption("evs.user_send_window", "integer", dynamic=True, low=1),
    ProviderOption("evs.view_forget_timeout", "duration", dynamic=False, low=1),
    # GCache::param_set resizes these three at run time (docs: No); gcache.size is EPERM there.
    ProviderOption("gcache.keep_pages_size", "size", dynamic=True),
    ProviderOption("gcache.mem_size", "size", dynamic=True),
    ProviderOption("gcache.page_size", "size", dynamic=True),
    ProviderOption("gcache.recover", "boolean", dynamic=False),
    ProviderOption("gcache.size", "size", dynamic=False),
    ProviderOption("gcomm.thread_prio", "text", dynamic=False),
    # gcs_param_set handles fc_factor (Codership's table: No) and every gcs.* entry below marked
    # "docs: No"; fc_single_primary and its alias fall through to "unknown parameter".
    ProviderOption("gcs.fc_factor", "number", dynamic=True, low=0, high=1),
    # A restart takes 0, SET GLOBAL refuses it: 1 keeps a level valid both ways.
    ProviderOption("gcs.fc_limit", "integer", dynamic=True, low=1, high=_LONG_MAX),
    ProviderOption("gcs.fc_single_primary", "boolean", dynamic=False),
    ProviderOption(
        "gcs.fc_master_slave", "boolean", dynamic=False, alias_of="gcs.fc_single_primary"
    ),
    # gcs_core_set_pkt_size takes a C int.
    ProviderOption(  # docs: No
        "gcs.max_packet_size", "integer", dynamic=True, low=1, high=_INT_MAX
    ),
    ProviderOption("gcs.max_throttle", "number", dynamic=True, low=0, high=_BELOW_ONE),  # docs: No
    ProviderOption("gcs.recv_q_hard_limit", "size", dynamic=True, low=1),  # docs: No
    ProviderOption(  # docs: No
        "gcs.recv_q_soft_limit", "number", dynamic=True, low=0, high=_BELOW_ONE
    ),
    ProviderOption("gcs.sync_donor", "boolean", dynamic=True),  # docs: No
    ProviderOption("gmcast.peer_timeout", "duration", dynamic=False),
    ProviderOption("gmcast.time_wait", "duration", dynamic=False),
    ProviderOption("pc.announce_timeout", "duration", dynamic=False),
    ProviderOption("pc.checksum", "boolean", dynamic=False),
    ProviderOption("pc.linger", "duration", dynamic=False),
    ProviderOption("pc.wait_prim_timeout", "duration", dynamic=False),
    # ReplicatorSMM::set_param applies these three at run time (Codership's table: No).
    ProviderOption("repl.causal_read_timeout", "duration", dynamic=True),
    ProviderOption("repl.key_format", "text", dynamic=True),
    # Read with a plain int parse at run time, so no K/M/G suffix: an integer of bytes.
    ProviderOption("repl.max_ws_size", "integer", dynamic=True, high=_INT_MAX),
    # ReplicatorSMM::set_param refuses it with EPERM: 0 bypass, 1 OOOC, 2 local OOOC, 3 none.
    ProviderOption("repl.commit_order", "integer", dynamic=False, low=0, high=3),
    # 0 none, 1 CRC-32, 2 CRC-32C; the provider silently falls back to CRC-32 on anything else.
    ProviderOption("socket.checksum", "integer", dynamic=False, low=0, high=2),
    # Source over docs (both "Yes"): GMCast accepts recv_buf_size at run time but the socket only
    # logs that a restart is needed; no setter knows send_buf_size, so SET GLOBAL fails.
    ProviderOption("socket.recv_buf_size", "size", dynamic=False),
    ProviderOption("socket.send_buf_size", "size", dynamic=False),
)


def _fixed(name: str, kind: Kind, *, dynamic: bool) -> ProviderOption:
    return ProviderOption(name, kind, dynamic=dynamic, tunable=False)


# Each group: the end of "X is not a benchmark setting: it ...", then its options.
_NOT_TUNABLE: tuple[tuple[str, tuple[ProviderOption, ...]], ...] = (
    (
        # Addresses, files, segments and roles describe the lab's deployment, not a setting.
        "says where the node listens, whom it joins, where it keeps files or what role it plays,"
        " which the lab deployment decides",
        (
            _fixed("base_dir", "text", dynamic=False),
            # ReplicatorSMM::set_param accepts the base_* keys but they act only at restart.
            _fixed("base_host", "text", dynamic=False),
            _fixed("base_port", "integer", dynamic=False),
            _fixed("gcache.dir", "text", dynamic=False),
            _fixed("gcache.name", "text", dynamic=False),
            # New in 26.4.23 (release notes, library strings); refused at run time there.
            _fixed("gcs.stateless", "boolean", dynamic=False),
            _fixed("gmcast.group", "text", dynamic=False),
            _fixed("gmcast.listen_addr", "text", dynamic=False),
            _fixed("gmcast.mcast_addr", "text", dynamic=False),
            _fixed("gmcast.mcast_port", "integer", dynamic=False),
            _fixed("gmcast.mcast_ttl", "integer", dynamic=False),
            _fixed("gmcast.peer_addr", "text", dynamic=True),
            _fixed("gmcast.segment", "integer", dynamic=False),
            _fixed("ist.recv_addr", "text", dynamic=False),
            _fixed("ist.recv_bind", "text", dynamic=False),
        ),
    ),
    (
        # Encryption and who may connect are security, never an experiment's variable.
        "configures encryption or which peers may connect",
        (
            _fixed("socket.dynamic", "boolean", dynamic=False),
            _fixed("socket.ssl", "boolean", dynamic=False),
            _fixed("socket.ssl_ca", "text", dynamic=False),
            _fixed("socket.ssl_cert", "text", dynamic=False),
            _fixed("socket.ssl_cipher", "text", dynamic=False),
            _fixed("socket.ssl_compression", "boolean", dynamic=False),
            _fixed("socket.ssl_key", "text", dynamic=False),
            _fixed("socket.ssl_password_file", "text", dynamic=False),
            # A trigger that gu::ssl_param_set runs at run time (docs: No).
            _fixed("socket.ssl_reload", "boolean", dynamic=True),
        ),
    ),
    (
        # Quorum and membership: a wrong value splits, stalls or shrinks the lab cluster.
        "decides which nodes form the primary component or stay in the cluster, so a wrong"
        " value can split, stall or shrink the lab cluster",
        (
            # evs::Proto::set_param handles both at run time (docs: No).
            _fixed("evs.auto_evict", "integer", dynamic=True),
            _fixed("evs.evict", "text", dynamic=True),
            # gcs_group_param_set refuses it with ENOTSUP.
            _fixed("gcs.vote_policy", "integer", dynamic=False),
            _fixed("gmcast.isolate", "integer", dynamic=True),
            # pc::Proto::set_param runs the bootstrap at run time (docs: No).
            _fixed("pc.bootstrap", "boolean", dynamic=True),
            _fixed("pc.ignore_quorum", "boolean", dynamic=True),
            _fixed("pc.ignore_sb", "boolean", dynamic=True),
            _fixed("pc.npvo", "boolean", dynamic=False),
            _fixed("pc.recovery", "boolean", dynamic=False),
            _fixed("pc.wait_prim", "boolean", dynamic=False),
            _fixed("pc.weight", "integer", dynamic=True),
        ),
    ),
    (
        # Protocol versions and transports are negotiated across nodes, not tuned on one.
        "selects a protocol version or transport that the nodes negotiate together",
        (
            # evs::Proto::set_param switches the version at run time (docs: No).
            _fixed("evs.version", "integer", dynamic=True),
            _fixed("gmcast.version", "integer", dynamic=False),
            _fixed("pc.version", "integer", dynamic=False),
            _fixed("protonet.backend", "text", dynamic=False),
            _fixed("protonet.version", "integer", dynamic=False),
            # ReplicatorSMM::set_param accepts it but it acts only at restart.
            _fixed("repl.proto_max", "integer", dynamic=False),
        ),
    ),
    (
        # Logging switches change the error log, not replication.
        "only controls diagnostic logging",
        (
            _fixed("cert.log_conflicts", "boolean", dynamic=True),
            _fixed("debug", "boolean", dynamic=True),
            # Hexadecimal masks ("0x1"), so text rather than integer.
            _fixed("evs.debug_log_mask", "text", dynamic=True),
            _fixed("evs.info_log_mask", "text", dynamic=True),  # docs: No
            _fixed("evs.stats_report_period", "duration", dynamic=True),  # docs: No
            _fixed("gcs.fc_debug", "integer", dynamic=True),  # docs: No
        ),
    ),
    (
        # Hidden internals: undocumented, left out of the provider's own option list.
        "is an undocumented internal of the provider (some must match on every node)",
        (
            _fixed("cert.length_check", "integer", dynamic=False),
            _fixed("cert.max_length", "integer", dynamic=False),
            _fixed("gmcast.mira", "integer", dynamic=True),
            _fixed("ist.keep_keys", "boolean", dynamic=False),
            _fixed("socket.non_blocking", "boolean", dynamic=False),
        ),
    ),
)

_ALL: tuple[ProviderOption, ...] = (
    *_TUNABLE,
    *(option for _, group in _NOT_TUNABLE for option in group),
)
PROVIDER_OPTIONS: Mapping[str, ProviderOption] = MappingProxyType(
    {option.name: option for option in sorted(_ALL, key=lambda option: option.name)}
)
_WHY_NOT_TUNABLE: Mapping[str, str] = {
    option.name: why for why, group in _NOT_TUNABLE for option in group
}

# Text options whose value has a fixed form: the pattern, the rule that names it, and how the
# provider spells an accepted value.
_TEXT_FORMS: Mapping[str, tuple[re.Pattern[str], str, Callable[[str], str]]] = {
    "repl.key_format": (
        re.compile(r"FLAT(8|16)A?", re.IGNORECASE),
        "one of FLAT8, FLAT8A, FLAT16, FLAT16A",
        str.upper,
    ),
    "gcomm.thread_prio": (
        re.compile(r"(other|fifo|rr):\d{1,2}", re.IGNORECASE),
        "a scheduling policy and priority like fifo:10 (other, fifo or rr)",
        str.lower,
    ),
}
# The socket buffers take "auto" (let the kernel size them) as well as a size.
_SIZES_WITH_AUTO = frozenset({"socket.recv_buf_size", "socket.send_buf_size"})

# ";" and "=" split the option string, quotes and backslashes end or escape the SQL string or the
# provider's escapes, "#" starts a comment in my.cnf, and control characters split lines.
_FORBIDDEN = re.compile(r"""[;='"\\#\x00-\x1f\x7f]""")
_FORBIDDEN_RULE = "a value without ; = ' \" \\ # or control characters"

_BOOLEANS = {
    **dict.fromkeys(("yes", "true", "on", "1"), True),
    **dict.fromkeys(("no", "false", "off", "0"), False),
}
_INTEGER = re.compile(r"[+-]?\d+")
_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_SIZE = re.compile(r"(\d+)([KMGT]?)", re.IGNORECASE)
_SIZE_SHIFTS = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
# Galera's own duration form; it counts a month as 30 days and a year as 12 months, and keeps
# nanoseconds, hence at most 9 decimals of seconds.
_ISO_DURATION = re.compile(
    r"P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d{1,9})?)S)?)?"
)
_ISO_UNITS = (360 * 86400, 30 * 86400, 86400, 3600, 60, 1)
# The provider counts nanoseconds in a signed 64-bit integer: about 292 years.
_LONGEST_DURATION = _LONG_MAX / 1e9


def is_provider_option_name(name: str) -> bool:
    """Whether a factor name is meant as a provider option: it contains a dot (every Galera
    option but base_dir/base_host/base_port/debug does; those four are not tunable factors)."""
    return "." in name


def provider_option(name: str) -> ProviderOption:
    """The option called `name`; ValueError naming the closest known options otherwise."""
    option = PROVIDER_OPTIONS.get(name)
    if option is not None:
        return option
    close = difflib.get_close_matches(name, PROVIDER_OPTIONS, n=3)
    hint = (
        f"known options that are close: {', '.join(close)}"
        if close
        else "no known option is close to it"
    )
    raise ValueError(f"unknown Galera provider option {name}; {hint}")


def provider_value(option: ProviderOption, value: ProviderValue) -> str:
    """`value` written as the provider takes it in 'name=value'; ValueError naming the option
    and its rule for a value of the wrong kind, out of bounds or unsafe in the option string.

    Booleans become yes/no; durations ISO 8601 (PT1.5S) from seconds or a P... string; sizes
    the largest exact K/M/G/T form of an int of bytes (1073741824 -> 1G) or the given suffixed
    string; numbers plain decimals.
    """
    if not option.tunable:
        why = _WHY_NOT_TUNABLE.get(option.name, "is not meant to be changed by an experiment")
        raise ValueError(f"{option.name} is not a benchmark setting: it {why}")
    if isinstance(value, str):
        if _FORBIDDEN.search(value):
            raise _rejected(option, _FORBIDDEN_RULE, value)
        value = value.strip()
    if option.kind == "boolean":
        return _boolean(option, value)
    if option.kind == "integer":
        return _integer(option, value)
    if option.kind == "number":
        return _number(option, value)
    if option.kind == "duration":
        return _duration(option, value)
    if option.kind == "size":
        return _size(option, value)
    return _text(option, value)


def reported_value(name: str, text: str) -> str:
    """A provider option's value as a node reports it, in a factor's units: a duration in
    seconds (PT1.5S -> 1.5), a size in bytes (128M -> 134217728); any other as reported."""
    option = PROVIDER_OPTIONS.get(name)
    spoken = text.strip()
    if option is None:
        return spoken
    if option.kind == "duration" and (parts := _ISO_DURATION.fullmatch(spoken.upper())):
        return repr(_seconds(parts))
    if option.kind == "size" and (parts := _SIZE.fullmatch(spoken)):
        return str(int(parts.group(1)) << _SIZE_SHIFTS[parts.group(2).upper()])
    return spoken


def _boolean(option: ProviderOption, value: ProviderValue) -> str:
    if isinstance(value, str):
        value = _BOOLEANS.get(value.lower(), value)
    if isinstance(value, int) and value in (0, 1):
        return "yes" if value else "no"
    raise _rejected(option, "yes or no (also true/false, on/off, 1/0)", value)


def _integer(option: ProviderOption, value: ProviderValue) -> str:
    number = _numeric(value, whole=True)
    if number is None or not _within(option, number):
        raise _rejected(option, "an integer" + _bounds(option), value)
    # Decimal digits without leading zeros: the provider reads "010" as octal.
    return str(number)


def _number(option: ProviderOption, value: ProviderValue) -> str:
    number = _numeric(value, whole=False)
    if number is None or not _within(option, number):
        raise _rejected(option, "a decimal number" + _bounds(option), value)
    return _decimal(number)


def _duration(option: ProviderOption, value: ProviderValue) -> str:
    written: str | None = None
    seconds = _numeric(value, whole=False)
    if isinstance(value, str) and seconds is None:
        iso = value.upper()
        parts = _ISO_DURATION.fullmatch(iso)
        if parts and any(parts.groups()) and not iso.endswith("T"):
            written = iso
            seconds = _seconds(parts)
    if seconds is None or seconds < 0 or not _within(option, seconds):
        rule = "a duration" + _bounds(option, " s") + ", in seconds or ISO 8601 like PT1.5S"
        raise _rejected(option, rule, value)
    if seconds > _LONGEST_DURATION:
        raise _rejected(option, "a duration under 292 years", value)
    # Galera keeps nanoseconds: further decimals would be cut anyway.
    return written or "PT" + f"{seconds:.9f}".rstrip("0").rstrip(".") + "S"


def _seconds(parts: re.Match[str]) -> float:
    """The seconds of a matched ISO 8601 duration, in Galera's units (`_ISO_UNITS`)."""
    return sum(
        float(part) * unit for part, unit in zip(parts.groups(), _ISO_UNITS, strict=True) if part
    )


def _size(option: ProviderOption, value: ProviderValue) -> str:
    auto = option.name in _SIZES_WITH_AUTO
    if auto and isinstance(value, str) and value.lower() == "auto":
        return "auto"
    written: str | None = None
    size = _numeric(value, whole=True)
    if isinstance(value, str) and (parts := _SIZE.fullmatch(value)):
        digits, suffix = int(parts.group(1)), parts.group(2).upper()
        # Re-written without leading zeros, which the provider would read as octal.
        written = f"{digits}{suffix}"
        size = digits << _SIZE_SHIFTS[suffix]
    if size is None or size < 0 or not _within(option, size):
        rule = "a size" + _bounds(option, " bytes") + ", in bytes or with a K, M, G or T suffix"
        rule += " like 128M" + (", or auto" if auto else "")
        raise _rejected(option, rule, value)
    return written or _compact_size(size)


def _text(option: ProviderOption, value: ProviderValue) -> str:
    form = _TEXT_FORMS.get(option.name)
    rule = "non-empty text" if form is None else form[1]
    if not isinstance(value, str) or not value:
        raise _rejected(option, rule, value)
    if form is None:
        return value
    pattern, _, spelling = form
    if not pattern.fullmatch(value):
        raise _rejected(option, rule, value)
    return spelling(value)


def _numeric(value: ProviderValue, *, whole: bool) -> int | float | None:
    """The finite number a level stands for, None if it stands for none (booleans do not)."""
    number: int | float | None = None
    if isinstance(value, str):
        if _INTEGER.fullmatch(value):
            number = int(value)
        elif not whole and _DECIMAL.fullmatch(value):
            number = float(value)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        number = value
    if isinstance(number, float):
        if not math.isfinite(number) or (whole and not number.is_integer()):
            return None
        return int(number) if whole else number
    return number


def _compact_size(size: int) -> str:
    for suffix in ("T", "G", "M", "K"):
        shift = _SIZE_SHIFTS[suffix]
        if size and size % (1 << shift) == 0:
            return f"{size >> shift}{suffix}"
    return str(size)


def _decimal(number: float) -> str:
    # repr gives the shortest exact form; Decimal turns its exponent (1e-07) into digits.
    return format(Decimal(repr(number)), "f")


def _within(option: ProviderOption, number: float) -> bool:
    return (option.low is None or number >= option.low) and (
        option.high is None or number <= option.high
    )


def _bounds(option: ProviderOption, unit: str = "") -> str:
    low = None if option.low is None else _decimal(option.low) + unit
    high = None if option.high is None else _decimal(option.high) + unit
    if low is not None and high is not None:
        return f" from {low} to {high}"
    if low is not None:
        return f" of at least {low}"
    if high is not None:
        return f" of at most {high}"
    return ""


def _rejected(option: ProviderOption, rule: str, value: object) -> ValueError:
    shown = f'"{value}"' if isinstance(value, str) else repr(value)
    return ValueError(f"{option.name} takes {rule}, got {shown}")
