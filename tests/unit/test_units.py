"""The one home of durations, sizes and RFC 3339 times (jetwire._units), and its users:
the CLI's click types, the Spark options, the schedule checker and the models."""
from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from jetwire import _impl
from jetwire._units import (
    NanoDatetime,
    format_rfc3339,
    go_duration_seconds,
    parse_duration,
    parse_rfc3339,
    parse_size,
    parse_time_input,
    rfc3339_to_us,
)

UTC = UTC


@pytest.mark.parametrize(("text", "seconds"), [
    (90, 90.0), (1.5, 1.5), ("90", 90.0), ("1.5", 1.5), (" 2 ", 2.0), ("-1", -1.0), (".5", 0.5),
    ("500ms", 0.5), ("1m30s", 90.0), ("1h2m3.5s", 3723.5), ("2h", 7200.0), ("7d", 7 * 86400.0),
    ("1w", 7 * 86400.0), ("1y", 365 * 86400.0), ("250us", 250e-6), ("250µs", 250e-6), ("250μs", 250e-6),
    ("10ns", 10e-9), ("1.5m", 90.0), ("1.m", 60.0), ("1M30S", 90.0), ("500MS", 0.5), ("10 s", 10.0),
    ("1h 30m", 5400.0), (" 1m30s ", 90.0), (timedelta(minutes=1, seconds=30), 90.0),
    (timedelta(milliseconds=5), 0.005),
])
def test_parse_duration_one_grammar(text: object, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds, rel=1e-12)


@pytest.mark.parametrize("bad", ["", "soon", "1x", "m", "1m30", "30s1", "1..5s", "nan", True, None, "1 h x"])
def test_parse_duration_refuses(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)


def test_go_duration_is_the_same_grammar_held_to_go() -> None:
    assert go_duration_seconds("1h2m3s") == 3723
    assert go_duration_seconds("1m30s") == parse_duration("1m30s") == 90
    assert go_duration_seconds(".5s") == 0.5 and go_duration_seconds("250μs") == 250e-6
    # what Go refuses: a bare number, spaces, days, upper case
    for text in ("", "90", "1s ", "1 s", "7d", "1M", "1m 30s"):
        assert go_duration_seconds(text) is None, text


@pytest.mark.parametrize(("text", "n"), [
    (128, 128), ("128", 128), ("1k", 1024), ("1KB", 1024), ("1KiB", 1024), ("2.5MB", int(2.5 * 1024**2)),
    ("4MiB", 4 * 1024**2), ("1g", 1024**3), ("1T", 1024**4), ("-1", -1), (" 8 kb ", 8192),
])
def test_parse_size(text: object, n: int) -> None:
    assert parse_size(text) == n


@pytest.mark.parametrize("bad", ["", "big", "1x", "1KBB", "-2", "1.5.5k"])
def test_parse_size_refuses(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_size(bad)


def test_rfc3339_round_trip_keeps_nanoseconds() -> None:
    t = parse_rfc3339("2024-01-02T05:04:05.123456789+02:00")
    assert isinstance(t, NanoDatetime) and t.nanosecond == 789
    assert format_rfc3339(t) == "2024-01-02T03:04:05.123456789Z"
    assert format_rfc3339(t, digits=6) == "2024-01-02T03:04:05.123456Z"
    assert parse_rfc3339("0001-01-01T00:00:00Z") is None and parse_rfc3339(None) is None
    assert parse_rfc3339("2024-01-02 03:04:05") == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)  # naive: UTC
    with pytest.raises(ValueError):
        parse_rfc3339("yesterday")


def test_parse_time_input() -> None:
    want = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert parse_time_input("2024-01-02T03:04:05Z") == want
    assert parse_time_input("2024-01-02 03:04:05") == want  # no zone: UTC
    assert parse_time_input("2024-01-02T03:04:05.1234567Z") == want.replace(microsecond=123456)
    assert parse_time_input(str(int(want.timestamp() * 1000))) == want  # epoch milliseconds
    assert parse_time_input(int(want.timestamp() * 1000)) == want
    assert parse_time_input(datetime(2024, 1, 2, 3, 4, 5)) == want
    local = parse_time_input("2024-01-02T03:04:05", naive_local=True)
    assert local == datetime(2024, 1, 2, 3, 4, 5).astimezone()
    for bad in ("", "soon", "2024-13-01T00:00:00Z"):
        with pytest.raises(ValueError):
            parse_time_input(bad)


@pytest.mark.parametrize("text", [
    "2024-01-02T03:04:05Z", "2024-01-02T03:04:05.123456789Z", "2024-01-02T05:04:05.5+02:00",
    "1969-12-31T23:59:59.9999995Z",
])
def test_rfc3339_to_us_matches_the_hot_path(text: str) -> None:
    assert rfc3339_to_us(text) == _impl.rfc3339_us(text)


def test_rfc3339_to_us_reads_odd_layouts_the_hot_path_does_not() -> None:
    assert _impl.rfc3339_us("2024-01-02 03:04:05Z") is None
    assert rfc3339_to_us("2024-01-02 03:04:05Z") == rfc3339_to_us("2024-01-02T03:04:05Z")
    assert rfc3339_to_us("") is None and rfc3339_to_us("garbage.1Z") is None


def test_cli_click_types_use_the_one_grammar() -> None:
    from jetwire.cli._click import DURATION, SIZE

    assert DURATION.convert("1h2m3.5s", None, None) == 3723.5
    assert DURATION.convert("90", None, None) == 90.0
    assert SIZE.convert("4MiB", None, None) == 4 * 1024**2


def test_spark_options_accept_go_durations() -> None:
    """``1m30s`` was refused by the Spark options before they used the one grammar."""
    from jetwire.spark._options import OptionError, ReadOptions, parse_duration, parse_time

    assert parse_duration("1m30s", "fetchTimeout") == 90.0
    assert parse_duration("500ms", "ackTimeout") == 0.5
    assert parse_duration(" 10 S ", "ackTimeout") == 10.0
    assert parse_duration("2.5", "ackTimeout") == 2.5
    for bad in ("0", "-1", "soon", "inf", "1m30"):
        with pytest.raises(OptionError, match="ackTimeout"):
            parse_duration(bad, "ackTimeout")
    opts = ReadOptions({"stream": "S", "fetchTimeout": "1m30s", "connectTimeout": "1m"})
    assert opts.fetch_timeout == 90.0
    assert math.isclose(opts.conn["connecttimeout"], 60.0)
    assert parse_time("2024-01-02T03:04:05.123456789Z", "startTime") == \
        datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    with pytest.raises(OptionError, match="startTime"):
        parse_time("soon", "startTime")
    # the server's times are 64-bit nanoseconds: a later one would wrap (and read it all)
    with pytest.raises(OptionError, match="startTime' must be before 2262-04-11"):
        parse_time("2999-01-01T00:00:00Z", "startTime")
    assert parse_time("2262-04-10T00:00:00Z", "startTime").year == 2262
    # stream sequences start at 1
    with pytest.raises(OptionError, match="startingOffsets"):
        ReadOptions({"stream": "S", "startingOffsets": "0"})
    assert ReadOptions({"stream": "S", "startingOffsets": "1"}).starting_offsets == "1"


def test_wait_limit_nan_is_refused_infinity_is_no_limit():
    import pytest

    from jetwire._units import wait_limit

    assert wait_limit(None) is None and wait_limit(float("inf")) is None
    assert wait_limit(0) == 0 and wait_limit(-1.5) == -1.5 and wait_limit(2.5) == 2.5
    with pytest.raises(ValueError, match="NaN"):
        wait_limit(float("nan"))
