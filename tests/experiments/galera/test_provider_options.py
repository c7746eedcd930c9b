"""The catalogue of Galera 4 provider options and how factor levels are written for the provider."""

from __future__ import annotations

import re

import pytest

from experiments.galera.provider_options import (
    PROVIDER_OPTIONS,
    ProviderOption,
    is_provider_option_name,
    provider_option,
    provider_value,
)

# galera/tests/defaults_check.cpp of Galera 26.4 (4.x branch at 26.4.18): every option with its
# default, as a release build on a 64-bit machine reports them. Left out: "dbug", "signal" and
# "gcache.debug", which exist only in debug builds.
DEFAULTS: dict[str, str] = {
    "base_dir": ".",
    "base_port": "4567",
    "cert.log_conflicts": "no",
    "cert.optimistic_pa": "yes",
    "debug": "no",
    "evs.auto_evict": "0",
    "evs.causal_keepalive_period": "PT1S",
    "evs.debug_log_mask": "0x1",
    "evs.delay_margin": "PT1S",
    "evs.delayed_keep_period": "PT30S",
    "evs.inactive_check_period": "PT0.5S",
    "evs.inactive_timeout": "PT15S",
    "evs.info_log_mask": "0",
    "evs.install_timeout": "PT7.5S",
    "evs.join_retrans_period": "PT1S",
    "evs.keepalive_period": "PT1S",
    "evs.max_install_timeouts": "3",
    "evs.send_window": "4",
    "evs.stats_report_period": "PT1M",
    "evs.suspect_timeout": "PT5S",
    "evs.use_aggregate": "true",
    "evs.user_send_window": "2",
    "evs.version": "1",
    "evs.view_forget_timeout": "P1D",
    "gcache.dir": ".",
    "gcache.keep_pages_size": "0",
    "gcache.mem_size": "0",
    "gcache.name": "galera.cache",
    "gcache.page_size": "128M",
    "gcache.recover": "yes",
    "gcache.size": "128M",
    "gcomm.thread_prio": "",
    "gcs.fc_debug": "0",
    "gcs.fc_factor": "1.0",
    "gcs.fc_limit": "16",
    "gcs.fc_master_slave": "no",
    "gcs.fc_single_primary": "no",
    "gcs.max_packet_size": "64500",
    "gcs.max_throttle": "0.25",
    "gcs.recv_q_hard_limit": "9223372036854775807",
    "gcs.recv_q_soft_limit": "0.25",
    "gcs.sync_donor": "no",
    "gmcast.listen_addr": "tcp://0.0.0.0:4567",
    "gmcast.mcast_addr": "",
    "gmcast.mcast_ttl": "1",
    "gmcast.peer_timeout": "PT3S",
    "gmcast.segment": "0",
    "gmcast.time_wait": "PT5S",
    "gmcast.version": "0",
    "pc.announce_timeout": "PT3S",
    "pc.checksum": "false",
    "pc.ignore_quorum": "false",
    "pc.ignore_sb": "false",
    "pc.linger": "PT20S",
    "pc.npvo": "false",
    "pc.recovery": "true",
    "pc.version": "0",
    "pc.wait_prim": "true",
    "pc.wait_prim_timeout": "PT30S",
    "pc.weight": "1",
    "protonet.backend": "asio",
    "protonet.version": "0",
    "repl.causal_read_timeout": "PT30S",
    "repl.commit_order": "3",
    "repl.key_format": "FLAT8",
    "repl.max_ws_size": "2147483647",
    "repl.proto_max": "11",
    "socket.checksum": "2",
    "socket.recv_buf_size": "auto",
    "socket.send_buf_size": "auto",
}
# The same file lists these in comments as options without a default.
DEFAULTS_WITHOUT_VALUE = {
    "ist.recv_addr",
    "socket.dynamic",
    "socket.ssl",
    "socket.ssl_cert",
    "socket.ssl_cipher",
    "socket.ssl_compression",
    "socket.ssl_key",
    "socket.ssl_reload",
}
# Options the provider knows that the defaults list does not name, each for its reason.
NOT_IN_DEFAULTS = {
    # Registered without a default: the node address, and a policy the operator must choose.
    "base_host",
    "gcs.vote_policy",
    # Registered without a default, and missing from the list's comments.
    "ist.recv_bind",
    "socket.ssl_ca",
    "socket.ssl_password_file",
    # Triggers (evict a node, bootstrap, add or drop a peer): they hold no value.
    "evs.evict",
    "pc.bootstrap",
    "gmcast.peer_addr",
    # Filled in from the cluster name when the node connects.
    "gmcast.group",
    # Hidden: registered, but left out of the provider's option list.
    "cert.length_check",
    "cert.max_length",
    "gmcast.isolate",
    "gmcast.mcast_port",
    "gmcast.mira",
    "ist.keep_keys",
    "socket.non_blocking",
    # New in 26.4.23, after the list was last updated.
    "gcs.stateless",
}


def test_every_option_is_in_the_defaults_list_or_an_explained_exception():
    listed = set(DEFAULTS) | DEFAULTS_WITHOUT_VALUE
    assert set(PROVIDER_OPTIONS) - listed == NOT_IN_DEFAULTS
    assert listed <= set(PROVIDER_OPTIONS)


def test_options_are_keyed_by_their_names_and_aliases_point_at_current_options():
    assert all(name == option.name for name, option in PROVIDER_OPTIONS.items())
    aliases = {
        name: option.alias_of for name, option in PROVIDER_OPTIONS.items() if option.alias_of
    }
    assert aliases == {"gcs.fc_master_slave": "gcs.fc_single_primary"}
    assert PROVIDER_OPTIONS["gcs.fc_single_primary"].alias_of is None


def test_the_catalogue_counts_43_tunable_and_52_other_options():
    tunable = [option for option in PROVIDER_OPTIONS.values() if option.tunable]
    assert (len(tunable), len(PROVIDER_OPTIONS) - len(tunable)) == (43, 52)


@pytest.mark.parametrize(
    ("name", "kind", "dynamic"),
    [
        ("gcs.fc_limit", "integer", True),
        ("gcs.fc_factor", "number", True),
        ("gcs.fc_single_primary", "boolean", False),
        ("gcs.fc_master_slave", "boolean", False),
        ("evs.send_window", "integer", True),
        ("evs.user_send_window", "integer", True),
        # ReplicatorSMM::set_param refuses it at run time.
        ("repl.commit_order", "integer", False),
        # GCache::param_set refuses to resize the ring buffer at run time.
        ("gcache.size", "size", False),
        ("cert.optimistic_pa", "boolean", True),
        # Accepted at run time but without effect until a restart.
        ("socket.recv_buf_size", "size", False),
    ],
)
def test_the_wan_advice_options_have_their_kind_and_run_time_flag(name, kind, dynamic):
    option = provider_option(name)
    assert (option.kind, option.dynamic, option.tunable) == (kind, dynamic, True)


def test_bounds_come_from_the_source():
    assert (PROVIDER_OPTIONS["gcs.fc_factor"].low, PROVIDER_OPTIONS["gcs.fc_factor"].high) == (0, 1)
    assert PROVIDER_OPTIONS["gcs.fc_limit"].low == 1
    assert PROVIDER_OPTIONS["repl.commit_order"].high == 3
    assert PROVIDER_OPTIONS["evs.suspect_timeout"].low == 0.1


@pytest.mark.parametrize(
    ("name", "expected"),
    [("gcs.fc_limit", True), ("evs.send_window", True), ("base_port", False), ("debug", False)],
)
def test_a_provider_option_name_has_a_dot(name, expected):
    assert is_provider_option_name(name) is expected


@pytest.mark.parametrize(
    ("name", "value", "written"),
    [
        ("cert.optimistic_pa", True, "yes"),
        ("cert.optimistic_pa", False, "no"),
        ("gcs.sync_donor", "ON", "yes"),
        ("gcs.sync_donor", 0, "no"),
        ("evs.suspect_timeout", 1.5, "PT1.5S"),
        ("evs.suspect_timeout", 90, "PT90S"),
        ("evs.suspect_timeout", "2.25", "PT2.25S"),
        ("evs.suspect_timeout", "pt1m30s", "PT1M30S"),
        ("evs.view_forget_timeout", "P1D", "P1D"),
        ("repl.causal_read_timeout", 0, "PT0S"),
        ("gcs.fc_limit", 256, "256"),
        ("gcs.fc_limit", 16.0, "16"),
        # Leading zeros would make the provider read octal.
        ("gcs.fc_limit", "016", "16"),
        ("gcs.fc_factor", 0.99, "0.99"),
        ("gcs.fc_factor", 1, "1"),
        ("gcs.fc_factor", "0.5", "0.5"),
        ("gcs.recv_q_soft_limit", 1e-7, "0.0000001"),
        ("gcache.size", "512M", "512M"),
        ("gcache.size", "2g", "2G"),
        ("gcache.size", "0512M", "512M"),
        # An int of bytes is written in its largest exact unit, else as plain bytes.
        ("gcache.size", 1073741824, "1G"),
        ("gcache.page_size", 1536, "1536"),
        ("gcache.keep_pages_size", 0, "0"),
        ("socket.recv_buf_size", "AUTO", "auto"),
        ("repl.key_format", "flat16a", "FLAT16A"),
        ("gcomm.thread_prio", "FIFO:10", "fifo:10"),
        ("repl.commit_order", " 2 ", "2"),
    ],
)
def test_levels_are_written_as_the_provider_takes_them(name, value, written):
    assert provider_value(provider_option(name), value) == written


def test_the_deprecated_alias_converts_like_its_current_name():
    assert provider_value(provider_option("gcs.fc_master_slave"), True) == "yes"


@pytest.mark.parametrize(
    "name",
    sorted(
        name for name, default in DEFAULTS.items() if default and PROVIDER_OPTIONS[name].tunable
    ),
)
def test_every_tunable_default_is_a_valid_level(name):
    provider_value(PROVIDER_OPTIONS[name], DEFAULTS[name])


SUSPECT_RULE = (
    "evs.suspect_timeout takes a duration of at least 0.1 s, in seconds or ISO 8601 like PT1.5S"
)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "gcs.fc_limit",
            "abc",
            'gcs.fc_limit takes an integer from 1 to 9223372036854775807, got "abc"',
        ),
        ("gcs.fc_limit", 0, "gcs.fc_limit takes an integer from 1 to 9223372036854775807, got 0"),
        ("gcs.fc_limit", 16.5, "gcs.fc_limit takes an integer from 1"),
        ("gcs.fc_limit", True, "gcs.fc_limit takes an integer from 1"),
        ("repl.commit_order", 4, "repl.commit_order takes an integer from 0 to 3, got 4"),
        ("gcs.fc_factor", 1.5, "gcs.fc_factor takes a decimal number from 0 to 1, got 1.5"),
        ("gcs.fc_factor", float("nan"), "gcs.fc_factor takes a decimal number"),
        ("gcs.fc_factor", "1e999", "gcs.fc_factor takes a decimal number"),
        ("gcs.max_throttle", 1, "gcs.max_throttle takes a decimal number from 0 to 0.999999999"),
        ("cert.optimistic_pa", "maybe", "cert.optimistic_pa takes yes or no"),
        ("cert.optimistic_pa", 2, "cert.optimistic_pa takes yes or no"),
        ("evs.suspect_timeout", 0.05, "evs.suspect_timeout takes a duration of at least 0.1 s"),
        ("evs.suspect_timeout", -1, "evs.suspect_timeout takes a duration"),
        ("evs.suspect_timeout", "5 seconds", SUSPECT_RULE),
        ("evs.suspect_timeout", "PT", SUSPECT_RULE),
        ("evs.suspect_timeout", "PT1.0000000001S", SUSPECT_RULE),
        ("evs.suspect_timeout", 1e300, "evs.suspect_timeout takes a duration under 292 years"),
        ("gcache.size", "512MB", "gcache.size takes a size, in bytes or with a K, M, G or T"),
        ("gcache.size", "1.5G", "gcache.size takes a size"),
        ("gcache.size", -1, "gcache.size takes a size"),
        ("gcache.size", "auto", "gcache.size takes a size"),
        ("gcs.recv_q_hard_limit", 0, "gcs.recv_q_hard_limit takes a size of at least 1 bytes"),
        (
            "repl.key_format",
            "FLAT32",
            'repl.key_format takes one of FLAT8, FLAT8A, FLAT16, FLAT16A, got "FLAT32"',
        ),
        ("gcomm.thread_prio", "batch:1", "gcomm.thread_prio takes a scheduling policy"),
        ("gcomm.thread_prio", 10, "gcomm.thread_prio takes a scheduling policy"),
    ],
)
def test_a_wrong_level_is_refused_with_the_option_and_its_rule(name, value, message):
    with pytest.raises(ValueError) as raised:
        provider_value(provider_option(name), value)
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize("character", [";", "=", "'", '"', "\\", "#", "\n", "\r", "\x00"])
@pytest.mark.parametrize("name", ["repl.key_format", "gcs.fc_limit", "gcache.size"])
def test_characters_that_break_the_option_string_or_the_sql_are_refused(name, character):
    with pytest.raises(ValueError) as raised:
        provider_value(provider_option(name), f"16{character}")
    rule = "takes a value without ; = ' \" \\ # or control characters, got"
    assert str(raised.value).startswith(f"{name} {rule}")


def test_forbidden_characters_are_refused_even_for_free_text():
    note = ProviderOption("lab.note", "text", dynamic=False)
    assert provider_value(note, "warm cache") == "warm cache"
    with pytest.raises(ValueError, match=re.escape("lab.note takes a value without")):
        provider_value(note, "x'; DROP TABLE t; --")
    with pytest.raises(ValueError, match=re.escape('lab.note takes non-empty text, got ""')):
        provider_value(note, "  ")


def test_an_unknown_name_is_refused_with_the_close_ones():
    with pytest.raises(ValueError) as raised:
        provider_option("gcs.fc_limt")
    assert str(raised.value).startswith(
        "unknown Galera provider option gcs.fc_limt; known options that are close: gcs.fc_limit"
    )
    with pytest.raises(ValueError, match="unknown Galera provider option qqq; no known option"):
        provider_option("qqq")


@pytest.mark.parametrize(
    "name", sorted(name for name, option in PROVIDER_OPTIONS.items() if not option.tunable)
)
def test_an_option_that_is_no_benchmark_setting_is_refused_with_why(name):
    with pytest.raises(ValueError, match=rf"^{name} is not a benchmark setting: it \w+ "):
        provider_value(PROVIDER_OPTIONS[name], "1")


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("gmcast.listen_addr", "where the node listens"),
        ("gcache.dir", "where it keeps files"),
        ("socket.ssl_key", "encryption"),
        ("pc.ignore_quorum", "primary component"),
        ("gmcast.segment", "whom it joins"),
        ("evs.version", "protocol version"),
    ],
)
def test_the_reason_names_the_group(name, words):
    with pytest.raises(ValueError, match=words):
        provider_value(provider_option(name), "x")
